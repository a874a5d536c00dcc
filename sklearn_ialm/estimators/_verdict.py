"""The conclude step's words: one account of a fit that did not converge.

What was reached, why the fit stopped there, and a remedy that works, read from the run's
history (:func:`_stall`, :func:`_passes_needed`) or its finish; the estimator's hooks
(``_rates_reached``, ``_bound_text``, ``_ratio_bound``) say its
bound in its own terms. Every message agrees with the fitted attributes it is told after.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._warnings import warn
from ..solver.settings import finish_tolerances
from ._inputs import _label
from ._solve import _MIN_DECREASE

__all__ = ["NOT_MET", "warn_if_not_converged"]

#: The sentence of the convergence warning about a missed bound on the training predictions
#: (a certified fit tells it once, in the certificate's account).
NOT_MET = (
    "The bound is NOT met on the training predictions; check hard_constraint_values_ before "
    "using this model."
)


def _stall(result):
    """Why a run that spent its budget stopped short of its tolerances, from its history.

    ``("noise", floor, passes)`` when the dual residual of its last outer iteration fell by
    less than a tenth over the second half of that iteration's passes (at least 10 of them)
    and stayed above its tolerance: the minibatch estimates' noise floor, which more passes
    do not lower. ``("primal",
    value)`` when the primal residual at the end of the last four outer iterations did not
    fall while their penalty grew. None otherwise (the residuals were still falling).
    """
    h = result.history
    k = np.asarray(h["outer_iter"])
    if not len(k):
        return None
    last = k == k[-1]
    p, d = np.asarray(h["data_passes"])[last], np.asarray(h["dual_residual"])[last]
    span = float(p[-1] - p[0])
    if len(d) >= 6 and span >= 10:
        late = p >= p[0] + span / 2
        early_best, late_best = float(d[~late].min()), float(d[late].min())
        if late_best >= 0.9 * early_best and late_best > result.settings["dual_tol"]:
            return "noise", min(early_best, late_best), span
    pres = np.asarray(h["primal_residual"])
    ends = [pres[k == j][-1] for j in np.unique(k)]
    tol = result.settings.get("tol", 0.0)
    if len(ends) >= 4 and ends[-1] > tol and ends[-1] >= 0.9 * ends[-4]:
        return "primal", float(ends[-1])
    return None


def _passes_needed(result):
    """``(more, span, which)``: the passes the run would need after its last to bring its
    residuals to their tolerances, their best values carried on as the power of the passes
    they followed over the second half of its passes (``span`` of them); ``inf`` if one did
    not fall. ``which`` names the residual that needs the most. None with fewer than four
    stop tests in that half."""
    h = result.history
    p = np.asarray(h["data_passes"], dtype=float)
    if len(p) < 4:
        return None
    half = p >= p[0] + (p[-1] - p[0]) / 2
    span = float(p[-1] - p[half][0])
    if half.sum() < 4 or span <= 0:
        return None
    more, which = 0.0, None
    p0, p1 = float(p[half][0]), float(p[-1])
    for key, target in (
        ("dual_residual", result.settings["dual_tol"]),
        ("primal_residual", result.settings["tol"]),
    ):
        best = np.minimum.accumulate(np.asarray(h[key], dtype=float))
        end, start = float(best[-1]), float(best[half][0])
        if end <= target:
            continue
        # A power law r ~ passes**-a through the two points: first-order methods slow down
        # as they near the solution, and a constant rate promised half the passes it took
        # (100 groups of 20 rows, bound 0.8: 423 more, where 916 more converged).
        rate = np.log(start / end) / np.log(p1 / p0) if end < start and p0 > 0 else 0.0
        growth = np.log(end / target) / rate if rate > 0 else np.inf  # log of p_tol / p1
        need = p1 * np.expm1(growth) if growth < 30 else np.inf
        if need >= more:
            more, which = need, key
    return more, span, which


def warn_if_not_converged(est, result, context, fit=None, refit=None):
    """The fit's warnings, which agree with its attributes and with each other: one
    account of a fit that did not converge (what was reached, why, what would help),
    else a word on a model that predicts one class or does worse than chance.

    ``refit(bound)``, where given, refits on the same input at another bound and returns
    its verdict (:func:`._steps.refit_at`): a bound the warning advises is one it checked
    (:func:`_checked_bound`), and the passes of the check count in ``n_data_passes_``."""
    name = type(est).__name__
    notes = context if isinstance(context, dict) else {}
    chance = notes.get("chance")  # (the Dask fit does not say)
    one_class = fit is not None and notes.get("one_class", fit.degenerate)
    if one_class and est.bound_met_:
        warn(
            f"{name}: the model found meets the bound on the training rows by predicting "
            f"the same class for every row ({est._rates_reached(context)}); no better "
            "model that meets it was found, though one may exist. Loosen the bound, or "
            "check that the groups and labels are what you meant.",
            UserWarning,
        )
    if est._constant_fallback is not None:
        label, constant, found = est._constant_fallback
        warn(
            f"{name}: the best model found has a higher training log-loss ({found:.4f}) "
            "than the constant model (the positive rate for every row, predicting class "
            f"{_label(est.classes_[label])}; log-loss {constant:.4f}), which meets the "
            "bound: that constant model is returned. The bound may leave a linear model "
            "no room on these data (loosen it), or the fit needs more passes "
            f"(max_passes={est.max_passes:g}).",
            ConvergenceWarning,
        )
        return
    if est.converged_:
        if chance is not None:
            warn(f"{name} converged. {chance}", UserWarning)
        return
    parts = [
        f"{name} did not converge: {_not_converged_reason(est, result, fit)} after "
        f"{est.n_data_passes_:.4g} data passes (max_passes={est.max_passes:g}"
        + (f", {est.n_rounds_} solves" if fit is not None else "")
        + f"); primal residual {result.primal_residual:.3g}, dual residual "
        f"{result.dual_residual:.3g} (tol={est.tol:g}).",
        f"Rates reached: {est._rates_reached(context)}.",
    ]
    moved = fit is not None and (fit.toward_constant or fit.threshold_moved)
    if moved:
        parts.append(_moved_model_text(est, fit))
    if fit is not None and not est.bound_met_:
        parts.append(NOT_MET)
    if chance is not None:
        parts.append(chance)
    spent = result.message.startswith("budget") or (
        fit is not None and result.converged and not _solves_converged(fit)
    )
    short = spent or not result.converged
    # More passes do not help where a solve at the tightest surrogate bound had converged
    # and missed, and the budget then ran out in the further solves; where the first solve
    # is cut short, its remedy is the budget's (100 groups of 20 rows, max_passes=6).
    capped = (
        fit is not None
        and fit.at_cap
        and notes.get("nearest")
        and len(fit.results) > 1
        and any(r.converged for r in fit.results[:-1])
    )
    if short and not capped:
        parts.append(_remedy(est, fit.results[-1] if fit is not None else result, fit is not None))
    elif short:
        parts.append(_AT_CAP_REMEDY)
    # A steering whose surrogate's bound was already at its tightest when the budget ran
    # out would not have come nearer with more passes: the bound within its reach is said
    # too, checked by refits as after any fit (100 groups of 20 rows, not in X, bound 0.1:
    # 1000 passes converge, at the constant model's accuracy; a looser bound at 0.6
    # held-out accuracy).
    if (moved and not short) or (fit is not None and fit.at_cap and notes.get("nearest")):
        # A fit that spent its budget elsewhere spends no more on refits (max_passes
        # bounds it): the remedy of its budget comes first.
        checks = None if short and not capped else refit
        parts.append(
            _reachable_bound_text(est, notes.get("nearest"), context, fit.at_cap, short, checks)
        )
    elif _unmet_parity(est, fit, notes) and refit is not None:
        # Neither the constant model nor a moved threshold meets the bound (error rates
        # differ between groups with their base rates): a bound that works is named too
        # (six groups, two of 5-25 rows, error-rate parity 0.02: 0.17 on predictions, and
        # the warning named no remedy).
        hard = est.hard_constraint_values_
        parts.append(_checked_bound_text(est, context, refit, hard, scan=not short))
    warn(" ".join(parts), ConvergenceWarning)


#: The remedy of a fit whose budget ran out with the surrogate's bound at its tightest:
#: more passes are spent in solves that do not move the rates on predictions (six groups
#: of 7-1000 rows, DP 0.02, and five groups of 230-930 rows, error-rate parity 0.02: the
#: same miss, 0.153 and 0.070, at max_passes 300, 1000 and 3000; main 8317bd5 advised
#: raising max_passes and no bound, where 0.08 and 0.06 converge).
_AT_CAP_REMEDY = (
    "More passes would not help: the budget ran out with the surrogate's bound already as "
    "tight as the steering takes it."
)


def _unmet_parity(est, fit, notes) -> bool:
    """Whether the steered fit misses its fairness bound on predictions (and nothing else:
    a false-positive bound beside it is not a bound to loosen)."""
    if fit is None or est.bound_met_ or notes.get("bound") is None:
        return False
    return getattr(est, "max_fpr", None) is None


def _solves_converged(fit) -> bool:
    """Whether the solves the model is built from converged, and the last solve too (a
    further solve cut short by the budget would have moved the surrogate's bound on)."""
    return fit.converged and fit.results[-1].converged


def _not_converged_reason(est, result, fit) -> str:
    """Why a fit did not converge, in the words of what stopped it."""
    if fit is None or not result.converged:
        return result.message
    if not _solves_converged(fit):
        return "the budget ran out in a further solve that moves the surrogate's bound"
    if est._guarantee_holds() is False and est._bound_met_rows:
        # A calibrated fit's verdict is its guarantee (see Binary.verdict).
        return "the guarantee on new data does not hold (the held-out rows' check)"
    if fit.toward_constant or fit.threshold_moved:
        return (
            "no solve of the smooth surrogate (the soft rates the solver constrains) met "
            "the bound on predictions"
        )
    return "the solver converged but the bound on predictions is not met"


def _moved_model_text(est, fit) -> str:
    """What the model returned is when no solve met the bound: the solve nearest it,
    moved towards the constant model or with its threshold moved."""
    if fit.toward_constant:
        constant = (
            "the constant model (its intercept alone)"
            if est.fit_intercept
            else f"the zero model (every score 0: class {_label(est.classes_[0])})"
        )
        what = (
            f"the solve nearest the bound was moved towards {constant}, "
            f"{fit.interpolated:.0%} of the way"
        )
    elif fit.group_thresholds:
        what = (
            "a threshold of each group's own (the group columns' coefficients) was set on "
            "the solve nearest the bound, the surrogate solved again with each group's soft "
            "rate pinned where those thresholds put it, and the last such solve was moved "
            f"{fit.interpolated:.0%} of the way to thresholds of its own"
        )
    else:
        what = (
            "the constant model misses the bound too, so the threshold of the solve "
            "nearest it was moved"
        )
    if est.bound_met_:
        return (
            f"The model returned is a compromise, not the optimum of a posed problem: "
            f"{what}, until its predictions met the bound, at a cost in accuracy."
        )
    return f"The model returned is a compromise: {what}, and still misses the bound."


def _reachable_bound_text(est, nearest, context, at_cap=False, short=False, refit=None) -> str:
    """The remedy of a fit where no solve met the bound: a bound looser than the fit's at
    which the fit refitted converges and one 0.01 tighter did not (:func:`_checked_bound`),
    or coarser groups. ``at_cap``: the surrogate's bound had been tightened as far as the
    steering goes, which the text says is why; ``short``: a further solve there was cut
    short by the budget (its end is not known)."""
    if nearest is None or not len(nearest["hard"]):
        return "Loosen the bound: no solve of the surrogate came within it."
    hard = nearest["hard"]
    reached = (
        f"The solve nearest the bound has {np.round(hard, 4).tolist()} on its training "
        f"predictions (accuracy {nearest['accuracy']:.4f})"
    )
    if at_cap:
        # Measured: 100 groups of 20 rows, bound 0.1, soft gap 0.001 and hard gap 0.3
        # at the tightest surrogate; 30 groups of 10-50 rows alike.
        reached += (
            ", with the surrogate's bound tightened as far as it goes (soft rates nearly "
            "equal): in small groups the rates on predictions part from the soft rates "
            "group by group"
            + ("." if short else ", and no bound on the soft rates closes that gap.")
        )
        other = (
            "A tighter bound may be met on predictions by other means (e.g. a threshold "
            "per group), not by this fit."
        )
    else:
        reached += ": the surrogate reaches about that on these data, not further."
        other = "Coarser groups may give a linear model room."
    if refit is None:
        # No refit at hand, or a fit that spent its budget: no bound is advised that was
        # not checked.
        return f"{reached} Loosen the bound. {other}"
    return f"{reached} {_checked_bound_text(est, context, refit, hard)} {other}"


def _looser(est) -> int:
    """+1 where a looser bound is a higher one (a gap), -1 where it is a lower one (a ratio,
    or a share of positive predictions)."""
    lower = est._ratio_bound() or getattr(est, "constraint", None) == "positive_share"
    return -1 if lower else 1


#: The advice check's budget (:func:`_checked_bound`): no refit is started once the checks
#: have spent ``_CHECK_FITS`` times the fit's own data passes, nor past ``_CHECK_PASSES *
#: max_passes``. A refit at a bound that fails costs about as much as the fit; 100 groups of
#: 20 rows, DP 0.1, spent 21 refits (20 times the fit's 34 passes) on a scan in steps of 0.01.
_CHECK_FITS, _CHECK_PASSES = 8.0, 2.0
#: The bounds next to the fit's own that are refitted in order first: which bounds converge
#: is not an interval (six groups like COMPAS's races, DP 0.05: 0.08 converges, 0.09-0.14
#: do not), and these are the ones a user would try.
_SCAN = 3


def _checked_bound(est, context, refit, hard, scan=True):
    """A bound looser than the fit's own, in hundredths, at which the fit refitted on the
    same input converges and meets it on its training predictions, and one 0.01 tighter
    did not; ``(bound, its refit's verdict, bounds tried as (hundredths, ok), passes)``,
    the bound None where no refit within the budget did.

    The solve nearest the bound does not tell where a refit converges: on six groups like
    COMPAS's races (11 and 31 rows in the smallest), DP 0.05, it reached 0.077-0.29 over
    eight draws, where the first bound that converged was 0.07-0.13. The search:

    * the first :data:`_SCAN` bounds in steps of 0.01 (what a user would try), until a
      refit's solve nearest the bound reaches what the last one's did;
    * then, from what the nearest solve reached (rounded outwards), bounds looser by 0,
      0.01, 0.03, 0.07, ... until one works;
    * then the bound 0.01 tighter than that one, and, if it works too, the halvings of the
      bracket between it and the loosest bound that failed below it, down to 0.01.

    A refit that fails costs about as much as the fit, one that converges less; none is
    started once the checks have spent ``min(_CHECK_FITS * n_data_passes_, _CHECK_PASSES *
    max_passes)`` (100 groups of 20 rows, DP 0.1: 3 refits, 91 passes, where a scan in
    steps of 0.01 spent 21 and 697)."""
    # In "looseness" u = step * hundredths: a larger u is a looser bound, for either kind.
    step, budget = _looser(est), _check_budget(est)
    own = math.floor(step * float(context["bound"]) * 100 + 1e-9)
    tried, verdicts, passes, spent = [], {}, 0.0, False
    last_reached = np.array([])

    def check(u):
        """The verdict at looseness ``u`` (None where it fails), refitted once."""
        nonlocal passes, spent, last_reached
        if u not in verdicts:
            got = refit(step * u / 100)
            passes += got["passes"]
            ok = got["converged"] and got["met"]
            tried.append((step * u, ok))
            last_reached = got.get("reached", np.array([]))
            spent = not ok and got.get("spent", False)
            verdicts[u] = got if ok else None
        return verdicts[u]

    def within(u) -> bool:
        return 0 < step * u < 100 and passes < budget

    reached = previous = np.asarray(hard, dtype=float)
    u = own + 1
    # A fit that spent max_passes: refits 0.01 looser would likely spend as much.
    while scan and u <= own + _SCAN and within(u):
        if check(u) is not None:
            return step * u / 100, verdicts[u], tried, passes
        u += 1
        # A refit that failed by spending max_passes: the next 0.01 would likely spend
        # as much, and the check's budget holds two such; the search goes on from what
        # was reached (three groups tied to the score, error-rate parity 0.02: the scan's
        # three refits spent 300 passes each and no bound was advised, where 0.30 works).
        if spent:
            break
        # A refit whose solve nearest the bound reached what the last one did: the bound
        # between them did not move it, nor will the next 0.01, and the search goes on
        # from there (100 groups of 20 rows, DP: 0.3 from the fit at 0.1 and from the
        # refits at 0.11-0.29; six groups like COMPAS's races: 0.29, 0.17, 0.26, then 0.08
        # converges).
        again = np.asarray(last_reached, dtype=float)
        if len(again) and again.shape == previous.shape and np.allclose(again, previous):
            reached = again
            break
        previous = again if len(again) else previous
    reached = float(np.nanmax(step * reached)) if len(reached) else np.nan
    base = max(u, math.ceil(reached * 100 - 1e-9)) if np.isfinite(reached) else u
    ok, jump = None, 0
    while within(base + jump):
        if check(base + jump) is not None:
            ok = base + jump
            break
        jump = 2 * jump + 1
    if ok is None:
        ok = _unconstrained_bound(check, step, verdicts)
    if ok is None:
        return None, None, tried, passes
    # The bracket: the loosest failure below the bound that works.
    low = max(v for v in [own] + [v for v, got in verdicts.items() if got is None] if v < ok)
    if ok - 1 > low and within(ok - 1) and check(ok - 1) is not None:
        ok = ok - 1
        while ok - low > 1 and within((ok + low) // 2):
            middle = (ok + low) // 2
            if check(middle) is None:
                low = middle
            else:
                ok = middle
    return step * ok / 100, verdicts[ok], tried, passes


def _unconstrained_bound(check, step, verdicts):
    """The last resort of :func:`_checked_bound`, past its budget: the looseness of the
    unconstrained model's own values on its predictions, rounded outwards, where a refit
    converges (the model there meets the bound without binding it); None where it does not.
    Two refits, the first at the loosest bound (0.99, or 0.01 for a ratio or a share),
    which binds nothing and converges in a few passes; without them a fit whose refits
    spend ``max_passes`` each left its budget with no bound to advise (four groups of 80
    rows tied to the score, 10 % positives, error-rate parity 0.02: 0.03 and 0.07 spent
    the budget of 550 passes, and 0.20, LogisticRegression's own gap, converges)."""
    loosest = 99 if step > 0 else -1
    got = check(loosest)
    if got is None or not len(got["hard"]):
        return None
    # 1e-9: a value that is a whole number of hundredths is not rounded one further.
    own = math.ceil(float(np.max(step * np.asarray(got["hard"]))) * 100 - 1e-9)
    own = min(max(own, 1 if step > 0 else -99), loosest)
    return own if check(own) is not None else loosest


def _check_budget(est) -> float:
    """The data passes after which the advice check starts no refit (:data:`_CHECK_FITS`
    times the fit's own, at most :data:`_CHECK_PASSES` times ``max_passes``)."""
    return min(_CHECK_FITS * float(est.n_data_passes_), _CHECK_PASSES * est.max_passes)


def _checked_bound_text(est, context, refit, hard, scan=True) -> str:
    """The advice of :func:`_checked_bound`, in words that say how it was checked; the
    checks' passes are added to ``n_data_passes_``, which the words give."""
    budget = _check_budget(est)
    bound, got, tried, passes = _checked_bound(est, context, refit, hard, scan)
    est.n_data_passes_ = float(est.n_data_passes_ + passes)
    shown = _runs([t for t, _ in tried])
    cost = (
        f"{len(tried)} refit{'s' if len(tried) > 1 else ''}, {passes:.4g} data passes, which "
        f"n_data_passes_ counts: {est.n_data_passes_:.4g}"
    )
    step = _looser(est)
    if bound is None:
        if not tried:
            return "Loosen the bound: no looser bound was left to check."
        widest = max(step * t for t, _ in tried)
        loosest = step * widest / 100
        said = f"Refitted with the bound at {shown}, the fit converged at none ({cost})"
        if passes < budget:
            return f"{said}: loosen the bound past {loosest:.2f}."
        own = math.floor(step * float(context["bound"]) * 100 + 1e-9)
        skipped = _runs(sorted({step * u for u in range(own + 1, widest)} - {t for t, _ in tried}))
        return (
            f"{said}, and the check stops there (it starts no refit past {budget:.4g} passes, "
            f"{_CHECK_FITS:g} times the fit's own or {_CHECK_PASSES:g} times max_passes): no "
            f"bound it tried works. Bounds looser than {loosest:.2f}"
            + (f" (or {skipped}, not tried)" if skipped else "")
            + " may: refit at one to see whether it converges."
        )
    failed = _runs([t for t, ok in tried if not ok])
    before = f"; at {failed} it did not converge" if failed else ""
    # In looseness (step * hundredths): the bounds between the loosest failure below the
    # advice (or the fit's own) and the advice that were not refitted, where the budget
    # ran out inside the bracket.
    ok = step * round(bound * 100)
    low = max(
        [step * t for t, good in tried if not good and step * t < ok],
        default=math.floor(step * float(context["bound"]) * 100 + 1e-9),
    )
    untried = _runs([step * u for u in range(low + 1, ok)])
    if untried:
        were = "were" if "-" in untried or "," in untried else "was"
        before += f"; {untried} {were} not tried, for the check's budget"
    return (
        f"Set bound={bound:.2f}: refitted at it, this fit converges and meets it on "
        f"its training predictions ({np.round(got['hard'], 4).tolist()}){before} ({cost})."
    )


def _runs(hundredths) -> str:
    """Bounds given in hundredths, sorted, in words: runs of consecutive ones as ranges
    ("0.06-0.09, 0.11")."""
    values = sorted(set(hundredths))
    runs = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    said = [f"{a / 100:.2f}" + (f"-{b / 100:.2f}" if b > a else "") for a, b in runs]
    return ", ".join(said)


def _remedy(est, result, steered=False) -> str:
    """What would help a run that spent its budget, from the way its residuals moved
    (``steered``: the run is a solve of the hard-rate steering)."""
    finish = getattr(result, "finish_history", None)
    if finish is not None and len(finish["primal_residual"]):
        return _finish_remedy(est, result, finish, steered)
    stall = _stall(result)
    if stall is not None and stall[0] == "noise":
        _, floor, span = stall
        # Measured: less than a tenth off its best over the run's last stretch. Whether
        # the minibatch noise or a slow direction holds it, more passes lower it little
        # (100 groups of 20 rows at bound 0.3: 0.023 at 300 passes, 0.015 at 3000).
        said = (
            f"Its dual residual fell by less than a tenth over its last {span:.0f} "
            f"passes, to about {floor:.2g}: at the minibatch estimates' noise floor or "
            "in a direction the steps hardly move, more passes lower it little."
        )
        coarser = _coarser_tol(est, floor)
        if coarser is not None:
            return f"{said} {coarser}"
        return (
            f"{said} Convergence also asks for a tenth of its value at coef_ = 0 "
            f"({_MIN_DECREASE * est._null_dual_residual:.2g}), far below it: no tol "
            "makes this fit converge, and more passes are unlikely to; the model "
            "returned is the best one found."
        )
    if stall is not None:
        return (
            f"The constraint's residual stayed at {stall[1]:.2g} while the penalty grew: "
            "the bound may be out of this model's reach on these data (loosen it); more "
            "passes are unlikely to help."
        )
    needed = _passes_needed(result)
    if needed is None:
        return f"Raise max_passes (now {est.max_passes:g}), or tol for a coarser model."
    # The pace of the residuals' fall over the second half of the run, carried on.
    more, span, which = needed
    pace = f"at the pace its residuals fell over its last {span:.0f} passes"
    if more <= 10 * est.max_passes:
        then = ""
        if which == "primal_residual":
            then = " (if the bound is within this model's reach)"
        if steered:
            then += "; the bound on predictions may then ask for a further solve"
        return (
            f"Raise max_passes (now {est.max_passes:g}): {pace}, this solve would reach "
            f"tol within about {more:.0f} more{then}."
        )
    said = (
        f"{pace[0].upper()}{pace[1:]}, reaching tol would take "
        + (f"about {more:.0f} more passes" if more < 1e6 else "over a million passes")
        + ": raising max_passes will hardly help."
    )
    coarser = _coarser_tol(est, float(result.dual_residual))
    if coarser is not None and result.primal_residual <= est.tol:
        return f"{said} {coarser}"
    return f"{said} The model returned is the best one found."


def _finish_remedy(est, result, finish, steered) -> str:
    """What would help a run whose deterministic finish ended short of its tolerances.

    A constraint violation that two outer iterations with a growing penalty did not
    halve is out of the model's reach (an infeasible bound): more passes do not help.
    Otherwise the finish was still converging, each outer iteration at least halving the
    violation; another as many passes as it spent is the estimate (its outer
    iterations cost about the same).
    """
    pres, dres, beta = (finish[k] for k in ("primal_residual", "dual_residual", "beta"))
    settings = result.settings
    tol, dual_tol = finish_tolerances(
        settings["tol"], settings["dual_tol"], settings["finish_tol"],
        settings.get("finish_dual_floor", 0.0),
    )  # fmt: skip
    # Each residual over its tolerance: the larger one stands between the finish and
    # its end.
    gap = np.maximum(pres / tol, dres / dual_tol)
    if len(gap) >= 3 and gap[-1] > 0.5 * gap[-3] and beta[-1] > beta[-3]:
        return (
            f"The residuals stayed at {pres[-1]:.2g} (primal) and {dres[-1]:.2g} (dual) "
            "while the penalty grew in the finish on all rows: the bound may be out of "
            "this model's reach on these data (loosen it); raising max_passes will "
            "hardly help."
        )
    passes = finish["passes"]
    said = (
        f"Raise max_passes (now {est.max_passes:g}): the finish on all rows was still "
        f"converging (primal residual {pres[-1]:.2g}, dual residual {dres[-1]:.2g} after "
        f"{float(passes[-1]):.0f} passes)"
    )
    # The pace of its last outer iterations, carried on (a log-linear fall per pass).
    fell = len(gap) >= 2 and gap[-1] < gap[-2] and passes[-1] > passes[-2]
    if not fell or gap[-1] <= 1.0:
        return f"{said}, or raise tol for a coarser model."
    rate = np.log(gap[-2] / gap[-1]) / (passes[-1] - passes[-2])
    more = float(np.log(gap[-1]) / rate)
    then = "; the bound on predictions may then ask for a further solve" if steered else ""
    return f"{said}; at its pace this solve would reach them within about {more:.0f} more{then}."


def _coarser_tol(est, level) -> str | None:
    """The advice of a ``tol`` that a dual residual at ``level`` passes, or None.

    The stop test asks for min(tol, a tenth of the residual at coef_ = 0): a larger
    tol helps only while that tenth is above ``level``."""
    relative = _MIN_DECREASE * est._null_dual_residual
    if est.tol < 1.5 * level < relative:
        return f"tol={1.5 * level:.2g} gives a model at the precision reached."
    return None
