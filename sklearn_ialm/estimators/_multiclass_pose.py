"""What a fit on more than two classes poses: the rows' weights, the per-class rate
constraints of the estimator's bound (:func:`_spec`) and the multinomial problem on rows in
memory (:func:`memory_problem`).
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.class_weight import compute_class_weight

from .._warnings import warn
from ..problems import multinomial
from ..problems.multinomial import MultinomialProblem, Rate, cell_codes
from ._certificate_multiclass import MULTICLASS_KINDS as _KINDS
from ._class_params import _class_bounds, check_every_class_weighted
from ._scaling import _feature_scaling, training_moments

__all__ = ["NOT_YET", "memory_problem"]


NOT_YET = "is not available for more than two classes yet"


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


def _np_constraints(bounds):
    """Class ``k``'s error ``1 - P(pred k | y = k) <= alpha_k`` (one group, cells = labels)."""
    return [([(-1.0, Rate(k, [k]))], 1.0 - alpha) for k, alpha in bounds.items()], [
        f"error[{k}]" for k in bounds
    ]


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
        cons, names = _np_constraints(bounds)
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
    memory, in standard units (on the live columns only where :func:`_live_only` says)."""
    C = None if est.C is None else est.C * est._C_scale  # see _scaled_weights
    est._feature_moments = training_moments(X, sw)  # kept for the report (see _scaling)
    scale, center, live = _feature_scaling(
        X, sw / sw.sum(), est.fit_intercept, est._feature_moments
    )
    n_live = max(1, int(live.sum()))
    scale = scale * np.sqrt(n_live)
    kind, first = MultinomialProblem, (X,)
    if _live_only(X, live, K, est.fit_intercept):
        kind, first = LiveColumnsProblem, (X, live)
        scale, center = scale[live], None if center is None else center[live]
    return kind(
        *first, codes, K, sw, cell_codes(groups, codes, K), cons, C=C,
        fit_intercept=est.fit_intercept, scale=scale, center=center,
        n_cells=(int(groups.max()) + 1) * K, penalty_units=n_live,
    )  # fmt: skip


#: The most values of the live columns' copy of :class:`LiveColumnsProblem` (16 MB).
_LIVE_COPY_VALUES = 2_000_000


def _live_only(X, live, K, fit_intercept) -> bool:
    """Whether the fit's problem holds the live columns only: dense rows with a column that
    cannot move the scores (constant), whose copy without it is small, and a Hessian that
    is a matrix (whose factorisations cost the cube of its size; above
    ``_HESSIAN_MAX_PARAMS`` parameters the finish takes products, a read of the rows each)."""
    n_live = int(np.count_nonzero(live))
    small = X.shape[0] * n_live <= _LIVE_COPY_VALUES
    matrix = K * (n_live + int(fit_intercept)) <= multinomial._HESSIAN_MAX_PARAMS
    return isinstance(X, np.ndarray) and 0 < n_live < len(live) and small and matrix


class LiveColumnsProblem(MultinomialProblem):
    """A :class:`~sklearn_ialm.problems.multinomial.MultinomialProblem` on the live columns
    ``live`` of ``X`` (a copy of them), whose models are read and given on every column:
    :meth:`coef` puts zeros on the others, :meth:`point` drops them. A constant column's
    weights stay at zero in any fit (the ridge's optimum, no gradient of the data), yet
    their parameters made the finish's matrices larger: digits' 4 constant pixels of 64
    are 40 of 650 parameters, and their Cholesky factorisations and eigendecompositions
    cost the cube (per-class bound 0.02: 0.98 -> 0.85 s CPU on the live columns, the same
    passes and training log-loss).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The rows, every column.
    live : ndarray of bool, shape (d,)
        The columns the problem holds.
    *args, **kwargs
        :class:`~sklearn_ialm.problems.multinomial.MultinomialProblem`'s other arguments,
        ``scale`` and ``center`` those of the live columns.
    """

    def __init__(self, X, live, *args, **kwargs):
        self.live = np.asarray(live, dtype=bool)
        super().__init__(np.ascontiguousarray(X[:, self.live]), *args, **kwargs)

    @property
    def n_columns(self) -> int:
        """The columns of the rows as given (``d`` counts the live ones)."""
        return len(self.live)

    def coef(self, x):
        """``(coef, intercept)`` of ``x`` on every column: shapes (K, n_columns) and (K,)."""
        W, b = super().coef(x)
        out = np.zeros((self.K, len(self.live)))
        out[:, self.live] = W
        return out, b

    def point(self, coef, intercept):
        """The parameters ``x`` of a model ``(coef, intercept)`` given on every column."""
        coef = np.asarray(coef, dtype=float).reshape(self.K, len(self.live))
        return super().point(coef[:, self.live], intercept)
