"""What a default fit (no calibration) lets a user expect of its bound on new rows.

A default fit meets its bound on the training rows' predictions. Each rate the bound
constrains (the negatives' FPR; a group's selection rate, or its TPR / FPR among its
positives / negatives) is a count over few rows when a group or a class is small: the
population rate the next rows follow lies anywhere in the rate's binomial interval, and a
threshold tuned to the training rows puts the training rate at the bound. This module gives
that interval of the constrained metric (each rate's 95 % Clopper-Pearson interval, the gap's
from its extreme groups' ends), and says at fit time when its upper end is far over the bound
(for Neyman-Pearson its own few-negatives warning says it), or when the model has more
parameters than a twentieth of the rows of a constrained cell (it can then fit that cell's
rates through features few of its rows hold: the training rate is optimistic beyond
sampling, and the interval is a lower estimate).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import beta
from sklearn.utils.validation import _num_samples

from .._warnings import warn
from ..problems._group_codes import unique_codes
from ._groups import _column_codes
from ._inputs import _label

__all__ = [
    "NewRowsWarning",
    "assess_new_rows",
    "judge",
    "rows_to_predict",
    "same_array",
    "summed_cells",
]

#: The level of each rate's interval.
LEVEL = 0.95
#: A gap whose interval reaches past this many times its bound (and 0.05 over it) is said:
#: Adult by race, equalized odds 0.05, 25 positives in the smallest race: up to 0.41; the
#: README's 2000 rows, demographic parity 0.05: up to 0.11, unsaid.
SAMPLING_FACTOR = 3.0
#: Parameters per row of the smallest constrained cell above which the fitted direction adds
#: optimism beyond sampling (tests/test_new_rows.py: 2 parameters for 60 negatives, the
#: interval covers the new-row FPR on 39 of 40 draws; 6 for 60, on 15 of 20, mean new-row FPR
#: 0.146 against 0.1 trained; madelon: 501 per 900 negatives; the anchor task: 101 per 6518).
PARAMS_PER_ROW = 0.05
_PARITY = {
    "demographic_parity": ("all",),
    "true_positive_rate_parity": ("y=1",),
    "false_positive_rate_parity": ("y=0",),
    "equalized_odds": ("y=1", "y=0"),
    "error_rate_parity": ("error",),
}


class NewRowsWarning(UserWarning):
    """A default fit's bound is unlikely to carry to new rows (``new_rows_``)."""


def _intervals(k, n):
    """Clopper-Pearson intervals ``(low, high)`` (arrays) of rates of ``k`` in ``n`` at
    ``LEVEL`` (effective counts may be fractional: the beta quantiles are defined for them).
    One call of the quantile for every group: a call per group took a quarter of a fit of
    100 groups of 20 rows."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    a = (1 - LEVEL) / 2
    with np.errstate(invalid="ignore", divide="ignore"):  # (the ends at k = 0 and k = n)
        lo = np.where(k <= 0, 0.0, beta.ppf(a, k, n - k + 1))
        hi = np.where(k >= n, 1.0, beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def _counts(hits, sizes, squares):
    """``(k, n)`` of a cell whose rows weigh ``sizes`` in all and ``hits`` on the rate:
    the effective sample size ``n = sizes^2 / squares`` (Kish's; the row count for unit
    weights) and ``k`` its share of the weighted rate. Weights that fit reads in the bound
    are read here too: the rows of one weighted 10 and nine weighted 0.1 hold less than
    ten rows' sampling, and their weighted rate is the one the bound holds."""
    if squares <= 0:
        return 0.0, 0.0
    n = sizes * sizes / squares
    return hits / sizes * n, n


def _relative_weights(sample_weight):
    """The row weights in units of the largest, None for unit weights (none given, or all
    equal): the counts are scale-free, and weights of 5e-324 or 1e308 (which fit takes)
    neither underflow nor overflow their squares."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=float)
    w = w / w.max() if w.size and w.max() > 0 else w
    # (Equal weights are exactly 1 here: their sums are the unit weights' counts.)
    return None if w.size and np.all(w == 1.0) else w


def _cells(est, y, pred, groups, w=None):
    """``[(rate name, counts per group {group: (k, n)})]`` of the constrained rates (``k``
    and ``n`` effective counts under the weights ``w`` of :func:`_relative_weights`); with
    more than two classes, each class's one-vs-rest rates, named with the class, but the
    error rate, one rate of ``pred != y`` as the fit constrains it."""
    if len(est.classes_) == 2:
        return _class_cells(est, y == est.classes_[1], pred == est.classes_[1], groups, w)
    if getattr(est, "constraint", None) == "error_rate_parity":
        # Every row in the "class" and flagged where predicted right: the error cell's
        # hits are then the rows predicted wrong. (One-vs-rest error rates per class are
        # not what the bound holds: main 8317bd5 warned, three classes at 0.1, that "the
        # bound 0.1 is met on the training rows (error_rate_parity gap (class 2) 0.173)".)
        return _class_cells(est, np.ones(len(y), bool), pred == y, groups, w)
    out = []
    for c in est.classes_:
        for which, counts in _class_cells(est, y == c, pred == c, groups, w):
            out.append((f"{which}, class {_label(c)}", counts))
    return out


def _class_cells(est, yes, flagged, groups, w):
    """:func:`_cells` of one class, ``yes`` its rows and ``flagged`` its predictions
    (``groups``: ``(labels, codes)``, None for Neyman-Pearson; ``w``: None for unit
    weights)."""
    if groups is None:  # Neyman-Pearson: the negatives' FPR
        neg = ~yes
        if w is None:  # (counts: a unit weight's sums, exactly, without the weights' vector)
            n = float(np.count_nonzero(neg))
            return [("FPR", {None: _counts(float(np.count_nonzero(neg & flagged)), n, n)})]
        return [
            ("FPR", {None: _counts(w[neg & flagged].sum(), w[neg].sum(), (w[neg] ** 2).sum())})
        ]
    # The groups coded once (see _group_codes; a comparison of every row per group and rate
    # took 14 ms of a 0.4 s fit on Adult by race, equalized odds), each sum then one
    # bincount over the cells (group, label).
    labels, codes = groups
    k2 = 2 * len(labels)
    cell = 2 * codes.astype(np.intp, copy=False) + yes
    if w is None:
        # Unit weights: one count over the cells (group, label, flagged) gives every sum
        # (rows, weight and squared weight are the rows, the hits the flagged ones), where
        # four weighted sums took 14.9 ms on 1e6 rows in two groups, this 3.3 ms.
        counts = np.bincount(2 * cell + flagged, minlength=2 * k2).reshape(-1, 2, 2)
        rows = counts.sum(axis=2).astype(float)
        return rate_counts(est, labels, rows, rows, rows, counts[:, :, 1].astype(float))
    table = [
        np.bincount(cell, weights=v, minlength=k2).reshape(-1, 2)
        for v in (np.ones(len(w)), w, w**2, w * flagged)
    ]
    return rate_counts(est, labels, *table)


def rate_counts(est, labels, rows, sizes, squares, hits):
    """``[(rate name, {group: (k, n)})]`` of the constrained rates from each cell's sums,
    arrays of shape ``(groups, 2)`` (column 1 the rows of the class, column 0 the others):
    its rows, their weight, squared weight and weight predicted in the class. A group under
    ``min_group_size`` rows in a rate is left out of it, as the fit leaves it out."""
    out = []
    for which in _PARITY[est.constraint]:
        cols = [1] if which == "y=1" else [0] if which == "y=0" else [0, 1]
        hit = hits[:, cols].sum(axis=1)
        if which == "error":  # the other rows flagged, the class's rows not
            hit = hits[:, 0] + sizes[:, 1] - hits[:, 1]
        n_in, size, square = (a[:, cols].sum(axis=1) for a in (rows, sizes, squares))
        counts = {
            labels[i]: _counts(hit[i], size[i], square[i])
            for i in range(len(labels))
            if n_in[i] >= est.min_group_size and size[i] > 0
        }
        if len(counts) >= 2:
            out.append((which, counts))
    return out


def _metric_interval(counts: dict) -> tuple[float, float, float]:
    """``(value, low, high)`` of a rate (one cell) or of a gap between groups' rates."""
    k, n = np.array(list(counts.values()), dtype=float).T
    lows, highs = _intervals(k, n)
    rates = k / n
    if len(counts) == 1:
        return float(rates[0]), float(lows[0]), float(highs[0])
    value = float(rates.max() - rates.min())
    high = float(highs.max() - lows.min())
    low = max(0.0, float(lows.max() - highs.min()))
    return value, low, high


def _supported(est) -> bool:
    if getattr(est, "calibration", None) is not None:
        return False
    if not hasattr(est, "constraint"):  # Neyman-Pearson
        return len(est.classes_) == 2
    form = getattr(est, "form", None)
    return est.constraint in _PARITY and form in (None, "difference")


def _group_codes(sensitive):
    """``(labels, codes)``: the sorted string keys of the groups of the sensitive features (a
    label's string; a row of several columns, their strings joined by "|") and each row's
    index into them, as ``np.unique`` of one key a row gives them.

    Each column is coded as fit codes it (:func:`~._groups._column_codes`: numbers counted,
    other labels hashed) and only its distinct labels made strings; the keys are joined per
    distinct group, not per row (1e6 integer groups took 0.6 s as a string a row, most of a
    fit's report on CSR 1e6 x 1e4 rows; the joins of Adult by race x sex's 32561 rows took
    0.14 s, more than ``LogisticRegression``'s whole fit there).
    """
    values = np.asarray(sensitive)
    if values.dtype.kind not in "biuf":
        values = np.asarray(sensitive, dtype=object)
    columns = values.reshape(len(values), -1).T
    names, codes = [], np.zeros(len(values), dtype=np.intp)
    for column in columns:
        labels, inverse = _column_codes(column)
        # As strings, in their order (labels equal as strings, e.g. 1 and 1.0, are one).
        uniques, as_string = np.unique(labels.astype(object).astype(str), return_inverse=True)
        names.append(uniques)
        codes = codes * len(uniques) + as_string.reshape(-1)[inverse]
    if len(names) == 1:
        return names[0], codes
    groups, codes = unique_codes(codes)
    parts = []
    for uniques in reversed(names):  # (the last column is the lowest digit of the codes)
        groups, digit = np.divmod(groups, len(uniques))
        parts.append(uniques[digit])
    keys = np.array(["|".join(row) for row in zip(*reversed(parts), strict=True)])
    keys, order = np.unique(keys, return_inverse=True)
    return keys, order.reshape(-1)[codes.reshape(-1)]


def assess_new_rows(est, X, y, sensitive=None, sample_weight=None) -> dict | None:
    """Set ``est.new_rows_`` (a dict, or None where not assessed) and warn once
    (:class:`NewRowsWarning`) where the training bound, met there, is unlikely to carry to
    new rows (a bound not met on the training rows is the fit's own warning's).

    What the fit's report left (:func:`rows_to_predict`) stands in for a read of the rows:
    its predictions and labels where it scored this very ``X``, the fit's group codes where
    it kept every row."""
    known = est.__dict__.pop("_new_rows_known", None) or {}
    est.__dict__.pop("_new_rows_input", None)  # (a fit whose steps never reported)
    est.new_rows_ = None
    if not _assessed(est, grouped=sensitive is not None):
        return None
    groups = None
    if hasattr(est, "constraint"):
        codes = known.get("codes")
        groups = _group_codes(sensitive) if codes is None else (known["labels"], codes)
    w = _relative_weights(sample_weight)
    if "predicted" in known:  # two classes: y01 == 1 is y == classes_[1]
        return judge(est, _class_cells(est, known["y01"] == 1, known["predicted"], groups, w))
    return judge(est, _cells(est, np.asarray(y), est.predict(X), groups, w))


def rows_to_predict(est, fitting, predicted=None) -> int:
    """The rows :func:`assess_new_rows` will predict after this fit (0 where it will not),
    for the fit's count of data passes, which its verdict quotes before the check runs.

    ``fit`` sets the rows it was given (``_new_rows_input``) on an in-memory fit; read once.
    ``fitting``: the fit's state after its report; ``predicted``: the report's predictions
    of ``fitting.X`` where they are ``predict``'s, bit for bit (None else, or with more
    than two classes). Where the fit kept every row, the check takes its group codes (not
    coded again) and, where ``fitting.X`` is the array given (:func:`same_array`), these
    predictions and the labels: it then reads no row (CPU, one thread: dense 1e6 x 20,
    demographic parity, 38.6 ms where it predicted every row and coded the groups again,
    3.6 ms so; Neyman-Pearson 31.3 -> 0.9 ms; Adult by race x sex 15.5 -> 0.7 ms)."""
    given = est.__dict__.pop("_new_rows_input", None)
    est.__dict__.pop("_new_rows_known", None)
    params = fitting.fit_params or {}
    if given is None or not _assessed(est, grouped=params.get("codes") is not None):
        return 0
    rows = _num_samples(given)
    if fitting.X.shape[0] != rows:  # rows of weight zero dropped: not the rows given
        return rows
    known = {"codes": params.get("codes"), "labels": params.get("labels")}
    if predicted is not None and same_array(fitting.X, given):
        known.update(predicted=predicted, y01=fitting.labels)
    est._new_rows_known = known
    return 0 if "predicted" in known else rows


def same_array(a, b) -> bool:
    """Whether ``a`` and ``b`` are one array: the same object, or ndarrays over the same
    memory with the same shape, strides and dtype (e.g. a memmap and the ndarray that
    validation made of it), whose products with ``coef_`` are then the same, bit for bit.

    Parameters
    ----------
    a, b : object
        Arrays (or other inputs) to compare.

    Returns
    -------
    bool
    """
    if a is b:
        return True
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    return (
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        and a.shape == b.shape
        and a.strides == b.strides
        and a.dtype == b.dtype
    )


def _assessed(est, grouped: bool) -> bool:
    # Fairness without groups has no constraint to judge.
    return _supported(est) and (not hasattr(est, "constraint") or grouped)


def summed_cells(est, y01, rows, sums, square_sums, hits, codes=None, labels=None) -> list:
    """:func:`_cells` of a binary fit from per-cell sums (a Dask fit's cells: each cell's
    label ``y01`` and group ``codes`` into ``labels``): its rows, their sample weight, its
    square and the weight predicted positive."""
    if len(est.classes_) != 2 or not _supported(est):
        return []
    if not hasattr(est, "constraint"):
        neg = y01 == 0
        return [("FPR", {None: _counts(hits[neg].sum(), sums[neg].sum(), square_sums[neg].sum())})]
    if codes is None:
        return []
    table = np.zeros((4, len(labels), 2))
    for i, v in enumerate((rows, sums, square_sums, hits)):
        np.add.at(table[i], (codes, y01.astype(np.intp)), v)
    return rate_counts(est, labels, *table)


def judge(est, cells) -> dict | None:
    """``new_rows_`` of the constrained rates' counts ``cells`` (see :func:`_cells`), and
    the warning where it is due."""
    est.new_rows_ = None
    if not cells:
        return None
    neyman_pearson = not hasattr(est, "constraint")
    bound = float(est.max_fpr_ if neyman_pearson else est.bound_)
    found = [(which, *_metric_interval(c), min(n for _, n in c.values())) for which, c in cells]
    which, value, low, high, _ = max(found, key=lambda f: f[3])
    smallest = min(f[4] for f in found)
    coef = np.asarray(est.coef_).ravel()
    params = int(np.count_nonzero(coef)) + np.size(getattr(est, "intercept_", 1.0))
    if not np.any(coef) and getattr(est, "constraint", None) != "error_rate_parity":
        # A model whose predictions do not depend on the row (the constant model a fit
        # can return): each constrained rate is 0 or 1 on any rows, as on the training
        # rows (an error rate is a share of the labels, which new rows sample): nothing
        # to warn of.
        low = high = value
    if neyman_pearson:
        # Its own warning on few negatives (fit's last step) speaks for their sampling.
        sampling = est._few_negatives_limit() is not None
    else:
        sampling = high > max(SAMPLING_FACTOR * bound, bound + 0.05)
    # (Only where the bound binds, its value within bound_tol of it, and the interval
    # reaches past it: under a loose bound the model is LogisticRegression's, and its
    # parameters do not fit the rates to the bound.)
    binding = neyman_pearson or value >= bound - est.bound_tol - 1e-12
    rare = params > PARAMS_PER_ROW * smallest and binding and high > bound
    est.new_rows_ = {
        "rate": which,
        "training_value": float(value),
        "interval": (low, high),
        "level": LEVEL,
        "bound": bound,
        "smallest_cell": float(smallest),
        "n_parameters": params,
        "few_rows": bool(sampling),
        "rare_features": bool(rare),
    }
    # Only a bound met on the training rows is said to be met there: on main afac9f1 a fit
    # at error-rate parity 0.02 that missed it (gap 0.33, its ConvergenceWarning said so)
    # warned too that "the bound 0.02 is met on the training rows (gap 0.33)".
    met = getattr(est, "bound_met_", True) is not False
    if met and ((rare and not (neyman_pearson and sampling)) or (sampling and not neyman_pearson)):
        warn(_message(est, est.new_rows_), NewRowsWarning)
    return est.new_rows_


def _message(est, info) -> str:
    name = type(est).__name__
    low, high = info["interval"]
    what = "FPR" if info["rate"] == "FPR" else f"{est.constraint} gap"
    if ", class " in info["rate"]:
        what += f" ({info['rate'].split(', ', 1)[1]})"
    causes = []
    if info["few_rows"]:
        causes.append(f"its smallest constrained cell holds {info['smallest_cell']:.4g} rows")
    if info["rare_features"]:
        causes.append(
            f"the model has {info['n_parameters']} parameters for {info['smallest_cell']:.4g} "
            "rows of a constrained cell, so it fits that cell's rates through features "
            "few of its rows hold and the training value is optimistic: expect more than "
            "the interval below, which counts the sampling of the rows alone"
        )
    if what == "FPR":
        knob, calibration = "a lower max_fpr", "umbrella"
    else:
        knob, calibration = "a tighter bound, merging small groups", "clopper-pearson"
    return (
        f"{name}: the bound {info['bound']:g} is met on the training rows ({what} "
        f"{info['training_value']:.3g}), but is unlikely to hold on new rows: "
        + "; ".join(causes)
        + f". Expected {what} on new rows: about {info['training_value']:.3g}, "
        f"{info['level']:.0%} interval [{low:.3g}, {high:.3g}] (new_rows_). To bound new "
        f'rows, fit with calibration="{calibration}" (a guarantee on held-out rows), or use '
        f"{knob}."
    )
