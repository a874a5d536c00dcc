"""Fits on more than two classes: the multinomial model under per-class rate bounds.

Both estimators pose a :class:`~sklearn_ialm.problems.multinomial.MultinomialProblem` when
``y`` has ``K > 2`` classes:

* :class:`~sklearn_ialm.FairLogisticClassifier`: every parity kind one-vs-rest, per class
  ``c``: the gap between two groups in the rate of predicting ``c`` (among all their rows for
  demographic parity, among their rows of label ``c`` for the true-positive rate, of another
  label for the false-positive rate, both for equalized odds) is at most ``bound``; for the
  error rate, the gap in the share of rows not predicted their label.
* :class:`~sklearn_ialm.NeymanPearsonClassifier` with ``max_class_error``: the share of the
  rows of class ``k`` predicted as another class is at most ``alpha_k`` (Tian and Feng's
  multi-class Neyman-Pearson classification), the cross-entropy minimised.

The solver bounds soft rates (softmax probabilities); ``predict`` is the arg-max. The
steering to the bound on predictions:

* Neyman-Pearson: the first solve is unconstrained; where ``predict`` misses a bound, one
  re-solve at a soft bound moved by the excess (a cost-sensitive model); then per-class
  score offsets (added to ``intercept_``): raising class ``k``'s score lowers its error and
  raises the others', so each bounded class's offset is raised in turn to the least value
  that meets its bound given the others, until all hold (exact on the training rows, a
  weighted quantile of margins, no data pass).
* Fairness: offsets shared by all groups cannot close a gap between groups, so the soft
  bounds are moved by the hard violation (a secant on the last two solves) and the problem
  solved again from the last solution (at most :data:`_MAX_ROUNDS` solves, within the
  budget). A move stops short of asking for the empty set (:func:`_relaxation_room`), and a
  bound that no longer binds goes back to the bound itself. Once a converged solve meets
  the bound and another misses it, the model is the point of the segment between them
  nearest the one that missed that meets it (the scores are linear in the parameters: no
  read of the rows). If none meets the bound, the model is moved along the segment towards
  the constant model (every row predicted the majority class, which meets every parity
  bound) until it does, and the fit says so.
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.special import log_softmax, softmax
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from threadpoolctl import threadpool_limits

from .._warnings import warn
from ..problems._numeric import BOUND_EPS
from ..problems.fairness import unique_codes
from ..problems.multinomial import MultinomialProblem, Rate, cell_codes
from . import _solve as solving  # every run through _solve.py's _solve: one seam
from ._hard_rates import _say
from ._scaling import _feature_scaling, training_moments
from ._solve import (
    _joined_history,
    _select,
    run_seeds,
    set_solution,
    solver_settings,
    spawn_seeds,
)

__all__ = [
    "NOT_YET",
    "Multinomial",
    "binary_max_fpr",
    "check_every_class_weighted",
    "check_two_class_params",
    "is_multiclass",
    "memory_problem",
]

#: The most solves of a fairness fit's steering (the first included).
_MAX_ROUNDS = 10
#: The secant of the steering (see _move_bounds): from soft values this far apart, its
#: slope within [1 / _SECANT_MAX, _SECANT_MAX].
_SECANT_MIN_STEP = 1e-4
_SECANT_MAX = 4.0
#: Bisections of a move of the soft bounds that would leave no room (see _move_bounds).
_ROOM_BISECTIONS = 12
#: The finish's tolerances of a steered fairness fit's solves (the first, at the bound
#: itself, and the re-solves at moved soft bounds), as a share of the stop test's (other
#: fits: ``_solve._FINISH_TOL``, 1e-3). The steering moves the soft bounds by the hard rates,
#: within a band of ``bound_tol`` (0.005): a soft rate within 1e-4 (a hundredth of tol=0.01)
#: is 50 times finer than that band. On digits with the group tied to the label (per-class
#: bound 0.06, 20 constraints) the re-solves to 1e-5 took 100 to 130 passes each and the fit
#: ran out of its 300; to 1e-4 it converged in 212.
_RESOLVE_FINISH_TOL = 1e-2

#: The parity kinds that have a one-vs-rest form, and the label sets of their rates.
_KINDS = {
    "demographic_parity": ("all",),
    "true_positive_rate_parity": ("own",),
    "false_positive_rate_parity": ("other",),
    "equalized_odds": ("own", "other"),
    "error_rate_parity": ("error",),
}

NOT_YET = "is not available for more than two classes yet"


def is_multiclass(y) -> bool:
    """Whether ``y`` (not a dask collection) holds more than two classes."""
    if isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype.kind in "iu":
        # Integer labels: type_of_target's verdict, counted in one pass (its sort of 1e6
        # labels took 0.015 s, and a fit asks twice).
        return len(unique_codes(y)[0]) > 2
    try:
        with warnings.catch_warnings():
            # y not validated yet: inf or nan in a float y warn in its cast to int; the
            # binary path's validation names them.
            warnings.simplefilter("ignore", RuntimeWarning)
            return type_of_target(y, input_name="y") == "multiclass"
    except (ValueError, TypeError):  # (TypeError: labels of mixed types, pd.NA)
        return False  # the binary path's validation names the problem


def _class_codes(y):
    check_classification_targets(y)
    classes, codes = unique_codes(np.asarray(y))
    return classes, codes.astype(np.intp)


def _python(value):
    return value.item() if isinstance(value, np.generic) else value


def _label(value):
    return repr(value.item() if isinstance(value, np.generic) else value)


def typed(value) -> str:
    """``value``'s repr and its type, ``'1' (str)``: a label the classes do not hold may
    look like one of them in another type."""
    value = _python(value)
    return f"{value!r} ({type(value).__name__})"


def typed_classes(classes) -> str:
    """The classes as a list with their type, ``[0, 1, 2] (int)`` (each one's type if they
    differ)."""
    values = [_python(c) for c in classes]
    kinds = {type(v).__name__ for v in values}
    if len(kinds) == 1:
        return f"{values!r} ({kinds.pop()})"
    return "[" + ", ".join(typed(v) for v in values) + "]"


def _class_bounds(est, classes):
    """``{class code: alpha}`` of ``max_class_error`` (validated against ``classes``)."""
    spec = est.max_class_error
    if not isinstance(spec, dict) or not spec:
        raise ValueError(
            "max_class_error must be a non-empty dict {class label: alpha} with alpha in "
            f"(0, 1), got {spec!r}."
        )
    listed = classes.tolist()
    out = {}
    for label, alpha in spec.items():
        hits = [i for i, c in enumerate(listed) if c == label]
        if len(hits) != 1:
            raise ValueError(
                f"max_class_error key {typed(label)} is not one of the classes of y: "
                f"{typed_classes(classes)}."
            )
        ok = isinstance(alpha, Real) and not isinstance(alpha, bool) and 0 < alpha < 1
        if not ok:
            raise ValueError(
                f"max_class_error[{label!r}] must be a number in (0, 1), got {alpha!r}."
            )
        out[hits[0]] = float(alpha)
    return out


def binary_max_fpr(est, classes) -> float:
    """The ``max_fpr`` of a two-class fit given ``max_class_error={negative: alpha}``.

    ``classes`` are the two classes in the fit's order (negative first, see ``pos_label``);
    ``max_fpr`` must not be set (they are two forms of one bound).
    """
    if est.max_fpr is not None:
        raise ValueError(
            f"Set either max_fpr or max_class_error, not both (got max_fpr={est.max_fpr!r} and "
            f"max_class_error={est.max_class_error!r}); max_class_error={{negative: alpha}} "
            "is max_fpr=alpha (leave max_fpr at its default, None)."
        )
    bounds = _class_bounds(est, classes)
    if list(bounds) != [0]:
        raise ValueError(
            "With two classes, max_class_error bounds the error of the negative class "
            f"({_label(classes[0])}, its false-positive rate) only, got "
            f"{est.max_class_error!r}: the binary model keeps max_fpr's form."
        )
    return bounds[0]


def check_two_class_params(est, K):
    """Refuse the two-class parameters set on ``K > 2`` classes: a bound or a label the user
    sets is applied or refused, never dropped."""
    pos_label = getattr(est, "pos_label", None)
    if pos_label is not None:
        raise ValueError(
            f"pos_label={pos_label!r} names the positive class of a two-class fit, but y "
            f"has {K} classes, none of them positive: leave pos_label=None."
        )
    if hasattr(est, "max_class_error") and est.max_fpr is not None:
        raise ValueError(
            f"max_fpr={est.max_fpr!r} bounds the false-positive rate of two classes, but y "
            f"has {K} classes: bound class errors with max_class_error={{class label: alpha, "
            "...}, and leave max_fpr=None."
        )


def check_every_class_weighted(est, totals, classes):
    """Refuse a class of zero total weight (``totals``, by class): a Neyman-Pearson fit bounds
    and reports each class's error, a share of its weight, undefined for that class."""
    if np.all(totals > 0):
        return
    none = classes[totals <= 0]
    which = f"class {typed(none[0])}" if len(none) == 1 else f"classes {typed_classes(none)}"
    raise ValueError(
        f"sample_weight is 0 on every row of {which} of y: the error of a class, which "
        f"{type(est).__name__} bounds and reports (train_class_errors_), is a share of its "
        "weight, undefined without any. Drop those rows from X and y to fit the other "
        "classes, or give them a positive weight."
    )


# -- the constraints ----------------------------------------------------------------------
def _void(est, present, excluded):
    """Why a multi-class fairness constraint is void (None when it is not): no groups, a
    single group, or fewer than two left by ``min_group_size``."""
    if present is None:
        return "is None"
    if len(present) < 2:
        return "has a single group"
    if len(present) - np.count_nonzero(np.isin(present, excluded)) < 2:
        return f"leaves fewer than two groups of at least min_group_size={est.min_group_size} rows"
    return None


def _fair_constraints(est, y, sw, groups, n_groups, protected, K, bound, kept):
    """``(constraints, names)`` of a parity kind, one-vs-rest for every class, over the
    pairs of the groups ``kept`` (positions) that involve a protected one."""
    if est.constraint not in _KINDS:
        raise ValueError(
            f"constraint={est.constraint!r} {NOT_YET}; the parity kinds are: {list(_KINDS)}."
        )
    if est._form() != "difference":
        raise ValueError(f"form={est.form!r} {NOT_YET}; use form='difference'.")
    cells = lambda g, labels: [g * K + k for k in labels]  # noqa: E731
    pairs = [(g, h) for g in protected for h in kept if h != g]
    pairs += [(h, g) for g, h in pairs if (h, g) not in pairs]
    out, names = [], []
    if "error" in _KINDS[est.constraint]:
        # Each group's weighted label shares, in one pass (the pairs reuse them).
        shares = np.bincount(groups * K + y, weights=sw, minlength=n_groups * K)
        shares = shares.reshape(n_groups, K)
        shares = shares / shares.sum(axis=1, keepdims=True)
    for part in _KINDS[est.constraint]:
        for c in range(K):
            if part == "error" and c > 0:
                break
            for g, h in pairs:
                if part == "error":
                    # error_g = 1 - sum_k share_{g,k} P(pred k | g, y = k): the 1s cancel.
                    terms = []
                    for grp, sign in ((g, -1.0), (h, 1.0)):
                        w = shares[grp]
                        terms += [(sign * w[k], Rate(k, cells(grp, [k]))) for k in range(K)]
                    names.append(f"error_rate[{g}] - error_rate[{h}]")
                else:
                    labels = {
                        "all": range(K),
                        "own": [c],
                        "other": [k for k in range(K) if k != c],
                    }
                    labels = labels[part]
                    terms = [(1.0, Rate(c, cells(g, labels))), (-1.0, Rate(c, cells(h, labels)))]
                    names.append(f"{part}[{c}]: {g} - {h}")
                out.append((terms, -bound))
    return out, names


def _np_constraints(bounds, K):
    """Class ``k``'s error ``1 - P(pred k | y = k) <= alpha_k`` (one group, cells = labels)."""
    return [([(-1.0, Rate(k, [k]))], 1.0 - alpha) for k, alpha in bounds.items()], [
        f"error[{k}]" for k in bounds
    ]


# -- the fit ------------------------------------------------------------------------------
def _weights(est, sample_weight, X, y, codes, classes):
    """Sample times class weight of every row (``X``: the rows, or a stand-in with their
    number), refused where fewer than two classes (or, for Neyman-Pearson, not every class)
    keep a positive weight."""
    K = len(classes)
    sw = est._checked_sample_weight(sample_weight, X)
    sw = est._scaled_weights(sw)  # weights far from 1 brought near it, C scaled (_problem)
    class_weight = getattr(est, "class_weight", None)
    if class_weight is not None:
        if isinstance(class_weight, str):
            totals = np.bincount(codes, weights=sw, minlength=K)
            with np.errstate(divide="ignore"):
                cw = np.where(totals > 0, totals.sum() / (K * totals), 0.0)
        else:
            cw = compute_class_weight(class_weight, classes=classes, y=np.asarray(y))
        sw = sw * cw[codes]
    totals = np.bincount(codes, weights=sw, minlength=K)
    if np.count_nonzero(totals > 0) < 2:
        raise ValueError(
            f"{type(est).__name__} needs samples of 2 classes with positive weight; "
            f"sample_weight leaves only {np.count_nonzero(totals > 0)}."
        )
    if hasattr(est, "max_class_error"):
        check_every_class_weighted(est, totals, classes)
    return sw


def _spec(est, codes, sw, classes, fit_params):
    """``(constraints, names, groups, context)`` of the estimator's bound on these rows."""
    K = len(classes)
    if hasattr(est, "max_class_error"):  # Neyman-Pearson
        # (calibration="umbrella" reaches here only through fit_multiclass_umbrella, which
        # holds its rows out before this fit.)
        if est.calibration not in (None, "umbrella"):
            raise ValueError(f"calibration={est.calibration!r} {NOT_YET}.")
        if est.max_class_error is None:
            warn(
                f"max_class_error is None: no class error is bounded on these {K} classes, "
                "the unconstrained multinomial model is fitted (max_fpr is the two-class "
                "form; bound class errors with max_class_error={class label: alpha, ...}).",
                UserWarning,
            )
            return [], [], np.zeros(len(codes), np.intp), dict(kind="np", bounds={})
        if est.rate != "hard" or est.loss != "logistic":
            raise ValueError(
                f"rate={est.rate!r}, loss={est.loss!r} {NOT_YET}; use rate='hard' and "
                "loss='logistic' (the defaults)."
            )
        bounds = _class_bounds(est, classes)
        cons, names = _np_constraints(bounds, K)
        groups = np.zeros(len(codes), np.intp)
        return cons, names, groups, dict(kind="np", bounds=bounds)
    # (calibration="clopper-pearson" reaches here only through fit_multiclass_certified,
    # which holds its rows out and sets the bound to train at before this fit.)
    training_bound = getattr(est, "_training_bound", None)
    if est.calibration is not None and training_bound is None:
        raise ValueError(f"calibration={est.calibration!r} {NOT_YET}.")
    if est.max_fpr is not None:
        raise ValueError(f"max_fpr={est.max_fpr!r} {NOT_YET}; use max_fpr=None.")
    bound = est._check_bound() if training_bound is None else training_bound
    group_codes, labels = fit_params["codes"], fit_params["labels"]
    # The groups left out of the constraints (min_group_size): in no pair, their rows still
    # in the loss.
    excluded = fit_params.get("excluded", np.array([], dtype=np.intp))
    context = dict(
        kind="fair", bound=bound, protected=np.array([], dtype=int), labels=labels,
        excluded=excluded,
    )  # fmt: skip
    present = None if group_codes is None else np.unique(group_codes)
    void = _void(est, present, excluded)
    protected = None
    if void is None:
        protected = est._protected_codes(group_codes, labels, excluded=excluded)
        if not len(protected):
            void = f"has no protected group of at least min_group_size={est.min_group_size} rows"
    if void is not None:
        warn(
            f"sensitive_features {void}: the fairness constraint is void; fitting the "
            "unconstrained multinomial model.",
            UserWarning,
        )
        context["groups"] = np.array([] if labels is None else labels[present])
        return [], [], np.zeros(len(codes), np.intp), context
    groups = np.searchsorted(present, group_codes)
    protected = np.searchsorted(present, protected)
    kept = np.searchsorted(present, present[~np.isin(present, excluded)])
    cons, names = _fair_constraints(
        est, codes, sw, groups, len(present), protected, K, bound, kept
    )
    context.update(protected=protected, groups=labels[present])
    return cons, names, groups.astype(np.intp), context


def memory_problem(est, X, codes, sw, K, cons, groups):
    """The fit's :class:`~sklearn_ialm.problems.multinomial.MultinomialProblem` on rows in
    memory, in standard units."""
    C = None if est.C is None else est.C * est._C_scale  # see _scaled_weights
    est._feature_moments = training_moments(X, sw)  # kept for the report (see _scaling)
    scale, center, live = _feature_scaling(
        X, sw / sw.sum(), est.fit_intercept, est._feature_moments
    )
    n_live = max(1, int(live.sum()))
    scale = scale * np.sqrt(n_live)
    return MultinomialProblem(
        X, codes, K, sw, cell_codes(groups, codes, K), cons, C=C,
        fit_intercept=est.fit_intercept, scale=scale, center=center,
        n_cells=(int(groups.max()) + 1) * K, penalty_units=n_live,
    )  # fmt: skip


def _start(est, problem, codes, sw, K, classes):
    """The previous fit (``warm_start``), else the null model: weights 0, intercepts the
    log of the weighted class shares (of the classes present)."""
    # The estimator's model before this fit (the fit runs on a working copy without it, see
    # BaseIALMClassifier._working_copy).
    previous = getattr(est, "_previous_fit", None) or {}
    coef = previous.get("coef_")
    same = coef is not None and coef.shape == (K, problem.d) and "class_offsets_" in previous
    if est.warm_start and same and np.array_equal(previous["classes_"], classes):
        return problem.point(coef, previous["intercept_"] - previous["class_offsets_"])
    return _null_point(problem, codes, sw, K)


def _null_point(problem, codes, sw, K):
    """Weights 0 and (with an intercept) the log of the weighted class shares."""
    if not problem.fit_intercept:
        return np.zeros(problem.n_params)
    share = np.bincount(codes, weights=sw, minlength=K) / sw.sum()
    logs = np.log(np.clip(share, 1e-12, None))
    return problem.point(np.zeros((K, problem.d)), logs - logs.mean())


def _np_offsets(problem, scores, sw, bounds, max_sweeps=50):
    """Per-class score offsets that meet every class-error bound on the training rows, or
    None if the sweeps find none.

    Each bounded class's offset is raised in turn to the least value that meets its bound
    given the others' (a weighted quantile of its rows' margins); none is lowered (a class
    whose training error is under its bound keeps the solve's scores: lowering them to spend
    the bound on digits cost 0.7 points of test accuracy for nothing on the training rows).
    Raising one class's offset only raises the others' errors, so the sweeps end at the
    least offsets that meet every bound when some do; bounds on classes that offsets alone
    cannot tell apart raise each other's offsets without end (None).
    """
    delta = np.zeros(scores.shape[1])
    y = problem.y
    for _ in range(max_sweeps):
        moved = False
        for k, alpha in bounds.items():
            rows = y == k
            z = scores[rows] + delta
            # Class k wins a row where its score is above every other (a tie goes to the
            # first class of the arg-max: counted as an error here whichever it is).
            margin = np.delete(z, k, axis=1).max(axis=1) - z[:, k]
            w = sw[rows] / sw[rows].sum()
            order = np.argsort(-margin, kind="stable")
            # The rows of the largest margins stay errors while their weight fits in alpha.
            allowed = int(np.searchsorted(np.cumsum(w[order]), alpha + 1e-12, side="right"))
            if allowed >= len(order):
                continue
            need = margin[order[allowed]]
            step = need + 1e-9 * max(1.0, abs(need))
            if step > 0:
                delta[k] += step
                moved = True
        if not moved:
            return delta
    return None


def _relaxation_room(problem, offset):
    """The largest ``delta`` such that some cell means (a point of the simplex per cell, as
    if the model could tell every cell apart) meet every constraint with ``offset`` within
    ``delta``: ``< 0`` where the bounds ask for the empty set (a linear programme)."""
    n_cells, K, m = problem.M.shape
    # Variables: the cell means R (n_cells x K, row by row), then delta (maximised).
    A_ub = sp.hstack([sp.csr_matrix(problem.M.reshape(n_cells * K, m).T), np.ones((m, 1))])
    A_eq = sp.hstack([sp.kron(sp.eye(n_cells), np.ones((1, K))), sp.csr_matrix((n_cells, 1))])
    cost = np.zeros(n_cells * K + 1)
    cost[-1] = -1.0
    out = linprog(
        cost, A_ub=A_ub, b_ub=-np.asarray(offset, dtype=float), A_eq=A_eq,
        b_eq=np.ones(n_cells), bounds=[(0.0, 1.0)] * (n_cells * K) + [(None, 1.0)],
        method="highs",
    )  # fmt: skip
    return float(-out.fun) if out.status == 0 else -np.inf


def _meets(problem, scores, base):
    """Whether the predictions of ``scores`` meet every bound (offsets ``base``)."""
    hard = problem.rate_constraints(problem.hard_predictions(scores), base)
    return bool(np.all(hard <= BOUND_EPS))


def _segment(problem, base, Z0, Z1):
    """The least ``t`` in ``(0, 1]`` whose scores ``(1 - t) Z0 + t Z1`` meet the bound, or
    None: a grid of 64 steps, then bisection between the last miss and the first hit. The
    scores are linear in the parameters, so these are the scores of the point ``(1 - t) x0
    + t x1`` of the segment between the models of ``Z0`` and ``Z1`` (no read of the rows)."""
    ok = lambda t: _meets(problem, (1 - t) * Z0 + t * Z1, base)  # noqa: E731
    lo = 0.0
    for t in np.linspace(0.0, 1.0, 65)[1:]:
        if ok(t):
            hi = t
            break
        lo = t
    else:
        return None
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def _steer_soft_bounds(est, problem, results, kwargs, seed, passes, x_const, tol, base, rounds):
    """Re-solve at soft bounds moved by the hard violation until the bound holds on the
    training predictions (offsets ``base``), each active constraint within ``tol`` of it, or
    until a converged solve on each side of the bound is found (see the module docstring).

    Returns ``(x, results, chosen, passes, toward_constant)``: the model, every solve, the
    solve whose verdict is the fit's, the passes so far and the share of the way to the
    constant model ``x_const`` (None: not moved). ``x_const`` None: no segment is searched
    (Neyman-Pearson's class offsets meet the bound instead).
    """
    # (solve, its scores): the converged solve of least objective that met the bound, and
    # the last converged one that missed it.
    met = missed = None
    seen = None  # the soft and hard values of the last converged solve
    while True:
        last = results[-1]
        scores = problem.scores(last.x)
        passes += 1.0
        hard = problem.rate_constraints(problem.hard_predictions(scores), base)
        soft = problem.rate_constraints(softmax(scores, axis=1), np.zeros_like(base))
        active = last.multipliers > 0
        if last.converged and np.all(hard <= BOUND_EPS):
            if met is None or last.objective < met[0].objective:
                met = (last, scores)
            if not np.any(active & (hard < -tol)):
                break
        elif last.converged:
            missed = (last, scores)
        bracket = met is not None and missed is not None and x_const is not None
        if bracket or len(results) >= rounds or passes >= est.max_passes - 1:
            break
        # (Neyman-Pearson: one re-solve whose bounds the class offsets then meet.)
        fair = x_const is not None
        met_yet = met is not None or not fair
        _move_bounds(
            est, problem, (soft, hard), seen, active, tol, base, passes, len(results), met_yet
        )  # fmt: skip
        if last.converged:
            seen = (soft, hard)
        more = _resolve_settings(est, kwargs, last, passes, fair)
        results.append(solving._solve(problem, seed + [len(results)], more))
        passes += results[-1].n_data_passes
    problem.offset = base
    if met is not None:
        segment = x_const is not None and missed is not None
        segment = segment and missed[0].objective < met[0].objective
        met, passes = _polished(est, problem, kwargs, seed, passes, results, met)
        x = met[0].x
        if segment:
            # The point nearest the solve that missed on the segment to the one that met:
            # the loss is convex, so below the met solve's along the segment.
            missed, passes = _polished(est, problem, kwargs, seed, passes, results, missed)
            t = _segment(problem, base, missed[1], met[1])
            x = (1 - t) * missed[0].x + t * x
        return x, results, met[0], passes, None
    if x_const is None or _meets(problem, scores, base):
        return last.x, results, last, passes, None
    passes += 1.0
    t = _segment(problem, base, scores, problem.scores(x_const))
    if t is None:
        return last.x, results, last, passes, None
    return (1 - t) * last.x + t * x_const, results, last, passes, t


def _polished(est, problem, kwargs, seed, passes, results, entry):
    """``(entry, passes)``: the fit's first solve, solved to the re-solves' tolerance, taken
    on to the finish's own (``_solve._FINISH_TOL``) where the model is built from it
    (``entry``, a pair (solve, its scores), is ``results[0]``'s), at the bound itself (the
    offsets the steering left), from its point and multipliers, within a tenth of the
    budget; kept where it converged and meets the bound on predictions as the first did.

    The model of a steered fit is a solve's, or a point between two: at the coarser
    tolerance of the first solve, a refit from the model itself (``warm_start``) moved the
    coefficients by 2.5e-3 (the segment from the first solve, which missed the bound).
    """
    first = results[0]
    if entry[0] is not first or kwargs.get("finish_tol") == solving._FINISH_TOL:
        return entry, passes
    more = _resolve_settings(est, kwargs, first, passes, fair=False)  # (its last penalty)
    more["finish_tol"] = solving._FINISH_TOL
    more["max_passes"] = min(more["max_passes"], 0.1 * est.max_passes)
    if more["max_passes"] < 2:
        return entry, passes
    _say(
        est.verbose,
        f"solve {len(results) + 1}: the first solve taken on to the finish's tolerance "
        f"{solving._FINISH_TOL:g}, at the bound (the model is built from it)",
    )
    polished = solving._solve(problem, seed + [len(results)], more)
    results.append(polished)
    passes += polished.n_data_passes + 1.0  # (and the read of its scores)
    scores = problem.scores(polished.x)
    meets = _meets(problem, scores, problem.offset)
    if polished.converged and meets == _meets(problem, entry[1], problem.offset):
        return (polished, scores), passes
    return entry, passes


def _resolve_settings(est, kwargs, last, passes, fair) -> dict:
    """The solver's settings of a re-solve of the steering from the ``last`` solve."""
    more = dict(kwargs, x0=last.x, y0=last.multipliers, slack0=None, search=False)
    # (the last pass: the training report's)
    more["max_passes"] = est.max_passes - passes - 1
    if last.finish_history is not None and len(last.finish_history["beta"]):
        # A fairness re-solve starts its penalty where the last solve's finish started (as
        # the binary steering does): from the last one's end (1e4 on digits) each of its
        # Newton solves took 80 to 130 reads at the moved bounds.
        more["beta0"] = float(last.finish_history["beta"][0 if fair else -1])
    if fair:
        more["finish_tol"] = _RESOLVE_FINISH_TOL
    return more


def _move_bounds(est, problem, values, seen, active, tol, base, passes, done, met_yet=True):
    """Set the soft bounds for the next solve (see :func:`_steer_soft_bounds`): of the violated
    constraints (tighter) and of the active ones met with room to spare (looser).

    ``values``: the soft (no offset) and hard values the last solve reached; ``seen``: those
    of the converged solve before it (None: none); ``met_yet``: whether a converged solve
    met the bound already.

    Until one did, the moves aim at the band's tight end, ``-tol``, and leave the bounds met
    with room to spare where they are unless the tightened ones leave no room (see below):
    the first solve that meets the bound closes the bracket of :func:`_steer_soft_bounds`,
    whose segment then gives back what the overshoot cost. Aimed at the band's middle, with
    the loosening moves of the others, the moves of digits' 20 coupled constraints (the
    group tied to the label, per-class bound 0.06) missed by 0.003 to 0.023 for five solves
    (300 passes) and the fit ended at the constant model.
    """
    soft, hard = values
    # Aim at the band [-tol, 0] (see above): a soft bound at the soft value reached, moved
    # by the hard value's distance from there times the soft value's change per change of
    # the hard one, from the last two solves (a secant; 1 until known, or where the hard
    # value moved against the soft one, by other constraints' moves). On wine the hard gap
    # moved twice as far as the soft one, and the moves overshot from side to side.
    aim = 0.5 * tol if met_yet else tol
    slope = np.ones_like(soft)
    if seen is not None:
        ds, dh = soft - seen[0], hard - seen[1]
        known = (np.abs(ds) > _SECANT_MIN_STEP) & (dh * ds > 0)
        slope[known] = np.clip(dh[known] / ds[known], 1 / _SECANT_MAX, _SECANT_MAX)
    if not met_yet:
        # A bound met with room is loosened no further than its hard value's distance:
        # loosened by four times that (the secant's shallowest slope), a digits gap went
        # from -0.019 to +0.020.
        slope = np.where(hard < 0, np.maximum(slope, 1.0), slope)
    loosen = active & (hard < -tol)
    moving = (hard > 0) | (loosen & met_yet)
    target = _targets(problem, soft, hard, aim, slope, moving, active, base)
    if not met_yet and np.any(loosen) and _relaxation_room(problem, target) < 0:
        # The tightened bounds leave no room: the ones met with room make it (wine, a group
        # tied to one class: the gap g0 - g1 of a class tightened against its reverse).
        moving = moving | loosen
        target = _targets(problem, soft, hard, aim, slope, moving, active, base)
    _move_with_room(problem, target)
    _say(
        est.verbose,
        f"solve {done + 1}: on predictions the constraints are "
        f"{np.round(hard, 4).tolist()} (a value > 0 misses the bound, an active one below "
        f"-{tol:g} leaves it unused; {passes:.3g} of {est.max_passes:g} passes spent): "
        f"the surrogate's bounds of constraints {np.flatnonzero(moving).tolist()} set to "
        f"the bound + {(np.round(base - problem.offset, 4)[moving] + 0.0).tolist()}",
    )


def _targets(problem, soft, hard, aim, slope, moving, active, base):
    """The soft bounds (offsets) that the moves of :func:`_move_bounds` ask for."""
    target = np.where(moving, -(soft - (hard + aim) / slope), problem.offset)
    # An inactive bound that an earlier move tightened goes back to the bound itself: it
    # does not shape the solution, and kept it left no room for the moves of the others
    # (wine: the gap g0 - g1 of class 0 held below -0.025 while its reverse was tightened).
    return np.where(~moving & ~active & (target > base), base, target)


def _move_with_room(problem, target):
    """Move the soft bounds (``problem.offset``) towards ``target``, short of asking for the
    empty set.

    Bounds moved one by one can ask for the empty set: the gaps g - h and h - g of one
    class tightened in turn, or three classes' gaps whose sum is 0 (each group's rates
    sum to 1); on wine at 0.02 such re-solves spent their budget raising the penalty to
    1e15. So the move stops halfway to where no cell means meet the bounds at all (the
    room of :func:`_relaxation_room`, concave along the move: halfway keeps half of the
    room the last bounds had, which their solve's cell means met).
    """
    step = target - problem.offset
    if _relaxation_room(problem, target) < 0:
        lo, hi = 0.0, 1.0
        for _ in range(_ROOM_BISECTIONS):
            mid = 0.5 * (lo + hi)
            lo, hi = (
                (mid, hi)
                if _relaxation_room(problem, problem.offset + mid * step) >= 0
                else (lo, mid)
            )
        step = 0.5 * lo * step
    problem.offset = problem.offset + step


class Multinomial:
    """The steps' model of more than two classes (see the module docstring)."""

    name = "multinomial"

    def limits(self):
        # Every product of the fit is thin ((n, d) by (d, K)): BLAS threads only wait on each
        # other (digits, 1257 x 64 by 64 x 10 on 2 busy cores: 14 ms with threads, 0.2 ms
        # without), so the fit runs on one.
        return threadpool_limits(limits=1, user_api="blas")

    def labels(self, est, y):
        classes, codes = _class_codes(y)
        check_two_class_params(est, len(classes))
        return classes, codes

    weights = staticmethod(_weights)

    def pose(self, est, fitting, source) -> None:
        codes, sw, classes = fitting.labels, fitting.weights, fitting.classes
        cons, names, groups, context = _spec(est, codes, sw, classes, fitting.fit_params)
        fitting.problem = source.multinomial_problem(est, fitting, cons, groups)
        fitting.context = context
        fitting.notes.update(names=names, groups=groups, constrained=bool(cons))

    def start(self, est, fitting, source) -> None:
        codes, sw, classes = fitting.labels, fitting.weights, fitting.classes
        fitting.start = _start(est, fitting.problem, codes, sw, len(classes), classes)

    def solve(self, est, fitting, source) -> None:
        fitting.solved = _solve_and_steer(est, fitting)

    def report(self, est, fitting, source) -> None:
        notes = fitting.notes
        _class_rates(
            est, fitting.problem, notes["scores"], fitting.labels, fitting.weights,
            notes["groups"], notes["names"], fitting.context,
        )  # fmt: skip

    def verdict(self, est, fitting) -> tuple[bool, bool]:
        """``(bound_met_, converged_)``."""
        result, toward_constant = fitting.solved
        context = fitting.context
        if context["kind"] == "np":
            bounds = np.array(list(context["bounds"].values()))
            met = bool(np.all(est.hard_constraint_values_ <= bounds + 1e-12))
        elif len(est.hard_constraint_values_):
            met = bool(np.all(est.hard_constraint_values_ <= context["bound"] + 1e-12))
        else:
            met = True
        if getattr(est, "rate", "hard") == "soft" and context["kind"] == "fair":
            met = bool(result.kkt_primal_residual <= est.tol)
        held = est._guarantee_holds()  # a calibrated fit's verdict is its guarantee
        met = met if held is None else held
        return met, bool(result.converged and met and toward_constant is None)

    def tell(self, est, fitting) -> None:
        if not est.converged_:
            _warn_not_converged(est, *fitting.solved)


def _solve_and_steer(est, fitting):
    """Every seed's solve, the steering's re-solves and the class offsets; sets the fitted
    attributes. ``(the solve whose verdict is the fit's, the share of the way to the
    constant model or None)``."""
    problem, context = fitting.problem, fitting.context
    codes, sw, classes = fitting.labels, fitting.weights, fitting.classes
    K = len(classes)
    seeds = spawn_seeds(est.random_state, est.n_seeds)
    kwargs = solver_settings(est, problem, x0=fitting.start)
    base = problem.offset.copy()
    if context["kind"] == "np" and est.rate == "hard":
        # The first solve is unconstrained (every soft bound 2 above any rate: never
        # binding): the class offsets meet the bounds on predict exactly, and a soft bound
        # at alpha asks far more (the soft error of a row predicted right is still
        # 1 - p_k > 0); the steering tightens the soft bounds that the offsets alone would
        # meet only at a cost, from the soft errors reached (see _steer_soft_bounds).
        problem.offset = base - 2.0
    if est.preset == "default":
        # The augmented Lagrangian method on all rows from the start (the deterministic
        # finish without the stochastic search for the multipliers): on digits (650
        # parameters) the search spent 500 of 630 passes where this spent 132, to the same
        # objective (to 1e-9) and multipliers (to 1e-4).
        kwargs["search"] = False
    steered = fitting.notes["constrained"] and getattr(est, "rate", "hard") == "hard"
    if steered and context["kind"] == "fair":
        # The first solve to the re-solves' tolerance: the steering moves the soft bounds by
        # the hard rates it reaches, within a band 50 times wider (where the model is built
        # from it, it is taken on to the finer one: see _polished). Asked ten times finer,
        # the first solve of digits (the group tied to the class halves, drawn by
        # default_rng(1), per-class bound 0.04) reached residuals 8e-6 and 4e-5 in 71
        # passes, then its next inner solves walked off that point (the rates' nonconvex
        # curvature) for the rest of the 300; with no re-solve, the model was moved all the
        # way to the constant model (test accuracy 0.159). Stopped there, it converged.
        kwargs["finish_tol"] = _RESOLVE_FINISH_TOL
    if steered:
        first = {
            "np": "the multinomial model, every soft bound loose (class offsets then meet the "
            "bounds on predictions)",
            "fair": "the surrogate (soft rates) at the bound itself",
        }
        _say(est.verbose, f"solve 1: {first[context['kind']]}")
    runs = run_seeds(problem, seeds, kwargs, est.n_jobs)
    best = _select(runs)
    results = [runs[best]]
    passes = float(sum(r.n_data_passes for r in runs))
    x, chosen = results[0].x, results[0]
    offsets, toward_constant = np.zeros(K), None
    if steered:
        if context["kind"] == "np":
            # One re-solve, where predict misses a bound: the soft bound at the soft error
            # reached less the excess (a cost-sensitive model); the offsets then meet it.
            band, x_const, rounds = 0.1 * min(context["bounds"].values()), None, 2
        else:
            band, x_const = est.bound_tol, _null_point(problem, codes, sw, K)
            rounds = _MAX_ROUNDS
        x, results, chosen, passes, toward_constant = _steer_soft_bounds(
            est, problem, results, kwargs, [seeds[best]], passes, x_const, band, base, rounds
        )
    scores = problem.scores(x)
    if context["kind"] == "np":
        found = _np_offsets(problem, scores, sw, context["bounds"])
        # None: no offsets meet the bounds together; the solve's model is kept, and the
        # fit says that the bound is not met.
        offsets = found if found is not None else offsets
        scores = scores + offsets
    passes += 1.0  # the training report below reads every row once more
    objective = float(chosen.objective)
    if x is not chosen.x:  # a point between solves: its own loss, a read of the rows more
        objective = problem.objective_value(x, slice(None)) + problem.h.value(x)
        passes += 1.0
    coef, intercept = problem.coef(x)
    est.classes_ = classes
    set_solution(
        est, coef.copy(), intercept + offsets, chosen, results, _joined_history(results),
        runs, seeds, best,
    )  # fmt: skip
    est.class_offsets_ = offsets
    if hasattr(est, "max_class_error"):
        est.threshold_ = 0.0  # the class offsets are in intercept_
    est.n_data_passes_ = float(passes)
    est.n_samples_fit_ = int(fitting.X.shape[0])
    est.objective_ = objective
    fitting.notes["scores"] = scores
    return chosen, toward_constant


def _per_class(values, K, names, context):
    """Constraint values (bound units, ``c + bound``) reduced to one per class: the largest
    gap (fairness) or the class error (Neyman-Pearson, one per bounded class)."""
    if context["kind"] == "np":
        return values
    bound = context["bound"]
    out = np.zeros(K)
    for v, name in zip(values, names, strict=True):
        c = 0 if name.startswith("error_rate") else int(name.split("[")[1].split("]")[0])
        out[c] = max(out[c], v + bound)
    return out if not names[0].startswith("error_rate") else out[:1]


def _class_rates(est, problem, scores, codes, sw, groups, names, context):
    K = len(est.classes_)
    soft = np.exp(log_softmax(scores, axis=1))
    hard = problem.hard_predictions(scores)
    if context["kind"] == "np":
        bounds = context["bounds"]

        def errors(pred, which):
            return np.array([
                1.0 - np.average(pred[codes == k, k], weights=sw[codes == k]) for k in which
            ])  # fmt: skip

        est.constraint_values_ = errors(soft, bounds)
        est.hard_constraint_values_ = errors(hard, bounds)
        # Every class's error on the training predictions, bounded or not.
        est.train_class_errors_ = errors(hard, range(K))
        est.max_class_error_ = {_python(est.classes_[k]): a for k, a in bounds.items()}
        return
    if not names:
        est.constraint_values_ = est.hard_constraint_values_ = np.array([], dtype=float)
    else:
        est.constraint_values_ = _per_class(problem.rate_constraints(soft), K, names, context)
        est.hard_constraint_values_ = _per_class(problem.rate_constraints(hard), K, names, context)
    est.bound_ = context["bound"]
    est.groups_ = context["groups"]
    labels = context["labels"]
    est.protected_groups_ = (
        context["groups"][context["protected"]] if labels is not None else np.array([])
    )
    excluded = context.get("excluded", np.array([], dtype=np.intp))
    est.excluded_groups_ = labels[excluded] if labels is not None else np.array([])


def _warn_not_converged(est, result, toward_constant):
    """The account of a multi-class fit that did not converge: what stopped it, what it
    reached, whether the model was moved towards the constant model."""
    met = est.bound_met_
    name = type(est).__name__
    reason = result.message
    guarantee = est._guarantee_holds() is not None  # the verdict is the guarantee's
    if result.converged:  # the solver's message ("converged: ...") is not the fit's verdict
        reason = (
            "no solve met the bound on predictions"
            if toward_constant is not None
            else "the guarantee on new data does not hold"
            if guarantee
            else "the solver converged but the bound on predictions is not met"
        )
    parts = [f"{name} did not converge on {len(est.classes_)} classes: {reason}"]
    parts.append(
        f"after {est.n_data_passes_:.4g} data passes (max_passes={est.max_passes:g}, "
        f"{est.n_rounds_} solves); primal residual {result.primal_residual:.3g}, dual "
        f"residual {result.dual_residual:.3g} (tol={est.tol:g})."
    )
    parts.append(
        f"Rates on the training predictions: {np.round(est.hard_constraint_values_, 4).tolist()}"
        f", soft {np.round(est.constraint_values_, 4).tolist()}."
    )
    if toward_constant is not None:
        parts.append(
            "No solve met the bound on predictions, so the model was moved towards the "
            f"constant model ({toward_constant:.0%} of the way)"
            + (": the bound holds at a cost in accuracy." if met else ", and still misses it.")
        )
    if not met and guarantee:
        parts.append(
            "The umbrella rule could not certify every bounded class (class_certified_): "
            "the guarantee holds for the certified ones only."
        )
    elif not met:
        parts.append(
            "The bound is NOT met on the training predictions; check hard_constraint_values_ "
            "before using this model."
        )
    if est.n_data_passes_ >= est.max_passes - 1:
        parts.append(_more_passes(est))
    warn(" ".join(parts), ConvergenceWarning)


def _more_passes(est) -> str:
    """The remedy of a fit whose budget ran out: a ``max_passes`` with room for two more
    solves of the steering at the pace of its solves so far (digits, the group tied to the
    label, per-class bound 0.01: 302 passes at accuracy 0.17, converged in 396)."""
    per_solve = est.n_data_passes_ / max(est.n_rounds_, 1)
    advised = 100 * int(np.ceil((est.n_data_passes_ + 2 * per_solve) / 100))
    return (
        f"The budget ran out: raise max_passes (now {est.max_passes:g}), to about {advised} "
        f"(room for two more solves of about {per_solve:.0f} passes each, the pace of its "
        f"{est.n_rounds_} so far)."
    )
