"""Small groups (issue 49, item 3): what a user gets from a grid search whose folds leave a
group under ``min_group_size``, and from 100 groups of 20 rows with the groups in ``X``.

Run from the root of a checkout (its ``sklearn_ialm`` is imported)::

    OMP_NUM_THREADS=1 python -m benchmarks.small_groups [grid|many|many_out] [seed]

``grid``: six groups in 6000 rows (two of 11 and 31 rows, the group tied to the label and
not in ``X``: the family of ``tests/test_small_groups.py``), a 70/30 split stratified on
group and label, ``GridSearchCV(cv=3)`` over ``C`` and ``bound`` on the training split:
how many of the 27 fits score, the warnings naming ``min_group_size``.

``many``: ``make_classification(2000, 10)`` with 100 groups of 20 rows, one-hot in ``X``,
a 70/30 split, demographic parity 0.1: the fit against LogisticRegression, fairlearn's
ThresholdOptimizer and a per-group cut of LogisticRegression's scores (each group's top
share at the training positive rate: what per-group intercepts reach). ``many_out``: the
same rows without the group columns in ``X``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from fairlearn.metrics import demographic_parity_difference
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, train_test_split

from sklearn_ialm import FairLogisticClassifier


def grid(seed=0):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_small_groups import six_groups

    X, y, g = six_groups(seed=seed)
    strata = np.char.add(g.astype(str), y.astype(str))
    X_tr, X_te, y_tr, y_te, g_tr, _ = train_test_split(
        X, y, g, test_size=0.3, stratify=strata, random_state=0
    )
    cv = KFold(3, shuffle=True, random_state=0)
    print(
        "rows of 'E' per training fold:", [int(np.sum(g_tr[t] == "E")) for t, _ in cv.split(X_tr)]
    )
    start = time.perf_counter()
    with (
        sklearn.config_context(enable_metadata_routing=True),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        search = GridSearchCV(
            FairLogisticClassifier(random_state=0),
            {"C": [0.1, 1.0, 10.0], "bound": [0.05, 0.1, 0.2]},
            cv=cv,
        ).fit(X_tr, y_tr, sensitive_features=g_tr)
    took = time.perf_counter() - start
    scores = np.concatenate([search.cv_results_[f"split{k}_test_score"] for k in range(3)])
    said = sum("min_group_size" in str(w.message) for w in caught)
    print(
        f"{len(scores)} fits, {np.isfinite(scores).sum()} scored, {took:.1f} s; best "
        f"{search.best_params_}, test accuracy {search.score(X_te, y_te):.3f}; "
        f"{said} warnings name min_group_size"
    )


def many(seed=0, in_x=True):
    X, y = make_classification(2000, 10, random_state=seed)
    g = np.repeat(np.arange(100), 20)
    np.random.default_rng(seed).shuffle(g)
    Xg = np.column_stack([X, np.eye(100)[g]]) if in_x else X
    X_tr, X_te, y_tr, y_te, g_tr, g_te = train_test_split(
        Xg, y, g, test_size=0.3, random_state=seed
    )

    def gap(y_true, pred, groups):
        return demographic_parity_difference(y_true, pred, sensitive_features=groups)

    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = FairLogisticClassifier(bound=0.1, random_state=0).fit(
            X_tr, y_tr, sensitive_features=g_tr
        )
    took = time.process_time() - start
    print(
        f"FairLogisticClassifier: converged {clf.converged_}, {clf.n_data_passes_:.1f} passes, "
        f"{took:.2f} s CPU, train DP {gap(y_tr, clf.predict(X_tr), g_tr):.3f}, "
        f"test accuracy {np.mean(clf.predict(X_te) == y_te):.3f}"
    )
    start = time.process_time()
    lr = LogisticRegression(max_iter=2000).fit(X_tr, y_tr)
    lr_took = time.process_time() - start
    print(
        f"LogisticRegression: {lr_took:.2f} s CPU, "
        f"train DP {gap(y_tr, lr.predict(X_tr), g_tr):.3f}, "
        f"test accuracy {lr.score(X_te, y_te):.3f}"
    )
    to = ThresholdOptimizer(
        estimator=LogisticRegression(max_iter=2000),
        constraints="demographic_parity",
        predict_method="predict_proba",
    ).fit(X_tr, y_tr, sensitive_features=g_tr)
    pred_tr = to.predict(X_tr, sensitive_features=g_tr, random_state=0)
    pred_te = to.predict(X_te, sensitive_features=g_te, random_state=0)
    print(
        f"ThresholdOptimizer: train DP {gap(y_tr, pred_tr, g_tr):.3f}, "
        f"test accuracy {np.mean(pred_te == y_te):.3f}"
    )
    # Per-group intercepts: each group's top share of LogisticRegression's scores.
    s_tr, s_te = lr.decision_function(X_tr), lr.decision_function(X_te)
    rate, cut = y_tr.mean(), np.zeros(100)
    for k in range(100):
        top = np.sort(s_tr[g_tr == k])[::-1]
        m = int(round(rate * len(top)))
        cut[k] = (top[m - 1] + top[m]) / 2 if 0 < m < len(top) else top[0] + 1
    print(
        f"per-group cut of LR scores: train DP {gap(y_tr, s_tr > cut[g_tr], g_tr):.3f}, "
        f"test accuracy {np.mean((s_te > cut[g_te]) == y_te):.3f}"
    )


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "grid"
    run = {"grid": grid, "many": many, "many_out": lambda seed: many(seed, in_x=False)}[which]
    run(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
