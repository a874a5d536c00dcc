"""Binding bounds at a million rows (issue 21): our estimators against LogisticRegression.

The recipe: ``X ~ N(0, 1)`` of shape ``(n, 20)``, ``w ~ N(0, 4/20)``,
``y = 1[X w + logistic noise > 0]``; the group ``A = 1[X w + N(0, (1.2 std(X w))^2) > 0]``
leans on the label's score (a moderate binding: LogisticRegression's demographic-parity gap
is far above the bound). ``FairLogisticClassifier(constraint="demographic_parity",
bound=0.02)`` and ``NeymanPearsonClassifier(max_fpr=0.05)`` on the same ``X, y``, with
``random_state=0``, one thread, CPU seconds in this one process; ratios are to
``LogisticRegression()`` fitted in the same run. Test rows: a further ``n / 5`` of the recipe.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from benchmarks.speed.common import BOUND, dp_gap, fpr_fnr, measure
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

MAX_FPR = 0.05  # the Neyman-Pearson bound on this recipe
N_ROWS = 1_000_000
N_FEATURES = 20


def make_binding(n=N_ROWS, d=N_FEATURES, seed=0):
    """``X_tr, y_tr, A_tr, X_te, y_te, A_te`` of the recipe (module docstring)."""
    rng = np.random.default_rng(seed)
    n_all = n + n // 5
    X = rng.standard_normal((n_all, d))
    w = rng.normal(0.0, np.sqrt(4.0 / d), d)
    score = X @ w
    y = (score + rng.logistic(size=n_all) > 0).astype(int)
    A = (score + rng.normal(0.0, 1.2 * score.std(), n_all) > 0).astype(int)
    return X[:n], y[:n], A[:n], X[n:], y[n:], A[n:]


def _passes(model):
    h = getattr(model, "history_", {})
    checks = float(h["check_passes"][-1]) if len(h.get("check_passes", ())) else np.nan
    return dict(
        passes=float(model.n_data_passes_),
        check_passes=checks,
        solves=int(model.n_rounds_),
        converged=bool(model.converged_),
    )


def run(log=print, n=N_ROWS, repeats=1):
    """One LR, fairness and NP fit each on the recipe (one thread); rows of the report."""
    X, y, A, X_te, y_te, A_te = make_binding(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The compiled kernel loaded before any timed fit.
        FairLogisticClassifier(constraint="demographic_parity", bound=BOUND, max_passes=3).fit(
            X[:2000], y[:2000], sensitive_features=A[:2000]
        )
        NeymanPearsonClassifier(max_fpr=MAX_FPR, max_passes=3).fit(X[:2000], y[:2000])
    methods = [
        ("LogisticRegression", "fairness", lambda: LogisticRegression().fit(X, y)),
        (
            "FairLogisticClassifier",
            "fairness",
            lambda: FairLogisticClassifier(
                constraint="demographic_parity", bound=BOUND, random_state=0
            ).fit(X, y, sensitive_features=A),
        ),
        (
            "NeymanPearsonClassifier",
            "np",
            lambda: NeymanPearsonClassifier(max_fpr=MAX_FPR, random_state=0).fit(X, y),
        ),
    ]
    rows = []
    with threadpool_limits(1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, task, fit in methods:
            model, cpu, wall = measure(fit, repeats)
            pred_tr, pred_te = model.predict(X), model.predict(X_te)
            fpr_tr, _ = fpr_fnr(y, pred_tr)
            fpr_te, fnr_te = fpr_fnr(y_te, pred_te)
            row = dict(
                n=n, method=name, task=task, cpu=cpu, wall=wall, repeats=repeats,
                dp_train=dp_gap(y, pred_tr, A), dp_test=dp_gap(y_te, pred_te, A_te),
                fpr_train=fpr_tr, fpr_test=fpr_te, fnr_test=fnr_te,
                acc_test=float(np.mean(pred_te == y_te)),
            )  # fmt: skip
            if hasattr(model, "n_data_passes_"):
                row.update(_passes(model))
            else:
                row.update(lbfgs_iter=int(np.max(model.n_iter_)))
            rows.append(row)
            log(
                f"  binding {name}: {cpu:.2f} s CPU, DP train {row['dp_train']:.4f}, "
                f"FPR train {fpr_tr:.4f}, passes {row.get('passes', np.nan):.1f} "
                f"(stop tests {row.get('check_passes', np.nan):.1f}), "
                f"converged {row.get('converged')}"
            )
        for w in caught:
            log(f"  warning: {str(w.message)[:200]}")
    return rows


if __name__ == "__main__":
    import sys

    for r in run(n=int(float(sys.argv[1])) if len(sys.argv) > 1 else N_ROWS):
        print(r)
