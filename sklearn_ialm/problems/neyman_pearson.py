"""The Neyman-Pearson model of the paper (Section 5.2).

``min_x mean_{positives} phi(a.x)  s.t.  mean_{negatives} phi(-a.x) <= max_fpr`` with the
sigmoid loss ``phi(u) = 1 / (1 + exp(u))``: the soft false-negative rate is minimised under a
bound on the soft false-positive rate, ``phi(-a.x) = sigmoid(a.x)`` being the soft positive
prediction of a negative row.
"""

from __future__ import annotations

import numpy as np

from .linear import LinearProblem
from .losses import Logistic, SigmoidLoss

__all__ = ["neyman_pearson_logistic_problem", "neyman_pearson_problem"]


def neyman_pearson_problem(
    X,
    y,
    *,
    max_fpr,
    fit_intercept=False,
    sample_weight=None,
    smoothness=None,
    feature_scale=1.0,
):
    """Build the Neyman-Pearson problem.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n, d)
    y : ndarray of shape (n,)
        Labels in {0, 1}; 1 is the positive class.
    max_fpr : float in (0, 1)
        Bound on the soft false-positive rate (the paper's ``c_hat``).
    fit_intercept : bool, default=False
    sample_weight : ndarray of shape (n,), optional
        Row weights; both soft rates become weighted means.
    smoothness : (L0, LJ), optional
    feature_scale : float or "auto", default=1.0
        See :class:`LinearProblem`; ``"auto"`` makes ``tol`` independent of the scale of ``X``.

    Returns
    -------
    LinearProblem
        With ``paper_settings``, the paper's Section 5.2 values that
        ``stoc_ialm(problem, preset="paper")`` uses: ``smoothness=(0.5, 0.5)`` (the paper's
        ``(beta + 1) / 2``, for rows of unit norm as the paper preprocesses them),
        ``sigma=2``, ``batch_size=10`` (the paper's spambase value) and ``count_scale=1``
        (see :attr:`~sklearn_ialm.solver.IALMResult.n_paper_passes`).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import expit
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm.problems import neyman_pearson_problem
    >>> from sklearn_ialm.solver import stoc_ialm
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> problem = neyman_pearson_problem(X, y, max_fpr=0.2, fit_intercept=True)
    >>> problem.n_objective_samples, problem.n_constraint_samples  # positives, negatives
    (151, 149)
    >>> result = stoc_ialm(problem, max_passes=1000, random_state=0)
    >>> coef, intercept = problem.coef(result.x)
    >>> soft_fpr = expit(X[y == 0] @ coef + intercept).mean()
    >>> bool(result.converged), bool(soft_fpr <= 0.2 + 1e-2)
    (True, True)
    """
    y = np.asarray(y)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y != 1)
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    wn = w[neg] / w[neg].mean()
    problem = LinearProblem(
        X,
        np.ones(len(pos)),
        SigmoidLoss(),
        X,
        wn[:, None],
        np.array([-float(max_fpr)]),
        objective_weights=w[pos],
        inequality=True,
        fit_intercept=fit_intercept,
        smoothness=smoothness,
        feature_scale=feature_scale,
        constraint_names=["false_positive_rate"],
        rows_objective=pos,
        rows_constraint=neg,
    )
    # Section 5.2: beta_k = 2^k, the smoothness constant (beta_k + 1) / 2, i.e. L0 = LJ = 1/2
    # (the sigmoid loss on rows of unit norm), minibatch 10 on spambase (30 on madelon and
    # gisette: pass batch_size=30 there). stoc_ialm(preset="paper") reads them.
    problem.paper_settings = dict(smoothness=(0.5, 0.5), sigma=2.0, batch_size=10, count_scale=1.0)
    return problem


def neyman_pearson_logistic_problem(
    X,
    y,
    *,
    negative_weight=1.0,
    fit_intercept=False,
    sample_weight=None,
    smoothness=None,
    feature_scale=1.0,
):
    """Logistic regression with the negatives weighted: the Neyman-Pearson surrogate that ranks.

    ``min_x mean_i u_i log(1 + exp(-b_i a_i.x))`` over all rows, ``b_i = +-1``, with
    ``u_i = negative_weight`` on the negatives and 1 on the positives (times
    ``sample_weight``). It is the Lagrangian of a bound on the negatives' logistic loss: a
    larger weight lowers the false-positive rate of ``score > 0``. The estimator chooses the
    weight so that this rate is near ``max_fpr`` and then sets the threshold on the training
    negatives; measured against the paper's sigmoid-loss model (``git log --
    benchmarks/results/np_model.md``), the logistic score ranks better near the operating
    point.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n, d)
    y : ndarray of shape (n,)
        Labels in {0, 1}; 1 is the positive class.
    negative_weight : float > 0, default=1.0
    fit_intercept : bool, default=False
    sample_weight : ndarray of shape (n,), optional
    smoothness : (L0, LJ), optional
    feature_scale : float or "auto", default=1.0

    Returns
    -------
    LinearProblem
        Without constraints; its constraint rows are all rows (for scoring them).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm.problems import neyman_pearson_logistic_problem
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> problem = neyman_pearson_logistic_problem(X, y, negative_weight=4.0)
    >>> problem.n_constraints, problem.n_objective_samples
    (0, 300)
    """
    if not (np.isfinite(negative_weight) and negative_weight > 0):
        raise ValueError(f"negative_weight must be a number > 0, got {negative_weight!r}.")
    y = np.asarray(y)
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    # Weight 1 leaves w as it is: shared, not copied (an n-vector the fit keeps).
    u = w if negative_weight == 1.0 else w * np.where(y == 1, 1.0, float(negative_weight))
    return LinearProblem(
        X,
        np.where(y == 1, 1.0, -1.0),
        Logistic(),
        X,
        np.zeros((len(y), 0)),
        np.zeros(0),
        objective_weights=u,
        fit_intercept=fit_intercept,
        smoothness=smoothness,
        feature_scale=feature_scale,
    )
