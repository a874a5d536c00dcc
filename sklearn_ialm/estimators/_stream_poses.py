"""What a stream constrains (:mod:`._stream`): its pose, as data, and the groups it reads.

* **The poses** say what a batch's cells are and what the constraints are at the running
  cell weights: :class:`_Pose` (nothing), :class:`_FairPose` (a fairness bound over the
  declared groups), :class:`_NPPose` (Neyman-Pearson's ``max_fpr``).
* **The groups of a fairness stream**, declared on its first call (``groups=``): the pose
  they give (:func:`_fair_pose`), and each batch's rows' positions among them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .._warnings import warn
from ..problems._fairness_constraints import _constraints as fairness_constraints
from ._inputs import protected_codes


# -- the poses: how a batch becomes a problem ----------------------------------------------------
class _Pose:
    """What a stream constrains, as data (no reference to the estimator): here nothing, the
    cells being the class labels."""

    m: int = 0
    names: tuple = ()
    levels = None

    def __init__(self, n_cells: int = 2):
        self.n_cells = n_cells

    def cells(self, codes, groups):
        return codes.astype(np.intp)

    def constraints(self, cell_weight):
        """``(A, offset)`` at the running cell weights (``A``: m x n_cells), or None while
        some cell the constraints divide by has no weight yet."""
        return np.zeros((0, self.n_cells)), np.zeros(0)


class _FairPose(_Pose):
    """The fairness constraints of a :class:`~sklearn_ialm.FairLogisticClassifier`: cells
    ``2 * group + label`` over the declared groups."""

    def __init__(self, est, labels, protected, bound, max_fpr, excluded=()):
        self.labels = labels
        self.protected = protected
        # The groups left out of the constraints (positions; min_group_size, known to the
        # streamed dask fit): their cells train the loss and count in no rate.
        self.excluded = np.asarray(excluded, dtype=np.intp)
        self.n_cells = 2 * len(labels)
        self.kind, self.form = est.constraint, None if est._form() == "share" else est._form()
        self.bound, self.max_fpr = bound, max_fpr
        self.scale_share = est.constraint == "positive_share"
        # The constraints' names and free levels do not depend on the weights.
        *_, self.names, self.levels = self._pose(np.ones(self.n_cells))
        self.m = len(self.names)

    def cells(self, codes, groups):
        return 2 * groups.astype(np.intp) + codes.astype(np.intp)

    def constrained(self, group, t):
        """``(group, t)`` of the constraints: a cell of a group left out is given the first
        group kept and weight 0 (fit's ``_constrained_rows``)."""
        if not len(self.excluded):
            return group, t
        kept = ~np.isin(group, self.excluded)
        host = np.flatnonzero(~np.isin(np.arange(len(self.labels)), self.excluded))[0]
        return np.where(kept, group, host), t * kept

    def _pose(self, cell_weight):
        cells = np.arange(self.n_cells)
        group, label = cells // 2, cells % 2
        t = np.asarray(cell_weight, dtype=float)
        scale = 1.0
        if self.scale_share:
            # fit's _constraint_scale: the weighted positive rate, clipped to [0.05, 1].
            rate = t[label == 1].sum() / t.sum() if t.sum() > 0 else 1.0
            scale = min(max(rate, 0.05), 1.0)
        group, t = self.constrained(group, t)
        if len(self.protected):
            dummy = np.zeros((self.n_cells, 0))
            W, offset, names, levels, _, _, _ = fairness_constraints(
                dummy, label, dummy, group, list(self.protected), None, t, self.kind,
                self.form, self.bound, scale, False,
            )  # fmt: skip
        else:
            W, offset, names, levels = np.zeros((self.n_cells, 0)), np.zeros(0), [], None
        if self.max_fpr is not None:
            negatives = cell_weight * (label == 0)
            # fit's _with_fpr_bound: n w 1[y = 0] / sum of the negatives' weights.
            W = np.column_stack([W, self.n_cells * negatives / negatives.sum()])
            offset = np.append(offset, -float(self.max_fpr))
            names = [*names, "false_positive_rate"]
            if levels is not None:
                levels = np.vstack([levels, np.zeros((1, levels.shape[1]))])
        return W, offset, names, levels

    def constraints(self, cell_weight):
        t = np.asarray(cell_weight, dtype=float)
        try:
            with np.errstate(invalid="raise", divide="raise"):
                W, offset, _, _ = self._pose(t)
        except (ValueError, FloatingPointError, ZeroDivisionError):
            # A rate's denominator has no rows yet (bands of several groups divide Python
            # floats: a stream sorted by label, negatives first, crashed at its first batch
            # under true-positive-rate parity with four groups).
            return None
        # fairness_constraints weighs summary row ``s`` by n_cells * t_s times its
        # coefficient: the per-row coefficient of a row of that cell is that over n_cells t_s.
        live = t > 0
        A = np.zeros((self.m, self.n_cells))
        A[:, live] = (W[live] / (self.n_cells * t[live, None])).T
        return A, offset


class _NPPose(_Pose):
    """Neyman-Pearson's bound ``max_fpr`` (cells: the label). With ``loss="logistic"`` no
    constraint (the negatives' weight and the threshold are steered); with
    ``loss="sigmoid"`` the paper's soft false-positive constraint, the mean of
    ``sigmoid(score)`` over the negatives at most ``max_fpr``."""

    def __init__(self, max_fpr, constrained):
        super().__init__(2)
        self.max_fpr = float(max_fpr)
        self.m = int(constrained)
        self.names = ["false_positive_rate"] if constrained else []

    def constraints(self, cell_weight):
        if cell_weight[0] <= 0:
            return None
        return np.array([[1.0 / cell_weight[0], 0.0]]), np.array([-self.max_fpr])


class GroupCodec(NamedTuple):
    """How a fairness stream reads group labels (the estimator's own functions, passed in
    by ``FairLogisticClassifier.partial_fit``): ``encode(values, n) -> (codes, labels)`` and
    ``key(label)``, a hashable key equal for a label's spellings."""

    encode: Callable
    key: Callable


# -- the groups of a fairness stream --------------------------------------------------------------
def _fair_pose(work, classes, K, codes, w, groups, fit_params):
    """The fairness pose of a new stream: the declared groups, the protected ones, the
    bound (the unconstrained model, with fit's warning, when there are no groups)."""
    sf = fit_params.get("sensitive_features")
    if groups is not None and sf is None:
        raise ValueError(
            f"groups={np.asarray(groups).tolist()!r} is given but sensitive_features is None: "
            "pass the group of each row of the batch (sensitive_features=...) with groups=, "
            "or neither for the unconstrained model."
        )
    if groups is None and sf is None:
        if work.protected_groups is not None:
            raise ValueError(
                "protected_groups is set but sensitive_features is None: pass the group of "
                "every row to partial_fit, and declare the groups on the first call (groups=)."
            )
        _warn_void(work, "sensitive_features is None")
        return _Pose(K)
    if K > 2:
        raise NotImplementedError(
            "partial_fit fits more than two classes without a bound only: a fairness bound "
            "on a multinomial model is not streamed yet; use fit for it."
        )
    if groups is None:
        raise ValueError(
            "groups must be passed on the first call to partial_fit with sensitive_features: "
            "every group of the stream (e.g. groups=['a', 'b']), as classes= declares the "
            "classes, since a batch may hold only some of them and the constraints are posed "
            "once for all."
        )
    codec = fit_params["codec"]
    declared = np.asarray(groups, dtype=object if _is_tuples(groups) else None)
    _, labels = codec.encode(declared, len(declared))
    if len(labels) < 2:
        _warn_void(work, f"groups declares a single group ({labels[0]!r})")
        return _Pose(K)
    batch = _group_codes(codec, labels, sf, len(codes))
    excluded = _excluded(codec, labels, fit_params.get("excluded_groups"))
    protected = _protected(work, codec, labels, batch, w, excluded)
    if len(excluded) and (len(labels) - len(excluded) < 2 or not len(protected)):
        _warn_void(
            work,
            "sensitive_features leaves fewer than two groups (or no protected group) of at "
            f"least min_group_size={work.min_group_size} rows",
        )
        protected = protected[:0]
    bound = _checked_bound(work, protected)
    return _FairPose(work, labels, protected, bound, work.max_fpr, excluded)


def _checked_bound(work, protected):
    """``bound`` as the stream poses it (the default of its form where None)."""
    bound = work._check_bound()
    if work.constraint == "positive_share" and len(protected) * bound > 1 + 1e-12:
        raise ValueError(
            f"bound={bound:g} is infeasible for constraint='positive_share' with "
            f"{len(protected)} protected groups: their shares of the positive predictions "
            f"add up to at most 1, so bound must be <= 1/{len(protected)}."
        )
    return bound


def _is_tuples(groups):
    return len(groups) > 0 and isinstance(next(iter(groups)), tuple)


def _warn_void(work, why):
    warn(
        f"{why}: the fairness constraint is void; fitting the unconstrained {work.loss} model.",
        UserWarning,
    )


def _group_codes(codec, labels, sensitive_features, n):
    """Each row's position among the declared group ``labels``; a group not declared is an
    error naming sensitive_features."""
    codes, present = codec.encode(sensitive_features, n)
    lookup = {codec.key(label): i for i, label in enumerate(labels)}
    where = np.empty(len(present), dtype=np.intp)
    for i, label in enumerate(present):
        key = codec.key(label)
        if key not in lookup:
            raise ValueError(
                f"sensitive_features holds the group {key!r}, which is not one of the groups "
                f"declared on the first call to partial_fit: "
                f"{[codec.key(g) for g in labels]!r}."
            )
        where[i] = lookup[key]
    return where[codes]


def _excluded(codec, labels, excluded_groups):
    """The positions of the groups left out of the constraints (labels given by the
    streamed dask fit, which has counted them; a stream of ``partial_fit`` calls leaves
    none out)."""
    if excluded_groups is None:
        return np.array([], dtype=np.intp)
    lookup = {codec.key(label): i for i, label in enumerate(labels)}
    return np.array([lookup[codec.key(g)] for g in excluded_groups], dtype=np.intp)


def _protected(work, codec, labels, batch, w, excluded=()):
    """The protected groups' positions: ``protected_groups``, else (as fit's rule) with two
    groups the one of less weight in the first batch (a tie: the first), else all; none of
    the groups ``excluded``."""
    named = _named_protected(work, codec, labels, batch, w)
    return named[~np.isin(named, excluded)]


def _named_protected(work, codec, labels, batch, w):
    if work.protected_groups is None:
        if len(labels) == 2:
            weight = np.bincount(batch, weights=w, minlength=2)
            return np.array([int(np.argmin(weight))])
        return np.arange(len(labels))
    lookup = {codec.key(label): i for i, label in enumerate(labels)}
    return protected_codes(
        work.protected_groups,
        lookup,
        codec.key,
        lambda key: (
            f"protected_groups: group {key!r} is not one of the declared groups "
            f"{[codec.key(g) for g in labels]!r}."
        ),
    )


def _check_same_groups(codec, state, groups):
    labels = getattr(state.pose, "labels", None)
    declared = np.asarray(groups, dtype=object if _is_tuples(groups) else None)
    _, given = codec.encode(declared, len(declared))
    if (
        labels is None
        or len(given) != len(labels)
        or not all(a == b for a, b in zip(given.tolist(), labels.tolist(), strict=True))
    ):
        raise ValueError(
            f"groups={list(given.tolist())!r} is not the stream's declared groups "
            f"{None if labels is None else labels.tolist()!r} (fixed on the first call); fit "
            "starts a new model."
        )


def _batch_groups(codec, state, sensitive_features, n):
    """The batch's group positions (None for a stream without groups)."""
    labels = getattr(state.pose, "labels", None)
    if labels is None:
        if sensitive_features is not None and state.kind == "fair":
            raise ValueError(
                "sensitive_features is given, but this stream was started without groups: its "
                "model is unconstrained. Start a new stream (fit, or a new estimator) with "
                "groups= and sensitive_features on its first call."
            )
        return None
    if sensitive_features is None:
        raise ValueError(
            "sensitive_features is None: every batch of this stream needs the group of each "
            "row (its constraints read them)."
        )
    return _group_codes(codec, labels, sensitive_features, n)
