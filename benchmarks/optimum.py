"""Done means at the optimum (issue 33): the families, and the user's first tests of a fit.

For each family (a generator each; the tests use small ones):

* **a loose bound is LogisticRegression**: with the bound above LogisticRegression's own
  training gap (+ 0.1, or a ratio 0.1 below its own), the fit's test predictions against
  LogisticRegression's at the same ``C`` in the estimator's coordinates (see
  :func:`logistic_regression_like`): agreement, test AUC, ``converged_``, warnings;
* **monotone in the bound**: from binding to loose in five steps, the training log-loss.

Run from the root of a checkout::

    OMP_NUM_THREADS=1 python -m benchmarks.optimum [family ...]

It writes ``benchmarks/results/optimum.md``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from fairlearn import metrics as fm
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.model_selection import train_test_split

from benchmarks.families import sparse_rows
from sklearn_ialm import FairLogisticClassifier
from sklearn_ialm.estimators._scaling import _feature_scaling

# -- families ----------------------------------------------------------------------------------


def _split(X, y, g, seed=0):
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(
        X, y, g, test_size=0.3, stratify=g, random_state=seed
    )
    return Xtr, ytr, gtr, Xte, yte, gte


def wide_sparse(n=100_000, d=10_000, nnz=50, seed=0):
    """Non-negative CSR rows (:func:`benchmarks.families.sparse_rows`), the group drawn
    independently of X: no classifier of X has a parity gap beyond sampling noise."""
    rng = np.random.default_rng(seed)
    X, _, y = sparse_rows(n, d, nnz, rng)
    return _split(X, y, rng.integers(0, 2, n))


def imbalanced(n=5000, d=10, positive=0.85, group_in_x=False, seed=0):
    """Labels ``positive`` of one class (80-95 % in the family); the group shifts the score
    a little, and is a column of X or not."""
    rng = np.random.default_rng(seed)
    g = (rng.random(n) < 0.3).astype(int)
    X = rng.standard_normal((n, d))
    s = X[:, 0] + 0.6 * X[:, 1] - 0.4 * X[:, 2] + 0.3 * g
    t = s + rng.logistic(size=n)
    y = (t > np.quantile(t, 1 - positive)).astype(int)
    if group_in_x:
        X = np.column_stack([X, g])
    return _split(X, y, g, seed)


def many_small_groups(k=60, lo=20, hi=50, d=8, seed=0):
    """``k`` groups of ``lo``-``hi`` rows each, the group one-hot in X (dense)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(lo, hi + 1, size=k)
    g = np.repeat(np.arange(k), sizes)
    n = len(g)
    X = rng.standard_normal((n, d))
    X[:, 0] += (g % 5) * 0.3
    y = (X[:, 0] + X[:, 1] + rng.logistic(size=n) > 0.5).astype(int)
    return _split(np.column_stack([X, np.eye(k)[g]]), y, g, seed)


def unscaled(n=6000, seed=0):
    """Columns of spreads from 1e-3 to 1e6, one with an offset of 1e7, and a constant one."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, 6))
    g = (Z[:, 0] + rng.normal(size=n) > 0.3).astype(int)
    y = (Z[:, 0] + Z[:, 1] - 0.5 * Z[:, 2] + rng.logistic(size=n) > 0).astype(int)
    X = Z * np.array([1e-3, 1.0, 1e3, 1e6, 1.0, 10.0]) + np.array([0, 0, 0, 0, 1e7, 0])
    return _split(np.column_stack([X, np.full(n, 3.0)]), y, g, seed)


FAMILIES = {
    "wide_sparse": wide_sparse,
    "imbalanced": imbalanced,
    "imbalanced_in_x": lambda **kw: imbalanced(group_in_x=True, positive=0.9, **kw),
    "many_small_groups": many_small_groups,
    "unscaled": unscaled,
}

# -- the user's baseline -----------------------------------------------------------------------


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


def loose_bound_row(family, kind="demographic_parity", **kw) -> dict:
    """The fit at LogisticRegression's own training gap + 0.1, against LogisticRegression."""
    Xtr, ytr, gtr, Xte, yte, gte = FAMILIES[family](**kw)
    lr, transform = logistic_regression_like(Xtr, ytr)
    own = _gap(kind, ytr, lr.predict(transform(Xtr)), gtr)
    bound = min(own + 0.1, 1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.process_time()
        clf = FairLogisticClassifier(constraint=kind, bound=bound, random_state=0)
        clf.fit(Xtr, ytr, sensitive_features=gtr)
        seconds = time.process_time() - t0
    t0 = time.process_time()
    logistic_regression_like(Xtr, ytr)
    lr_seconds = time.process_time() - t0
    return dict(
        family=family,
        kind=kind,
        bound=bound,
        agreement=float(np.mean(clf.predict(Xte) == lr.predict(transform(Xte)))),
        auc=float(roc_auc_score(yte, clf.decision_function(Xte))),
        lr_auc=float(roc_auc_score(yte, lr.decision_function(transform(Xte)))),
        log_loss=float(log_loss(ytr, clf.predict_proba(Xtr))),
        lr_log_loss=float(log_loss(ytr, lr.predict_proba(transform(Xtr)))),
        converged=bool(clf.converged_),
        warnings=[str(w.message) for w in caught],
        passes=float(clf.n_data_passes_),
        seconds=seconds,
        lr_seconds=lr_seconds,
    )


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


def main(names) -> None:
    lines = [
        "# Done at the optimum: loose bounds and monotone log-loss",
        "",
        "`OMP_NUM_THREADS=1 python -m benchmarks.optimum` (generated; do not edit).",
        "",
        "## A loose bound is LogisticRegression (demographic parity, LR's own gap + 0.1)",
        "",
        "| family | bound | agreement | AUC (LR) | log-loss (LR) | converged | warnings "
        "| passes | CPU s (LR) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        r = loose_bound_row(name)
        lines.append(
            f"| {name} | {r['bound']:.3f} | {r['agreement']:.4f} | {r['auc']:.4f} "
            f"({r['lr_auc']:.4f}) | {r['log_loss']:.4f} ({r['lr_log_loss']:.4f}) | "
            f"{r['converged']} | {len(r['warnings'])} | {r['passes']:.1f} | "
            f"{r['seconds']:.2f} ({r['lr_seconds']:.2f}) |"
        )
        print(lines[-1], flush=True)
    lines += ["", "## Monotone in the bound (training log-loss, binding to loose)", ""]
    for name in names:
        rows = monotone_rows(name)
        cells = ", ".join(
            f"{r['bound']:.3f}: {r['log_loss']:.4f}" for r in rows if np.isfinite(r["bound"])
        )
        lines.append(f"- {name}: {cells}; LogisticRegression {rows[-1]['log_loss']:.4f}")
        print(lines[-1], flush=True)
    out = Path(__file__).parent / "results" / "optimum.md"
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or list(FAMILIES))
