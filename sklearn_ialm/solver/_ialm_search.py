"""The stochastic phase before the finish: whether a run has one, on which rows (all of
them, or a sample), and how many passes it may spend; each rule with the measurement behind
it.
"""

from __future__ import annotations

from .settings import RunSettings

#: When the finish follows (and :func:`_sized_search_applies`), the stochastic phase is
#: PStorm on the augmented Lagrangian at the caller's multipliers and ``beta0``, without stop
#: tests (the finish's first evaluation judges its point), for this many minibatch draws, at
#: most one pass and at most ``_SEARCH_SHARE`` of ``max_passes``. Measured (solver-level A/B,
#: CPU of the search and finish against the finish alone, one thread): the draws that shorten
#: the finish most are about the same count whatever the rows: 1 pass on the anchor task
#: (30000 rows, A/B 0.75; 0.25 pass 0.89, 2 passes 0.86), 0.25-0.5 pass on dense 1e5 x 20
#: (0.83-0.89; 2 passes 1.32), 0.03-0.1 pass on dense 1e6 x 20 (0.82; 0.3 pass 0.96), 0.5
#: pass on Adult by race (53333 constraint rows, 0.96-1.01). Algorithm 1's loop with stop
#: tests on all rows that it replaces cost A/B 1.3-2.4 there (its tests alone 8-19 passes):
#: its multipliers saved the finish about 3 outer iterations of a pass or less each, and
#: took 5-10 outer iterations, each ended by a test on all rows. From ``_SAMPLE_MIN_ROWS``
#: rows on, the search and a finish run on a sample of the rows instead (see
#: ``_SAMPLE_ROWS``): at the estimator level the search on all rows did not pay there
#: (``FairLogisticClassifier``, dense 1e6 x 20, demographic parity 0.02: A/B 1.12).
_SEARCH_DRAWS = 30_000
#: Below this many rows there is no stochastic phase before the finish: on 100 groups of 20
#: rows (2000 rows, demographic parity 0.1) a pass of it cost more than it saved (A/B 1.03,
#: 18.9 passes against 18.0, ``git log -- benchmarks/results/finish_ab_stochastic.md``),
#: and within a budget of 10 passes it left the steering's re-solves short of passes.
_SEARCH_MIN_ROWS = 10_000
#: On all rows (not a sample, see ``_SAMPLE_MIN_ROWS``) there is none at any size: it cost
#: more than it saved (``FairLogisticClassifier``, CPU with it over CPU without, one thread,
#: ``git log -- benchmarks/results/finish_ab_before_samples.md``: the anchor task 0.98,
#: Adult by race 1.14-1.26 for the five kinds at 0.05, 1.06 by race and sex; dense 1e6 x 20
#: 1.12 before the sample).
#: Above this many parameters there is no stochastic phase before the finish either: its
#: step size needs power iterations on the rows (a Gram matrix of more would not fit), which
#: cost more than the phase saves. CSR 2e5 x 1e4 (30 values a row, demographic parity 0.02,
#: one thread, ``git log -- benchmarks/results/finish_ab_wide.md``): with the phase 19.7
#: and 35.2 passes (loose, binding), 3.96 and 6.70 x LogisticRegression's CPU; without it
#: 18.5 and 36.5 passes, 2.81 and 5.39 x.
_SEARCH_MAX_PARAMS = 1024
#: From this many rows (the larger set), the stochastic phase before the finish is the run
#: on a sample of ``_SAMPLE_ROWS`` rows, at most ``_SAMPLE_SHARE`` of them (the search, when
#: the sample has ``_SEARCH_MIN_ROWS`` rows, and the finish on the sample), then the finish
#: on all rows from the sample's point, multipliers and penalty: the finish then starts in
#: Newton's basin for both (the point and the multipliers of the sample are those of all
#: rows up to the sampling error), and the set-up of the search's step size reads the sample
#: only (a spectral bound: 0.3 s of a 1.0 s fit on dense 1e6 x 20, where the search itself
#: read 0.03 pass). Measured (``FairLogisticClassifier(bound=0.02)`` against the same fit
#: without the stochastic phase, CPU, one thread, 3 seeds): dense 1e6 x 20 A/B 1.12 -> 0.81
#: (7.1 -> 4.7-5.8 passes; the finish on all rows from the sample: 3-5 evaluations where it
#: took 9 from zero), samples of 10000, 30000, 60000, 100000 rows A/B 0.85, 0.81, 0.88,
#: 0.90; dense 1e5 x 20 A/B 1.10 -> 0.89 with a 10 % sample (30 %: 1.02). Below these rows
#: it did not pay: on Adult by race (32561 rows, 126 columns, demographic parity 0.05) a
#: 10 % sample's point cost the finish on all rows 20 evaluations (A/B 1.14, 23.6 passes
#: against 14.5), on the anchor task (30000 x 100) A/B 0.95-1.0 against 1.10, within the
#: timing noise of a 0.1 s fit.
_SAMPLE_MIN_ROWS = 100_000
_SAMPLE_ROWS = 30_000
_SAMPLE_SHARE = 0.1
#: The sample must hold this many rows per parameter: its optimum is then within about
#: ``sqrt(params / rows)``, a tenth, of all rows' (in the metric of the Hessian). On wide
#: data it is not: CSR 2e5 x 1e4 (30 values a row, demographic parity 0.02, loose), a
#: 20000-row sample's finish read 176 of its passes and the finish on all rows from its
#: point 61.5, where the finish from zero read 19.7 in all.
_SAMPLE_ROWS_PER_PARAM = 100
#: What Algorithm 1's stochastic phase may spend when the finish follows it (a loss other
#: than the logistic, see :func:`_sized_search_applies`): a tenth of ``max_passes``
#: or ``_SEARCH_PASSES``, whichever is more, and at most half. The Newton finish converges
#: from any start (Adult by race, every fairness kind at 0.05, and 100 groups of 20 rows:
#: 13 to 36 passes without the stochastic phase), so a phase that has not found the
#: multipliers by then only costs: with half the budget of 300, error-rate parity on Adult
#: took 163 passes (median of 3 seeds, 149 in the stochastic phase) and the 100 groups 164;
#: with 30, 42-45 and 44, every seed converged with the bound met.
_SEARCH_SHARE = 0.5
_SEARCH_PASSES = 30.0


def _before_finish(problem, run, rng):
    """``(search, sized, sample)``: whether the run has a stochastic phase on these rows,
    whether it is the sized search (:func:`~._ialm_loop._search`, a finish follows), and
    the sample of the rows the run starts on instead (:func:`_sample_of`), or None."""
    search = bool(problem.n_constraints) and run.knobs.search and not run.full_batch
    sized = run.finish and _sized_search_applies(problem)
    wide = problem.n_params > _SEARCH_MAX_PARAMS
    search = search and not (sized and (_search_passes(run) == 0.0 or wide))
    sample = _sample_of(problem, run, rng, search=search, sized=sized)
    if sized and getattr(problem, "sample_share", None) is None:
        # Before the finish, the stochastic phase runs on a sample of the rows only (see
        # _SAMPLE_MIN_ROWS): on all rows it cost more than it saved at every size measured.
        search = False
    return search, sized, sample


def _sample_of(problem, run, rng, *, search, sized):
    """The sample of the rows whose run starts the finish on all rows, or None (see
    ``_SAMPLE_MIN_ROWS``): for the multipliers of the stochastic phase (``search``), and for
    a start in Newton's basin where there are no constraints (Neyman-Pearson's weighted
    logistic fits: dense 1e6 x 20, ``max_fpr=0.05``, each from zero took 6 evaluations of
    all rows)."""
    if not run.finish:
        return None
    if hasattr(problem, "search_sample"):  # far rows (a Dask cluster): for the search only
        return problem.search_sample(rng) if search else None
    plain = not problem.n_constraints and run.knobs.search and not run.full_batch
    if not ((search or plain) and sized and run.rows >= _SAMPLE_MIN_ROWS):
        return None
    share = min(_SAMPLE_ROWS / run.rows, _SAMPLE_SHARE)
    if not hasattr(problem, "row_sample"):
        return None
    if share * problem.n_objective_samples < _SAMPLE_ROWS_PER_PARAM * problem.n_params:
        return None
    return problem.row_sample(rng, share)


def _search_budget(max_passes):
    """The passes Algorithm 1's stochastic phase may spend before the finish (see
    ``_SEARCH_PASSES``)."""
    return min(_SEARCH_SHARE * max_passes, max(0.1 * max_passes, _SEARCH_PASSES))


def _sized_search_applies(problem) -> bool:
    """Whether the stochastic phase before the finish is :func:`~._ialm_loop._search`
    (else Algorithm 1's loop with its stop tests): where the objective is the logistic loss
    of a linear score, convex, whose finish converges from any multipliers. From zero
    multipliers the finish of the paper's nonconvex Neyman-Pearson model (sigmoid loss, 800
    rows) diverged (a coefficient of 1e9): it needs the multipliers that Algorithm 1's loop
    finds. Read from the loss's ``convex`` (the solver knows no loss class: the problems
    layer is above it)."""
    return bool(getattr(getattr(problem, "loss", None), "convex", False))


def _search_passes(run: RunSettings) -> float:
    """The passes of :func:`~._ialm_loop._search` (see ``_SEARCH_DRAWS``); none below
    ``_SEARCH_MIN_ROWS`` rows."""
    if run.rows < _SEARCH_MIN_ROWS:
        return 0.0
    return min(_SEARCH_DRAWS / run.rows, 1.0, _SEARCH_SHARE * run.max_passes)
