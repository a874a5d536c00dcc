"""The statistics of one rate: its count, its weighted value and its exact interval.

Each rate of the bound report is a share of rows (``k`` of ``n``, weighted or not) among the
rows of a condition (all rows, one class, the positive predictions); its interval is the
two-sided exact binomial (Clopper-Pearson) interval, and the *limit* of a bound is the worst
value of its metric over the groups' intervals (see :mod:`sklearn_ialm.report`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import beta as beta_dist

from ..problems._numeric import BOUND_EPS

__all__ = [
    "OVERALL",
    "condition_rows",
    "exact_limits",
    "hits",
    "meets",
    "plain_key",
    "rate_record",
    "status",
    "worst_limit",
]


def exact_limits(k, n, confidence):
    """Two-sided Clopper-Pearson limits; ``k`` and ``n`` may be fractional (weights).

    The lower limit is the ``alpha/2`` quantile of ``Beta(k, n - k + 1)`` (0 when
    ``k = 0``), the upper the ``1 - alpha/2`` quantile of ``Beta(k + 1, n - k)`` (1 when
    ``k = n``); ``n = 0`` gives ``[0, 1]``.
    """
    alpha = (1.0 - confidence) / 2
    lower = 0.0 if k <= 0 else float(beta_dist.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k >= n else float(beta_dist.isf(alpha, k + 1, n - k))
    return lower, upper


def rate_record(hit, rows, weights, confidence):
    """``n``, ``k``, the (weighted) share of ``hit`` among ``rows`` and its interval."""
    n = int(rows.sum())
    k = int((hit & rows).sum())
    out = {"n": n, "k": k}
    if n == 0:
        return {**out, "value": math.nan, "lower": 0.0, "upper": 1.0}
    if weights is None:
        value, n_eff = k / n, float(n)
    else:
        w = weights[rows]
        total = w.sum()
        value = float(np.dot(w, hit[rows])) / total if total > 0 else math.nan
        n_eff = float(total**2 / np.dot(w, w)) if total > 0 else 0.0
        out["n_effective"] = n_eff
    if not np.isfinite(value) or n_eff == 0:
        return {**out, "value": value, "lower": 0.0, "upper": 1.0}
    lower, upper = exact_limits(value * n_eff, n_eff, confidence)
    return {**out, "value": value, "lower": lower, "upper": upper}


def condition_rows(condition, y01, pred):
    """The rows a rate is a share of: ``"all"``, ``"pred=1"``, ``"y=1"`` or ``"y=0"``."""
    if condition == "all":
        return np.ones(len(y01), dtype=bool)
    if condition == "pred=1":
        return pred
    return y01 if condition == "y=1" else ~y01


def hits(rate, y01, pred):
    """Which rows count towards ``rate`` (among the rows of its condition)."""
    if rate == "error_rate":
        return pred != y01
    if rate == "accuracy":
        return pred == y01
    if rate in ("false_negative_rate", "class_error"):
        # (A class error is the false-negative rate of its class against the rest.)
        return ~pred
    return pred


def plain_key(label):
    """A label as plain Python (tuples for intersections): equal across numpy spellings."""
    if isinstance(label, (tuple, list, np.ndarray)):
        return tuple(plain_key(v) for v in label)
    return label.item() if isinstance(label, np.generic) else label


def meets(value, bound, direction):
    """Whether ``value`` meets ``bound`` (up to the float noise of sums, as the fits' own
    test allows); None for a value that is missing or not finite."""
    if value is None or not np.isfinite(value):
        return None
    return bool(value <= bound + BOUND_EPS if direction == "<=" else value >= bound - BOUND_EPS)


def status(value, limit, bound, direction):
    """``"undefined"``, ``"not met"``, ``"met"`` or ``"certified"`` (the limit meets it too)."""
    met = meets(value, bound, direction)
    if met is None:
        return "undefined"
    if not met:
        return "not met"
    return "certified" if meets(limit, bound, direction) else "met"


def worst_limit(rows, rate_names, form, every_pair=False):
    """The worst value of the metric over the groups' intervals (see
    :mod:`sklearn_ialm.report`): over the pairs that involve a protected group, or over
    ``every_pair``."""
    worst = []
    for name in rate_names:
        cell = [r for r in rows if r["rate"] == name and r["group"] is not OVERALL]
        # (A group the fit left out of its constraints bounds nothing.)
        cell = [r for r in cell if not r.get("excluded")]
        for a in cell:
            if form == "share":
                if a["protected"]:
                    worst.append(a["lower"])
                continue
            for b in cell:
                if a is b or not (every_pair or a["protected"] or b["protected"]):
                    continue
                if form == "difference":
                    worst.append(a["upper"] - b["lower"])
                elif a["upper"] > 0:  # lower[b] / upper[a]; 0 / 0 is left out
                    worst.append(b["lower"] / a["upper"])
    if not worst:
        return math.nan
    return float(max(worst) if form == "difference" else min(worst))


class OverallLabel(str):
    """The group label of the rows of all groups: ``"overall"``, told apart from a group of
    that name by identity."""


OVERALL = OverallLabel("overall")
