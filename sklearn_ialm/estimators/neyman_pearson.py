"""Neyman-Pearson classification: the fewest missed positives at a bounded false-positive rate."""

from __future__ import annotations

from numbers import Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils._param_validation import Interval

from ..problems import neyman_pearson_problem
from ._base import BaseIALMClassifier, MatrixLike

__all__ = ["NeymanPearsonClassifier"]


class NeymanPearsonClassifier(BaseIALMClassifier):
    """Linear classifier that minimises false negatives under a false-positive-rate bound.

    The model of the paper (Section 5.2), fitted by Stoc-iALM with PStorm: with the score
    ``s(x) = x @ coef_.T + intercept_`` and the soft positive prediction
    ``p(x) = sigmoid(s(x))``,

    ``min  mean over positives of (1 - p)   s.t.   mean over negatives of p <= max_fpr``,

    i.e. the soft false-negative rate is minimised subject to the soft false-positive rate on
    the training negatives being at most ``max_fpr``. The positive class is ``classes_[1]``.
    Binary classification only.

    Parameters
    ----------
    max_fpr : float in (0, 1), default=0.2
        Bound on the soft false-positive rate on the training negatives. The hard rate it
        stands for (predictions thresholded at 0.5) is reported as ``train_fpr_``.
    fit_intercept : bool, default=True
        Whether to fit an intercept. Without one a bound below the score-0 rate of 0.5 may
        be unreachable.
    tol : float, default=1e-2
        The ``eps`` of the eps-KKT stopping rule: the run stops when the primal and dual
        residuals of the slack reformulation, evaluated on all training rows, are both
        ``<= tol``.
    beta0 : float, default=1.0
        Initial penalty of the augmented Lagrangian.
    sigma : float, default=2.5
        Growth factor of the penalty, ``beta_k = beta0 * sigma**k``; must be > 1.
    batch_size : int, default=30
        Minibatch size of the stochastic gradients (at least 2).
    max_passes : float, default=100.0
        Budget in data passes (per-sample evaluations divided by the number of training
        rows). A run that spends it before reaching ``tol`` ends with a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    preset : {"default", "paper"}, default="default"
        Named solver settings (:data:`sklearn_ialm.solver.PRESETS`): ``"default"`` is the
        best measured, ``"paper"`` the paper's Section 5 reading.
    n_seeds : int, default=1
        Independent runs from seeds spawned from ``random_state``. The model kept is the
        lowest objective among the runs that met ``tol``; if none did, the run with the
        smallest ``max(primal_residual, dual_residual)``.
    n_jobs : int, default=None
        Parallel runs of the seeds through :class:`joblib.Parallel`. ``None`` means 1 unless
        in a :func:`joblib.parallel_config` context. Results do not depend on ``n_jobs``.
    random_state : int, RandomState instance or None, default=None
        Seeds the minibatch sampling. An int gives the same model on every call, for any
        ``n_jobs``.
    warm_start : bool, default=False
        Start from the weights, multipliers and slacks of the previous fit instead of from
        zero (the penalty schedule restarts at ``beta0``).
    verbose : int, default=0
        ``> 0`` prints one line per outer iteration of the solver.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features)
        Weights of the score.
    intercept_ : ndarray of shape (1,)
        Intercept of the score (0 when ``fit_intercept=False``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when ``X`` has string column names.
    multipliers_ : ndarray of shape (1,)
        Lagrange multiplier of the false-positive-rate constraint (in the solver's scaling,
        ``y + beta (c + s)``, the one that certifies the dual residual).
    constraint_values_ : ndarray of shape (1,)
        The soft false-positive rate on the training negatives (the optimised quantity, to be
        compared with ``max_fpr``), weighted by ``sample_weight``.
    hard_constraint_values_ : ndarray of shape (1,)
        The same rate with hard predictions (score > 0).
    train_soft_fpr_ : float
        ``constraint_values_[0]``.
    train_fpr_ : float
        ``hard_constraint_values_[0]``.
    objective_ : float
        The soft false-negative rate on the training positives at the returned point.
    primal_residual_, dual_residual_ : float
        Residuals of the stopping rule at the returned point.
    kkt_primal_residual_, kkt_dual_residual_ : float
        Residuals of the original inequality problem at the returned point, with the optimal
        nonnegative multiplier (the paper's eq. (opt-dual)): the violation ``||[c]_+||`` and
        the stationarity.
    converged_ : bool
        Whether both residuals are ``<= tol``.
    n_iter_ : int
        Inner (PStorm) iterations.
    n_outer_iter_ : int
        Outer (augmented Lagrangian) iterations.
    n_data_passes_ : float
        Per-sample evaluations divided by the number of training rows (with nonzero weight).
    history_ : dict of ndarray
        One entry per evaluation of the stopping rule, at least ``data_passes``,
        ``primal_residual``, ``dual_residual``, ``constraint`` (largest constraint value,
        ``soft FPR - max_fpr``), ``objective`` and ``beta``.
    seeds_ : list of dict
        When ``n_seeds > 1``: one record per run with ``seed``, ``converged``,
        ``primal_residual``, ``dual_residual``, ``n_data_passes``, ``objective`` and
        ``selected``. ``stoc_ialm(problem, random_state=seed)`` replays a run.

    See Also
    --------
    FairLogisticClassifier : Logistic model under group-fairness constraints.
    sklearn.linear_model.LogisticRegression : The unconstrained logistic model.
    sklearn_ialm.solver.stoc_ialm : The solver, on problem objects.

    Notes
    -----
    ``sample_weight`` weights the positives' mean in the objective and the negatives' mean in
    the constraint. There is no ``class_weight``: each class appears in one term only, as a
    normalised mean, so a per-class weight would have no effect; the trade-off between the
    two error rates is set by ``max_fpr``. Rows with zero weight are dropped before fitting.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm import NeymanPearsonClassifier
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> clf = NeymanPearsonClassifier(max_fpr=0.2, max_passes=1000, random_state=0)
    >>> clf = clf.fit(X, y)
    >>> bool(clf.converged_), bool(clf.train_soft_fpr_ <= 0.2 + clf.tol)
    (True, True)
    >>> bool(clf.train_fpr_ <= 0.2)
    True
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: dict = {
        **BaseIALMClassifier._parameter_constraints,
        "max_fpr": [Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(
        self,
        *,
        max_fpr=0.2,
        fit_intercept=True,
        tol=1e-2,
        beta0=1.0,
        sigma=2.5,
        batch_size=30,
        max_passes=100.0,
        preset="default",
        n_seeds=1,
        n_jobs=None,
        random_state=None,
        warm_start=False,
        verbose=0,
    ):
        self.max_fpr = max_fpr
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.beta0 = beta0
        self.sigma = sigma
        self.batch_size = batch_size
        self.max_passes = max_passes
        self.preset = preset
        self.n_seeds = n_seeds
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    def fit(
        self, X: MatrixLike, y: ArrayLike, *, sample_weight: ArrayLike | None = None
    ) -> NeymanPearsonClassifier:
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; sparse input is converted to CSR, never densified.
        y : array-like of shape (n_samples,)
            Binary labels; ``classes_[1]`` (the larger label) is the positive class.
        sample_weight : array-like of shape (n_samples,), default=None
            Nonnegative row weights; both soft rates become weighted means.

        Returns
        -------
        self : NeymanPearsonClassifier
        """
        return self._fit(X, y, sample_weight)

    def _build_problem(self, X, y01, sample_weight, fit_params):
        problem = neyman_pearson_problem(
            X,
            y01,
            max_fpr=self.max_fpr,
            fit_intercept=self.fit_intercept,
            sample_weight=sample_weight,
        )
        return problem, None

    def _constraint_report(self, proba, y01, sample_weight, context):
        neg = y01 == 0
        return np.array([np.average(proba[neg], weights=sample_weight[neg])])

    def _set_report_attributes(self, context):
        self.train_soft_fpr_ = float(self.constraint_values_[0])
        self.train_fpr_ = float(self.hard_constraint_values_[0])

    def _violation_hint(self, context):
        return (
            f"a soft false-positive rate <= max_fpr={self.max_fpr:g} may be unreachable "
            f"(soft FPR at the end: {self.constraint_values_[0]:.3g})"
        )
