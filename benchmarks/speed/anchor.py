"""The anchor task and spambase: our estimators against LogisticRegression and the peers.

Every method runs in this one process, timed in CPU seconds (``time.process_time``) and wall
seconds; ratios are to ``LogisticRegression()`` fitted in the same run under the same thread
setting. The anchor rows run twice: under ``threadpool_limits(1)`` (one BLAS / OpenMP thread
for every method) and with the libraries' default threads. Our estimators run with their
defaults (hard-prediction bounds) plus ``random_state=0``; fairness is
``FairLogisticClassifier(constraint="demographic_parity", bound=0.02)``. The DP gap is
fairlearn's ``demographic_parity_difference`` of ``predict`` on the training rows (where the
bound is promised) and on the test rows.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from benchmarks.speed.common import (
    BOUND,
    NprocLogistic,
    dp_gap,
    fpr_fnr,
    load_spambase_task,
    make_anchor,
    measure,
)
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier


def _warm_up(X, y, A):
    """One small fit of each estimator, so that no timed fit loads the compiled kernel."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        FairLogisticClassifier(constraint="demographic_parity", bound=BOUND, max_passes=3).fit(
            X[:2000], y[:2000], sensitive_features=A[:2000]
        )
        NeymanPearsonClassifier(max_passes=3).fit(X[:2000], y[:2000])


def _work(model):
    if hasattr(model, "n_data_passes_"):
        return f"{model.n_data_passes_:.1f} passes, {model.n_rounds_} solve(s)"
    if hasattr(model, "n_iter_"):
        return f"{int(np.max(model.n_iter_))} lbfgs it"
    if hasattr(model, "predictors_"):
        return f"{len(model.predictors_)} LR fits"
    return ""


def fairness_rows(data, repeats, slow_repeats, log, label):
    """LR, FairLogisticClassifier and ExponentiatedGradient on one data set."""
    from fairlearn.reductions import DemographicParity, ExponentiatedGradient

    X, y, A, X_te, y_te, A_te = data
    methods = [
        ("LogisticRegression", lambda: LogisticRegression().fit(X, y), repeats),
        (
            "FairLogisticClassifier",
            lambda: FairLogisticClassifier(
                constraint="demographic_parity", bound=BOUND, random_state=0
            ).fit(X, y, sensitive_features=A),
            repeats,
        ),
        (
            "ExponentiatedGradient",
            lambda: ExponentiatedGradient(
                LogisticRegression(), DemographicParity(difference_bound=BOUND)
            ).fit(X, y, sensitive_features=A),
            slow_repeats,
        ),
    ]
    rows = []
    for name, fit, rep in methods:
        model, cpu, wall = measure(fit, rep)

        def predict(Z, model=model, name=name):
            if name == "ExponentiatedGradient":
                return model.predict(Z, random_state=0)  # its randomized classifier
            return model.predict(Z)

        rows.append(
            dict(
                data=label,
                task="fairness",
                method=name,
                repeats=rep,
                cpu=cpu,
                wall=wall,
                dp_train=dp_gap(y, predict(X), A),
                dp_test=dp_gap(y_te, predict(X_te), A_te),
                acc_test=float(np.mean(predict(X_te) == y_te)),
                work=_work(model),
            )
        )
        log(f"  {label} {name}: {cpu:.3f} s CPU, DP train {rows[-1]['dp_train']:.4f}")
    return rows


def np_rows(data, repeats, slow_repeats, log, label):
    """LR, NeymanPearsonClassifier and nproc on one data set (FPR <= 0.2)."""
    X, y, X_te, y_te = data
    methods = [
        ("LogisticRegression", lambda: LogisticRegression().fit(X, y), repeats),
        (
            "NeymanPearsonClassifier",
            lambda: NeymanPearsonClassifier(random_state=0).fit(X, y),
            repeats,
        ),
        ("nproc (logistic)", lambda: NprocLogistic().fit(X, y), slow_repeats),
    ]
    rows = []
    for name, fit, rep in methods:
        model, cpu, wall = measure(fit, rep)
        fpr_tr, _ = fpr_fnr(y, model.predict(X))
        fpr_te, fnr_te = fpr_fnr(y_te, model.predict(X_te))
        rows.append(
            dict(
                data=label,
                task="np",
                method=name,
                repeats=rep,
                cpu=cpu,
                wall=wall,
                fpr_train=fpr_tr,
                fpr_test=fpr_te,
                fnr_test=fnr_te,
                acc_test=float(np.mean(model.predict(X_te) == y_te)),
                work=_work(model),
            )
        )
        log(f"  {label} {name}: {cpu:.3f} s CPU, FPR test {fpr_te:.4f}")
    return rows


def run(log=print, repeats=3, slow_repeats=1):
    """The anchor rows under both thread settings and the spambase NP rows (one thread)."""
    anchor = make_anchor(0)
    X, y, A, X_te, y_te, _ = anchor
    _warm_up(X, y, A)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # fairlearn's pandas deprecations
        for threads in ("1 thread", "default threads"):
            limit = 1 if threads == "1 thread" else None
            with threadpool_limits(limit):
                log(f"anchor, {threads}")
                for r in fairness_rows(anchor, repeats, slow_repeats, log, "anchor"):
                    rows.append(dict(r, threads=threads))
                for r in np_rows((X, y, X_te, y_te), repeats, slow_repeats, log, "anchor"):
                    rows.append(dict(r, threads=threads))
        with threadpool_limits(1):
            log("spambase, 1 thread")
            for r in np_rows(load_spambase_task(), repeats, slow_repeats, log, "spambase"):
                rows.append(dict(r, threads="1 thread"))
    return rows
