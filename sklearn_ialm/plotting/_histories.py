"""What :class:`~.convergence.ConvergenceDisplay` reads: histories checked and put on one
grid over runs, and the units of an estimator's constraint panel."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

#: Entries of a history that the display reads (``history_`` of the estimators, ``history``
#: of :class:`~sklearn_ialm.solver.IALMResult` and :class:`~sklearn_ialm.solver.IPCResult`).
_KEYS = ("primal_residual", "dual_residual", "constraint")


def _check_history(history, x: str) -> dict:
    """The entries the display needs, as float arrays of one length, sorted by ``x``."""
    if not isinstance(history, Mapping):
        raise TypeError(
            f"a history must be a dict of arrays (like history_), got {type(history).__name__}."
        )
    missing = [k for k in (x, *_KEYS) if k not in history]
    if missing:
        raise ValueError(f"the history has no entry {missing[0]!r}; it has {sorted(history)}.")
    keys = (x, *_KEYS, *(("outer_iter",) if "outer_iter" in history else ()))
    run = {k: np.asarray(history[k], dtype=float).ravel() for k in keys}
    lengths = {len(v) for v in run.values()}
    if len(lengths) != 1:
        raise ValueError(f"the history entries have different lengths: {sorted(lengths)}.")
    if not lengths.pop():
        raise ValueError("the history is empty.")
    order = np.argsort(run[x], kind="stable")
    return {k: v[order] for k, v in run.items()}


def _interp(xp, fp, grid, log):
    """``fp`` at ``grid``, linear between checks (in log10 for residuals), ``nan`` before the
    first check and the last value after the run ended (its model no longer changes)."""
    if log:
        with np.errstate(divide="ignore"):
            fp = np.where(fp > 0, np.log10(np.where(fp > 0, fp, 1.0)), np.nan)
    keep = np.isfinite(xp) & np.isfinite(fp)
    xp, fp = xp[keep], fp[keep]
    out = np.full(len(grid), np.nan)
    if not len(xp):
        return out
    # A repeated x (a check at the end of the budget) keeps its last value.
    last = np.r_[xp[1:] != xp[:-1], True]
    xp, fp = xp[last], fp[last]
    inside = grid >= xp[0]
    out[inside] = np.interp(grid[inside], xp, fp)
    return out


def _aggregate(runs, key, band, log):
    """``(grid, center, low, high)`` over the runs: mean and band (range or +- one std)."""
    grid = np.unique(np.concatenate([r["x"][np.isfinite(r["x"])] for r in runs]))
    vals = np.vstack([_interp(r["x"], r[key], grid, log) for r in runs])
    ok = np.isfinite(vals).any(axis=0)
    grid, vals = grid[ok], vals[:, ok]
    with np.errstate(invalid="ignore"):
        center = np.nanmean(vals, axis=0)
        if band == "std":
            spread = np.nanstd(vals, axis=0)
            low, high = center - spread, center + spread
        else:
            low, high = np.nanmin(vals, axis=0), np.nanmax(vals, axis=0)
    if log:
        center, low, high = 10.0**center, 10.0**low, 10.0**high
    return grid, center, low, high


def _positive(v):
    """Residuals for a log axis: an exact zero is a gap in the line, not a cliff."""
    return np.where(v > 0, v, np.nan)


def _final_step(estimator):
    """The last step of a (nested) Pipeline, else ``estimator``: the step that was fitted
    with the constraint, and so the one with its history, bound and tolerance."""
    from sklearn.pipeline import Pipeline

    while isinstance(estimator, Pipeline):
        estimator = estimator[-1]
    return estimator


def _fmt_group(label):
    return repr(label.item() if isinstance(label, np.generic) else label)


def _estimator_units(est):
    """``(bound, label, bound_label, note)`` of the constraint panel of ``est``.

    The solver's ``history_["constraint"]`` plus ``bound`` is the value in the units of the
    bound; ``bound`` is 0 where the constraint is drawn in the solver's units.
    """
    from ..estimators import FairLogisticClassifier, NeymanPearsonClassifier

    soft = np.atleast_1d(getattr(est, "constraint_values_", np.array([])))
    hard = np.atleast_1d(getattr(est, "hard_constraint_values_", np.full(soft.shape, np.nan)))
    if isinstance(est, NeymanPearsonClassifier):
        note = (
            f"at the end: soft FPR {soft[0]:.3f}, hard FPR {hard[0]:.3f}; max_fpr "
            f"{getattr(est, 'max_fpr_', est.max_fpr):g}"
        )
        if getattr(est, "loss", "sigmoid") == "logistic":
            # The weighted logistic fit has no constraint: its threshold meets max_fpr.
            label = (
                "no constraint (the score is a weighted logistic regression; threshold_ "
                "meets max_fpr on predictions)"
            )
            return 0.0, label, None, note
        return float(getattr(est, "max_fpr_", est.max_fpr)), "soft false-positive rate", None, note
    if isinstance(est, FairLogisticClassifier):
        bound = float(est.bound_)
        groups = list(est.protected_groups_)
        if not groups:
            return 0.0, "no constraint (a single group)", None, None
        if est.constraint in ("positive_share", "disparate_impact"):
            what = {"positive_share": "share", "disparate_impact": "ratio"}[est.constraint]
            parts = [
                f"{what} of group {_fmt_group(g)} {s:.3f} soft, {h:.3f} hard"
                for g, s, h in list(zip(groups, soft, hard, strict=False))[:3]
            ]
            more = f" (+{len(groups) - 3} groups)" if len(groups) > 3 else ""
            note = f"at the end: {'; '.join(parts)}{more}; bound {bound:g}"
            label = f"c(x) = mean p * (bound - {what})"
            return 0.0, label, f"c(x) = 0: {what} = bound", note
        # The parity kinds: one metric between groups, as fairlearn computes it.
        ratio = getattr(est, "form", None) == "ratio"
        what = "smallest ratio" if ratio else "largest gap"
        note = f"at the end: {what} {soft[0]:.3f} soft, {hard[0]:.3f} hard; bound {bound:g}"
        if ratio:
            return 0.0, "c(x) = bound * rate_b - rate_a", "c(x) = 0: ratio = bound", note
        # max over the pairs of rate_a - rate_b - bound, plus the bound: the largest gap.
        return bound, f"largest {est.constraint} gap", None, note
    return 0.0, "largest constraint value c(x)", None, None
