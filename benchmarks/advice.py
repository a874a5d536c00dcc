"""The warnings' advised bounds, refitted (issue 49, item 4).

A fit that does not converge may advise a bound ("bound=0.12 or higher"). That advice must
converge when refitted, and be within 0.02 of the smallest bound that does. This script
fits each case at its bound, reads the advice, refits at it, and scans bounds in steps of
0.01 for the smallest that converges and is met on predictions (fairlearn's metric).

Run from the root of a checkout (its ``sklearn_ialm`` is imported)::

    OMP_NUM_THREADS=1 python -m benchmarks.advice [case ...]
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import train_test_split

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
