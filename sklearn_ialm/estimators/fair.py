"""Logistic classification under group-fairness constraints on the soft positive prediction."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions

from ..problems import CONSTRAINTS
from ._base import BaseIALMClassifier, MatrixLike
from ._fair_hooks import FairHooks
from ._fair_partial_fit import FairPartialFit
from ._fair_report import FairReport
from ._fit import fit
from ._groups import _columns_of_x, _is_column, _without_text_groups
from ._rows import align_rows

__all__ = ["FairLogisticClassifier"]


class FairLogisticClassifier(FairReport, FairHooks, FairPartialFit, BaseIALMClassifier):
    """Logistic classifier whose predictions meet a group-fairness bound.

    The fairness-constrained model of the paper (Section 5.1), fitted by Stoc-iALM with
    PStorm, with the constraints of fairlearn's metrics (by default demographic parity, a
    gap of at most 0.1; the paper's constraint is ``constraint="positive_share"``). With the score
    ``s(x) = x @ coef_.T + intercept_`` and the groups given by ``sensitive_features``:

    ``min  mean of loss(y, s(x))   s.t.   the fairness metric of predict meets bound``

    on the training rows (weighted by ``sample_weight`` times ``class_weight``, like the
    objective), where ``constraint`` is one of fairlearn's parity metrics, taken between
    groups (largest rate minus smallest, or smallest over largest, ``form``):

    ``"demographic_parity"``
        selection rate per group (``demographic_parity_difference`` / ``_ratio``);
    ``"true_positive_rate_parity"`` (equal opportunity)
        true-positive rate per group (``equal_opportunity_difference`` / ``_ratio``);
    ``"false_positive_rate_parity"``
        false-positive rate per group (``false_positive_rate_difference`` / ``_ratio``);
    ``"equalized_odds"``
        both of the above (``equalized_odds_difference`` / ``_ratio``);
    ``"error_rate_parity"``
        error rate per group (``zero_one_loss_difference`` / ``_ratio``);

    or one of two constraints per protected group ``g``:

    ``"positive_share"`` (the paper's model; not the default)
        group ``g`` receives at least the share ``bound`` of the positive predictions;
    ``"disparate_impact"``
        ``g``'s selection rate is at least ``bound`` times the overall selection rate.

    **Hard rates.** The bound refers to the rates of :meth:`predict` on the training rows, as
    fairlearn's metrics compute them (``rate="hard"``, the default). The solver works on a
    smooth surrogate, the same rates of the soft prediction ``sigmoid(s(x))``; a fit that
    meets the surrogate's bound can miss the bound on predictions, so the surrogate's bound
    is moved until the predictions meet it, and the returned model lies on the bound up to
    ``bound_tol`` (see the user guide). ``rate="soft"`` constrains the surrogate itself: the
    paper's model. Binary classification only; ``classes_[1]`` is the positive class.

    Parameters
    ----------
    constraint : str, default="demographic_parity"
        The fairness constraint, see above. The default is what a fairlearn user expects
        (``demographic_parity_difference`` of :meth:`predict` at most ``bound``, 0.1 by
        default). Until this release the default was ``"positive_share"``, the paper's
        model, which stays a named option: pass ``constraint="positive_share"`` for it (with
        ``preset="paper"`` for the paper's solver settings too).
    bound : float, default=None
        The bound: a largest gap in [0, 1) (difference form), a smallest ratio in (0, 1]
        (ratio form, ``"disparate_impact"``), a smallest share in (0, 1)
        (``"positive_share"``). ``None`` means 0.1 for a difference or a share and 0.8 for
        a ratio (``bound_`` holds the value used). With ``k`` protected groups,
        ``"positive_share"`` needs ``bound <= 1/k`` (the shares add up to at most 1). A
        ratio is the smallest rate over the largest (1 is parity, 0.8 the four-fifths
        rule): a ratio bound below 0.5, which lets one group have twice the rate of
        another, is accepted with a warning, as it is almost surely a gap meant for
        ``form="difference"``.
    form : {"difference", "ratio"}, default=None
        For the parity kinds: a bound on the largest difference between the groups' rates
        (``None`` means this) or on their smallest ratio. ``"disparate_impact"`` is a ratio
        and ``"positive_share"`` a share; for them ``form`` must be ``None``.
    protected_groups : array-like, default=None
        Labels of the groups whose rates are constrained (tuples for intersections of several
        columns): for the parity kinds, every pair of groups that involves a protected group.
        ``None`` applies the rule: with two groups, the minority (the group with fewer rows
        of nonzero weight; a tie goes to the first label in sorted order), which for a parity
        kind constrains the one pair; with three or more groups, every group, so that the
        bound is on fairlearn's metric over all groups.
    rate : {"hard", "soft"}, default="hard"
        ``"hard"``: the bound holds on the predictions (``predict``) of the training rows.
        ``"soft"``: on the mean soft predictions ``sigmoid(score)``, the paper's model; the
        predictions' rates are then reported but not steered.
    bound_tol : float, default=0.005
        With ``rate="hard"``, how far below its bound (in the bound's units; for a ratio, a
        rate times the ratio's shortfall) an active constraint may end: a solve whose
        predictions land in that band is kept; otherwise the model is placed on the bound
        between two solves, one on each side of it.
    max_fpr : float in (0, 1), default=None
        A second bound, beside the fairness one: the false-positive rate of :meth:`predict`
        on the training negatives (``train_fpr_``) at most ``max_fpr``. The problem layer
        takes any number of constraints of this form, so both are steered together.
    calibration : {None, "clopper-pearson"}, default=None
        ``"clopper-pearson"``: a certificate that the bound holds on new data. A share
        ``calibration_size`` of the rows (of each group, and class for the conditional
        kinds) is held out; candidate models are trained on the rest inside the bound, by
        margins that the held-out counts and the model's rates (two trial fits on the
        training rows) call for, from one that certifies about 99 times in 100 to one that
        certifies about 2 times in 10. Exact binomial (Clopper-Pearson) limits of each
        candidate's held-out rates give a worst case of its metric; the candidates are
        tested tight to loose, the first that fails ends the sequence, and the loosest
        certified is kept (fixed-sequence testing: the population metric of the model kept
        is worse than ``bound`` with probability at most ``delta`` over the draw of the
        data, as with a single look). The fit is certified (``certified_``) when
        that worst case meets ``bound``, and says so with a warning when it does not; the
        warning also gives the training rows' metric against ``training_bound_``, and a fit
        that is certified does not warn that the training bound was missed (the held-out
        check is what speaks for new data). When the held-out rows are too few for any
        model to pass (a ``ValueError`` before training), the message names a larger
        ``calibration_size``, a looser ``bound`` or a larger ``delta`` that would do.
        Messages name the groups by their labels in ``sensitive_features``.
        Not available for ``"disparate_impact"``. A group left out of the constraints
        (``min_group_size``) is left out of the certificate too, and none of its rows is
        held out. On more than two classes (``form="difference"``, the one-vs-rest kinds):
        ``calibration_size`` of each group's rows is held out (of each group and class for
        ``"true_positive_rate_parity"``) and every class's gap is certified; the verdict is
        on the worst class at ``delta`` (no union over the classes is needed: the worst
        class is fixed by the population and the model), ``certificate_.class_status``
        tells each class, one never predicted on the held-out rows as such. With
        :meth:`partial_fit`: no row is held out; each batch is predicted by the model
        before it learns the batch, and ``prequential_certificate_`` certifies the
        *sequence* of the stream's models, not the final one. Not on dask input (a
        ``ValueError``: the hold-out needs the rows in memory).
    delta : float in (0, 1), default=0.05
        With a calibration: the tolerated probability that the population metric of the
        model kept is worse than ``bound``. ``certificate_.value`` is that model's worst
        case at ``delta``, as one look at it alone would certify it.
    calibration_size : float in (0, 1), default=0.3
        With a calibration: the share of the rows held out. More rows give tighter limits
        (a training bound closer to ``bound``); fewer leave more to train on.
    min_group_size : int, default=5
        A group of fewer training rows than this is left out of the constraints: its rows
        train the loss, but its rate is bounded against no other group's (a rate on a
        handful of rows is noise: one row moves it by a fifth), and the rates of the
        other groups are over their own rows. One warning names such groups with their
        rows, ``excluded_groups_`` holds them and the bound report marks them
        ``excluded``. When fewer than two groups are left (or no protected one), the
        constraint is void: the unconstrained model is fitted, with a warning, not an
        error, so that a cross-validation or a grid search whose folds leave a small group
        under the minimum scores every fold (a fold's fit with its constraints on three
        rows would be noise anyway). Set ``min_group_size=1`` to constrain every group
        whatever its size. The rows counted are those given to :meth:`fit` (on dask input,
        every row; with a calibration, held-out rows included). :meth:`partial_fit`
        declares its groups before it has seen their rows, and constrains every one.
    loss : {"logistic", "truncated_logistic"}, default="logistic"
        ``"logistic"`` is ``log(1 + exp(-m))`` of the margin ``m``, LogisticRegression's
        loss; ``"truncated_logistic"`` is the paper's
        ``truncation * log(1 + log(1 + exp(-m)) / truncation)``, robust to outliers and
        nonconvex. The logistic loss is the default because the truncated one can stop at a
        model that predicts one class: on bank (demographic parity 0.05) it flagged no row
        at all and reported convergence, where the logistic loss gives accuracy 0.897 at a
        parity gap of 0.048 (LogisticRegression: 0.905 at a gap of 0.234).
    truncation : float, default=2.0
        The ``alpha`` of the truncated logistic loss (unused with ``loss="logistic"``).
    class_weight : dict or "balanced", default=None
        Weights of the classes, ``{label: weight}``; ``"balanced"`` uses
        ``n_samples / (n_classes * weighted count of the class)``. They multiply
        ``sample_weight`` in both the objective and the constraints.
    fit_intercept : bool, default=True
        Whether to fit an intercept.
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
        The positive class (``classes_[1]``). ``None`` takes the larger label in sorted
        order (``1`` of ``{0, 1}``, ``"yes"`` of ``{"no", "yes"}``); name it when the
        sorted order is not the meaning (e.g. ``{"bad", "good"}`` with ``"bad"`` positive).
        ``classes_`` is then ordered ``[other, pos_label]``. Two classes only: set with
        more than two, it raises a ``ValueError``.
    tol : float, default=1e-2
        The ``eps`` of the eps-KKT stopping rule: the run stops when the primal and dual
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
    beta0 : float, default=None
        Initial penalty of the augmented Lagrangian. None: 0.3 (``preset="default"``) or
        the paper's 1 (``preset="paper"``).
    sigma : float, default=None
        Growth factor of the penalty, ``beta_k = beta0 * sigma**k``; must be > 1. None: 1.25
        (``preset="default"``) or the paper's 2.5 (``preset="paper"``). ``beta0`` and
        ``sigma`` drive Algorithm 1's loop (``preset="paper"``); the default fit's
        deterministic finish has its own penalty. Below 100000 rows that finish is the whole
        solve: on a9a, bank and the anchor task every schedule measured gave the same fit
        (``benchmarks/results/penalty_schedule.md``).
    batch_size : int, default=30
        Minibatch size of the stochastic gradients (at least 2).
    max_passes : float, default=300.0
        Budget in data passes (per-sample evaluations divided by the number of objective plus
        constraint rows). A run that spends it before reaching ``tol`` ends with a
        :class:`~sklearn.exceptions.ConvergenceWarning`. Every row the fit reads counts:
        the set-up, the minibatches, the stop tests and (``rate="hard"``) each further solve.
        The default leaves room: the data sets of the benchmarks converge in 10 to 80. A
        fit that ends within it without converging, and advises a looser bound, checks the
        bound by refits (each with this budget), which spend at most about three times it
        more, counted in ``n_data_passes_``; a fit that spends it advises none.
        On a dask collection, ``max_passes <= 3`` streams ``X`` instead (binary ``y``): each
        block read once through :meth:`partial_fit`'s state, then with ``max_passes >= 2``
        one pass measuring the bound on the training rows; ``converged_`` is False, with a
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
    coef_ : ndarray of shape (1, n_features)
        Weights of the score.
    intercept_ : ndarray of shape (1,)
        Intercept of the score (0 when ``fit_intercept=False``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when ``X`` has string column names (the
        columns of ``text_group_columns_`` left out).
    text_group_columns_ : list
        The columns of a DataFrame ``X`` named in ``sensitive_features`` that hold text
        (strings or categories): the groups of the rows, not features of the model (not in
        ``feature_names_in_`` nor in ``coef_``); :meth:`predict` and the other methods drop
        them from a DataFrame that holds them. Empty otherwise (named columns of numbers
        stay features).
    n_samples_fit_ : int
        Rows the model was trained on: the rows of ``X`` of nonzero weight (without the
        held-out rows of a calibration); on dask input, every row of ``X``.
    fitted_at_ : str
        When the fit ended: UTC, ISO 8601 (``"2026-01-31T12:00:00+00:00"``).
    groups_ : ndarray
        Labels of the groups of the training rows (tuples for intersections).
    protected_groups_ : ndarray
        Labels of the constrained groups, in the order of ``constraint_values_``; empty when
        the constraint is void (a single group).
    excluded_groups_ : ndarray
        Labels of the groups left out of the constraints, having fewer than
        ``min_group_size`` rows (empty when none is).
    bound_ : float
        The bound used.
    multipliers_ : ndarray of shape (n_constraints,)
        Lagrange multipliers (in the solver's scaling, the ones that certify the dual
        residual): one per protected group, two per group for ``"demographic_parity"``
        (its ``<=`` then its ``>=`` inequality).
    new_rows_ : dict or None
        What to expect of the bound on new rows, from a fit without ``calibration`` (in
        memory; on Dask, two classes; None otherwise): ``rate`` (the constrained rate),
        ``training_value``, ``interval`` (95 % of the metric on new rows from the sampling of
        the rows of each constrained rate, Clopper-Pearson), ``level``, ``bound``,
        ``smallest_cell`` (the rows of the smallest constrained rate), ``n_parameters``, and
        the causes ``few_rows`` and ``rare_features`` (more parameters than a twentieth of
        ``smallest_cell`` where the bound binds and the interval reaches past it: the
        training value is optimistic beyond the interval). A fit with either cause says so in
        one warning (``NewRowsWarning``).
    hard_constraint_values_ : ndarray of shape (n_protected_groups,) or (1,)
        The constrained metric of :meth:`predict` on the training rows, in the units of
        ``bound``, as fairlearn computes it: for ``"positive_share"`` and
        ``"disparate_impact"`` one value per protected group (its share of the positive
        predictions, its selection rate over the overall one); for the parity kinds one
        value, the largest gap (or smallest ratio) between the constrained pairs of groups.
        ``nan`` where undefined (no positive prediction at all).
    constraint_values_ : ndarray of the same shape
        The same metric of the soft predictions ``sigmoid(score)``: the quantity the solver
        constrains (the bound itself with ``rate="soft"``).
    bound_met_ : bool
        Whether the bound holds on the training rows: on predictions with ``rate="hard"``,
        on the soft predictions (to ``tol``) with ``rate="soft"``. With a calibration, the
        guarantee's verdict instead: ``certified_`` (and ``max_fpr`` on the training rows,
        which the certificate does not cover); the training rows' metric against
        ``training_bound_`` is ``hard_constraint_values_``, reported, not deciding. After
        :meth:`partial_fit`, on the stream's recent rows, within their sampling margin.
    train_fpr_, train_soft_fpr_ : float
        With ``max_fpr``: the false-positive rate of :meth:`predict` on the training
        negatives, and that of the soft prediction.
    certificate_ : FairnessCertificate or MulticlassCertificate
        With a calibration: the certified worst case ``value`` of the metric on new data,
        the held-out ``estimate``, the per-group counts and limits, and ``message``. On more
        than two classes, also ``class_values`` (each class's certified gap, each at
        ``delta`` on its own) and ``class_status`` (``"certified"``, ``"not certified"``
        or ``"never predicted"`` per class label).
    prequential_certificate_ : PrequentialCertificate
        After :meth:`partial_fit` with ``calibration="clopper-pearson"``: the certified
        worst case of the metric of the stream's models *as they predicted* (each row
        predicted by the model before it learnt that row; the early models weigh in it as
        much as the last), valid at every call at once; not a certificate of ``coef_``.
    prequential_certified_ : bool
        Whether ``prequential_certificate_.value`` meets ``bound``.
    certified_ : bool
        With a calibration: whether ``certificate_.value`` meets ``bound``.
    training_bound_ : float
        With a calibration: the bound the model kept was trained at.
    certification_path_ : list of (float, float, bool)
        With a calibration: each candidate tested on the held-out rows, in order (tight to
        loose): its training bound, its certified value and whether it was certified. Every
        entry but the last is certified; the model kept is the last certified (the first
        when none is).
    calibration_indices_ : ndarray
        With a calibration: the held-out rows of the ``X`` given to :meth:`fit`.
    n_rounds_ : int
        Solver runs of the fit (with ``rate="hard"``, one per move of the surrogate's
        bound).
    objective_ : float
        The training loss at the returned point.
    primal_residual_, dual_residual_ : float
        Residuals of the stopping rule at the returned point.
    kkt_primal_residual_, kkt_dual_residual_ : float
        Residuals of the original inequality problem, with the optimal nonnegative
        multiplier (the paper's eq. (opt-dual), solved exactly, with the penalty's gradient
        and the free levels of a band: :func:`~sklearn_ialm.solver.kkt_dual_residual`): the
        violation ``||[c]_+||`` and the stationarity. They are the kept solve's, at its
        point and with its constraints: where the steering places the model between two
        solves, moves its threshold or cuts a group, the model is another point.
    converged_ : bool
        Whether both residuals are ``<= tol`` and ``bound_met_`` (with a calibration, the
        certificate's verdict) holds.
    n_iter_ : int
        Inner (PStorm) iterations of the stochastic phase: 0 where none runs (before the
        finish on fewer than 10000 rows, see the user guide's "Convergence").
    n_outer_iter_ : int
        Outer (augmented Lagrangian) iterations.
    n_data_passes_ : float
        Per-sample evaluations divided by the number of objective plus constraint rows.
        Every row the fit reads counts: the set-up, the minibatches, the stop tests, each
        solve's check of the predictions, the final scoring of the training rows (whose
        predictions ``new_rows_`` reads where fit scored ``X`` itself; it predicts the rows
        again, counted, where fit scored another array, e.g. that of a DataFrame, a copy
        of an F-ordered ``X``, or the rows of nonzero weight, and with more than two
        classes); and where a fit that did not converge advises a
        bound, the refits that checked it (the warning says how many). With a calibration,
        every fit's: the trial fits, each candidate's and its held-out predictions.
    history_ : dict of ndarray
        One entry per evaluation of the stopping rule, at least ``data_passes``,
        ``primal_residual``, ``dual_residual``, ``constraint`` (largest constraint value in
        the solver's scaling), ``objective`` and ``beta``.
    seeds_ : list of dict
        When ``n_seeds > 1``: one record per run with ``seed``, ``converged``,
        ``primal_residual``, ``dual_residual``, ``n_data_passes``, ``objective`` and
        ``selected``. ``stoc_ialm(problem, random_state=seed)`` with the fit's settings
        (its ``tol``, ``dual_tol``, ``finish_tol=1e-3``, ...) replays a run.

    See Also
    --------
    NeymanPearsonClassifier : Fewest false negatives under a false-positive-rate bound.
    sklearn.linear_model.LogisticRegression : The unconstrained logistic model.
    sklearn_ialm.solver.stoc_ialm : The solver, on problem objects.

    Notes
    -----
    ``sensitive_features`` is requested for metadata routing, so with
    ``sklearn.set_config(enable_metadata_routing=True)`` a :class:`~sklearn.pipeline.Pipeline`
    or :class:`~sklearn.model_selection.GridSearchCV` passes it to this estimator, split per
    fold; with routing off, ``Pipeline.fit(X, y, <step>__sensitive_features=groups)``.
    Without ``sensitive_features`` (or with a single group) there is nothing to constrain:
    the unconstrained model is fitted, with a warning. Rows with zero weight are dropped
    before fitting.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_ialm import FairLogisticClassifier
    >>> X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    >>> groups = np.where(X[:, 2] < -0.5, "b", "a")  # "b": 137 rows, 5 positives
    >>> clf = FairLogisticClassifier(
    ...     constraint="positive_share", bound=0.2, max_passes=1000, random_state=0
    ... )
    >>> clf = clf.fit(X, y, sensitive_features=groups)
    >>> clf.protected_groups_
    array(['b'], dtype='<U1')
    >>> share = float(clf.constraint_values_[0])  # group "b"'s share of positive predictions
    >>> bool(clf.converged_), bool(share >= clf.bound_ - 0.05)
    (True, True)
    """

    __metadata_request__fit = {"sensitive_features": True}
    __metadata_request__partial_fit = {"sensitive_features": True}

    # The paper preset keeps the paper's schedule (the solver's 1 and 2.5).
    _default_schedule = {"default": (0.3, 1.25)}

    _parameter_constraints: dict = {
        **BaseIALMClassifier._parameter_constraints,
        "constraint": [StrOptions(set(CONSTRAINTS))],
        "bound": [Interval(Real, 0, 1, closed="both"), None],
        "protected_groups": ["array-like", None],
        "loss": [StrOptions({"truncated_logistic", "logistic"})],
        "truncation": [Interval(Real, 0, None, closed="neither")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "form": [StrOptions({"difference", "ratio"}), None],
        "rate": [StrOptions({"hard", "soft"})],
        "bound_tol": [Interval(Real, 0, None, closed="neither")],
        "max_fpr": [Interval(Real, 0, 1, closed="neither"), None],
        "calibration": [StrOptions({"clopper-pearson"}), None],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "calibration_size": [Interval(RealNotInt, 0, 1, closed="neither")],
        "min_group_size": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        constraint="demographic_parity",
        bound=None,
        form=None,
        protected_groups=None,
        loss="logistic",
        truncation=2.0,
        class_weight=None,
        rate="hard",
        bound_tol=0.005,
        max_fpr=None,
        calibration=None,
        delta=0.05,
        calibration_size=0.3,
        min_group_size=5,
        fit_intercept=True,
        C=1.0,
        pos_label=None,
        tol=1e-2,
        beta0=None,
        sigma=None,
        batch_size=30,
        max_passes=300.0,
        preset="default",
        n_seeds=1,
        n_jobs=None,
        random_state=None,
        warm_start=False,
        verbose=0,
    ):
        self.constraint = constraint
        self.bound = bound
        self.form = form
        self.protected_groups = protected_groups
        self.loss = loss
        self.truncation = truncation
        self.class_weight = class_weight
        self.rate = rate
        self.bound_tol = bound_tol
        self.max_fpr = max_fpr
        self.calibration = calibration
        self.delta = delta
        self.calibration_size = calibration_size
        self.min_group_size = min_group_size
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
        self,
        X: MatrixLike,
        y: ArrayLike,
        *,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> FairLogisticClassifier:
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; sparse input is converted to CSR, never densified.
        y : array-like of shape (n_samples,)
            Binary labels; ``classes_[1]`` is the positive class (see ``pos_label``). With
            more than two classes, a multinomial model (see the user guide's "More than two
            classes").
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_columns), \
                str or list of str, default=None
            One group label per row (array, list, pandas Series). With several columns
            (2-D array, DataFrame) the groups are the intersections of the columns. When X
            is a pandas DataFrame, a column name (or a list of them) stands for that column
            of X (those columns). A named column of numbers stays a feature of the model; a
            named column of text (strings or categories) gives the groups only and is left
            out of the features (``text_group_columns_``; :meth:`predict` drops it from a
            DataFrame that holds it), as a linear model reads no strings. ``None`` (or a
            single group) leaves nothing to constrain: the unconstrained model is fitted,
            with a warning. A group of fewer than ``min_group_size`` rows is left out of
            the constraints, with a warning (``excluded_groups_``); a numeric column that
            looks continuous (about one value per row, or fractional values most of which
            are on fewer than 5 rows) is refused.
        sample_weight : array-like of shape (n_samples,), default=None
            Nonnegative row weights, in the objective and in the constraints.

        Pandas inputs are paired with the rows of ``X`` by their index when ``X`` is a
        DataFrame (put in the order of ``X``'s index when they hold its labels in another
        order; a ``ValueError`` naming the input when they hold other labels). When ``X``
        has no index, rows are paired by position, with a warning for a pandas input whose
        index is not in increasing order.

        Returns
        -------
        self : FairLogisticClassifier
        """
        sensitive_features, names = _columns_of_x(X, sensitive_features)
        X, text = _without_text_groups(X, names)
        y, sample_weight, sensitive_features = align_rows(
            X, y=y, sample_weight=sample_weight, sensitive_features=sensitive_features
        )
        # Fitted (and certified) on a working copy, published in one step with the group
        # columns (see _fit).
        fit_params = {"sensitive_features": sensitive_features}
        return fit(self, X, y, sample_weight, fit_params, text_group_columns_=text)

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Score ``X @ coef_.T + intercept_`` of each row; positive means ``classes_[1]``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or DataFrame} of shape (n_samples, n_features)
            A DataFrame may hold the group columns of the fit that are not features
            (``text_group_columns_``): they are left out, as in :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            One score per class with more than two classes (the largest is predicted). A
            dask array (computed block by block on the workers) for dask input.
        """
        columns = getattr(X, "columns", None)
        if columns is not None and getattr(self, "text_group_columns_", None):
            text = [name for name in self.text_group_columns_ if _is_column(columns, name)]
            X = X.drop(columns=text) if text else X
        return super().decision_function(X)
