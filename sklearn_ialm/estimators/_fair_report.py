"""What :class:`~sklearn_ialm.FairLogisticClassifier` reports of a fit (the hooks of
:class:`~._base.BaseIALMClassifier` after the solver): the constrained metric as fairlearn
computes it, the fitted attributes of the bound, and the verdict on it.

A mixin placed before :class:`~._base.BaseIALMClassifier` in the estimator's bases: its
``super()`` calls reach the base class.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..problems._fairness_kinds import _check_form
from ..problems._fairness_metric import checked_predictions, metric_rows
from ._fair_hooks import _NONE
from ._groups import _group_key

__all__ = ["FairReport"]


class FairReport:
    """The report and verdict hooks of :class:`~sklearn_ialm.FairLogisticClassifier`."""

    def _constraint_report(self, proba, y01, sample_weight, context):
        """The constrained metric, as fairlearn computes it, of predictions ``proba``.

        One value per protected group for ``"positive_share"`` and ``"disparate_impact"``;
        one value, the metric over the constrained pairs of groups, for the parity kinds.
        Undefined ratios (no positive prediction at all) are nan.
        """
        if not len(context["protected"]):
            return np.array([], dtype=float)
        pred = checked_predictions(proba)
        rows = _report_rows(self.constraint, y01, sample_weight, context)
        return self._report_of_counts(rows, rows.counts(self.constraint, pred), context)

    def _report_of_counts(self, rows, counts, context):
        """:meth:`_constraint_report` from the weighted counts of the predictions (one
        set for every protected group's value)."""
        kind, protected = self.constraint, context["protected"]
        form = _check_form(kind, None if self._form() == "share" else self._form())
        with np.errstate(invalid="ignore", divide="ignore"):
            if kind in ("positive_share", "disparate_impact"):
                return np.array(
                    [rows.metric_of_counts(kind, form, counts, np.asarray([g])) for g in protected]
                )
            return np.array(
                [rows.metric_of_counts(kind, form, counts, np.asarray(list(protected)))]
            )

    def _tie_reports(self, preds, off, y01, sample_weight, context):
        """The reports of hard predictions ``preds[0]`` and ``preds[1]`` (the first with
        rows ``off`` predicted negative), the second from the first's counts and the rows
        ``off`` where that is exact (every weight 1: see ``MetricRows.counts_off``)."""
        if not len(context["protected"]):
            return super()._tie_reports(preds, off, y01, sample_weight, context)
        kind = self.constraint
        rows = _report_rows(kind, y01, sample_weight, context)
        counts = rows.counts(kind, preds[0].astype(float))
        moved = rows.counts_off(kind, counts, off)
        if moved is None:
            moved = rows.counts(kind, preds[1].astype(float))
        return [self._report_of_counts(rows, c, context) for c in (counts, moved)]

    def _set_report_attributes(self, context):
        if self.max_fpr is not None:
            scores, y01, w = context["scores"], context["y01"], context["weights"]
            neg = y01 == 0
            self.train_fpr_ = float(np.average(scores[neg] > 0, weights=w[neg]))
            self.train_soft_fpr_ = float(np.average(expit(scores[neg]), weights=w[neg]))
        self.bound_ = context["bound"]
        self.groups_ = context["groups"]
        labels = context["labels"]
        self.protected_groups_ = (
            labels[context["protected"]] if labels is not None else np.array([])
        )
        excluded = context.get("excluded", _NONE)
        self.excluded_groups_ = labels[excluded] if labels is not None else np.array([])

    def _meets(self, values, context):
        """The bound on fairlearn's metric: ``nan`` (a ratio of rates that are all zero, as
        fairlearn computes it) does not meet it."""
        values = np.asarray(values, dtype=float)
        bound = context["bound"]
        if self._form() == "difference":
            return bool(np.all(values <= bound + 1e-12))
        return bool(np.all(values >= bound - 1e-12))

    def _guarantee_holds(self):
        """With a calibration, the certificate of the held-out rows (computed here, before
        the verdict, on the model ``predict`` uses) and ``max_fpr`` on the training rows,
        which the certificate does not cover; None without one."""
        certification = getattr(self, "_certification", None)
        if certification is None:
            return None
        # (Certified once a fit: the verdict and its words both ask.)
        cert = self.__dict__.get("certificate_") or certification(self)
        held = bool(cert.certified)
        if self.max_fpr is not None:
            held = held and self.train_fpr_ <= self.max_fpr + 1e-12
        return held

    def _bound_met(self, result, fit):
        if fit is None:
            return super()._bound_met(result, fit)
        # fairlearn's verdict on predict: the report's metric of the training predictions
        # (the steering's own check reads scores in the solver's coordinates).
        ok = self._meets(self.hard_constraint_values_, {"bound": self.bound_})
        if self.max_fpr is not None:
            ok = ok and self.train_fpr_ <= self.max_fpr + 1e-12
        return ok

    def _bound_text(self, context):
        keys = [_group_key(g) for g in self.protected_groups_]
        # Every group named up to six; past that a message would be mostly the list.
        named = str(keys)
        if len(keys) > 6:
            named = f"[{', '.join(map(repr, keys[:3]))}, ..., {keys[-1]!r}] ({len(keys)} groups)"
        return f"{self.constraint} bound {context['bound']:g} for groups {named}"


def _report_rows(kind, y01, sample_weight, context):
    """The :class:`~..problems._fairness_metric.MetricRows` of the rows ``y01``, ``sample_weight``
    and ``context["codes"]``, kept in ``context`` while the same arrays are reported on:
    the fit's report weighs four or five predictions of its rows, and each rebuilt the
    groups' codes and totals (0.03 s a report on 5e6 rows)."""
    key = (kind, y01, sample_weight, context["codes"])
    kept = context.get("report_rows")
    if kept is not None and all(a is b for a, b in zip(kept[:4], key, strict=True)):
        return kept[4]
    w = np.ones(len(y01)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if context.get("kept") is not None:
        w = w * context["kept"]  # the rows of the groups left out count in no rate
    rows = metric_rows(kind, y01, key[3], w)
    context["report_rows"] = (*key, rows)
    return rows
