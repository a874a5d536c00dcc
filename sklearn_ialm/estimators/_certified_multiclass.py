"""The Clopper-Pearson guarantee of a fairness fit on more than two classes.

As :mod:`._certified` for two classes: the rows are validated once, ``calibration_size`` of
each group's rows is held out (of each group and class for ``true_positive_rate_parity``,
whose cells are single classes; see :mod:`._certificate_multiclass` for why the other kinds
draw by group only), candidate multinomial models train on the rest at bounds moved inside
the user's by the margins the held-out counts and the model's rates call for, and the
held-out rows certify them, per class and over all classes
(:func:`~._certificate_multiclass.multiclass_fairness_certificate`), in a fixed sequence up
to the first that fails (:mod:`._certified_sequence`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import numpy as np
from sklearn.utils.validation import _check_sample_weight

from .._warnings import warn
from ._certificate import _pairs, difference_training_bound
from ._certificate_multiclass import (
    MULTICLASS_KINDS,
    multiclass_counts,
    multiclass_fairness_certificate,
    multiclass_margin,
    multiclass_rates,
)
from ._certified_sequence import candidate_bounds, certify_in_sequence
from ._solve import calibration_seed
from ._steps import InMemory
from ._verdict import NOT_MET

__all__ = ["fit_multiclass_certified"]

#: As the binary certificate: the trial fits' power, below which the fit refuses.
_POWER = 0.9

#: As the binary certificate: fits that only tell the model's rates, before the candidates.
_TRIAL_FITS = 2


def _check_params(est):
    """``bound``, with the kinds and forms the multi-class certificate covers."""
    if est.constraint not in MULTICLASS_KINDS:
        raise ValueError(
            f"calibration='clopper-pearson' on more than two classes certifies the "
            f"one-vs-rest kinds {list(MULTICLASS_KINDS)}, got constraint={est.constraint!r}."
        )
    if est._form() != "difference":
        raise ValueError(
            f"calibration='clopper-pearson' on more than two classes certifies "
            f"form='difference' only, got form={est.form!r}."
        )
    return est._check_bound()


def _hold_out(est, codes, y, live, K, rng, size):
    """``size`` of each group's live rows (each group and class for the true-positive rate),
    at least one row of each stratum left to train on."""
    strata = codes * K + y if est.constraint == "true_positive_rate_parity" else codes
    held = []
    for stratum in np.unique(strata[live]):
        rows = live[strata[live] == stratum]
        n = min(math.ceil(size * len(rows)), len(rows) - 1)
        held.append(rng.choice(rows, size=max(n, 0), replace=False))
    return np.sort(np.concatenate(held))


def validated(est, X, y, sample_weight, fit_params, *, multiclass):
    """The inputs of a certified fit, checked as an in-memory guarantee's (``InMemory``): the
    certificate is on the groups' rates, so ``sensitive_features`` are required."""
    if fit_params["sensitive_features"] is None:
        raise ValueError(
            "calibration='clopper-pearson' needs sensitive_features: the certificate is "
            "on the groups' rates."
        )
    return InMemory(multiclass=multiclass).validate(
        est, X, y, sample_weight, fit_params, guarantee=True
    )


def fit_multiclass_certified(est, X, y, sample_weight, fit_params):
    """Fit ``est`` (a working copy) on ``K > 2`` classes with the held-out certificate."""
    est._validate_params()
    bound = _check_params(est)
    fitting = validated(est, X, y, sample_weight, fit_params, multiclass=True)
    sensitive_features = fit_params["sensitive_features"]
    X, y_codes, classes, sw = fitting.X, fitting.labels, fitting.classes, fitting.weights
    K = len(classes)
    feature_names = getattr(est, "feature_names_in_", None)
    codes = fitting.fit_params["codes"].astype(np.intp)
    labels, excluded = fitting.fit_params["labels"], fitting.fit_params["excluded"]
    live = np.flatnonzero((sw > 0) & ~np.isin(codes, excluded))
    protected = est._protected_codes(codes[live], labels, excluded=excluded)
    seed = calibration_seed(est.random_state)

    def margin_at(size, bound, delta, rates=0.5, trial=None, power=_POWER):
        """``(held, margin)``: the rows held out at ``size`` and the margin they call for,
        for a pass with probability ``power``: with the rates of a trial fit at ``trial``,
        every pair of every cell at its own gap
        (:func:`~._certificate.difference_training_bound`); before one, every cell at the
        widest intervals (rates of 0.5)."""
        held = _hold_out(est, codes, y_codes, live, K, np.random.default_rng(seed), size)
        groups, _, n = multiclass_counts(codes[held], y_codes[held], n_classes=K,
                                         kind=est.constraint)  # fmt: skip
        pair = _pairs(groups, protected)[0]
        if trial is None:
            return held, multiclass_margin(n, delta, bound=bound, pair=pair, power=power)
        at = rates if np.ndim(rates) == 0 else np.asarray(rates)[:, groups]
        train_bound = difference_training_bound(
            n, at, pair, bound=bound, delta=delta, power=power, trial_bound=trial,
        )  # fmt: skip
        return held, (np.inf if train_bound is None else bound - train_bound)

    held, margin = margin_at(est.calibration_size, bound, est.delta)
    train_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, copy=True)
    train_weight[held] = 0.0
    fit = functools.partial(
        _inner_fit, est, X, y, train_weight, sensitive_features=sensitive_features
    )
    train = np.setdiff1d(live, held)
    train_bound, margin, (rates, trial, spent) = _trial_fits(
        est, fit, X, y_codes, codes, train, margin_at, bound - margin
    )
    if not (np.isfinite(margin) and train_bound >= 0):
        raise ValueError(
            f"The calibration rows are too few to certify bound={bound:g} with "
            f"delta={est.delta:g} on {K} classes: calibration_size={est.calibration_size!r} "
            f"holds out {len(held)} rows, and no model with the rates a trial fit has on "
            "the training rows, not even one with no gap between the groups, would pass "
            "the certificate about 9 times in 10. "
            # The settings named are those with which a model with no gap passes at the
            # widest intervals (rates of 0.5, every pair): one passes at any rates.
            + _what_would_certify(
                est, functools.partial(margin_at, rates=0.5, trial=0.0), bound
            )  # fmt: skip
        )

    # The candidates, tight to loose, from the last trial fit's rates, tested in that order
    # (see _certified_sequence).
    def bound_at(power):
        margin = margin_at(est.calibration_size, bound, est.delta, rates, trial, power)[1]
        return bound - margin if np.isfinite(margin) and margin <= bound else None

    certify = functools.partial(
        _certify, X=X, y_codes=y_codes, codes=codes, labels=labels, held=held,
        protected=protected, classes=classes, bound=bound,
    )  # fmt: skip
    caught, train_bound = certify_in_sequence(
        est, fit, certify, candidate_bounds(bound_at, looser_up=True), spent=spent,
        held_share=len(held) / len(train),
    )  # fmt: skip
    if feature_names is not None:
        est.feature_names_in_ = feature_names
    est.bound_ = bound
    est.training_bound_ = train_bound
    if not np.all(sw[held] == sw[held][0]):
        warn(
            "sample_weight differs among the calibration rows: the certificate counts "
            "each row once, so it is for the unweighted population.",
            UserWarning,
        )
    _tell(est, caught, train_bound)
    return est


def _trial_fits(est, fit, X, y_codes, codes, train, margin_at, first):
    """``(training bound, margin, (rates, trial bound, passes))``: as for two classes
    (:mod:`._certified`), fits that only tell the rates the model will have, from the
    training rows' predictions (never the held-out rows'); the first trains at ``first``,
    the margin of the widest intervals (at half the bound when even those leave no room)."""
    bound = est._check_bound()
    train_bound = first if first >= 0 else bound / 2
    spent = 0.0
    for _ in range(_TRIAL_FITS):
        fit(trial := train_bound)
        spent += est.n_data_passes_
        scores = est._score(X[train])
        K = scores.shape[1]
        rates = multiclass_rates(est.constraint, np.argmax(scores, axis=1), y_codes[train],
                                 codes[train], n_classes=K)  # fmt: skip
        margin = margin_at(est.calibration_size, bound, est.delta, rates, train_bound)[1]
        train_bound = bound - margin
        if not (np.isfinite(margin) and train_bound >= 0):
            break
    return train_bound, margin, (rates, trial, spent)


def _inner_fit(est, X, y, train_weight, train_bound, certification=None, *, sensitive_features):
    """Fit ``est`` on the training rows at ``train_bound``; its warnings, caught (they are
    about the training bound, an internal device, and are told again in one story with
    the certificate)."""
    est._training_bound = train_bound
    if certification is not None:
        est._certification = certification
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est._fit(X, y, train_weight, sensitive_features=sensitive_features)
    finally:
        est._training_bound = None
        est.__dict__.pop("_certification", None)
    return caught


def _what_would_certify(est, margin_at, bound):
    """The nearest setting, changed alone, with which a certificate is within reach."""
    found = []
    for size in np.arange(0.35, 0.95, 0.05):
        if size > est.calibration_size + 1e-9:
            held, margin = margin_at(float(size), bound, est.delta)
            if margin <= bound:
                found.append(f"calibration_size={size:.2f} ({len(held)} rows held out)")
                break
    for trial in np.arange(bound + 0.005, 1.0, 0.005):
        if margin_at(est.calibration_size, float(trial), est.delta)[1] <= trial:
            found.append(f"bound={trial:.3f}")
            break
    for delta in (0.1, 0.2, 0.3, 0.4, 0.5):
        if delta > est.delta and margin_at(est.calibration_size, bound, delta)[1] <= bound:
            found.append(f"delta={delta:g}")
            break
    if not found:
        return (
            "No calibration_size up to 0.9, no bound and no delta up to 0.5 makes it "
            "certifiable on these rows: more data (or fewer, larger groups) is needed."
        )
    return "Each of these alone would make it certifiable: " + ", or ".join(found) + "."


def _certify(est, *, X, y_codes, codes, labels, held, protected, classes, bound):
    """The certificate of the fitted model on the held-out rows (set and returned)."""
    pred = np.argmax(est._score(X[held]), axis=1)
    cert = multiclass_fairness_certificate(
        pred, y_codes[held], codes[held], classes=classes, kind=est.constraint,
        bound=bound, delta=est.delta, protected=protected,
    )  # fmt: skip
    # The user's labels ("Female"), not the codes, in the certificate and its message.
    overall = dataclasses.replace(cert.overall, groups=labels[cert.overall.groups])
    cert = dataclasses.replace(cert, overall=overall)
    est.certificate_ = cert
    est.certified_ = bool(cert.certified)
    est.calibration_indices_ = held
    return cert


def _tell(est, caught, train_bound):
    """One account: the fit's own warnings (about the training bound) and the certificate."""
    for w in caught:
        warn(str(w.message).replace(NOT_MET, "").strip(), w.category)
    cert = est.certificate_
    if not est.certified_:
        warn(
            f"FairLogisticClassifier could not certify the bound on new data: {cert.message} "
            f"The model was trained at training_bound_={train_bound:.4g}. Check certified_ "
            "and certificate_.class_status before relying on this model on new data.",
            UserWarning,
        )
