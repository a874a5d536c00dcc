"""How :class:`~sklearn_ialm.FairLogisticClassifier` learns a stream (``partial_fit``):
the groups read from each batch, handed to the streaming fit.

A mixin placed before :class:`~._base.BaseIALMClassifier` in the estimator's bases.
"""

from __future__ import annotations

from numpy.typing import ArrayLike

from ._base import MatrixLike
from ._groups import _columns_of_x, _group_key, _without_text_groups, encode_groups
from ._rows import align_rows
from ._stream import GroupCodec, stream_method
from ._stream import partial_fit as stream_partial_fit

__all__ = ["FairPartialFit"]


class FairPartialFit:
    """``partial_fit`` of :class:`~sklearn_ialm.FairLogisticClassifier`."""

    def _group_codec(self) -> GroupCodec:
        """How this estimator reads group labels, for the streaming fits (which must not
        import this module: it imports them)."""
        return GroupCodec(encode_groups, _group_key)

    @stream_method
    def partial_fit(
        self,
        X: MatrixLike,
        y: ArrayLike,
        classes: ArrayLike | None = None,
        *,
        groups: ArrayLike | None = None,
        sensitive_features: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
    ) -> FairLogisticClassifier:  # noqa: F821 (fair.py's class: it imports this module)
        """Learn from one batch of a stream, each row seen once (the paper's expectation setting).

        Each call runs Stoc-iALM + PStorm steps on the batch and carries the iterate, the
        multipliers, the penalty, the momentum estimate and the running constraint estimates
        to the next call; :meth:`fit` starts afresh. The group rates are running rates over
        every row seen, and the soft constraint's bound is steered so that the *hard* rates
        of the predictions meet ``bound`` (``rate="hard"``). ``coef_`` is the best model
        measured to meet the bound on rows it had not learnt from. Batches under 1000 rows
        are held until 1000 rows have come, so the batch size does not change the model.
        The features' standard units are taken from the first 1000 rows, not updated; a
        value far outside them is clipped for learning and its column named in a warning.
        See the user guide, "Data seen once".
        Binary only with a bound; more than two classes stream without one (no groups).
        With ``calibration="clopper-pearson"``, the rows of each batch are counted per
        group and label with the predictions of the model before the call learns them, and
        ``prequential_certificate_`` certifies the stream's sequence of models (not the
        final one) at ``delta``, at every call at once; ``calibration`` and ``delta`` are
        fixed by the first call. ``set_params`` between calls: a new ``bound`` or
        ``max_fpr`` is posed from the next call on; the other parameters that shape the
        model (``constraint``, ``form``, ``protected_groups``, ``rate``, ``C``, ...) are
        fixed by the first call, and a later call refuses a change to them (``fit`` starts
        a new model).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            One batch.
        y : array-like of shape (n_samples,)
            Its labels, each one of ``classes``.
        classes : array-like, default=None
            Every class label of the stream: needed on the first call (a batch may hold
            only some of them), checked on later ones.
        groups : array-like, default=None
            Every group label of the stream (tuples for intersections of several columns):
            needed on the first call with ``sensitive_features``, checked on later ones. The
            constraints are posed on these groups for the whole stream.
        sensitive_features : array-like or str, default=None
            The group of each row of the batch, as for :meth:`fit`; needed on every call of
            a stream that has groups. None on the first call (and no ``groups``): the
            unconstrained model is streamed, with a warning.
        sample_weight : array-like of shape (n_samples,), default=None
            Nonnegative row weights (``class_weight="balanced"`` reads the classes' weights
            over the rows seen so far).

        Returns
        -------
        self : FairLogisticClassifier
            With ``n_samples_seen_`` (rows of nonzero weight seen), ``running_constraint_values_``
            (the constrained metric, as ``hard_constraint_values_`` is, of the predictions
            made on the rows as they came: each batch predicted by the model before the call
            that learnt it; with ``max_fpr``, ``running_fpr_`` too), the verdict on the
            recent rows and the fitted attributes of the model. The recent rows are those
            of the last calls, at least the last 10 % of the rows seen and 5000 rows (or all
            of them), at most twice that: ``n_samples_recent_``, each batch predicted by the
            model its call published. ``recent_constraint_values_`` is their metric (as
            fairlearn computes it), ``recent_margin_`` two standard errors of it (each group
            and label's rate a binomial share; with ``max_fpr``, ``recent_fpr_`` too), and
            ``bound_met_`` is False when they miss ``bound`` by more than that margin, or
            miss it at all where that margin is wider than the room the bound leaves
            (``bound``; ``1 - bound`` for a ratio: so few rows of a rate cannot show it
            met): the early models of a stream, which the running rates still count, no
            longer weigh on it. The call that finds the recent rows missing the bound says so in a
            ``ConvergenceWarning``, once until they meet it again. So does the call that
            finds the model no better than the constant model: measured on rows it had
            not learnt from (the constant model, which meets the bound, is then
            published), or by its log-loss on the recent rows (``bound_met_`` then reads
            their metric without the sampling margin).
        """
        return self._partial_fit(
            X, y, classes, groups=groups, sensitive_features=sensitive_features,
            sample_weight=sample_weight,
        )  # fmt: skip

    def _partial_fit(
        self, X, y, classes=None, *, groups=None, sensitive_features=None, sample_weight=None,
        excluded_groups=None,
    ):  # fmt: skip
        """:meth:`partial_fit`; a new stream leaves the groups ``excluded_groups`` out of its
        constraints (the streamed dask fit's, which counted the rows of every group)."""
        sensitive_features, names = _columns_of_x(X, sensitive_features)
        X, text = _without_text_groups(X, names)
        y, sample_weight, sensitive_features = align_rows(
            X, y=y, sample_weight=sample_weight, sensitive_features=sensitive_features
        )
        return stream_partial_fit(
            self, X, y, classes=classes, sample_weight=sample_weight, groups=groups,
            sensitive_features=sensitive_features, text_group_columns=text,
            codec=self._group_codec(), excluded_groups=excluded_groups,
        )  # fmt: skip
