"""The user's first tests of a fit (issue 33): ``LogisticRegression`` in the estimators'
coordinates, and the training log-loss from a binding to a loose bound. The families are
``benchmarks.families.OPTIMUM``."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from fairlearn import metrics as fm
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from benchmarks.families import OPTIMUM as FAMILIES
from benchmarks.families import imbalanced
from sklearn_ialm import FairLogisticClassifier
from sklearn_ialm.estimators._scaling import _feature_scaling

__all__ = ["FAMILIES", "imbalanced", "logistic_regression_like", "monotone_rows"]


def logistic_regression_like(X, y, C=1.0, fit_intercept=True):
    """``LogisticRegression(C)`` in the coordinates the estimators penalise (their ``C``
    docstring): a column whose mean exceeds its spread centred and divided by its standard
    deviation, any other divided by its root mean square; columns of zero spread left out.
    Returns ``(model, transform)``: ``model.predict(transform(X_new))``."""
    n = X.shape[0]
    scale, center, live = _feature_scaling(X, np.full(n, 1.0 / n), fit_intercept)
    cols = np.flatnonzero(live)

    def transform(Z):
        Z = Z[:, cols]
        s = scale[cols]
        shift = 0.0 if center is None else center[cols] / s
        if sp.issparse(Z):
            # Sparse columns are not centred (their mean is below their spread): kept sparse.
            Z = sp.csr_matrix(Z @ sp.diags(1.0 / s))
            return Z if not np.any(shift) else Z.toarray() - shift
        return Z / s - shift

    tol = 1e-8
    lr = LogisticRegression(C=C, tol=tol, max_iter=10_000, fit_intercept=fit_intercept)
    return lr.fit(transform(X), y), transform


def _gap(kind, y, pred, g):
    metric = {
        "demographic_parity": fm.demographic_parity_difference,
        "equalized_odds": fm.equalized_odds_difference,
    }[kind]
    return float(metric(y, pred, sensitive_features=g))


def monotone_rows(family, kind="demographic_parity", steps=5, **kw) -> list[dict]:
    """Training log-loss from a binding bound (a quarter of LogisticRegression's own gap) to
    a loose one (its gap + 0.1) in ``steps`` steps."""
    Xtr, ytr, gtr, *_ = FAMILIES[family](**kw)
    lr, transform = logistic_regression_like(Xtr, ytr)
    own = _gap(kind, ytr, lr.predict(transform(Xtr)), gtr)
    rows = []
    for bound in np.linspace(own / 4, own + 0.1, steps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = FairLogisticClassifier(constraint=kind, bound=float(bound), random_state=0)
            clf.fit(Xtr, ytr, sensitive_features=gtr)
        rows.append(
            dict(
                bound=float(bound),
                log_loss=float(log_loss(ytr, clf.predict_proba(Xtr))),
                gap=_gap(kind, ytr, clf.predict(Xtr), gtr),
                converged=bool(clf.converged_),
                passes=float(clf.n_data_passes_),
            )
        )
    rows.append(
        dict(bound=np.inf, log_loss=float(log_loss(ytr, lr.predict_proba(transform(Xtr)))))
    )
    return rows
