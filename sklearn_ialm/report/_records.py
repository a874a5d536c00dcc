"""The records of a bound report: per rate and group, per bound, overall, and the fit's.

:class:`Records` computes them from the 0/1 labels and predictions of the rows (and of a
baseline model), with the rates' statistics of :mod:`._rates`; the constrained metric is
fairlearn's, as :func:`~sklearn_ialm.problems.fairness_metric` computes it.
"""

from __future__ import annotations

import math

import numpy as np

from ..problems import fairness_metric
from ._rates import OVERALL, condition_rows, hits, plain_key, rate_record, status, worst_limit

#: The rates behind each fairness kind: ``(rate, condition)``, in the order of the metric.
_KIND_RATES = {
    "demographic_parity": (("selection_rate", "all"),),
    "true_positive_rate_parity": (("true_positive_rate", "y=1"),),
    "false_positive_rate_parity": (("false_positive_rate", "y=0"),),
    "equalized_odds": (("true_positive_rate", "y=1"), ("false_positive_rate", "y=0")),
    "error_rate_parity": (("error_rate", "all"),),
    "positive_share": (("share_of_positives", "pred=1"),),
    "disparate_impact": (("selection_rate", "all"),),
}

#: The fairlearn function that computes each parity kind's metric (``between_groups``).
_FAIRLEARN = {
    "demographic_parity": "demographic_parity",
    "true_positive_rate_parity": "equal_opportunity",
    "false_positive_rate_parity": "false_positive_rate",
    "equalized_odds": "equalized_odds",
    "error_rate_parity": "zero_one_loss",
}

#: The overall rates of the summary, each a share of the rows of its condition.
_SUMMARY = (
    ("accuracy", "all"),
    ("selection_rate", "all"),
    ("false_positive_rate", "y=0"),
    ("false_negative_rate", "y=1"),
)


class Records:
    """Computes the records of one report from the 0/1 labels and predictions."""

    def __init__(
        self, y01, pred, base_pred, codes, labels, weights, confidence, positive_name=None
    ):
        self.y01, self.pred, self.base_pred = y01, pred, base_pred
        #: How the notes name the positive class ("the positive class", "class 3").
        self.positive_name = positive_name or "the positive class"
        self.codes, self.labels, self.weights = codes, labels, weights
        self.confidence = confidence
        self.rates = []
        self.notes = []
        self.protected_groups = None
        # The codes of the groups the fit left out of its constraints (min_group_size).
        self.excluded = np.array([], dtype=int)
        self.excluded_groups = None

    def _record(self, rate, condition, group, protected, hit_rows, base_rows=None):
        """One rate record: ``hit_rows(pred) -> (hit, rows)`` for the model and baseline."""
        hit, rows = hit_rows(self.pred)
        record = {"rate": rate, "condition": condition, "group": group, "protected": protected}
        record.update(rate_record(hit, rows, self.weights, self.confidence))
        if self.base_pred is not None:
            hit, rows = hit_rows(self.base_pred)
            base = rate_record(hit, rows, self.weights, self.confidence)
            record.update(
                baseline_value=base["value"],
                baseline_lower=base["lower"],
                baseline_upper=base["upper"],
            )
        return record

    def _group_rates(self, rate, condition, protected_codes, overall=True):
        """Records of ``rate`` for every group present (and overall)."""
        y01, codes = self.y01, self.codes
        out = []
        groups = [] if codes is None else range(len(self.labels))
        for g in groups:
            member = codes == g
            if rate == "share_of_positives":
                # The group's share of the positive predictions: a share of the rows pred=1.
                def hit_rows(p, member=member):
                    return member, p

            else:

                def hit_rows(p, member=member):
                    return hits(rate, y01, p), member & condition_rows(condition, y01, p)

            protected = None if protected_codes is None else bool(g in protected_codes)
            record = self._record(rate, condition, plain_key(self.labels[g]), protected, hit_rows)
            record["excluded"] = bool(g in self.excluded)
            out.append(record)
        if overall:
            record = self._record(
                rate,
                condition,
                OVERALL,
                None,
                lambda p: (hits(rate, y01, p), condition_rows(condition, y01, p)),
            )
            record["excluded"] = None
            out.append(record)
        self.rates.extend(out)
        return out

    def _metric(self, kind, form, pred, protected_codes):
        if not len(protected_codes):
            return math.nan
        # The rows of the groups left out of the fit's constraints count in no rate of it.
        rows = ~np.isin(self.codes, self.excluded)
        with np.errstate(invalid="ignore", divide="ignore"):
            return fairness_metric(
                kind,
                self.y01[rows].astype(int),
                pred[rows].astype(float),
                self.codes[rows],
                form=None if form == "share" else form,
                sample_weight=None if self.weights is None else self.weights[rows],
                protected=list(protected_codes),
            )

    def _excluded_of(self, clf, present):
        """The codes of the fit's groups left out of its constraints that have rows here,
        and a note naming them."""
        keys = [plain_key(label) for label in getattr(clf, "excluded_groups_", [])]
        self.excluded_groups = keys
        self.excluded = np.array([present[k] for k in keys if k in present], dtype=int)
        if keys:
            self.notes.append(
                f"Group(s) {keys} had fewer than min_group_size={clf.min_group_size} rows in "
                "the fit and were left out of its constraints (excluded): their rates are "
                "shown, but they enter neither the metric nor its limit."
            )

    def fairness(self, clf):
        kind = clf.constraint
        if kind == "positive_share":
            form = "share"
        elif kind == "disparate_impact":
            form = "ratio"
        else:
            form = clf.form or "difference"
        bound = float(clf.bound_)
        direction = "<=" if form == "difference" else ">="
        present = {plain_key(label): g for g, label in enumerate(self.labels)}
        self._excluded_of(clf, present)
        protected, absent = [], []
        for label in clf.protected_groups_:
            key = plain_key(label)
            (protected.append(present[key]) if key in present else absent.append(key))
        if absent:
            self.notes.append(
                f"Protected group(s) {absent} have no rows here: their bound is not evaluated."
            )
        protected = np.array(protected, dtype=int)
        # A parity bound on every pair of groups (the default: the smaller of two groups
        # "protected" constrains the one pair) protects no group: no flags, no names.
        every_pair = kind in _FAIRLEARN and len(set(present.values()) - set(protected)) <= 1
        flags = None if every_pair else protected
        rate_names = []
        for rate, condition in _KIND_RATES[kind]:
            # A share of the positive predictions has no overall value (it is 1).
            self._group_rates(rate, condition, flags, overall=kind != "positive_share")
            rate_names.append(rate)
        value = self._metric(kind, form, self.pred, protected)
        # The limit reads the records' "protected" flags, set from the same codes.
        if kind in _FAIRLEARN:
            name = f"{_FAIRLEARN[kind]}_{form}"
            limit = worst_limit(self.rates, rate_names, form, every_pair=every_pair)
        elif kind == "positive_share":
            name, limit = "min_share_of_positives", worst_limit(self.rates, rate_names, form)
        else:
            # The impact ratio is relative to the overall rate, which moves with the group's
            # own: the groups' intervals give no limit of it.
            name, limit = "min_impact_ratio", math.nan
        record = {
            "name": name,
            "value": value,
            "direction": direction,
            "bound": bound,
            "limit": limit,
            "status": status(value, limit, bound, direction),
        }
        if self.base_pred is not None:
            base = self._metric(kind, form, self.base_pred, protected)
            record.update(
                baseline_value=base, baseline_status=status(base, math.nan, bound, direction)
            )
        if not np.isfinite(value):
            self.notes.append(
                f"{name} is undefined on these rows (every rate of a ratio is 0)."
                if len(protected)
                else f"{name}: no protected group has rows here."
            )
        self._note_trivial(record, name)
        if every_pair:
            what = f"{kind} {form} between every pair of groups"
            return f"{what} {direction} {bound:g}", [record]
        self.protected_groups = [plain_key(g) for g in clf.protected_groups_]
        if clf.protected_groups is None and len(self.protected_groups) == 1:
            note = (
                f"Protected group {self.protected_groups[0]!r}: the smaller of the two "
                "training groups (protected_groups=None's rule); set protected_groups to "
                "choose it."
            )
            if note not in self.notes:
                self.notes.append(note)
        what = f"{kind} {form}" if kind in _FAIRLEARN else kind
        return f"{what} {direction} {bound:g}", [record]

    def _note_trivial(self, record, name):
        """A bound whose rates are constant because the positive class is predicted for no
        row (or for every row) holds trivially: "met", never "certified" (its intervals
        are on no prediction), and a note says so."""
        if self.pred.any() and not self.pred.all():
            return
        if record["status"] == "certified":
            record["status"] = "met"
        which = "no row" if not self.pred.any() else "every row"
        self.notes.append(
            f"{name}: {self.positive_name} is predicted for {which} here, so its rates are "
            "constant: the bound holds trivially, not certified."
        )

    def fpr_bound(self, max_fpr):
        """The bound ``FPR <= max_fpr`` on all rows; its limit is the FPR's upper limit."""
        overall = [r for r in self.rates if r["rate"] == "false_positive_rate"]
        overall = [r for r in overall if r["group"] is OVERALL]
        if overall:
            fpr = overall[0]
        else:
            fpr = self._record(
                "false_positive_rate", "y=0", OVERALL, None, lambda p: (p, ~self.y01)
            )
        return self._upper_bound("false_positive_rate", fpr, max_fpr)

    def class_error_bound(self, alpha):
        """The bound ``P(predict != k | y = k) <= alpha`` of one class ``k`` of a multi-class
        Neyman-Pearson fit, on rows seen one class against the rest (``y01`` is ``y == k``,
        ``pred`` is ``predict == k``): the error's records per group and overall, and the
        bound, whose limit is the error's upper limit."""
        overall = self._group_rates("class_error", "y=1", None)[-1]
        return self._upper_bound("class_error", overall, alpha)

    def _upper_bound(self, name, rate, bound):
        """The record of the bound ``rate <= bound`` of an overall rate record."""
        record = {
            "name": name,
            "value": rate["value"],
            "k": rate["k"],
            "n": rate["n"],
            "direction": "<=",
            "bound": float(bound),
            "limit": rate["upper"],
            "status": status(rate["value"], rate["upper"], bound, "<="),
        }
        if self.base_pred is not None:
            base = rate["baseline_value"]
            record.update(baseline_value=base, baseline_status=status(base, math.nan, bound, "<="))
        return record

    def neyman_pearson(self, clf):
        for rate, condition in (("false_positive_rate", "y=0"), ("false_negative_rate", "y=1")):
            self._group_rates(rate, condition, None)
        # max_fpr_: the bound fitted (max_class_error={negative: alpha} on two classes).
        max_fpr = getattr(clf, "max_fpr_", clf.max_fpr)
        description = f"false_positive_rate <= {max_fpr:g}"
        return description, [self.fpr_bound(max_fpr)]

    def summary(self):
        out = []
        for metric, condition in _SUMMARY:

            def hit_rows(p, metric=metric, condition=condition):
                return hits(metric, self.y01, p), condition_rows(condition, self.y01, p)

            r = self._record(metric, condition, OVERALL, None, hit_rows)
            s = {"metric": metric, "value": r["value"], "lower": r["lower"], "upper": r["upper"]}
            if self.base_pred is not None:
                s.update(
                    baseline_value=r["baseline_value"],
                    difference=r["value"] - r["baseline_value"],
                )
            out.append(s)
        return out

    def note_below_majority(self, summary):
        """A note when the accuracy on these rows is below that of predicting the majority
        class for every row (the estimator's fit warns likewise on its training rows)."""
        accuracy = next(s["value"] for s in summary if s["metric"] == "accuracy")
        share = float(np.average(self.y01, weights=self.weights))
        majority = max(share, 1.0 - share)
        if accuracy < majority - 1e-12:
            self.notes.append(
                f"The accuracy on these rows ({accuracy:.4f}) is below that of predicting the "
                f"majority class for every row ({majority:.4f})."
            )


def json_param(value):
    """An estimator parameter as JSON-ready Python: numbers, strings, booleans, None, lists
    and dicts as they are (numpy scalars and arrays as Python), anything else as its repr
    (a ``RandomState``, an estimator)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, np.ndarray)):
        return [json_param(v) for v in value]
    if isinstance(value, dict):
        return {str(json_param(k)): json_param(v) for k, v in value.items()}
    return repr(value)


def _training_reading(clf, is_fair):
    """A calibrated fit's reading on its training rows (held-out rows excluded), reported
    beside its guarantee: ``{"values", "bound"}``, None when not recorded."""
    values = getattr(clf, "hard_constraint_values_", None)
    if values is None:
        return None
    if is_fair:
        bound = getattr(clf, "training_bound_", None)
    elif hasattr(clf, "max_class_error_") and len(clf.classes_) > 2:
        bound = json_param(list(clf.max_class_error_.values()))
    else:
        bound = getattr(clf, "max_fpr_", clf.max_fpr)
    return {"values": np.asarray(values, dtype=float).tolist(), "bound": bound}


def _certificate_fields(cert) -> dict:
    """What a held-out and a prequential certificate both report."""
    names = ("kind", "form", "bound", "delta", "value", "estimate")
    return {name: getattr(cert, name) for name in names}


def fit_record(clf, is_fair):
    """What the fit established, from its public fitted attributes, and what a reviewer
    needs to trace it: the parameters, the package version, the training rows' count and
    when it was fitted (None for a model pickled before they were recorded)."""
    from .._version import __version__

    # (A certified stream's bound_met_ is its recent rows', as any stream's: its certificate
    # is of its sequence of models, told apart below.)
    streamed = hasattr(clf, "prequential_certificate_")
    calibrated = getattr(clf, "calibration", None) is not None and not streamed
    fit = {
        "bound_met": bool(clf.bound_met_) if hasattr(clf, "bound_met_") else None,
        # What decides bound_met_: a calibrated fit's guarantee on new data, else the
        # training rows' predictions (the user guide's "What the bound means").
        "bound_met_by": "guarantee" if calibrated else "training rows",
        "training_rows": _training_reading(clf, is_fair) if calibrated else None,
        "params": {k: json_param(v) for k, v in clf.get_params(deep=False).items()},
        "package_version": __version__,
        "n_samples_fit": getattr(clf, "n_samples_fit_", None),
        "fitted_at": getattr(clf, "fitted_at_", None),
    }
    if is_fair and hasattr(clf, "certificate_"):
        cert = clf.certificate_
        fit["certificate"] = {
            **_certificate_fields(cert),
            "certified": bool(clf.certified_),
            "n_calibration": len(clf.calibration_indices_),
            "training_bound": clf.training_bound_,
        }
        if hasattr(cert, "class_status"):  # more than two classes: per class too
            fit["certificate"]["class_status"] = json_param(cert.class_status)
            fit["certificate"]["class_values"] = json_param(
                dict(zip(cert.class_status, cert.class_values, strict=True))
            )
    if streamed:
        cert = clf.prequential_certificate_
        fit["prequential"] = {
            **_certificate_fields(cert),
            "certified": bool(cert.certified),
            "n_rows": cert.n_rows,
        }
    if not is_fair:
        fit["threshold"] = float(clf.threshold_)
        if hasattr(clf, "violation_bounds_"):  # K > 2 classes: per bounded class
            fit["umbrella"] = {
                "max_class_error": json_param(clf.max_class_error_),
                "delta": clf.delta,
                "violation_bound": clf.violation_bound_,
                "violation_bounds": json_param(clf.violation_bounds_),
                "certified": json_param(clf.class_certified_),
                "n_calibration": json_param(clf.n_calibration_),
                "calibration_class_errors": json_param(clf.calibration_class_errors_),
            }
        elif hasattr(clf, "violation_bound_"):
            fit["umbrella"] = {
                "max_fpr": getattr(clf, "max_fpr_", clf.max_fpr),
                "delta": clf.delta,
                "violation_bound": clf.violation_bound_,
                "n_calibration": clf.n_calibration_,
                "calibration_fpr": clf.calibration_fpr_,
            }
    return fit
