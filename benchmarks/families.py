"""The data families of the benchmarks and of the tests that read them, defined once.

Each function returns rows ready to fit, most as ``(X, y, groups, X_test, y_test,
groups_test)``; the recipe is in its docstring. ``CASES`` are the families of issue 20
(``python -m benchmarks robust`` judges a fit on each against a user's peers, and
``benchmarks.finish_ab`` times them); ``OPTIMUM`` those of issue 33 (a loose bound is
``LogisticRegression``: ``tests/test_optimum.py``); ``compas_like``, ``small_group`` and
``random_family`` those of the warnings' advice (``tests/test_advice.py``). The randomised
families of the invariants (hypothesis) are ``tests/_families.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from fairlearn import metrics as fm
from fairlearn.postprocessing import ThresholdOptimizer
from fairlearn.reductions import (
    DemographicParity,
    EqualizedOdds,
    ErrorRateParity,
    ExponentiatedGradient,
    FalsePositiveRateParity,
    TruePositiveRateParity,
)
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_digits, load_wine, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_ialm.datasets import load_a9a

#: fairlearn's metric of each kind (training and test gaps) and its moment for EG.
_METRIC = {
    "demographic_parity": (fm.demographic_parity_difference, DemographicParity),
    "equalized_odds": (fm.equalized_odds_difference, EqualizedOdds),
    "true_positive_rate_parity": (fm.equal_opportunity_difference, TruePositiveRateParity),
    "false_positive_rate_parity": (fm.false_positive_rate_difference, FalsePositiveRateParity),
    "error_rate_parity": (
        lambda y, p, sensitive_features: fm.MetricFrame(
            metrics=lambda t, q: np.mean(t != q),
            y_true=y,
            y_pred=p,
            sensitive_features=sensitive_features,
        ).difference(),
        ErrorRateParity,
    ),
}

# a9a's one-hot blocks (0-based first column of each of Adult's 14 variables, LIBSVM's
# encoding of binned numbers and categories): decoded to categories, one-hot again below.
_A9A_BLOCKS = [0, 5, 13, 18, 34, 39, 46, 60, 66, 71, 73, 75, 77, 82, 123]
_A9A_NAMES = [
    "age", "workclass", "fnlwgt", "education", "education_num", "marital", "occupation",
    "relationship", "race", "sex", "capital_gain", "capital_loss", "hours", "country",
]  # fmt: skip
_RACES = ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"]


def _a9a_frame(X):
    """a9a's rows as Adult's 14 categorical columns ("none" where a block is empty)."""
    X = sp.csr_matrix(X)
    cols = {}
    for name, lo, hi in zip(_A9A_NAMES, _A9A_BLOCKS[:-1], _A9A_BLOCKS[1:], strict=True):
        block = X[:, lo:hi]
        code = np.asarray(block.argmax(axis=1)).ravel()
        empty = np.asarray(block.sum(axis=1)).ravel() == 0
        cols[name] = np.where(empty, "none", code.astype(str))
    frame = pd.DataFrame(cols)
    frame["race"] = [_RACES[int(c)] if c != "none" else "none" for c in frame["race"]]
    frame["sex"] = frame["sex"].map({"0": "Female", "1": "Male"})
    return frame


def _adult(groups):
    """Adult (a9a decoded to its 14 columns, one-hot through a ColumnTransformer: the group
    columns are in X), the groups ``groups(frame)`` of the decoded rows."""
    d = load_a9a()
    train, test = _a9a_frame(d.data), _a9a_frame(d.data_test)
    ct = ColumnTransformer([("onehot", OneHotEncoder(handle_unknown="ignore"), _A9A_NAMES)])
    Xtr, Xte = ct.fit_transform(train).tocsr(), ct.transform(test).tocsr()
    return Xtr, d.target, groups(train), Xte, d.target_test, groups(test)


def adult_race():
    """Adult by race, five groups: White 27816 training rows, Asian-Pac-Islander 1039,
    Amer-Indian-Eskimo 311, Other 271, Black 3124."""
    return _adult(lambda frame: frame["race"].to_numpy())


def intersections():
    """Adult by race and sex, given as a two-column frame (ten intersections, the smallest
    of 90 training rows)."""
    return _adult(lambda frame: frame[["race", "sex"]])


def many_groups(n=4000, k=100, seed=0):
    """100 groups of 20 training rows, the group one-hot in X (sparse)."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(k), n // k)
    X = rng.standard_normal((n, 10))
    X[:, 0] += (groups % 5) * 0.3
    y = (X[:, 0] + X[:, 1] + rng.logistic(size=n) > 0.5).astype(int)
    X = sp.hstack([sp.csr_matrix(X), sp.csr_matrix(np.eye(k)[groups])]).tocsr()
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(
        X, y, groups, test_size=0.5, stratify=groups, random_state=0
    )
    return Xtr, ytr, gtr, Xte, yte, gte


def _label_and_group(s, noise, rng, lean=None):
    """``y = 1[s + logistic noise > 0]`` and the group, a noisy threshold of ``lean`` (the
    score ``s`` itself when ``None``): ``1[lean + N(0, (noise std(lean))^2) > 0]``."""
    y = (s + rng.logistic(size=len(s)) > 0).astype(int)
    t = s if lean is None else lean
    g = (t + rng.normal(scale=noise * t.std(), size=len(s)) > 0).astype(int)
    return y, g


#: The group noise (in standard deviations) of the binding levels of ``benchmarks.speed``
#: and ``benchmarks.finish_ab``.
MODERATE, STRONG = 1.0, 1.5


def binding_data(noise, n=1_000_000, d=20, seed=0, on="score"):
    """Dense n x d (and n / 10 test rows); the group (not in X) a noisy threshold of the
    label's own score (``on="score"``) or of the feature the label leans on most
    (``on="feature"``: the column of largest ``|w|``, signed as ``w``)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + n // 10, d))
    w = rng.standard_normal(d) / np.sqrt(d) * 2
    s = X @ w
    lean = None
    if on == "feature":
        j = int(np.argmax(np.abs(w)))
        lean = np.sign(w[j]) * X[:, j]
    y, g = _label_and_group(s, noise, rng, lean)
    return X[:n], y[:n], g[:n], X[n:], y[n:], g[n:]


def binding_csr(noise, n=1_000_000, d=10_000, nnz=20, seed=0):
    """CSR n x d (and n / 10 test rows), ``nnz`` standard-normal non-zeros a row in uniform
    columns (the rare duplicates summed); label and group from the score as
    :func:`binding_data` makes them (the group not a column of X)."""
    rng = np.random.default_rng(seed)
    m = n + n // 10
    cols = rng.integers(0, d, size=m * nnz, dtype=np.int32)
    vals = rng.standard_normal(m * nnz)
    indptr = np.arange(0, m * nnz + 1, nnz, dtype=np.int32)
    X = sp.csr_matrix((vals, cols, indptr), shape=(m, d))
    # Canonical CSR, as most producers give: the estimators would copy a non-canonical one.
    X.sum_duplicates()
    # w ~ N(0, 4 / nnz): the score's spread is that of the dense recipe.
    s = X @ (rng.standard_normal(d) * 2 / np.sqrt(nnz))
    y, g = _label_and_group(s, noise, rng)
    return X[:n], y[:n], g[:n], X[n:], y[n:], g[n:]


def sparse_rows(n, d, nnz, rng):
    """``(X, s, y)``: CSR rows of ``nnz`` non-zeros in [0, 1) (as TF-IDF or counts give),
    the score ``s`` of a sparse linear model and labels from it with logistic noise."""
    cols = rng.integers(0, d, size=(n, nnz))
    vals = rng.random((n, nnz))
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    X.sum_duplicates()
    w = rng.standard_normal(d) * (rng.random(d) < 0.1) * 3
    s = X @ w
    y = (s + rng.logistic(size=n) > np.median(s)).astype(int)
    return X, s, y


def tfidf(n=100_000, d=10_000, nnz=50, seed=0):
    """CSR 1e5 x 1e4, 50 non-zeros a row (see :func:`sparse_rows`), the group not a column
    of X but following the score."""
    rng = np.random.default_rng(seed)
    X, s, y = sparse_rows(n, d, nnz, rng)
    g = (s + rng.normal(scale=2 * s.std(), size=n) > np.median(s)).astype(int)
    return _split(X, y, g)


def constant_column():
    """The README's quick-start data with a constant column (3.0) beside them."""
    X, y = make_classification(
        n_samples=2000, n_features=10, n_informative=5, shuffle=False, random_state=0
    )
    g = (X[:, 0] + np.random.default_rng(0).normal(scale=0.5, size=len(X)) > 0.5).astype(int)
    return _split(np.column_stack([X, np.full(len(X), 3.0)]), y, g)


def small_table(n=1500, seed=0):
    """A small table: 1500 rows, 8 columns, one group of about 100 rows (not in X) whose
    rows lean positive."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8))
    g = (rng.random(n) < 0.07).astype(int)
    X[:, 0] += 0.8 * g
    y = (X[:, 0] + 0.7 * X[:, 1] - 0.5 * X[:, 2] + rng.logistic(size=n) > 0.3).astype(int)
    return _split(X, y, g)


def _split(X, y, g, seed=0):
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(
        X, y, g, test_size=0.3, stratify=g, random_state=seed
    )
    return Xtr, ytr, gtr, Xte, yte, gte


#: name -> (data, the group is a column of X, [(kind, bound), ...])
CASES = {
    "adult_race": (
        adult_race,
        True,
        [(kind, 0.05) for kind in _METRIC],
    ),
    "intersections": (intersections, True, [("demographic_parity", 0.05)]),
    "many_groups": (many_groups, True, [("demographic_parity", 0.1)]),
    # 1e6 x 20, the group a noisy threshold of the label's score: a bound that binds hard
    # (LogisticRegression's parity gap about 0.8 on the training rows), and with a noisier
    # group (its gap about 0.44).
    "binding_strong": (lambda: binding_data(0.3), False, [("demographic_parity", 0.02)]),
    "binding_moderate": (lambda: binding_data(1.2), False, [("demographic_parity", 0.02)]),
    "tfidf": (tfidf, False, [("demographic_parity", 0.02)]),
    "constant_column": (constant_column, False, [("demographic_parity", 0.05)]),
    "small_table": (small_table, False, [("demographic_parity", 0.05)]),
}


def _peer(kind, bound, in_x, X, y, g, Xt, gt):
    """``(name, test predictions, training gap)`` of the peer a user would reach for."""
    metric = _METRIC[kind][0]
    if in_x and kind != "error_rate_parity":
        dense = (lambda A: A.toarray()) if sp.issparse(X) else np.asarray
        to = ThresholdOptimizer(
            estimator=LogisticRegression(max_iter=1000),
            constraints=kind,
            predict_method="decision_function",
        )
        to.fit(dense(X), y, sensitive_features=g)
        train = to.predict(dense(X), sensitive_features=g, random_state=0)
        test = to.predict(dense(Xt), sensitive_features=gt, random_state=0)
        return "ThresholdOptimizer", test, metric(y, train, sensitive_features=g)
    if sp.issparse(X):
        if X.shape[0] * X.shape[1] > 1e8:
            return "ExponentiatedGradient (not run: needs X dense)", None, np.nan
        X, Xt = X.toarray(), Xt.toarray()  # fairlearn's reductions take dense rows only
    eg = ExponentiatedGradient(
        LogisticRegression(max_iter=1000), _METRIC[kind][1](difference_bound=bound)
    )
    eg.fit(X, y, sensitive_features=g)
    return (
        "ExponentiatedGradient",
        eg.predict(Xt, random_state=0),
        metric(y, eg.predict(X, random_state=0), sensitive_features=g),
    )


# -- issue 33: done means at the optimum ---------------------------------------------


def wide_sparse(n=100_000, d=10_000, nnz=50, seed=0):
    """Non-negative CSR rows (:func:`sparse_rows`), the group drawn
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


#: The families of issue 33 (done means at the optimum), for tests/test_optimum.py.
OPTIMUM = {
    "wide_sparse": wide_sparse,
    "imbalanced": imbalanced,
    "imbalanced_in_x": lambda **kw: imbalanced(group_in_x=True, positive=0.9, **kw),
    "many_small_groups": many_small_groups,
    "unscaled": unscaled,
}


# -- the warnings' advice (issue 49, item 4) --------------------------------------------

#: COMPAS's race counts after ProPublica's filter (6172 rows): African-American,
#: Caucasian, Hispanic, Other, Asian, Native American; and their two-year recidivism rates.
COMPAS_SIZES = (3175, 2103, 509, 343, 31, 11)
COMPAS_RATES = (0.52, 0.39, 0.37, 0.36, 0.23, 0.45)


def compas_like(seed=0, sizes=COMPAS_SIZES, rates=COMPAS_RATES, test_size=0.3):
    """A family like six-race COMPAS: ``(Xtr, ytr, gtr, Xte, yte, gte)``.

    Rows of groups of ``sizes``; per row an age (and its category: under 25, 25-45, over
    45), a sex, a prior count whose mean grows with the group's base rate, three juvenile
    counts and a charge degree; the label is logistic in them plus the group's offset,
    which is set so that each group's positive share is about ``rates``. X holds the
    numbers standardised and the categories one-hot; the group is not in X. The split is
    stratified on group and label.
    """
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(sizes)), sizes)
    n = len(groups)
    lift = np.log(np.asarray(rates) / (1 - np.asarray(rates)))  # the group's log-odds
    age = 18 + rng.gamma(2.0, 8.0, size=n)
    category = np.digitize(age, [25, 45])
    male = rng.random(n) < 0.8
    priors = rng.poisson(np.exp(0.6 + 0.8 * lift[groups] + rng.normal(0, 0.8, n)))
    juvenile = rng.poisson(0.1, size=(n, 3))
    felony = rng.random(n) < 0.65
    score = (
        -0.04 * (age - 35) + 0.12 * np.minimum(priors, 20) + 0.3 * male
        + 0.3 * juvenile.sum(axis=1) + 0.2 * felony
    )  # fmt: skip
    # The group's offset: its mean score moved to its base rate's log-odds.
    means = np.array([score[groups == g].mean() for g in range(len(sizes))])
    y = (score - means[groups] + lift[groups] + rng.logistic(size=n) > 0).astype(int)
    numbers = np.column_stack([age, priors, juvenile]).astype(float)
    numbers = (numbers - numbers.mean(axis=0)) / numbers.std(axis=0)
    X = np.column_stack([numbers, np.eye(3)[category], male, ~male, felony, ~felony])
    strata = groups * 2 + y
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(
        X.astype(float), y, groups, test_size=test_size, stratify=strata, random_state=seed
    )
    return Xtr, ytr, gtr, Xte, yte, gte


def small_group(size=5, seed=0, n=2000):
    """One group of ``size`` rows beside four of ``n / 4``: ten standard-normal features,
    the first shifted with the group, a logistic label on the first two; the group not in
    X. ``(X, y, groups)``."""
    rng = np.random.default_rng(seed)
    sizes = [size] + [n // 4] * 4
    groups = np.repeat(np.arange(5), sizes)
    X = rng.standard_normal((len(groups), 10))
    X[:, 0] += groups * 0.3
    y = (X[:, 0] + X[:, 1] + rng.logistic(size=len(groups)) > 0.5).astype(int)
    return X, y, groups


def random_family(seed):
    """A small family drawn from ``seed``: ``(X, y, groups, constraint, bound)``.

    Three to six groups, one or two of them of 5-25 rows beside others of 100-600; five
    standard-normal features, the first shifted with the group; the label logistic in the
    first two plus the group's own offset (the group tied to the label); the group not in
    X. Demographic parity or true-positive-rate parity at a bound of 0.01-0.05.
    """
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 7))
    small = int(rng.integers(1, 3))
    sizes = np.concatenate([rng.integers(5, 26, small), rng.integers(100, 601, k - small)])
    groups = np.repeat(np.arange(k), sizes)
    X = rng.standard_normal((len(groups), 5))
    X[:, 0] += rng.normal(0, 0.5, k)[groups]
    offset = rng.normal(0, 0.7, k)[groups]
    y = (X[:, 0] + X[:, 1] + offset + rng.logistic(size=len(groups)) > 0).astype(int)
    for g in range(k):  # every group holds both classes (true-positive rates defined)
        rows = np.flatnonzero(groups == g)
        y[rows[:2]] = [0, 1]
    constraint = ("demographic_parity", "true_positive_rate_parity")[seed % 2]
    bound = round(float(rng.uniform(0.01, 0.05)), 2)
    return X, y, groups, constraint, bound


# -- the certificates' price on new rows (issue 50) -------------------------------------


def two_classes(n, seed):
    """Two groups; label rate 0.3 + 0.2 group; three features (label, group, noise)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    y = (rng.random(n) < 0.3 + 0.2 * g).astype(int)
    X = np.column_stack([y + rng.normal(size=n), g + rng.normal(size=n), rng.normal(size=n)])
    return X, y, g


def three_classes(n, seed):
    """Two groups; three Gaussian classes (0.4, 0.35, 0.25); group 1's rows are shifted along
    the third feature, so the unconstrained model predicts class 2 more often in group 1:
    ``(X, y, groups)`` (the certificates' multi-class family: ``benchmarks.certificates``,
    ``tests/test_certificate_multiclass.py``)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    y = rng.choice(3, size=n, p=[0.4, 0.35, 0.25])
    X = rng.standard_normal((n, 3)) + np.eye(3)[y] * 1.6
    X[:, 2] += 0.8 * g
    return X, y, g


# -- more than two classes -------------------------------------------------------------


def multiclass_lean(name):
    """Digits or wine (``name``), a stratified 70/30 split standardised on the training rows,
    and a made-up group correlated with the label (odd labels lean to group 1: ``P(group 1)
    = 0.4``, ``0.6`` for odd labels): ``benchmarks.finish_ab``'s multi-class case,
    ``(X, y, g, X_test, y_test, g_test)``."""
    X, y = (load_digits if name == "digits" else load_wine)(return_X_y=True)
    g = (np.random.default_rng(0).random(len(y)) < 0.4 + 0.2 * (y % 2)).astype(int)
    X, Xt, y, yt, g, gt = train_test_split(X, y, g, test_size=0.3, stratify=y, random_state=0)
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), y, g, scaler.transform(Xt), yt, gt


def multiclass_ties(name, tie, draw=0):
    """Digits or wine (``name``), a stratified 70/30 split (``random_state=draw``)
    standardised on the training rows: ``(X, X_test, y, y_test, g, g_test)``. The group (not
    in X) is "b" with chance 0.7 for the upper half of the classes and 0.3 for the lower
    (``tie="halves"``: digits 5-9 against 0-4), 0.8 for class 0 and 0.4 for the others
    (``"one"``), or 0.5 (``"random"``), drawn by ``np.random.default_rng(draw)``: issue 49's
    multi-class sweep."""
    X, y = (load_digits if name == "digits" else load_wine)(return_X_y=True)
    K = len(np.unique(y))
    chance = {
        "halves": np.where(y >= (K + 1) // 2, 0.7, 0.3),
        "one": np.where(y == 0, 0.8, 0.4),
        "random": np.full(len(y), 0.5),
    }[tie]
    g = np.where(np.random.default_rng(draw).random(len(y)) < chance, "b", "a")
    X, X_test, y, y_test, g, g_test = train_test_split(
        X, y, g, test_size=0.3, random_state=draw, stratify=y
    )
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), scaler.transform(X_test), y, y_test, g, g_test
