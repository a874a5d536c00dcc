"""``partial_fit``: Stoc-iALM + PStorm on a stream of batches, every row seen once.

The estimators' ``fit`` solves a finite sum and ends on all rows; a stream has no "all rows".
This module is the expectation setting of the paper (its Algorithm 1 with PStorm, the
constraints expectations over the rows to come), one batch at a time:

* **The state** (:class:`StreamState`, pickled with the estimator): the iterate ``z`` (the
  model in the solver's coordinates and one slack per inequality), the momentum estimate
  ``d`` of PStorm, the multipliers ``y``, the penalty ``beta``, the outer iteration and its
  rows, the free levels' position, the random generator, the running weights of the cells
  (group x label) and of their positive predictions, and two averages of the iterates.
* **The step** (:meth:`StreamState.learn`): batches under :data:`LEARN_ROWS` rows are held
  until that many rows have come (a 1-row batch then learns as the same rows in one batch
  would; on main 6bdc02c each call ran at least one PStorm step, so 1-row batches took 30 times
  the steps and ended at the constant model); the rows are cut into pieces of at most
  :data:`PIECE_ROWS` rows; on each piece PStorm (:func:`~sklearn_ialm.solver.pstorm.pstorm`)
  runs one iteration per ``batch_size`` rows (the fraction carried to the next piece) on the
  augmented Lagrangian at the current ``(y, beta)``, with minibatches drawn from the piece. An
  outer iteration of Algorithm 1 spans ``max(FIRST_OUTER_ROWS, OUTER_SHARE * rows seen)`` rows
  (with fairness constraints, the rows seen since they were first posed):
  at its end the multipliers take Algorithm 1's step ``y + min(beta, 1 / ||k||) k`` with ``k``
  the constraint values measured on the rows of its second half, before the model learnt from
  them (the running constraint estimates), the slacks are projected (as the solver's stop test
  does), the penalty grows by ``sigma`` up to its cap while ``||k|| > tol``, and the momentum
  estimate follows the change of the augmented Lagrangian by an unbiased correction on one
  minibatch (the solver's ``momentum="warm"``).
* **The constraints** are means over the rows, ``c = mean_j w_j A[:, cell_j] q_j + offset``:
  the group rates' denominators (and the error rates' base rates) are the running weights of
  the cells over every row seen so far, posed by the fairness constraints' own builder
  (:mod:`~sklearn_ialm.problems._fairness_constraints`) on a one-row-per-cell summary; so
  every kind and form of ``fit`` streams, with the same names and units.
* **The bound on predictions** (``rate="hard"``): the multiplier step reads ``k`` on the
  *hard* predictions, less the target ``bound_tol / 2`` inside the bound, the multipliers
  kept nonnegative, while the gradients come from the soft surrogate: the multipliers move
  until the predictions meet the bound. (Moving the soft bound instead by the hard value's
  distance from the soft one, as ``fit`` steers, with the soft multiplier step, ended at the
  same final gap on the benchmark's stream, 1e6 rows in batches of 1e4: 0.021 against 0.020
  on fresh rows, but with a running gap of 0.028 against 0.023, and it needs a cap on the
  move.) Neyman-Pearson's threshold is
  the running quantile of the negatives' scores that flags ``max_fpr`` of them, less a margin
  (:data:`FPR_MARGIN`).
* **Two averages of the iterates.** A PStorm iterate at a fixed step remembers only its last
  few thousand rows, and its hard rates are those of a model fitted on so few: at a fixed
  multiplier the demographic-parity gap of means of its iterates over windows of 1e5 rows
  spread by 0.006, over 3e5 rows by 0.003. The model *measured* for the multiplier step is
  the mean of the outer iteration's iterates past its first quarter (the inner solve's
  burn-in), from its middle on: a mean reaching back into the previous outer iteration
  measured the previous multipliers' model, and the multipliers swung with it. The model
  *published* (``coef_``, ``intercept_``, and the predictions the running rates count) is
  the mean of the last :data:`AVERAGE_SHARE` of all the iterations, which carries the
  stream's rows; with a bound on fairness rates of predictions it is a model measured: the
  mean of an outer iteration's iterates from its first quarter to its half (kept going while
  the multipliers barely move), measured on the rows of the second half, and the best of
  these measured to meet the bound (:meth:`StreamState._publish_candidate`), since the hard
  rates of a model of small weights depend on the noise its mean keeps (see
  :meth:`StreamState._publishes_measured`). With a hard bound the multiplier step's gain
  adapts to the hard rate's slope (:meth:`StreamState._hard_gain`), and a multiplier at 0
  grows only on a reading over its target beyond its noise.
* **A second-order summary of the rows learnt** (:mod:`._stream_summary`, models of at most
  64 parameters, the logistic loss): the model measured with a bound on fairness rates of
  predictions is the minimiser, at the stream's multipliers, of the augmented Lagrangian of
  a quadratic model of the loss and of the cells' soft sums over the last 3/4 of the rows,
  each piece expanded about the iterate that learnt it; a mean of a few thousand rows'
  iterates was as noisy as a model fitted on them (4 groups independent of the label in X,
  1e5 rows, demographic parity 0.02: fresh gap 0.033 on main be32ff6, 0.015 now, fit's
  0.0095).
* **Never below the constant model.** Where the bound is dear, a short stream's multipliers
  swing across their value and the models measured swing from one side of the bound to the
  other, some ranking the rows backwards. The segment between the last two models
  measured is measured too, beside the one from the best (a point between models on
  either side of the bound meets it), and the constant model, which meets any bound on
  group rates, replaces a model it dominates on the rows that model was measured on, with
  a warning (:meth:`StreamState._publish_constant_if_dominated`). The recent rows read the
  published model's log-loss against the constant model's (:mod:`._stream_verdict`).

**Feature scaling** is fixed from the first batch: the solver's coordinates (the columns'
weighted moments of the first batch, as ``fit`` takes them from all rows), the smoothness
bound and with it the step. The iterate, the momentum estimate and the step are all in these
coordinates, and the model is the same in any of them: new moments would change only the
conditioning, which a first batch of a few thousand rows already gets within a few percent,
while moving the coordinates would ask to carry ``z`` and ``d`` over by the same linear map at
every call. A first batch under :data:`LEARN_ROWS` rows gives provisional coordinates (the
null model does not depend on them), taken again from the first :data:`LEARN_ROWS` rows when
they are learnt.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from functools import update_wrapper, wraps
from types import MethodType

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import validate_data

from .._warnings import warn
from ._inputs import _DTYPES, _check_labels, _label, is_dask_collection
from ._prequential import prequential_counts, publish_prequential
from ._solve import spawn_seeds
from ._stream_poses import (
    GroupCodec,
    _batch_groups,
    _check_same_groups,
    _checked_bound,
    _fair_pose,
    _FairPose,
    _NPPose,
    _Pose,
)
from ._stream_state import StreamState
from ._stream_verdict import (
    _share,
    cell_rates,
    count_recent,
    publish_recent,
    warn_if_constant,
    warn_if_missed,
    warn_if_worse,
)

# (GroupCodec and the poses are imported by fair.py and by the pickles of earlier streams.)
__all__ = ["GroupCodec", "StreamState", "partial_fit", "stream_method"]

#: The penalty of a stream when ``beta0`` is None, and its cap (``max(beta0, PENALTY)``).
PENALTY = 3.0


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# -- partial_fit ----------------------------------------------------------------------------------
def streams(est) -> bool:
    """Whether ``est`` has ``partial_fit``: a calibrated fit holds rows out, which a stream
    cannot, so its estimator has no ``partial_fit`` and scikit-learn's checks and ``hasattr``
    see it as a batch estimator. Raises the AttributeError that says so. The exception is a
    stream whose calibration certifies the sequence of its models from rows predicted
    before they were learnt (:mod:`._prequential`): ``"clopper-pearson"`` for fairness and
    ``"umbrella"`` for Neyman-Pearson (there a prequential limit, no umbrella threshold)."""
    calibration = getattr(est, "calibration", None)
    prequential = calibration == ("clopper-pearson" if hasattr(est, "constraint") else "umbrella")
    if calibration is not None and not prequential:
        own = "clopper-pearson" if hasattr(est, "constraint") else "umbrella"
        raise AttributeError(
            f"{type(est).__name__} has no partial_fit with calibration={est.calibration!r}: "
            f"its stream is certified with calibration={own!r} (a prequential certificate "
            "of the stream's sequence of models, from rows predicted before they were "
            "learnt), or streams without one with calibration=None; use fit on stored rows "
            "for a certificate of the final model."
        )
    return True


class stream_method:  # noqa: N801 (a decorator, as scikit-learn's available_if)
    """``partial_fit`` that exists unless :func:`streams` says no, as
    ``available_if(streams)`` makes it, but whose AttributeError is :func:`streams`'s own:
    ``available_if`` raises "has no attribute 'partial_fit'" with the reason only in the
    chained cause, which a user reading the message does not see."""

    def __init__(self, fn):
        self.fn = fn
        update_wrapper(self, fn)

    def __get__(self, obj, owner=None):
        if obj is not None:
            streams(obj)
            return MethodType(self.fn, obj)

        @wraps(self.fn)
        def unbound(est, *args, **kwargs):
            streams(est)
            return self.fn(est, *args, **kwargs)

        return unbound


def partial_fit(est, X, y, *, classes=None, sample_weight=None, groups=None, **fit_params):
    """One ``partial_fit`` call of ``est`` (see the estimators' method for the parameters).

    The batch is validated and learnt on a copy of the stream's state; the estimator's state
    is replaced in one step at the end, so a call that raises changes nothing.
    """
    state = est.__dict__.get("_stream")
    fitted = "coef_" in est.__dict__
    work = est._working_copy()
    work._validate_params()
    if is_dask_collection(X) or is_dask_collection(y):
        raise NotImplementedError(
            "partial_fit takes one batch in memory (a numpy array, a sparse matrix or a "
            "DataFrame), got a dask collection: pass its blocks one by one, e.g. "
            "for block in X.to_delayed().ravel(): clf.partial_fit(block.compute(), ...)."
        )
    _check_labels(y)
    reset = state is None and not fitted
    X, y = validate_data(
        work if reset else est, X, y, accept_sparse="csr", dtype=_DTYPES, reset=reset
    )
    if not reset:
        for name in ("n_features_in_", "feature_names_in_"):
            if name in est.__dict__:
                setattr(work, name, est.__dict__[name])
    if sp.issparse(X) and not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    if state is None:
        start = _classes_of(work, est if fitted else None, classes)
    else:
        state = copy.deepcopy(state)
        _check_same_classes(state.classes, classes)
        start = None
    known = state.classes if state is not None else start[0]
    codes = _codes(y, known)
    w = work._checked_sample_weight(sample_weight, X)
    if state is None:
        state = _new_state(work, est if fitted else None, codes, w, start, groups, fit_params)
        state.text_columns = list(fit_params.get("text_group_columns") or [])
        state.params = _stream_params(work)
    else:
        _follow_params(work, state)
        if groups is not None:
            _check_same_groups(fit_params["codec"], state, groups)
    w = _class_weighted(work, state, codes, w)
    batch_groups = _batch_groups(
        fit_params.get("codec"), state, fit_params.get("sensitive_features"), X.shape[0]
    )
    keep = w > 0
    if not keep.all():
        X, codes, w = X[keep], codes[keep], w[keep]
        batch_groups = None if batch_groups is None else batch_groups[keep]
    if len(codes):
        state.learn(X, codes, w, batch_groups)
        count_recent(state, X, codes, w, batch_groups)
    _publish(work, state)
    warn_if_missed(work, est.__dict__)
    warn_if_constant(work, est.__dict__)
    warn_if_worse(work, est.__dict__)
    est._publish(work)
    return est


def _classes_of(work, fitted, classes):
    """``(classes, K)`` of a new stream: ``classes`` (ordered as ``fit`` orders them), or
    those of the model that ``fit`` left (which the stream then continues)."""
    if classes is None:
        if fitted is None:
            raise ValueError(
                "classes must be passed on the first call to partial_fit: every class label "
                "of the stream (e.g. classes=[0, 1]), as a batch may hold only some of them."
            )
        classes = fitted.classes_
    values = np.asarray(classes)
    if values.ndim != 1 or len(values) < 2 or len(np.unique(values)) != len(values):
        raise ValueError(
            f"classes must list at least 2 distinct class labels, got classes={classes!r}."
        )
    if fitted is not None:
        _check_same_classes(fitted.classes_, values)
    if len(values) > 2:
        return np.unique(values), len(values)
    ordered, _ = work._check_target(np.unique(values))
    return ordered, 2


def _check_same_classes(known, classes):
    if classes is None:
        return
    same = len(np.asarray(classes)) == len(known) and set(np.asarray(classes).tolist()) == set(
        known.tolist()
    )
    if not same:
        raise ValueError(
            f"classes={list(np.asarray(classes).tolist())!r} is not the same as the stream's "
            f"classes {known.tolist()!r} (fixed on the first call); fit starts a new model."
        )


def _codes(y, classes):
    """Each label's position in ``classes``; a label not among them is an error naming y."""
    y = np.asarray(y)
    order = np.argsort(classes, kind="stable")
    try:
        at = np.clip(np.searchsorted(classes[order], y), 0, len(classes) - 1)
        found = classes[order][at] == y
    except (TypeError, ValueError):
        found = np.zeros(len(y), bool)
    if not np.all(found):
        bad = y[~np.asarray(found, bool)][0]
        raise ValueError(
            f"y holds the label {_label(bad)}, which is not one of the classes declared on the "
            f"first call to partial_fit: {classes.tolist()!r}."
        )
    return order[at].astype(np.intp)


def _new_state(work, fitted, codes, w, start, groups, fit_params):
    """The state of a new stream: what it constrains (its pose), its coordinates and
    settings; the model it starts from is the null model, or the one ``fit`` left."""
    classes, K = start
    fair = hasattr(work, "constraint")
    pose, kind = _Pose(K), "softmax" if K > 2 else "fair"
    if fair:
        pose = _fair_pose(work, classes, K, codes, w, groups, fit_params)
    elif K > 2:
        if work.max_class_error is not None:
            raise NotImplementedError(
                "partial_fit fits more than two classes without a bound only: "
                "max_class_error is not streamed yet; use fit for it."
            )
        warn(
            f"max_class_error is None: no class error is bounded on these {K} classes, the "
            "unconstrained multinomial model is streamed (max_fpr is the two-class form).",
            UserWarning,
        )
    else:
        if work.rate == "soft" and work.loss != "sigmoid":
            raise ValueError(
                "rate='soft' is the paper's model, a bound on the soft false-positive rate of "
                f"the sigmoid loss: use loss='sigmoid' with it (got loss={work.loss!r})."
            )
        kind = "np_sigmoid" if work.loss == "sigmoid" else "np_logistic"
        pose = _NPPose(work.max_fpr_, kind == "np_sigmoid")
    state = _state(work, fitted, kind, pose, classes)
    state.prequential = prequential_counts(work, pose)
    return state


def _state(work, fitted, kind, pose, classes):
    beta = PENALTY if work.beta0 is None else float(work.beta0)
    sigma = 1.25 if work.sigma is None else float(work.sigma)
    seed = spawn_seeds(work.random_state, 1)[0]
    return StreamState(
        classes=np.asarray(classes), kind=kind, pose=pose, scale=None, center=None,
        n_live=1, fit_intercept=work.fit_intercept, loss=work.loss, C=work.C,
        steer=work.rate == "hard", bound_tol=float(getattr(work, "bound_tol", 0.0)),
        rng=np.random.default_rng(seed), beta=beta, beta_cap=max(beta, PENALTY), sigma=sigma,
        tol=float(work.tol), batch_size=int(work.batch_size),
        cell_weight=np.zeros(pose.n_cells), cell_positive=np.zeros(pose.n_cells),
        warm=None if fitted is None else _fitted_model(fitted, kind, pose),
        class_totals=np.zeros(len(classes)),
    )  # fmt: skip


def _fitted_model(fitted, kind, pose):
    """The model ``fit`` left, for the stream to start from: ``(coef, intercept,
    multipliers, threshold)`` (multipliers only where the constraints are the same)."""
    multipliers = getattr(fitted, "multipliers_", None)
    if multipliers is None or multipliers.shape != (pose.m,) or kind == "np_logistic":
        multipliers = None
    return (
        np.asarray(fitted.coef_, dtype=float),
        np.asarray(fitted.intercept_, dtype=float),
        multipliers,
        float(getattr(fitted, "threshold_", 0.0)),
    )


# -- the parameters between calls ----------------------------------------------------------------
#: Parameters a stream never reads: fit's budget, seeds, hold-out and printing, and
#: class_weight, read again at every call. (``calibration`` and ``delta`` are fixed: the
#: prequential certificate holds at every call for a level chosen before the stream.)
_NOT_FIXED = frozenset(
    {"verbose", "n_jobs", "n_seeds", "max_passes", "warm_start", "preset",
     "calibration_size", "class_weight"}
)  # fmt: skip
#: The bound: posed again from the next call on (the constraints' offsets, Neyman-Pearson's
#: target rate), so that set_params(bound=...) between calls moves the stream to it.
_FOLLOWED = frozenset({"bound", "max_fpr", "max_class_error"})


def _stream_params(work):
    return {k: v for k, v in work.get_params(deep=False).items() if k not in _NOT_FIXED}


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, np.random.RandomState | np.random.Generator):
        return type(a) is type(b)  # the stream drew its seed from it on the first call
    try:
        return np.shape(a) == np.shape(b) and bool(np.all(a == b))
    except (TypeError, ValueError):
        return False


def _follow_params(work, state):
    """The parameters set since the stream's first call: the bound is posed again, from this
    call on; any other parameter the stream fixed on its first call is refused, with the
    remedy (a parameter silently ignored would let get_params disagree with the model)."""
    if not getattr(state, "params", None):  # a stream pickled before they were kept
        state.params = _stream_params(work)
    # (The attributes, not get_params, which reads the signature: a call of one row is 6 ms.)
    now = {name: getattr(work, name, None) for name in state.params}
    changed = [k for k, v in state.params.items() if not _same(v, now[k])]
    for name in changed:
        if name not in _FOLLOWED:
            raise ValueError(
                f"{name}={now[name]!r} was set after the stream's first call, which fixed "
                f"{name}={state.params[name]!r} for the whole stream (its model is learnt "
                "with it). Set it back, or start a new stream with it: a new estimator, or "
                "fit (partial_fit then goes on from the fitted model)."
            )
    if changed:
        _move_bound(work, state)
        state.params.update((name, now[name]) for name in changed)


def _move_bound(work, state):
    """Pose the stream's constraints at the bound of ``work``'s parameters."""
    pose = state.pose
    if isinstance(pose, _FairPose):
        if (pose.max_fpr is None) != (work.max_fpr is None):
            raise ValueError(
                f"max_fpr={work.max_fpr!r} was set after the stream's first call, which "
                f"posed its constraints with max_fpr={pose.max_fpr!r}: a stream can move "
                "max_fpr but not add or remove it. Start a new stream with it: a new "
                "estimator, or fit (partial_fit then goes on from the fitted model)."
            )
        pose.bound = _checked_bound(work, pose.protected)
        pose.max_fpr = None if work.max_fpr is None else float(work.max_fpr)
        state.forget_measurements()
    elif isinstance(pose, _NPPose):
        max_fpr = work._max_fpr_of(state.classes)
        if max_fpr != pose.max_fpr:
            pose.max_fpr = max_fpr
            state.forget_measurements()
    elif state.kind == "softmax" and getattr(work, "max_class_error", None) is not None:
        raise NotImplementedError(
            "partial_fit fits more than two classes without a bound only: max_class_error "
            "is not streamed yet; use fit for it."
        )


def _class_weighted(work, state, codes, w):
    """``w`` times the class weights (``"balanced"``: on the classes' weights so far, this
    batch included); counts the batch's class weights."""
    state.class_totals = state.class_totals + np.bincount(
        codes, weights=w, minlength=len(state.classes)
    )
    class_weight = getattr(work, "class_weight", None)
    if class_weight is None:
        return w
    totals = state.class_totals
    if isinstance(class_weight, str):
        with np.errstate(divide="ignore"):
            cw = np.where(totals > 0, totals.sum() / (len(totals) * totals), 0.0)
    else:
        cw = np.array([float(class_weight.get(c, 1.0)) for c in state.classes.tolist()])
    return w * cw[codes]


# -- publishing -----------------------------------------------------------------------------------
def _publish(work, state):
    """The fitted attributes of the stream's published model, set on ``work``."""
    coef, intercept = state.coef(state.published)
    work._stream = state
    work.classes_ = state.classes
    if state.kind == "softmax":
        work.coef_, work.intercept_ = np.array(coef), np.array(intercept, dtype=float)
    else:
        work.coef_ = np.array(coef).reshape(1, -1)
        work.intercept_ = np.array([intercept], dtype=float)
    work.multipliers_ = np.array(state.y, dtype=float)
    work.n_samples_seen_ = int(state.n_seen)
    work.n_iter_, work.n_outer_iter_ = int(state.n_iter), int(state.outer)
    work.fitted_at_ = _utc_now()
    if hasattr(work, "constraint"):
        _publish_fair(work, state)
    elif state.kind != "softmax":
        work.max_fpr_ = state.pose.max_fpr
        work.threshold_ = float(state.threshold)
        work.negative_weight_ = (
            float(np.exp(state.log_negative_weight)) if state.kind == "np_logistic" else None
        )
        fpr = _share(state.cell_positive[0], state.cell_weight[0])
        work.running_constraint_values_ = np.array([fpr])
        publish_recent(work, state)
        if getattr(state, "prequential", None) is not None:
            publish_prequential(work, state)
    else:
        work.threshold_ = 0.0  # as fit's multinomial model: the arg-max of the scores
        work.running_constraint_values_ = np.zeros(0)
        work.bound_met_ = True


def _publish_fair(work, state):
    pose = state.pose
    labels = getattr(pose, "labels", None)
    work.text_group_columns_ = list(state.text_columns)
    if labels is None:
        work.bound_ = work._check_bound() if state.kind != "softmax" else None
        work.groups_ = work.protected_groups_ = work.excluded_groups_ = np.array([])
        work.running_constraint_values_ = np.zeros(0)
        work.bound_met_ = True
        return
    work.bound_, work.groups_ = pose.bound, labels
    work.protected_groups_ = labels[pose.protected]
    work.excluded_groups_ = labels[pose.excluded]
    values, _, fpr = cell_rates(work, state, state.cell_weight, state.cell_positive)
    work.running_constraint_values_ = values
    if fpr is not None:
        work.running_fpr_ = fpr
    publish_recent(work, state)
    if getattr(state, "prequential", None) is not None:
        publish_prequential(work, state)
