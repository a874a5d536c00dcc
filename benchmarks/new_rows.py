"""Does a default fit say what to expect on new rows? (issue 50, item 3)

For each case: whether the fit warned (``NewRowsWarning``), its expected interval
(``new_rows_``) and the rate measured on held-out rows with fairlearn's metrics.

German credit, madelon and the TF-IDF case are generated stand-ins (the originals are not
available here); Adult is ``shared/data/a9a`` (race: LIBSVM features 67-71, sex: 72).

    OMP_NUM_THREADS=1 python -m benchmarks.new_rows [case ...]
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference
from sklearn.datasets import load_svmlight_file, make_classification

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier
from sklearn_ialm.estimators._new_rows import NewRowsWarning

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "a9a"


def _fpr(y, pred):
    return float(np.mean(pred[y == 0] == 1))


def _np_case(X, y, n_train, max_fpr, seed=0):
    clf = NeymanPearsonClassifier(max_fpr=max_fpr, random_state=seed)
    return clf, (X[:n_train], y[:n_train]), (X[n_train:], y[n_train:]), _fpr


def german(seed=0):
    """700 training rows, 20 attributes (7 numeric, 13 categorical of 2-8 levels, one-hot:
    60 columns as German credit's encoding), 30 % positives (a stand-in)."""
    rng = np.random.default_rng(seed)
    Z, y = make_classification(
        1000, 20, n_informative=6, weights=[0.7], flip_y=0.1, random_state=seed
    )
    parts = [Z[:, :7]]
    for j in range(7, 20):
        levels = int(rng.integers(2, 9))
        cuts = np.quantile(Z[:, j], np.sort(rng.random(levels - 1)))
        parts.append(np.eye(levels)[np.searchsorted(cuts, Z[:, j])])
    return _np_case(np.hstack(parts), y, 700, 0.1, seed)


def madelon(seed=0):
    """1800 training rows, 500 features of which 20 informative (a stand-in)."""
    X, y = make_classification(
        2600, 500, n_informative=5, n_redundant=15, flip_y=0.01, random_state=seed
    )
    return _np_case(X, y, 1800, 0.1, seed)


def _adult(race: bool):
    X, y = load_svmlight_file(str(DATA / "a9a"), n_features=123)
    Xt, yt = load_svmlight_file(str(DATA / "a9a.t"), n_features=123)
    y, yt = (y > 0).astype(int), (yt > 0).astype(int)
    if race:
        cols = [66, 67, 68, 69, 70]  # White, Asian-Pac-Islander, Amer-Indian, Other, Black

        def groups(M):
            return np.asarray(M[:, cols].argmax(axis=1)).ravel()
    else:

        def groups(M):
            return np.asarray(M[:, 71].todense()).ravel().astype(int)

    return (X, y, groups(X)), (Xt, yt, groups(Xt))


def adult_race_eo(seed=0):
    train, test = _adult(race=True)
    clf = FairLogisticClassifier(constraint="equalized_odds", bound=0.05, random_state=seed)
    return clf, train, test, equalized_odds_difference


def adult_sex_dp(seed=0):
    train, test = _adult(race=False)
    clf = FairLogisticClassifier(constraint="demographic_parity", bound=0.05, random_state=seed)
    return clf, train, test, demographic_parity_difference


def tfidf(seed=0, n=3000, d=10_000):
    """Sparse nonnegative rows over a 10^4-word vocabulary, rare words (a stand-in)."""
    rng = np.random.default_rng(seed)
    words = np.minimum(rng.zipf(1.3, size=(n, 30)) - 1, d - 1)
    rows = np.repeat(np.arange(n), 30)
    X = sp.csr_matrix((np.ones(rows.size), (rows, words.ravel())), shape=(n, d))
    X.sum_duplicates()
    X.data = np.log1p(X.data)
    X = sp.csr_matrix(X.multiply(1 / np.sqrt(X.multiply(X).sum(axis=1))))
    group = rng.integers(0, 2, n)
    logit = 2 * (np.asarray(X[:, :20].sum(axis=1)).ravel() - 0.5) + 0.8 * group
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    k = n * 2 // 3
    clf = FairLogisticClassifier(constraint="demographic_parity", bound=0.02, random_state=seed)
    return clf, (X[:k], y[:k], group[:k]), (X[k:], y[k:], group[k:]), demographic_parity_difference


def anchor(seed=0):
    sys.path.insert(0, str(DATA.parents[1]))
    from anchor_task import make_fair_data

    Xtr, ytr, Atr, Xte, yte, Ate = make_fair_data(seed)
    clf = FairLogisticClassifier(constraint="demographic_parity", bound=0.02, random_state=seed)
    return clf, (Xtr, ytr, Atr), (Xte, yte, Ate), demographic_parity_difference


CASES = {
    "german": german,
    "madelon": madelon,
    "adult_race_eo": adult_race_eo,
    "tfidf": tfidf,
    "adult_sex_dp": adult_sex_dp,
    "anchor": anchor,
}


def run(name: str, seed: int = 0) -> dict:
    clf, train, test, metric = CASES[name](seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if len(train) == 3:
            clf.fit(train[0], train[1], sensitive_features=train[2])
        else:
            clf.fit(*train)
    # A NewRowsWarning, or Neyman-Pearson's few-negatives warning carrying new_rows_.
    fired = sum(
        issubclass(w.category, NewRowsWarning) or "(new_rows_)" in str(w.message) for w in caught
    )
    pred = clf.predict(test[0])
    if len(test) == 3:
        held = metric(test[1], pred, sensitive_features=test[2])
    else:
        held = metric(test[1], pred)
    info = clf.new_rows_ or {}
    return {"case": name, "fired": fired, "held_out": float(held), **info}


if __name__ == "__main__":
    for name in sys.argv[1:] or CASES:
        r = run(name)
        lo, hi = r.get("interval", (np.nan, np.nan))
        print(
            f"{name}: fired={r['fired']} training={r.get('training_value', np.nan):.3f} "
            f"interval=[{lo:.3f}, {hi:.3f}] held-out={r['held_out']:.3f} "
            f"smallest cell={r.get('smallest_cell')} params={r.get('n_parameters')}",
            flush=True,
        )
