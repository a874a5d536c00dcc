"""The Clopper-Pearson guarantee of a fairness fit (``calibration="clopper-pearson"``).

A guarantee around the fit's steps: the rows are validated once, a share of each group (and
class, for the conditional kinds) is held out, the fit trains candidate models on the rest
at bounds moved inside the user's by the margins the held-out counts and the model's rates
(read by trial fits from the training rows' predictions) call for, and the held-out rows
certify them (:func:`~._certificate.fairness_certificate`) in a fixed sequence, tight to
loose, up to the first that fails (:mod:`._certified_sequence`). Its account is one story:
what the training rows met against the training bound, and what the held-out rows certify
against ``bound``.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from sklearn.utils.validation import _check_sample_weight

from .._warnings import warn
from ._certificate import KINDS as _KINDS
from ._certificate import (
    _pairs,
    calibration_counts,
    certification_margin,
    difference_training_bound,
    fairness_certificate,
)
from ._certified_multiclass import _inner_fit, fit_multiclass_certified, validated
from ._certified_sequence import candidate_bounds, certify_in_sequence
from ._groups import _group_key
from ._solve import calibration_seed
from ._verdict import NOT_MET

__all__ = ["ClopperPearson"]

#: The probability of passing at which the trial fits are placed and below which the fit
#: refuses: a split where no model would pass about 9 times in 10 is too small to certify.
_POWER = 0.9

#: Fits that only tell the model's rates, before the candidates that are certified: the rates move
#: with the training bound, and a second trial fit brings the margin within a few thousandths
#: of its fixed point, on the safe side (bank, age 71+, one split: 0.091 after one, 0.067
#: after two, and the final model's rates call for 0.073).
_TRIAL_FITS = 2


class ClopperPearson:
    """The route's guarantee for ``calibration="clopper-pearson"`` (the module docstring)."""

    def fit(self, est, X, y, sample_weight, fit_params, route) -> None:
        if route.multiclass:
            fit_multiclass_certified(est, X, y, sample_weight, fit_params)
        else:
            fit_certified(est, X, y, sample_weight, fit_params)


def fit_certified(est, X, y, sample_weight, fit_params):
    est._validate_params()
    kind, form = _certificate_kind(est)
    bound = est._check_bound()
    fitting = validated(est, X, y, sample_weight, fit_params, multiclass=False)
    sensitive_features = fit_params["sensitive_features"]
    X, y, y01, sw = fitting.X, fitting.y, fitting.labels, fitting.weights
    feature_names = getattr(est, "feature_names_in_", None)
    codes = fitting.fit_params["codes"].astype(np.intp)
    labels = fitting.fit_params["labels"]
    # The groups left out of the constraints (min_group_size) are left out of the
    # certificate too: none of their rows is held out, and no rate of theirs is certified.
    excluded = fitting.fit_params["excluded"]
    live = np.flatnonzero((sw > 0) & ~np.isin(codes, excluded))
    protected = est._protected_codes(codes[live], labels, excluded=excluded)
    seed = calibration_seed(est.random_state)
    held = _hold_out(est, codes, y01, live, np.random.default_rng(seed))
    counts = calibration_counts(codes[held], y01[held], kind=kind)
    # The user's weights, held-out rows zeroed: the fit applies the class weights and
    # the scale of the weights itself (on sw they would be applied twice).
    train_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, copy=True)
    train_weight[held] = 0.0
    fit = functools.partial(
        _inner_fit, est, X, y, train_weight, sensitive_features=sensitive_features
    )
    # The margin depends on the rates the model will have (a rate of 0.5 has the widest
    # intervals). Trial fits tell them: the first at the margin of the widest intervals,
    # the second at the margin of the first's rates (its rates are those of a model
    # trained a little looser than the final one: a margin on the safe side). Only the
    # training rows' predictions are read, never the held-out rows'.
    train = np.setdiff1d(live, held)
    train_bound = _first_bound(kind, form, counts, est.delta, bound, y01, sw, live, protected)
    spent = 0.0  # the passes of every fit, counted in n_data_passes_
    for _ in range(_TRIAL_FITS):
        fit(trial := train_bound)
        spent += est.n_data_passes_
        pred = (est._score(X[train]) > 0).astype(int)
        rates = training_rates(kind, form, pred, y01[train], codes[train], counts.groups)
        train_bound = _training_bound(
            kind, form, counts, est.delta, bound, rates, protected, trial
        )
        if train_bound is None:
            break
    if train_bound is None:
        _refuse(est, codes, labels, y01, live, seed, held, counts, rates, protected,
                kind, form, bound)  # fmt: skip
    # The candidates, tight to loose, from the last trial fit's rates: all set before any
    # held-out prediction is read (see _certified_sequence). Each fit certifies its model
    # on the held-out rows before its verdict (as the umbrella rule sets its threshold
    # within the fit): bound_met_ and converged_ are the certificate's, the training rows'
    # reading is told beside it.
    candidates = candidate_bounds(
        lambda power: _training_bound(
            kind, form, counts, est.delta, bound, rates, protected, trial, power=power
        ),
        looser_up=form == "difference",
    )
    certify = functools.partial(
        _certify, X=X, y01=y01, codes=codes, labels=labels, held=held,
        protected=protected, kind=kind, form=form, bound=bound,
    )  # fmt: skip
    caught, train_bound = certify_in_sequence(
        est, fit, certify, candidates, spent=spent, held_share=len(held) / len(train)
    )
    if feature_names is not None:
        est.feature_names_in_ = feature_names
    est.bound_ = bound
    est.training_bound_ = train_bound
    cert = est.certificate_
    if not np.all(sw[held] == sw[held][0]):
        warn(
            "sample_weight differs among the calibration rows: the certificate counts "
            "each row once, so it is for the unweighted population.",
            UserWarning,
        )
    _tell_certified_fit(est, caught, cert, train_bound)
    return est


def training_rates(kind, form, pred, y01, codes, groups):
    """The rates :func:`certification_margin` takes, read from a model's predictions on the
    training rows: per cell and group (``groups``, codes, as the calibration counts hold
    them); for a ratio the higher group's rate of each cell, for ``positive_share`` the
    overall positive prediction rate. A cell without training rows takes 0.5 (the widest
    intervals); the rates are kept off 0 and 1 (an estimate, not a certainty)."""
    if kind == "positive_share":
        return float(np.clip(pred.mean(), 1e-3, 1 - 1e-3))
    hit = pred != y01 if kind == "error_rate_parity" else pred == 1
    cells = {"all": np.ones(len(pred), bool), "y=1": y01 == 1, "y=0": y01 == 0}
    rates = np.full((len(_KINDS[kind]), len(groups)), 0.5)
    for c, cell in enumerate(_KINDS[kind]):
        for j, group in enumerate(groups):
            rows = cells[cell] & (codes == group)
            if rows.any():
                rates[c, j] = hit[rows].mean()
    rates = np.clip(rates, 1e-3, 1 - 1e-3)
    if form == "ratio":
        rates = np.broadcast_to(rates.max(axis=1, keepdims=True), rates.shape)
    return rates


def _training_bound(kind, form, counts, delta, bound, rates, protected, trial=None, power=_POWER):
    """The bound to train at, or None when no model at ``rates`` would pass the
    certificate. With the rates of a trial fit at ``trial`` (a difference), every pair of
    every cell is taken at its own gap (:func:`difference_training_bound`); otherwise each
    cell at the margin of :func:`certification_margin`."""
    if trial is not None and form == "difference" and kind != "positive_share":
        pair = _pairs(counts.groups, protected)[0]
        return difference_training_bound(
            counts.n, rates, pair, bound=bound, delta=delta, power=power, trial_bound=trial
        )
    # Every cell at the margin must pass (equalized odds has two): each at
    # power ** (1 / cells), so that all together pass with about power.
    power = power ** (1 / counts.n.shape[0])
    margin = certification_margin(
        kind, form, counts, delta, bound=bound, rates=rates, power=power, protected=protected
    )
    train = bound - margin if form == "difference" else bound + margin
    low, high = (0.0, 1.0) if form == "difference" else (1e-12, 1.0)
    ok = np.isfinite(margin) and low <= train < high + (form == "ratio")
    return train if ok else None


def _certificate_kind(est):
    """``(kind, form)`` of :func:`fairness_certificate` for this constraint."""
    if est.constraint == "disparate_impact":
        raise ValueError(
            "calibration='clopper-pearson' does not certify constraint='disparate_impact' "
            "(a ratio to the overall rate); use constraint='demographic_parity' with "
            "form='ratio', the ratio between groups."
        )
    if est.constraint == "positive_share":
        return "positive_share", "minimum"
    return est.constraint, est._form()


def _hold_out(est, codes, y01, live, rng, size=None):
    """Calibration rows: ``calibration_size`` (or ``size``) of each group (and class, for
    the conditional kinds), or of all rows for ``positive_share`` (an i.i.d. draw)."""
    size = est.calibration_size if size is None else size
    if est.constraint == "positive_share":
        strata = np.zeros(len(codes), dtype=np.int64)
    elif est.constraint in ("demographic_parity", "error_rate_parity"):
        strata = codes
    else:
        strata = 2 * codes + y01
    held = []
    for stratum in np.unique(strata[live]):
        rows = live[strata[live] == stratum]
        n = math.ceil(size * len(rows))
        if n >= len(rows):
            n = len(rows) - 1
        held.append(rng.choice(rows, size=max(n, 0), replace=False))
    return np.sort(np.concatenate(held))


def _first_bound(kind, form, counts, delta, bound, y01, sw, live, protected):
    """The bound of the first fit, which only tells the model's rates: the training bound
    at the widest intervals (rates of 0.5; for ``positive_share`` the labels' rate stands
    for the rate of positive predictions), or halfway to the metric's best value when even
    those intervals leave no room."""
    wide = float(np.average(y01[live], weights=sw[live])) if kind == "positive_share" else 0.5
    first = _training_bound(kind, form, counts, delta, bound, wide, protected)
    if first is None:
        first = bound / 2 if form == "difference" else (1 + bound) / 2
    return first


def _refuse(
    est, codes, labels, y01, live, seed, held, counts, rates, protected, kind, form, bound
):
    """The ValueError of a split too small to certify ``bound`` at the model's rates (a
    trial fit's), with the settings (each changed alone) that would do."""

    def training_bound(held, bound, delta):
        """The bound to train at with these rows held out, or None."""
        counts = calibration_counts(codes[held], y01[held], kind=kind)
        # A difference: the settings named are those with which a model with no gap
        # passes at the widest intervals (rates of 0.5, every pair), so at any rates.
        # Otherwise the margin at the model's rates (per group of the first split: a split
        # with other groups, which only a group of one row could give, takes 0.5).
        if form == "difference" and kind != "positive_share":
            at, trial = 0.5, 0.0
        else:
            same = np.ndim(rates) == 0 or counts.n.shape == np.shape(rates)
            at, trial = (rates if same else 0.5), None
        train = _training_bound(kind, form, counts, delta, bound, at, protected, trial)
        return train, counts

    per_group = {
        cell: dict(zip(map(_group_key, labels[counts.groups]), row, strict=True))
        for cell, row in zip(counts.cells, counts.n.tolist(), strict=True)
    }
    shown = np.round(rates, 3).tolist()
    raise ValueError(
        f"The calibration rows are too few to certify bound={bound:g} with "
        f"delta={est.delta:g}: calibration_size={est.calibration_size!r} holds out "
        f"{len(held)} rows ({per_group} per group), and no model with the rates a trial fit "
        f"has on the training rows ({shown}), not even one with no gap between the groups, "
        "would pass the certificate about 9 times in 10. "
        + _what_would_certify(est,
            training_bound, lambda size: _hold_out(est,
                codes, y01, live, np.random.default_rng(seed), size=size
            ), held, bound, form,
        )
    )  # fmt: skip


def _certify(est, *, X, y01, codes, labels, held, protected, kind, form, bound):
    """The certificate of the fitted model on the held-out rows (set and returned)."""
    pred = (est._score(X[held]) > 0).astype(int)
    cert = fairness_certificate(
        pred, y01[held], codes[held], kind=kind, form=form, bound=bound,
        delta=est.delta, protected=protected,
    )  # fmt: skip
    # The user's labels ("Female"), not the codes, in the certificate and its message.
    cert = dataclasses.replace(cert, groups=labels[cert.groups])
    est.certificate_ = cert
    est.certified_ = bool(cert.certified)
    est.calibration_indices_ = held
    return cert


def _tell_certified_fit(est, caught, cert, train_bound):
    """One account of a certified fit: what the training rows met (against the training
    bound) and what the held-out rows certify (against ``bound``), never two that
    contradict each other."""
    trained = (
        f"The model was trained at training_bound_={train_bound:.4g} (tighter than "
        f"bound={cert.bound:g} by the margin the held-out counts and the model's rates call "
        "for) and reached "
        f"{np.round(est.hard_constraint_values_, 4).tolist()} on the training rows' "
        "predictions"
    )
    for w in caught:
        # A miss of the training bound is told once, in the certificate's account below.
        warn(str(w.message).replace(NOT_MET, "").strip(), w.category)
    trained_met = est._bound_met_rows  # the training rows against the training bound
    if est.certified_:
        if not trained_met:
            warn(
                f"{trained}, which misses the training bound; the certificate holds all "
                f"the same, and it is what speaks for new data (bound_met_ and converged_ "
                f"are its verdict): {cert.message}",
                UserWarning,
            )
        return
    why = "" if trained_met else ", which misses the training bound"
    warn(
        f"FairLogisticClassifier could not certify the bound on new data: {cert.message} "
        f"{trained}{why}. Check certified_ before relying on this model on new data.",
        UserWarning,
    )


def _what_would_certify(est, training_bound, hold_out, held, bound, form):
    """The nearest setting, changed alone, with which a certificate is within reach:
    a larger ``calibration_size``, a looser ``bound``, a larger ``delta``."""
    found = []
    for size in np.arange(0.35, 0.95, 0.05):
        if size > est.calibration_size + 1e-9:
            trial = hold_out(float(size))
            if training_bound(trial, bound, est.delta)[0] is not None:
                found.append(f"calibration_size={size:.2f} ({len(trial)} rows held out)")
                break
    step = 0.005 if form == "difference" else -0.005
    for trial in np.arange(bound + step, 1.0 if step > 0 else 0.0, step):
        if training_bound(held, float(trial), est.delta)[0] is not None:
            found.append(f"bound={trial:.3f}")
            break
    for delta in (0.1, 0.2, 0.3, 0.4, 0.5):
        if delta > est.delta and training_bound(held, bound, delta)[0] is not None:
            found.append(f"delta={delta:g}")
            break
    if not found:
        return (
            "No calibration_size up to 0.9, no bound and no delta up to 0.5 makes it "
            "certifiable on these rows: more data is needed."
        )
    return "Each of these alone would make it certifiable: " + ", or ".join(found) + "."
