"""What :class:`~sklearn_ialm.FairLogisticClassifier` gives the fit sequence before the
solver runs (the hooks of :class:`~._base.BaseIALMClassifier`): the groups of the rows, the
kind of bound and its value, the protected groups, and the problem with its constraints.

A mixin placed before :class:`~._base.BaseIALMClassifier` in the estimator's bases.
"""

from __future__ import annotations

import numpy as np

from .._warnings import warn
from ..problems import LinearProblem, fairness_problem
from ..problems._group_codes import distinct
from ._groups import _group_key, check_group_counts, encode_groups
from ._inputs import protected_codes
from ._scaling import DEFERRED_SCALING

__all__ = ["DEFAULT_BOUNDS", "FairHooks"]

#: No group left out of the constraints.
_NONE = np.array([], dtype=np.intp)

#: A ratio bound below this is almost surely a difference typed as a ratio: a warning says so.
_WEAK_RATIO = 0.5

#: ``bound=None`` means these: the paper's share, a 0.1 parity gap, the four-fifths rule.
DEFAULT_BOUNDS = {"difference": 0.1, "ratio": 0.8, "share": 0.1}


class FairHooks:
    """The fit sequence's hooks of :class:`~sklearn_ialm.FairLogisticClassifier` that pose
    its problem."""

    def _check_group_counts(self, counts, labels, n_samples):
        """The codes of the groups left out of the constraints, from the rows per group
        (every path of a fit decides here: in memory, on dask input, streamed); a
        continuous column is refused."""
        # A certified fit checks its groups before it trains: one warning per fit.
        inner = getattr(self, "_training_bound", None) is not None
        return check_group_counts(
            counts, labels, n_samples, self.min_group_size, warn_excluded=not inner
        )

    def _check_fit_params(self, fit_params, n_samples):
        sf = fit_params["sensitive_features"]
        if sf is None:
            if self.protected_groups is not None:
                raise ValueError(
                    "protected_groups is set but sensitive_features is None: pass the group "
                    "of every row to fit (with metadata routing on, check that it is routed)."
                )
            return {"codes": None, "labels": None, "excluded": _NONE}
        codes, labels = encode_groups(sf, n_samples)
        excluded = self._check_group_counts(
            np.bincount(codes, minlength=len(labels)), labels, len(codes)
        )
        # The smallest signed integer type that holds every code (0 .. len(labels) - 1): the
        # codes live through the whole fit.
        codes = codes.astype(np.min_scalar_type(-len(labels)))
        return {"codes": codes, "labels": labels, "excluded": excluded}

    def _subset_fit_params(self, fit_params, keep):
        if fit_params["codes"] is None:
            return fit_params
        return dict(fit_params, codes=fit_params["codes"][keep])

    def _form(self):
        """``"difference"``, ``"ratio"`` or ``"share"``: the kind of bound."""
        if self.constraint == "positive_share":
            allowed, own = (None,), "share"
        elif self.constraint == "disparate_impact":
            allowed, own = (None, "ratio"), "ratio"
        else:
            allowed, own = (None, "difference", "ratio"), self.form or "difference"
        if self.form not in allowed:
            raise ValueError(
                f"form={self.form!r} does not apply to constraint={self.constraint!r}; "
                f"use one of {list(allowed)}."
            )
        return own

    def _check_bound(self):
        form = self._form()
        bound = DEFAULT_BOUNDS[form] if self.bound is None else float(self.bound)
        ok, interval = {
            "difference": (0 <= bound < 1, "[0, 1)"),
            "ratio": (0 < bound <= 1, "(0, 1]"),
            "share": (0 < bound < 1, "(0, 1)"),
        }[form]
        if not ok:
            raise ValueError(
                f"bound must be in {interval} for constraint={self.constraint!r} "
                f"({form}), got {bound!r}."
            )
        # A certified fit checks the bound before it trains inside it: one warning per fit.
        certified_inner = getattr(self, "_training_bound", None) is not None
        if form == "ratio" and bound < _WEAK_RATIO and not certified_inner:
            warn(
                f"bound={bound:g} with form='ratio' (constraint={self.constraint!r}) only asks "
                f"that the smallest group rate be at least {bound:g} times the largest: the "
                "ratio is the smallest rate over the largest, so 1 is parity and 0.8 the "
                "four-fifths rule. For a largest gap between the rates, use "
                "form='difference'.",
                UserWarning,
            )
        return bound

    def _protected_codes(self, codes, labels, counts=None, excluded=_NONE):
        """Codes of the protected groups among the groups present in ``codes`` (``counts``:
        their ``np.bincount``, where already counted), but the groups ``excluded`` from the
        constraints (``min_group_size``): a protected group named there is left out too."""
        # (The codes are 0 .. k-1: counted in one pass, where np.unique sorted 1e6 of them.)
        counts = np.bincount(codes) if counts is None else counts
        present = np.flatnonzero(counts).astype(codes.dtype)
        if self.protected_groups is not None:
            lookup = {_group_key(labels[c]): c for c in present}
            named = protected_codes(
                self.protected_groups, lookup, _group_key, self._absent_protected(labels, present)
            )
            return named[~np.isin(named, excluded)]
        present = present[~np.isin(present, excluded)]
        counts = counts[present]
        if len(present) == 2:
            # np.argmin returns the first minimum: ties go to the first sorted label.
            return present[[np.argmin(counts)]]
        return present

    @staticmethod
    def _absent_protected(labels, present):
        return lambda key: (
            f"protected_groups: group {key!r} has no members in sensitive_features "
            f"(rows with nonzero weight); groups present: "
            f"{[_group_key(labels[c]) for c in present]}."
        )

    def _build_problem(self, X, y01, sample_weight, fit_params):
        bound = self._check_bound()
        if getattr(self, "_training_bound", None) is not None:
            bound = self._training_bound  # a certified fit trains inside the bound
        codes, labels = fit_params["codes"], fit_params["labels"]
        excluded = fit_params.get("excluded", _NONE)
        void, remedy = None, ""
        if codes is None:
            void = "sensitive_features is None"
            # A search or a cross-validation passes it only when routed: the usual slip.
            remedy = (
                " Pass the group of every row, fit(X, y, sensitive_features=groups); through "
                "cross_val_score, GridSearchCV or a Pipeline, turn on "
                "sklearn.set_config(enable_metadata_routing=True) and pass "
                "params={'sensitive_features': groups}."
            )
        else:
            # Explicit groups are checked first: naming a group that is absent is an error
            # even when the data leave nothing to constrain.
            counts = np.bincount(codes)
            protected = self._protected_codes(codes, labels, counts, excluded)
            if np.count_nonzero(counts) == 1:
                void = f"sensitive_features has a single group ({_group_key(labels[codes[0]])!r})"
            else:
                void = self._void_by_exclusion(counts, protected, excluded)
        if void is not None:
            warn(
                f"{void}: the fairness constraint is void; fitting the unconstrained "
                f"{self.loss} model.{remedy}",
                UserWarning,
            )
            context = dict(
                codes=codes,
                protected=np.array([], dtype=int),
                bound=bound,
                groups=np.array([] if labels is None else labels[distinct(codes)]),
                labels=labels,
                excluded=excluded,
            )
            problem = fairness_problem(
                X,
                y01,
                X,
                codes,
                bound=bound,
                protected=[],
                loss=self.loss,
                truncation=self.truncation,
                fit_intercept=self.fit_intercept,
                sample_weight=sample_weight,
                **DEFERRED_SCALING,
            )
            return self._with_fpr_bound(problem, y01, sample_weight), context

        if self.constraint == "positive_share" and len(protected) * bound > 1 + 1e-12:
            # The shares of disjoint groups add up to at most 1: no model can meet this.
            raise ValueError(
                f"bound={bound:g} is infeasible for constraint='positive_share' with "
                f"{len(protected)} protected groups: their shares of the positive predictions "
                f"add up to at most 1, so bound must be <= 1/{len(protected)}."
            )
        groups = labels[distinct(codes)]
        codes, kept, constraint_weight = _constrained_rows(codes, excluded, sample_weight)
        problem = fairness_problem(
            X,
            y01,
            X,
            codes,
            bound=bound,
            constraint=self.constraint,
            form=None if self._form() == "share" else self._form(),
            protected=list(protected),
            loss=self.loss,
            truncation=self.truncation,
            fit_intercept=self.fit_intercept,
            sample_weight=sample_weight,
            constraint_sample_weight=constraint_weight,
            **DEFERRED_SCALING,
            constraint_scale=self._constraint_scale(y01, sample_weight),
            balance_groups=True,
        )
        context = dict(
            codes=codes,
            protected=protected,
            bound=bound,
            groups=groups,
            labels=labels,
            excluded=excluded,
            kept=kept,
        )
        return self._with_fpr_bound(problem, y01, sample_weight), context

    def _void_by_exclusion(self, counts, protected, excluded):
        """Why the constraint is void once the groups ``excluded`` (``min_group_size``) are
        left out (None when it is not): fewer than two groups left, or no protected one."""
        if not len(excluded):
            return None
        present = np.flatnonzero(counts)
        left = len(present) - np.count_nonzero(np.isin(present, excluded))
        if left < 2:
            return (
                f"sensitive_features leaves {left} group of at least "
                f"min_group_size={self.min_group_size} rows"
            )
        if not len(protected):
            return (
                f"every protected group has fewer than min_group_size={self.min_group_size} rows"
            )
        return None

    def _with_fpr_bound(self, problem, y01, sample_weight):
        """The problem with the constraint ``FPR <= max_fpr`` added (if asked for): one more
        column of per-row weights, ``n w_j 1[y_j = 0] / sum_neg w``, and offset ``-max_fpr``."""
        if self.max_fpr is None:
            return problem
        negative = y01 == 0
        total = np.sum(sample_weight * negative)
        # The new column is formed in its place in W: no n-vector temporaries besides W.
        m = problem.n_constraints
        rows = problem.A_con.rows
        W = np.empty((len(y01) if rows is None else len(rows), m + 1))
        W[:, :m] = problem.W
        col = np.multiply(sample_weight, len(y01), out=W[:, m] if rows is None else None)
        col *= negative
        col /= total
        if rows is not None:
            # Balanced constraint rows (see fairness_problem): a row listed r times carries
            # 1/r of its weight in each copy, scaled to the longer list.
            copies = np.bincount(rows, minlength=len(y01))
            W[:, m] = col[rows] * (len(rows) / len(y01)) / copies[rows]
        return LinearProblem(
            problem.A_obj.A,
            problem.b,
            problem.loss,
            problem.A_con.A,
            W,
            np.append(problem.offset, -float(self.max_fpr)),
            objective_weights=problem.u,
            inequality=True,
            fit_intercept=problem.fit_intercept,
            constraint_names=list(problem.constraint_names or []) + ["false_positive_rate"],
            levels=None
            if problem.levels is None
            else np.vstack([problem.levels, np.zeros((1, problem.levels.shape[1]))]),
            rows_constraint=rows,
            constraint_strata=problem.constraint_strata,
            **DEFERRED_SCALING,
        )

    def _constraint_scale(self, y01, sample_weight):
        """The constant that puts the share constraint (and ``tol``) in the units of ``bound``.

        A share ``r`` enters the problem as ``mean(p) * (bound - r)``; the labels' positive
        rate stands for ``mean(p)``. A parity gap is already in its units. The impact ratio
        is left in rate units (``mean(p) * (bound - ratio)``): its per-row weights are
        ``n / n_group``, and dividing them by the positive rate as well made a9a's
        four-fifths fit miss ``tol`` in 100 passes instead of converging in 5.
        """
        if self.constraint != "positive_share":
            return 1.0
        w = np.ones(len(y01)) if sample_weight is None else sample_weight
        rate = float(np.sum(w * (y01 == 1)) / np.sum(w))
        return min(max(rate, 0.05), 1.0)

    def _ratio_bound(self) -> bool:
        return self.constraint == "disparate_impact" or self.form == "ratio"

    def _steers_hard_rates(self, problem):
        return self.rate == "hard" and problem.n_constraints > 0

    def _row_groups(self, problem, context):
        codes, rows = context["codes"], getattr(problem.A_con, "rows", None)
        return codes if codes is None or rows is None else codes[rows]

    def _steers_hard_rates_after_fit(self, context):
        return self.rate == "hard" and len(context["protected"]) > 0


def _constrained_rows(codes, excluded, sample_weight):
    """``(codes, kept, weights)`` of the constraint rows: with groups ``excluded`` from the
    constraints (``min_group_size``), their rows are given the code of a group kept and
    weight 0 there, so that they add to no group's rate nor total (``kept``: the other
    rows); without, ``codes``, None and ``sample_weight`` as they are."""
    if not len(excluded):
        return codes, None, sample_weight
    kept = ~np.isin(codes, excluded)
    counts = np.bincount(codes[kept])
    # (The largest group kept: the one whose balanced draws the rows of weight 0 dilute least.)
    codes = np.where(kept, codes, np.argmax(counts)).astype(codes.dtype)
    w = np.ones(len(codes)) if sample_weight is None else np.asarray(sample_weight, float)
    return codes, kept, w * kept
