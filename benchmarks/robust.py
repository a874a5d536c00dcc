"""Fits that should not depend on the units of X (issue 12): before/after figures.

Each case fits FairLogisticClassifier (unconstrained when no groups are given, else
demographic parity) and NeymanPearsonClassifier, and compares test accuracy / AUC with
``make_pipeline(StandardScaler(), LogisticRegression())`` on the same split.

Run from the root of a checkout (its ``sklearn_ialm`` is imported)::

    OMP_NUM_THREADS=1 python -m benchmarks.robust [case ...] [C=None max_passes=300 ...]

The cases of :mod:`benchmarks.families` (many and small groups, intersections, bounds that bind
at a million rows, wide sparse data, a constant column, a small table) run after these.
"""

from __future__ import annotations

import ast
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, StandardScaler

from sklearn_ialm.estimators import FairLogisticClassifier, NeymanPearsonClassifier

from . import families

_LINES: list[str] = []


def _report(line):
    """Print a line and keep it for the results file."""
    print(line, flush=True)
    _LINES.append(line)


def _unscaled(factor=None):
    X, y = make_classification(n_samples=5000, n_features=20, n_informative=5, random_state=0)
    if factor is None:
        X[:, 3] = X[:, 3] * 1e6 + 1e7
    else:
        X = X * factor
    return X, y, None


def _sparse(n=100_000, d=10_000, nnz=20, seed=0):
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, d, size=(n, nnz))
    vals = rng.exponential(1.0, size=(n, nnz))
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    X.sum_duplicates()
    w = rng.standard_normal(d) * (rng.random(d) < 0.1) * 3
    s = X @ w
    y = (s + rng.logistic(size=n) > np.median(s)).astype(int)
    return X, y, None


def _dense(n=20_000, d=1000):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=50, random_state=0)
    return X, y, None


def _separable(n=6000):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 12))
    g = (rng.random(n) < 0.3).astype(int)
    X[:, 0] += g
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(n) > 1).astype(int)
    return StandardScaler().fit_transform(X), y, g


def _a9a():
    from sklearn_ialm.datasets import load_a9a

    d = load_a9a()
    return d.data, d.target, d.groups


def _anchor():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))
    from anchor_task import make_fair_data

    Xtr, ytr, atr, Xte, yte, ate = make_fair_data(0)
    return np.vstack([Xtr, Xte]), np.r_[ytr, yte], np.r_[atr, ate]


def _spambase():
    from sklearn_ialm.datasets import load_spambase

    X, y = load_spambase(return_X_y=True)
    return X, y, None


def _bank():
    from sklearn_ialm.datasets import fetch_bank_marketing

    d = fetch_bank_marketing(data_home="/work/shared/data", download_if_missing=False)
    return d.data, d.target, d.groups


def _breast():
    X, y = load_breast_cancer(return_X_y=True)
    return X, y, None


CASES = {
    "unscaled": (_unscaled, {}),
    "x1e200": (lambda: _unscaled(1e200), {}),
    "sparse": (_sparse, {}),
    "dense": (_dense, {}),
    "separable": (_separable, dict(constraint="demographic_parity", bound=0.05)),
    "a9a": (_a9a, dict(constraint="demographic_parity", bound=0.05)),
    "breast_np": (_breast, dict(max_fpr=0.05)),
    "anchor": (_anchor, dict(constraint="demographic_parity", bound=0.05)),
    "spambase_np": (_spambase, dict(max_fpr=0.05)),
    "bank": (_bank, dict(constraint="demographic_parity", bound=0.05)),
}


def _run(name, est, Xtr, ytr, Xte, yte, gtr, gte):
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        if isinstance(est, FairLogisticClassifier):
            est.fit(Xtr, ytr, sensitive_features=gtr)
        else:
            est.fit(Xtr, ytr)
    elapsed = time.perf_counter() - t
    conv = [str(x.category.__name__) for x in w if "Convergence" in x.category.__name__]
    s = est.decision_function(Xte)
    extra = ""
    if gte is not None:
        pr = est.predict(Xte) == est.classes_[1]
        extra = f" dp_gap={abs(pr[gte == 1].mean() - pr[gte == 0].mean()):.3f}"
    if isinstance(est, NeymanPearsonClassifier):
        extra += f" test_fpr={(s[yte == 0] > 0).mean():.3f} pos={(s > 0).mean():.3f}"
    _report(
        f"  {name:5s} acc={accuracy_score(yte, est.predict(Xte)):.3f} "
        f"auc={roc_auc_score(yte, s):.3f} conv={est.converged_} warn={bool(conv)} "
        f"passes={est.n_data_passes_:.3g} time={elapsed:.2f}s{extra}"
    )


def main(names, extra):
    for name in names:
        make, kw = CASES[name]
        X, y, g = make()
        if g is None:
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
            gtr = gte = None
        else:
            Xtr, Xte, ytr, yte, gtr, gte = train_test_split(X, y, g, test_size=0.3, random_state=0)
        _report(f"{name}: X {X.shape} {'sparse' if sp.issparse(X) else 'dense'}")
        scaler = MaxAbsScaler() if sp.issparse(X) else StandardScaler()
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # StandardScaler overflows on X * 1e200: the reference sees the data in its units.
            ref = 1e200 if name == "x1e200" else 1.0
            lr = make_pipeline(scaler, LogisticRegression(max_iter=1000)).fit(Xtr / ref, ytr)
        s = lr.decision_function(Xte / ref)
        _report(
            f"  LR    acc={accuracy_score(yte, lr.predict(Xte / ref)):.3f} "
            f"auc={roc_auc_score(yte, s):.3f} time={time.perf_counter() - t:.2f}s"
        )
        if "max_fpr" in kw:
            ests = [("NP", NeymanPearsonClassifier(random_state=0, **kw, **extra))]
        else:
            ests = [("Fair", FairLogisticClassifier(random_state=0, **kw, **extra))]
            if g is None:
                ests.append(("NP", NeymanPearsonClassifier(random_state=0, **extra)))
        for label, est in ests:
            try:
                _run(label, est, Xtr, ytr, Xte, yte, gtr, gte)
            except Exception as exc:  # a before/after record, not a test: report and go on
                _report(f"  {label:5s} raised {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    # Arguments: case names (of either part), and NAME=VALUE estimator parameters of the
    # issue-12 part (e.g. C=None, max_passes=300).
    args = sys.argv[1:]
    extra = {k: ast.literal_eval(v) for k, v in (a.split("=", 1) for a in args if "=" in a)}
    names = [a for a in args if "=" not in a] or list(CASES) + list(families.CASES)
    main([n for n in names if n in CASES], extra)
    units = list(_LINES)
    _LINES.clear()
    family_names = [n for n in names if n in families.CASES]
    if family_names:
        families.main(family_names, report=_report)
    if names == list(CASES) + list(families.CASES) and not extra:
        # The full default run is the committed report (regenerated, never edited).
        out = Path(__file__).parent / "results" / "robust.md"
        out.write_text(
            "# Robust fits\n\nGenerated by `OMP_NUM_THREADS=1 python -m benchmarks.robust` "
            "(regenerated, never edited).\n\n"
            "## Fits that do not depend on the units of X: the issue-12 cases\n\n"
            "Defaults of the estimators; test split 30 %; LR = StandardScaler (MaxAbsScaler "
            "for sparse) + LogisticRegression; times are wall seconds on a shared "
            "machine.\n\n```\n" + "\n".join(units) + "\n```\n\n"
            "## The data families of issue 20\n\n"
            + (families.__doc__.split("\n\nRun from")[0])
            + "\n\n"
            + "\n".join(_LINES)
            + "\n\n"
            + families.WHY
        )
