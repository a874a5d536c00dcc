"""The fairness-constrained model of the paper (Section 5.1) and its relatives.

``min_x mean_D loss(b a.x)  s.t.  fairness constraints on the soft positive prediction
p(a) = sigmoid(a.x)`` over a (possibly unlabelled) set ``S``. Every constraint is linear in
the per-row predictions, ``c_k = mean_S W[j, k] p_j + offset_k <= 0``, so that the same
``W`` and ``offset`` evaluated at hard predictions ``1[a.x > 0]`` give the constraint on the
classifier itself.

The paper's constraint and a one-sided relative:

``positive_share`` (the paper's, eq. (fair))
    ``sum_{S_g} p >= bound * sum_S p``: the group receives at least a share ``bound`` of all
    positive predictions. Written as the average over ``S`` of
    ``(bound - 1[j in S_g]) p_j <= 0``, which has the paper's feasible set.
``disparate_impact``
    ``mean_{S_g} p >= bound * mean_S p``: each protected group's selection rate is at least
    ``bound`` times the overall one (the four-fifths rule at ``bound = 0.8``). This keeps its
    meaning from earlier releases; it is one-sided and relative to the overall rate, so it
    is not fairlearn's ``demographic_parity_ratio`` (that is ``demographic_parity`` with
    ``form="ratio"``).

The parity kinds match fairlearn's metrics (``method="between_groups"``): one group-level
rate per group, and the metric is the largest gap (``form="difference"``: largest minus
smallest rate, at most ``bound``) or the smallest ratio (``form="ratio"``: smallest over
largest rate, at least ``bound``) between groups:

``demographic_parity``
    selection rate ``P[pred = 1 | g]``: fairlearn's ``demographic_parity_difference`` and
    ``demographic_parity_ratio``.
``true_positive_rate_parity`` (equal opportunity)
    ``P[pred = 1 | g, y = 1]``: ``equal_opportunity_difference`` / ``_ratio``.
``false_positive_rate_parity``
    ``P[pred = 1 | g, y = 0]``: ``false_positive_rate_difference`` / ``_ratio``.
``equalized_odds``
    both of the above, each within the bound: ``equalized_odds_difference`` / ``_ratio``.
``error_rate_parity``
    ``P[pred != y | g]``: ``zero_one_loss_difference`` / ``_ratio``.

Rates are weighted by the constraint rows' sample weights. With two or three groups (or some
groups protected), "largest gap at most ``bound``" is the set of pairwise inequalities
``rate_a - rate_b <= bound`` for every ordered pair of groups ``(a, b)``, and "smallest ratio
at least ``bound``" is ``bound * rate_b - rate_a <= 0`` for every ordered pair, so ``k``
groups give ``k (k - 1)`` constraints (twice that for ``equalized_odds``, one set per rate).
With four or more groups, all constrained, each rate is a band of free level instead:
``t <= rate_g <= t + bound`` (or ``bound t <= rate_g <= t``), ``2 k`` constraints and one
level ``t`` per rate, which the solver minimises over. Difference constraints are in units
of the rates (the bound's units); ratio constraints in units of ``rate_b * (bound - rate_a /
rate_b)``, a rate times the ratio's shortfall. With ``protected`` groups given, only the pairs that
involve at least one protected group are constrained: with all groups protected (the
default), or with two groups and one of them protected, that is fairlearn's metric.

The error rate is linear in the prediction as well: ``1[pred != y] = y + (1 - 2 y) pred``.
So for every kind and form, the constraints are all ``<= 0`` at hard predictions exactly
when :func:`fairness_metric` of those predictions meets the bound, with one exception: a
ratio is undefined (fairlearn returns ``nan``) when every rate involved is zero, while the
constraints ``0 <= 0`` hold.
"""

from __future__ import annotations

import numpy as np

from ._fairness_constraints import _constraints
from ._fairness_kinds import CONSTRAINTS, FORMS, _check_form
from ._fairness_metric import fairness_metric
from .linear import LinearProblem
from .losses import LOSSES, TruncatedLogistic

__all__ = ["CONSTRAINTS", "FORMS", "fairness_metric", "fairness_problem"]


def _check_arguments(constraint, form, loss, bound, constraint_scale):
    """``(form, bound)``: the resolved form and the bound as a float, after checking the
    arguments that do not depend on the data."""
    form = _check_form(constraint, form)
    if loss not in ("truncated_logistic", "logistic"):
        raise ValueError(f"loss must be 'truncated_logistic' or 'logistic', got {loss!r}.")
    bound = float(bound)
    if not np.isfinite(bound):
        raise ValueError(f"bound must be a finite number, got {bound!r}.")
    if form == "difference" and bound < 0:
        raise ValueError(f"bound must be >= 0 for form='difference', got {bound!r}.")
    if form == "ratio" and constraint != "disparate_impact" and not 0 <= bound <= 1:
        raise ValueError(f"bound must be in [0, 1] for form='ratio', got {bound!r}.")
    if not (np.isfinite(constraint_scale) and constraint_scale > 0):
        raise ValueError(f"constraint_scale must be a number > 0, got {constraint_scale!r}.")
    return form, bound


def _paper_settings(constraint, loss, truncation):
    """The paper's Section 5.1 settings for its model (``LinearProblem.paper_settings``), or
    ``None`` for other models."""
    if constraint == "positive_share" and loss == "truncated_logistic" and truncation == 2.0:
        # Section 5.1: beta_k = 2.5^k, the smoothness constant 10 + beta_k, minibatch 30; the
        # paper's tables count half of the samples drawn from D and S (a9a: 0.069 per 50
        # iterations). stoc_ialm(preset="paper") reads them.
        return dict(smoothness=(10.0, 1.0), sigma=2.5, batch_size=30, count_scale=0.5)
    return None


def fairness_problem(
    X,
    y,
    X_constraint,
    groups,
    *,
    bound: float,
    constraint: str = "positive_share",
    form: str | None = None,
    protected=None,
    y_constraint=None,
    loss: str = "truncated_logistic",
    truncation: float = 2.0,
    fit_intercept: bool = False,
    sample_weight=None,
    constraint_sample_weight=None,
    smoothness: tuple[float, float] | None = None,
    feature_scale: float | str = 1.0,
    constraint_scale: float = 1.0,
    balance_groups: bool = False,
) -> LinearProblem:
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
        The constraint's bound (the paper's ``c``): a share or ratio for
        ``positive_share``, ``disparate_impact`` and ``form="ratio"`` (in [0, 1] for the
        latter), the largest gap between two groups' rates for ``form="difference"``
        (>= 0).
    constraint : str, default="positive_share"
        One of :data:`CONSTRAINTS`; see the module docstring for each kind's rate and
        fairlearn metric.
    form : {"difference", "ratio"} or None, default=None
        For the parity kinds: bound the largest gap between groups (``None`` means this)
        or the smallest ratio. ``positive_share`` takes only ``None`` and
        ``disparate_impact`` ``None`` or ``"ratio"``.
    protected : sequence, optional
        ``positive_share``/``disparate_impact``: the groups that get a constraint. Parity
        kinds: the pairs of groups that involve at least one of these are constrained. All
        groups by default; an empty sequence gives the unconstrained model.
    y_constraint : ndarray of shape (n_s,), optional
        0/1 labels of ``S``, read by the kinds that condition on or compare with the label
        (``true_positive_rate_parity``, ``false_positive_rate_parity``, ``equalized_odds``,
        ``error_rate_parity``). Defaults to ``y`` when ``X_constraint is X``.
    loss : {"truncated_logistic", "logistic"}
    truncation : float, default=2.0
        ``alpha`` of the truncated logistic loss.
    fit_intercept : bool, default=False
    sample_weight, constraint_sample_weight : ndarray, optional
        Row weights on ``D`` and on ``S``; group rates become weighted rates.
    smoothness : (L0, LJ), optional
    constraint_scale : float, default=1.0
        The constraints are divided by this positive constant (same feasible set). The
        ``positive_share`` and ``disparate_impact`` constraints are in units of
        ``mean_S p * (bound - share)``: dividing by a typical positive rate puts their
        residuals, and so ``tol``, in the units of the bound. Parity differences are
        already in the bound's units.
    balance_groups : bool, default=False
        For the parity kinds, with four or more groups (a band) or a group under 40 % of
        an equal share, draw the constraint minibatches with every group about equally
        often: the rows of a
        group of ``n_g`` rows are listed ``r_g = max(1, round(n_s / (k n_g)))`` times among
        the constraint rows, each copy with ``1 / r_g`` of the row's weight, so every
        constraint value is unchanged while a group of a hundred rows is no longer a
        lottery in a minibatch of thirty (the penalty gradient's variance falls with it).
        On that list every constraint minibatch is then drawn by stratum (the group, or
        group and class for the kinds that condition on the label): at least two rows of
        each, weighted back by its share (``LinearProblem(constraint_strata=...)``).
    feature_scale : float or "auto", default=1.0
        See :class:`LinearProblem`; ``"auto"`` makes ``tol`` independent of the scale of ``X``.

    Returns
    -------
    LinearProblem
        Its ``constraint_names`` say the kind, the group or pair and the direction:
        ``"positive_share[g]"``, ``"demographic_parity[a-b]<="`` (``rate_a - rate_b <=
        bound``), ``"demographic_parity[a/b]>="`` (``rate_a / rate_b >= bound``),
        ``"equalized_odds.tpr[a-b]<="``, ...
        ``paper_settings`` holds the paper's Section 5.1 values for its model (the
        ``positive_share`` constraint with the truncated logistic loss, ``truncation=2``):
        ``smoothness=(10, 1)`` (the paper's ``10 + beta``), ``sigma=2.5``, ``batch_size=30``
        and ``count_scale=0.5`` (see
        :attr:`~sklearn_ialm.solver.IALMResult.n_paper_passes`), which
        ``stoc_ialm(problem, preset="paper")`` uses; ``None`` for other models.

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
    >>> share = float(p[groups == 1].sum() / p.sum())
    >>> bool(result.converged), share >= 0.2 - 1e-2  # the bound, within stoc_ialm's tol
    (True, True)

    Equal opportunity as fairlearn measures it, true positive rates within 0.1 of each
    other: one inequality per ordered pair of groups.

    >>> problem = fairness_problem(X, y, X, groups, bound=0.1,
    ...                            constraint="true_positive_rate_parity")
    >>> problem.constraint_names
    ['true_positive_rate_parity[0-1]<=', 'true_positive_rate_parity[1-0]<=']
    """
    form, bound = _check_arguments(constraint, form, loss, bound, constraint_scale)
    W, offset, names, levels, rows_constraint, strata, groups_of_w = _constraints(
        X, y, X_constraint, groups, protected, y_constraint, constraint_sample_weight,
        constraint, form, bound, constraint_scale, balance_groups,
    )  # fmt: skip
    loss_obj = TruncatedLogistic(truncation) if loss == "truncated_logistic" else LOSSES[loss]()
    problem = LinearProblem(
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
        levels=levels,
        rows_constraint=rows_constraint,
        constraint_strata=strata,
        weight_groups=groups_of_w,
    )
    problem.paper_settings = _paper_settings(constraint, loss, truncation)
    return problem
