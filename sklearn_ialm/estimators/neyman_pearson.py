"""Neyman-Pearson classification: the fewest missed positives at a bounded false-positive rate."""

from __future__ import annotations

from numbers import Integral, Real

from numpy.typing import ArrayLike
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions

from ._base import BaseIALMClassifier, MatrixLike
from ._fit import fit
from ._neyman_pearson_guarantee import NeymanPearsonGuarantee
from ._neyman_pearson_hooks import NeymanPearsonHooks
from ._neyman_pearson_predict import NeymanPearsonPrediction
from ._rows import align_rows
from ._stream import partial_fit as stream_partial_fit
from ._stream import stream_method

__all__ = ["NeymanPearsonClassifier"]


class NeymanPearsonClassifier(
    NeymanPearsonHooks, NeymanPearsonGuarantee, NeymanPearsonPrediction, BaseIALMClassifier
):
    """Linear classifier that minimises false negatives under a false-positive-rate bound.

    With the score ``s(x) = x @ coef_.T + intercept_``, :meth:`predict` says positive
    (``classes_[1]``) where ``s(x) > threshold_``, and the false-positive rate of
    :meth:`predict` on the training negatives is the largest that ``max_fpr`` allows: the
    bound holds on the predictions users count, and the budget is spent (up to ties among
    the scores).

    The score is fitted by Stoc-iALM with PStorm. ``loss="logistic"`` (the default): a
    logistic regression whose negatives carry a weight chosen so that its own boundary
    ``s = 0`` flags about ``max_fpr`` of the training negatives, where its ranking matters
    (``negative_weight_``; the Lagrangian of a bound on the negatives' loss). Measured
    against the paper's model on spambase, a9a, breast cancer and the anchor task, it ranks
    better at the operating point (``git log -- benchmarks/results/np_model.md``).
    ``loss="sigmoid"``: the model of the paper (Section 5.2), with ``p(x) = sigmoid(s(x))``,

    ``min  mean over positives of (1 - p)   s.t.   mean over negatives of p <= max_fpr``,

    the soft false-negative rate under a bound on the soft false-positive rate; with
    ``rate="soft"`` the threshold stays at 0 and the bound is on that soft rate.

    That bound is on the training data. With ``calibration="umbrella"`` it also holds on new
    data with a stated probability: a share of the negatives is held out, the model is
    trained on the rest, and the decision threshold ``threshold_`` is the order statistic of
    the held-out negative scores chosen by the NP umbrella rule (Tong, Feng & Li, 2018), so
    that over the draw of the training data

    ``P(population false-positive rate of predict > max_fpr) <= violation_bound_ <= delta``

    for any distribution of the data (the held-out negatives must be independent draws from
    the population of negatives the classifier will meet).

    Parameters
    ----------
    max_fpr : float in (0, 1) or None, default=None
        Bound on the false-positive rate of :meth:`predict` on the training negatives
        (``train_fpr_``; with ``rate="soft"``, on the soft rate). With
        ``calibration="umbrella"``, also the bound ``alpha`` of the guarantee on the
        population false-positive rate. ``None``: 0.2 (``max_fpr_``), unless
        ``max_class_error`` sets the bound. A two-class bound: with more than two classes
        a ``max_fpr`` set raises a ``ValueError`` (bound class errors with
        ``max_class_error``).
    max_class_error : dict or None, default=None
        Bounds on class errors, ``{class label: alpha}`` with ``alpha`` in (0, 1): the share
        of the training rows of that class that :meth:`predict` assigns to another class is
        at most ``alpha`` (``train_class_errors_``), the overall cross-entropy minimised
        (Tian and Feng's multi-class Neyman-Pearson classification). Needed, and read, when
        ``y`` has more than two classes (a multinomial model; see the user guide's
        "More than two classes"). With two classes, ``{negative label: alpha}`` is
        ``max_fpr=alpha`` (the same model, ``max_fpr_ == alpha``); ``max_fpr`` must then be
        left at ``None`` (set with ``max_class_error``, it raises a ``ValueError``).
    calibration : {None, "umbrella"}, default=None
        ``None``: train on every row; the bound holds on the training negatives
        (``threshold_`` spends ``max_fpr`` on them with ``rate="hard"``; 0 with
        ``rate="soft"``). On new rows the rate is a fresh sample: with few training
        negatives it can exceed ``max_fpr`` well (a :class:`UserWarning` says so when the
        sampling spread alone puts the rate on new rows above ``1.25 * max_fpr`` with
        probability ``delta``, e.g. up to 430-490 negatives at ``max_fpr=0.1``; see
        the user guide's "What the bound means").
        ``"umbrella"``: hold out ``calibration_size`` of the negatives, train on the rest,
        and set ``threshold_`` by the umbrella rule so that the false-positive rate on new
        data exceeds ``max_fpr`` with probability at most ``delta``. With more than two
        classes: hold out ``calibration_size`` of each bounded class's rows and certify
        every bound of ``max_class_error`` on new data together, a union bound (see the
        user guide's "More than two classes"). With :meth:`partial_fit`: a prequential
        certificate of the stream's sequence of models instead (see there). Not on dask
        input (a ``ValueError``: the hold-out needs the rows in memory).
    delta : float in (0, 1), default=0.05
        With ``calibration="umbrella"``: the tolerated probability that the population
        false-positive rate exceeds ``max_fpr``. With ``calibration=None``: the probability
        at which the small-sample warning reads the spread of the rate on new rows.
    calibration_size : float in (0, 1) or int, default=0.5
        With ``calibration="umbrella"``: the share of the negatives held out (rounded up), or
        their number. More held-out negatives put the threshold closer to the population
        ``1 - max_fpr`` quantile (fewer false negatives); fewer leave more to train on. Half,
        as in the nproc package: it gave the lowest false-negative rate of 0.25, 0.5 and
        0.75 on the 30000-row anchor task, while 0.75 did better on spambase (1951 training
        negatives). At least
        ``log(delta) / log(1 - max_fpr)`` held-out negatives are needed (59 for
        ``max_fpr = delta = 0.05``); fewer raise a ``ValueError`` saying how many. Ignored
        otherwise.
    fit_intercept : bool, default=True
        Whether to fit an intercept. Without one a bound below the score-0 rate of 0.5 may
        be unreachable.
    C : float or None, default=1.0
        Inverse strength of an L2 penalty, as in
        :class:`~sklearn.linear_model.LogisticRegression`: the objective gets
        ``||w||^2 / (2 * C * sum(sample_weight))`` with ``w`` the weights of the
        standardised features (the intercept is not penalised). With an intercept, a
        feature whose absolute mean exceeds its standard deviation (moments weighted by
        ``sample_weight``) is centred and divided by its standard deviation, as
        ``StandardScaler`` does; any other feature is divided by its root mean square and
        not centred (sparse columns stay sparse). The penalty is that of
        ``make_pipeline(StandardScaler(), LogisticRegression(C=C))`` where every feature
        is of the first kind. ``None`` fits the paper's unpenalised model.
    pos_label : int, str or bool, default=None
        The positive class (``classes_[1]``): ``max_fpr`` bounds the rate at which the
        other class's rows are predicted ``pos_label``, and the ``pos_label`` rows
        predicted the other class are the errors minimised. ``None`` takes the larger
        label in sorted order (``1`` of ``{0, 1}``, ``"yes"`` of ``{"no", "yes"}``), as
        scikit-learn does; with labels other than ``{0, 1}``, ``{-1, 1}`` or booleans a
        :class:`UserWarning` at fit names the class taken and how to choose. Name it when
        the sorted order is not the meaning (e.g. ``{"approved", "denied"}`` with
        ``"approved"`` positive). ``classes_`` is then ordered ``[other, pos_label]``. A
        label that is not a class of ``y`` raises a ``ValueError`` naming it and the
        classes. Two classes only: set with more than two, it raises a ``ValueError``.
    loss : {"logistic", "sigmoid"}, default="logistic"
        The model of the score: a weighted logistic regression, or the paper's sigmoid-loss
        model under a soft false-positive bound (see above).
    rate : {"hard", "soft"}, default="hard"
        ``"hard"``: the threshold is set on the training negatives so that the bound holds
        on :meth:`predict`. ``"soft"`` (with ``loss="sigmoid"``): the paper's model as it is,
        threshold 0, the bound on the soft rate.
    tol : float, default=3e-3
        The ``eps`` of the eps-KKT stopping rule (tighter than the paper's ``1e-2`` by
        default: on spambase the logistic score ranks as well as LogisticRegression's from
        about ``1e-3``, and ``1e-2`` cost 1.7 points of false-negative rate; see
        ``benchmarks/results/bounds.md``): the run stops when the primal and dual
        residuals of the slack reformulation, evaluated on all training rows, are both
        ``<= tol``. The primal residual is in the units of the constraint (how far the soft
        constraint may exceed its bound). The dual residual is a gradient norm with respect
        to the weights of the standardised features divided by the square root of their
        number (the root mean square of the standardised gradient's coordinates; each
        column divided by its weighted root mean square, or, when its mean exceeds its
        spread and there is an intercept, centred and divided by its standard deviation;
        ``X`` is never copied), so ``tol``
        means the same whatever the units of the features; it must also fall to a tenth of
        its value at the null model ``coef_ = 0``. ``coef_`` is in the units of ``X`` as given.
    beta0 : float, default=1.0
        Initial penalty of the augmented Lagrangian.
    sigma : float, default=2.5
        Growth factor of the penalty, ``beta_k = beta0 * sigma**k``; must be > 1.
    batch_size : int, default=30
        Minibatch size of the stochastic gradients (at least 2).
    max_passes : float, default=300.0
        Budget in data passes (per-sample evaluations divided by the number of training
        rows). A run that spends it before reaching ``tol`` ends with a
        :class:`~sklearn.exceptions.ConvergenceWarning`. Every row the fit reads counts:
        the set-up, the minibatches, the stop tests and (``rate="hard"``) each further solve.
        The default leaves room: the data sets of the benchmarks converge in 10 to 80.
        On a dask collection, ``max_passes <= 3`` streams ``X`` instead (binary ``y``): each
        block read once through :meth:`partial_fit`'s state, then with ``max_passes >= 2``
        one pass measuring the bound on the training rows, and with ``>= 3`` one setting
        ``threshold_`` on the training negatives; ``converged_`` is False, with a
        warning of what was reached (user guide, "Within one to three passes"). Below 1 is
        refused there.
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
        the null model (weights 0, the intercept at the log-odds of the weighted positive
        share with the logistic loss; the penalty schedule restarts at ``beta0``). After
        :meth:`partial_fit`, from the stream's weights and multipliers (its slacks are
        in its state: they start from zero).
    verbose : int, default=0
        ``> 0`` prints one line per outer iteration of the solver, a line at a stop test
        whenever 2 seconds passed without one, and (``rate="hard"``) a ``[steering]`` line
        before each solve saying which solve it is and why it is needed (the solver's
        count restarts at ``k=0`` with each).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    threshold_ : float
        Decision threshold on the raw score: :meth:`predict` says ``classes_[1]`` where
        ``raw_decision_function(X) > threshold_``, and :meth:`decision_function` is
        ``raw_decision_function(X) - threshold_``. With ``calibration=None`` and
        ``rate="hard"``: halfway between two training negatives' raw scores, so that
        ``max_fpr`` of them (up to one row) score above it; it is near 0 (the logistic
        score's own boundary, which ``negative_weight_`` steers to about ``max_fpr``) but
        not 0 (-0.0475 on ``make_classification(2000, 10, random_state=0)`` at
        ``max_fpr=0.1``). ``0.0`` with ``rate="soft"``.
    violation_bound_ : float
        With ``calibration="umbrella"``: the certified bound ``v(k) <= delta`` on the
        probability that the population false-positive rate exceeds ``max_fpr``.
    calibration_rank_ : int
        With ``calibration="umbrella"``: the rank ``k`` (1-based, ascending) of the held-out
        negative score ``s_(k)`` the umbrella rule chose. ``threshold_`` is ``s_(k)`` plus a
        bound on the floating-point error of a score (about ``1e-14`` relative for 100
        features), so that a held-out row scored again in another batch stays on its side;
        a threshold above ``s_(k)`` keeps the guarantee.
    n_calibration_ : int
        With ``calibration="umbrella"``: the number of held-out negatives.
    calibration_indices_ : ndarray of shape (``n_calibration_``,)
        With ``calibration="umbrella"``: the rows of the ``X`` given to :meth:`fit` that were
        held out (sorted). The model was trained on the other rows with nonzero weight.
    calibration_fpr_ : float
        With ``calibration="umbrella"``: the share of the held-out negatives classified as
        positive: ``(n_calibration_ - calibration_rank_) / n_calibration_`` without ties.
    prequential_certificate_ : PrequentialFPRCertificate
        After :meth:`partial_fit` with ``calibration="umbrella"``: ``value``, the upper
        limit at ``delta`` of the false-positive rate of the stream's models *as they
        predicted* its negatives (each before it learnt them), valid at every call at once;
        not a certificate of ``coef_`` and ``threshold_``.
    prequential_certified_ : bool
        Whether ``prequential_certificate_.value`` is at most ``max_fpr``.
    claim_order_, claim_thresholds_ : list, dict
        On more than two classes with ``calibration="umbrella"``: the bounded classes in
        the order they claim rows, and each one's threshold on its margin over the unbounded
        classes (:meth:`predict`). ``violation_bounds_``, ``calibration_ranks_``,
        ``n_calibration_``, ``calibration_class_errors_`` and ``class_certified_`` are then
        dicts by bounded class, ``violation_bound_`` their sum over the certified classes:
        ``P(some certified class's error on new rows > its bound) <= violation_bound_ <=
        delta``.
    coef_ : ndarray of shape (1, n_features)
        Weights of the score.
    intercept_ : ndarray of shape (1,)
        Intercept of the score (0 when ``fit_intercept=False``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when ``X`` has string column names.
    negative_weight_ : float or None
        With ``loss="logistic"``: the weight of the negatives the fit chose (the positives
        weigh 1); ``None`` otherwise.
    multipliers_ : ndarray of shape (1,) or (0,)
        Lagrange multiplier of the false-positive-rate constraint (in the solver's scaling,
        ``y + beta (c + s)``, the one that certifies the dual residual).
    constraint_values_ : ndarray of shape (1,)
        The soft false-positive rate on the training negatives (the optimised quantity, to be
        compared with ``max_fpr``), weighted by ``sample_weight``. With
        ``calibration="umbrella"`` the training negatives are those not held out.
    new_rows_ : dict or None
        What to expect of the bound on new rows, from a fit without ``calibration`` on two
        classes, in memory or on Dask (None otherwise): ``rate`` (the constrained rate),
        ``training_value``,
        ``interval`` (95 % of the metric on new rows from the sampling of the rows of each
        constrained rate, Clopper-Pearson), ``level``, ``bound``, ``smallest_cell`` (the rows
        of the smallest constrained rate), ``n_parameters``, and the causes ``few_rows`` and
        ``rare_features`` (more parameters than a twentieth of ``smallest_cell`` where the bound
        binds and the interval reaches past it: the training value is optimistic beyond the
        interval). A fit with either cause says so in one
        warning (``NewRowsWarning``; few negatives: the warning on them carries it).
    hard_constraint_values_ : ndarray of shape (1,)
        The same rate with the hard predictions of :meth:`predict` (raw score >
        ``threshold_``).
    train_soft_fpr_ : float
        ``constraint_values_[0]``: the mean of ``sigmoid(raw_decision_function(X))`` over
        the training negatives, the surrogate the solver works on. It differs from the mean
        of ``predict_proba(X)[:, 1]`` over them, which is the sigmoid of the thresholded
        score ``decision_function`` (0.2469 and 0.2540 on the data above, where
        ``threshold_`` is -0.0475).
    train_fpr_ : float
        ``hard_constraint_values_[0]``.
    max_fpr_ : float
        The false-positive-rate bound the model was fitted with: ``max_fpr`` (0.2 when
        None), or ``alpha`` of ``max_class_error={negative label: alpha}``. Steering,
        threshold, umbrella rule, warnings and the bound report read it; the parameters are
        left as given.
    objective_ : float
        The soft false-negative rate on the training positives at the returned point.
    primal_residual_, dual_residual_ : float
        Residuals of the stopping rule at the returned point.
    kkt_primal_residual_, kkt_dual_residual_ : float
        Residuals of the original inequality problem, with the optimal nonnegative
        multiplier (the paper's eq. (opt-dual), solved exactly, with the penalty's gradient
        and the free levels of a band: :func:`~sklearn_ialm.solver.kkt_dual_residual`): the
        violation ``||[c]_+||`` and the stationarity. They are the kept solve's, at its
        point and with its constraints: where the steering places the model between two
        solves, moves its threshold or cuts a group, the model is another point.
    bound_met_ : bool
        Whether the bound holds: ``train_fpr_ <= max_fpr_`` on the training negatives
        (the soft rate with ``rate="soft"``). With ``calibration="umbrella"``, the
        guarantee's verdict instead: ``violation_bound_ <= delta`` (every bounded class
        certified, ``class_certified_``, with more than two classes); ``train_fpr_`` (the
        negatives not held out) is reported beside it and does not decide: the threshold is
        an order statistic of the held-out negatives, and the training negatives' rate may
        exceed ``max_fpr`` while the guarantee holds.
    converged_ : bool
        Whether both residuals are ``<= tol`` and ``bound_met_`` holds.
    n_iter_ : int
        Inner (PStorm) iterations of the stochastic phase: 0 where none runs (before the
        finish on fewer than 10000 rows, see the user guide's "Convergence").
    n_outer_iter_ : int
        Outer (augmented Lagrangian) iterations.
    n_data_passes_ : float
        Per-sample evaluations divided by the number of training rows (with nonzero weight).
        Every row the fit reads counts: the set-up, the minibatches, the stop tests, each
        solve's check of the predictions, the final scoring of the training rows (whose
        predictions ``new_rows_`` reads where fit scored ``X`` itself; it predicts the rows
        again, counted, where fit scored another array, e.g. that of a DataFrame, a copy
        of an F-ordered ``X``, or the rows of nonzero weight, and with more than two
        classes).
    n_samples_fit_ : int
        Rows the model was trained on: the rows of ``X`` of nonzero weight (without the
        held-out negatives of ``calibration="umbrella"``); on dask input, every row of ``X``.
    fitted_at_ : str
        When the fit ended: UTC, ISO 8601 (``"2026-01-31T12:00:00+00:00"``).
    history_ : dict of ndarray
        One entry per evaluation of the stopping rule, at least ``data_passes``,
        ``primal_residual``, ``dual_residual``, ``constraint`` (largest constraint value,
        ``soft FPR - max_fpr``), ``objective`` and ``beta``.
    seeds_ : list of dict
        When ``n_seeds > 1``: one record per run with ``seed``, ``converged``,
        ``primal_residual``, ``dual_residual``, ``n_data_passes``, ``objective`` and
        ``selected``. ``stoc_ialm(problem, random_state=seed)`` with the fit's settings
        (its ``tol``, ``dual_tol``, ``finish_tol=1e-3``, ...) replays a run.

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

    With ``calibration="umbrella"`` the rows with zero weight are dropped before the
    hold-out, which is drawn from ``random_state`` (independently of the solver's seeds, and
    the same for any ``n_jobs``). The guarantee treats the held-out negatives as independent
    draws, each counted once: their weights train nothing and do not enter the threshold
    (unequal weights among them give a warning). All positives are used for training: the
    guarantee needs held-out negatives only.

    :meth:`predict_proba` is the sigmoid of :meth:`decision_function`, so its column 1
    exceeds 0.5 exactly where :meth:`predict` says ``classes_[1]``; with a threshold it is
    no longer the soft prediction of the training problem, which is
    ``sigmoid(raw_decision_function(X))``. Neither is a calibrated probability.

    The guarantee does not need the solver to converge: any model trained without the
    held-out rows gets a valid threshold, and a better model a lower false-negative rate.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm import NeymanPearsonClassifier
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> clf = NeymanPearsonClassifier(max_fpr=0.2, random_state=0).fit(X, y)
    >>> fpr = float((clf.predict(X)[y == 0] == 1).mean())  # on the training negatives
    >>> bool(clf.converged_), fpr == clf.train_fpr_, 0.2 - 1 / 149 < fpr <= 0.2
    (True, True, True)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)

    With a guarantee on new data, at the price of a hold-out:

    >>> X, y = make_classification(n_samples=2000, n_features=5, random_state=0)
    >>> clf = NeymanPearsonClassifier(
    ...     max_fpr=0.1, calibration="umbrella", delta=0.05, max_passes=1000, random_state=0
    ... ).fit(X, y)
    >>> clf.n_calibration_, clf.calibration_rank_, bool(clf.violation_bound_ <= 0.05)
    (499, 461, True)
    >>> held_out = clf.decision_function(X[clf.calibration_indices_])
    >>> float(clf.calibration_fpr_) == float((held_out > 0).mean()) <= 0.1
    True
    """

    # Fewer false negatives, not accuracy, is the aim: only a ranking no better than chance
    # is worth a warning (see BaseIALMClassifier._below_chance).
    _judged_by_accuracy = False

    _parameter_constraints: dict = {
        **BaseIALMClassifier._parameter_constraints,
        "max_fpr": [Interval(Real, 0, 1, closed="neither"), None],
        "max_class_error": [dict, None],
        "calibration": [StrOptions({"umbrella"}), None],
        "rate": [StrOptions({"hard", "soft"})],
        "loss": [StrOptions({"logistic", "sigmoid"})],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "calibration_size": [
            Interval(RealNotInt, 0, 1, closed="neither"),
            Interval(Integral, 1, None, closed="left"),
        ],
    }

    def __init__(
        self,
        *,
        max_fpr=None,
        max_class_error=None,
        calibration=None,
        rate="hard",
        loss="logistic",
        delta=0.05,
        calibration_size=0.5,
        fit_intercept=True,
        C=1.0,
        pos_label=None,
        tol=3e-3,
        beta0=1.0,
        sigma=2.5,
        batch_size=30,
        max_passes=300.0,
        preset="default",
        n_seeds=1,
        n_jobs=None,
        random_state=None,
        warm_start=False,
        verbose=0,
    ):
        self.max_fpr = max_fpr
        self.max_class_error = max_class_error
        self.calibration = calibration
        self.rate = rate
        self.loss = loss
        self.delta = delta
        self.calibration_size = calibration_size
        self.fit_intercept = fit_intercept
        self.C = C
        self.pos_label = pos_label
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
            Binary labels; ``classes_[1]`` is the positive class (see ``pos_label``). With
            more than two classes, a multinomial model (see the user guide's "More than two
            classes").
        sample_weight : array-like of shape (n_samples,), default=None
            Nonnegative row weights; both soft rates become weighted means. On more than two
            classes every class needs a row of positive weight (its class error is a share
            of its weight): a class whose rows all weigh 0 raises a ``ValueError``.

        Pandas inputs are paired with the rows of ``X`` by their index when ``X`` is a
        DataFrame (put in the order of ``X``'s index when they hold its labels in another
        order; a ``ValueError`` naming the input when they hold other labels). When ``X``
        has no index, rows are paired by position, with a warning for a pandas input whose
        index is not in increasing order.

        Returns
        -------
        self : NeymanPearsonClassifier

        Raises
        ------
        ValueError
            With ``calibration="umbrella"``, when the held-out negatives are too few for
            ``max_fpr`` and ``delta`` (the message says how many are needed), or when
            ``calibration_size`` leaves no negative to train on.
        """
        y, sample_weight = align_rows(X, y=y, sample_weight=sample_weight)
        # (With two classes, max_class_error={negative: alpha} is read by _check_target,
        # which sets the bound fitted, max_fpr_; the parameters are never changed.)
        fit(self, X, y, sample_weight, {})
        self._say_positive_class()
        if self.calibration is None:
            self._warn_if_few_negatives()
        return self

    @stream_method
    def partial_fit(
        self,
        X: MatrixLike,
        y: ArrayLike,
        classes: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> NeymanPearsonClassifier:
        """Learn from one batch of a stream, each row seen once (the paper's expectation setting).

        Each call runs PStorm steps on the batch (Stoc-iALM's, with multipliers, for
        ``loss="sigmoid"``) and carries the iterate, the momentum estimate and the running
        estimates to the next call; :meth:`fit` starts afresh. With ``loss="logistic"`` the
        negatives' weight is steered on the running rates as :meth:`fit` steers it, and
        ``threshold_`` is a running quantile of the negatives' scores that flags
        ``max_fpr`` of them, less a margin of 2 % of it for the spread of the running rate.
        ``coef_`` is an average of the recent iterates. Batches under 1000 rows are held
        until 1000 rows have come, so the batch size does not change the model. The
        features' standard units are taken from the first 1000 rows, not updated; a value
        far outside them is clipped for learning and its column named in a warning. See
        the user guide, "Data seen once". Binary only with a bound (``max_class_error`` is not
        streamed). With ``calibration="umbrella"`` no row is held out and no umbrella
        threshold is set: each batch's negatives are counted with the predictions of the
        model before the call learns them, and ``prequential_certificate_`` gives an upper
        limit of the false-positive rate of the stream's *sequence* of models (not of the
        final one) at ``delta``, valid at every call at once; ``calibration`` and ``delta``
        are fixed by the first call. ``set_params`` between calls: a new
        ``max_fpr`` is the target from the next call on; the other parameters that shape
        the model (``loss``, ``rate``, ``C``, ...) are fixed by the first call, and a later
        call refuses a change to them (``fit`` starts a new model).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            One batch.
        y : array-like of shape (n_samples,)
            Its labels, each one of ``classes``.
        classes : array-like, default=None
            Every class label of the stream: needed on the first call (a batch may hold
            only some of them), checked on later ones.
        sample_weight : array-like of shape (n_samples,), default=None
            Nonnegative row weights.

        Returns
        -------
        self : NeymanPearsonClassifier
            With ``n_samples_seen_`` (rows of nonzero weight seen), ``running_constraint_values_``
            (the false-positive rate of the predictions made on the negatives as they came:
            each batch predicted by the model before the call that learnt it), the verdict on
            the recent rows and the fitted attributes of the model. The recent rows are those
            of the last calls, at least the last 10 % of the rows seen and 5000 rows (or all
            of them), at most twice that: ``n_samples_recent_``, each batch predicted by the
            model its call published. ``recent_constraint_values_`` is their false-positive
            rate, ``recent_margin_`` two standard errors of it, and ``bound_met_`` is False
            when it exceeds ``max_fpr`` by more than that margin. The call that finds it so
            says so in a ``ConvergenceWarning``, once until the rate meets it again.
        """
        y, sample_weight = align_rows(X, y=y, sample_weight=sample_weight)
        first = self.__dict__.get("_stream") is None  # the call that starts a stream
        stream_partial_fit(self, X, y, classes=classes, sample_weight=sample_weight)
        if first:
            self._say_positive_class()
        return self
