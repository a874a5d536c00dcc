"""The fairness-constrained model of the paper (Section 5.1) and its relatives.

``min_x mean_D loss(b a.x)  s.t.  one constraint per protected group on the soft positive
prediction p(a) = sigmoid(a.x)`` over a (possibly unlabelled) set ``S``:

``positive_share`` (the paper's, eq. (fair))
    ``sum_{S_g} p >= bound * sum_S p``: the group receives at least a share ``bound`` of all
    positive predictions. Written as the average over ``S`` of
    ``(bound - 1[j in S_g]) p_j <= 0``, which has the paper's feasible set.
``disparate_impact``
    ``mean_{S_g} p >= bound * mean_S p`` (the four-fifths rule at ``bound = 0.8``).
``demographic_parity``
    ``|mean_{S_g} p - mean_{S \\ S_g} p| <= bound``: two inequalities per group.
"""

from __future__ import annotations

import numpy as np

from .linear import LinearProblem
from .losses import LOSSES, TruncatedLogistic

__all__ = ["CONSTRAINTS", "fairness_problem"]

CONSTRAINTS = ("positive_share", "disparate_impact", "demographic_parity")


def _constraint_rows(groups, weights, protected, constraint, bound):
    """Per-row weights ``W`` (n, m), offsets and names of the constraints."""
    n = len(groups)
    total = weights.sum()
    cols, offsets, names = [], [], []
    for g in protected:
        member = groups == g
        wg = weights[member].sum()
        if wg <= 0:
            raise ValueError(f"Protected group {g!r} has no members (or zero total weight).")
        if constraint == "positive_share":
            cols.append(n * weights * (bound - member) / total)
            offsets.append(0.0)
            names.append(f"positive_share[{g}]")
        elif constraint == "disparate_impact":
            cols.append(n * weights * (bound / total - member / wg))
            offsets.append(0.0)
            names.append(f"disparate_impact[{g}]")
        else:
            rest = weights[~member].sum()
            if rest <= 0:
                raise ValueError(f"demographic_parity needs rows outside group {g!r}.")
            diff = n * weights * (member / wg - (~member) / rest)
            cols += [diff, -diff]
            offsets += [-bound, -bound]
            names += [f"demographic_parity[{g}]<=", f"demographic_parity[{g}]>="]
    return np.column_stack(cols), np.array(offsets), names


def fairness_problem(
    X,
    y,
    X_constraint,
    groups,
    *,
    bound,
    constraint="positive_share",
    protected=None,
    loss="truncated_logistic",
    truncation=2.0,
    fit_intercept=False,
    sample_weight=None,
    constraint_sample_weight=None,
    smoothness=None,
    feature_scale=1.0,
    constraint_scale=1.0,
):
    """Build the fairness-constrained problem.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n, d)
        Labelled rows ``D`` of the objective.
    y : ndarray of shape (n,)
        Labels in {0, 1} (1 is the positive class).
    X_constraint : {ndarray, sparse matrix} of shape (n_s, d)
        Rows ``S`` of the constraints (may be ``X`` itself).
    groups : ndarray of shape (n_s,)
        Group label of each row of ``S``.
    bound : float
        The constraint's bound (the paper's ``c``).
    constraint : {"positive_share", "disparate_impact", "demographic_parity"}
    protected : sequence, optional
        Groups that get a constraint (all groups by default; an empty sequence gives the
        unconstrained model).
    loss : {"truncated_logistic", "logistic"}
    truncation : float, default=2.0
        ``alpha`` of the truncated logistic loss.
    fit_intercept : bool, default=False
    sample_weight, constraint_sample_weight : ndarray, optional
        Row weights on ``D`` and on ``S``; group means become weighted means.
    smoothness : (L0, LJ), optional
    constraint_scale : float, default=1.0
        The constraints are divided by this positive constant (same feasible set). The
        ``positive_share`` and ``disparate_impact`` constraints are in units of
        ``mean_S p * (bound - share)``: dividing by a typical positive rate puts their
        residuals, and so ``tol``, in the units of the bound.
    feature_scale : float or "auto", default=1.0
        See :class:`LinearProblem`; ``"auto"`` makes ``tol`` independent of the scale of ``X``.

    Returns
    -------
    LinearProblem

    Examples
    --------
    The paper's constraint on a small data set: group 1 receives at least 20 % of the soft
    positive predictions.

    >>> import numpy as np
    >>> from scipy.special import expit
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm.problems import fairness_problem
    >>> from sklearn_ialm.solver import stoc_ialm
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> groups = (X[:, 2] < -0.5).astype(int)
    >>> problem = fairness_problem(X, y, X, groups, bound=0.2, protected=[1],
    ...                            fit_intercept=True)
    >>> problem.constraint_names
    ['positive_share[1]']
    >>> result = stoc_ialm(problem, max_passes=1000, random_state=0)
    >>> coef, intercept = problem.coef(result.x)
    >>> p = expit(X @ coef + intercept)
    >>> bool(result.converged), round(float(p[groups == 1].sum() / p.sum()), 2)
    (True, 0.21)
    """
    if constraint not in CONSTRAINTS:
        raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {constraint!r}.")
    if loss not in ("truncated_logistic", "logistic"):
        raise ValueError(f"loss must be 'truncated_logistic' or 'logistic', got {loss!r}.")
    groups = np.asarray(groups)
    protected = np.unique(groups) if protected is None else list(protected)
    cw = (
        np.ones(X_constraint.shape[0])
        if constraint_sample_weight is None
        else np.asarray(constraint_sample_weight, dtype=float)
    )
    if not (np.isfinite(constraint_scale) and constraint_scale > 0):
        raise ValueError(f"constraint_scale must be a number > 0, got {constraint_scale!r}.")
    if len(protected):
        W, offset, names = _constraint_rows(groups, cw, protected, constraint, float(bound))
        W, offset = W / constraint_scale, offset / constraint_scale
    else:  # no protected group: the unconstrained model
        W, offset, names = np.zeros((X_constraint.shape[0], 0)), np.zeros(0), []
    loss_obj = TruncatedLogistic(truncation) if loss == "truncated_logistic" else LOSSES[loss]()
    return LinearProblem(
        X,
        np.where(np.asarray(y) == 1, 1.0, -1.0),
        loss_obj,
        X_constraint,
        W,
        offset,
        objective_weights=sample_weight,
        inequality=True,
        fit_intercept=fit_intercept,
        smoothness=smoothness,
        feature_scale=feature_scale,
        constraint_names=names,
    )
