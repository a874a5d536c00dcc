"""The warnings' advised bounds, refitted (issue 49, item 4).

A fit that does not converge may advise a bound ("bound=0.12 or higher"). That advice must
converge when refitted, and be within 0.02 of the smallest bound that does. This script
fits each case at its bound, reads the advice, refits at it, and scans bounds in steps of
0.01 for the smallest that converges and is met on predictions (fairlearn's metric).

Run from the root of a checkout (its ``sklearn_ialm`` is imported)::

    OMP_NUM_THREADS=1 python -m benchmarks.advice [case ...]
    OMP_NUM_THREADS=1 python -m benchmarks.advice --why   # six races at 0.05, see why()
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


def _error_rate_difference(y, pred, sensitive_features):
    """fairlearn's largest difference of the groups' error rates."""
    from fairlearn.metrics import MetricFrame

    return MetricFrame(
        metrics=lambda t, p: np.mean(t != p), y_true=y, y_pred=pred,
        sensitive_features=sensitive_features,
    ).difference()  # fmt: skip


def _metric(constraint, form):
    """fairlearn's metric of a kind, and +1 where a looser bound is higher (-1: lower)."""
    from fairlearn import metrics as fm

    if form == "ratio":
        return fm.demographic_parity_ratio, -1
    return {
        "demographic_parity": fm.demographic_parity_difference,
        "true_positive_rate_parity": fm.equal_opportunity_difference,
        "error_rate_parity": _error_rate_difference,
    }[constraint], 1


def fit_once(X, y, groups, constraint, bound, form=None, checks=True):
    """``(fit, its warnings' text, fairlearn's value on its training predictions, met)``;
    ``checks=False``: its advice is not checked (a scan's fits: faster, same model)."""
    import re
    import warnings

    from sklearn_ialm import FairLogisticClassifier

    clf = FairLogisticClassifier(constraint=constraint, form=form, bound=bound, random_state=0)
    clf._checks_advice = checks
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=groups)
    text = " ".join(str(w.message) for w in caught)
    metric, looser = _metric(constraint, form)
    value = float(metric(y, clf.predict(X), sensitive_features=groups))
    found = re.search(r"(?:Set bound=([0-9.]+):|bound=([0-9.]+) or (?:higher|lower))", text)
    advice = None if found is None else float(found.group(1) or found.group(2))
    return clf, advice, value, looser * (value - bound) <= 1e-12


def smallest_working(X, y, groups, constraint, bound, form=None, stop=0.6):
    """The first bound in steps of 0.01 looser than ``bound`` at which the fit converges
    and meets it on its training predictions (None up to ``stop``)."""
    looser = _metric(constraint, form)[1]
    k = 1
    while True:
        trial = round(bound + looser * 0.01 * k, 2)
        if not 0 < trial < 1 or looser * (trial - stop) > 0:
            return None
        clf, _, _, met = fit_once(X, y, groups, constraint, trial, form, checks=False)
        if clf.converged_ and met:
            return trial
        k += 1


def cases():
    """``(name, X, y, groups, constraint, form, bound)`` of the table."""
    out = []
    for seed in range(8):
        X, y, g, _, _, _ = compas_like(seed)
        out.append((f"six races, seed {seed}", X, y, g, "demographic_parity", None, 0.05))
    for seed in (1, 2, 3):
        X, y, g = small_group(5, seed)
        out.append((f"5-row group DP, seed {seed}", X, y, g, "demographic_parity", None, 0.02))
    for seed in (0, 2):
        X, y, g = small_group(5, seed)
        out.append(
            (f"5-row group TPR, seed {seed}", X, y, g, "true_positive_rate_parity", None, 0.05)
        )
    for seed in (0, 1, 2, 3, 4, 5, 9, 10, 11, 15):
        X, y, g, constraint, bound = random_family(seed)
        kind = "DP" if constraint == "demographic_parity" else "TPR"
        out.append((f"random family {seed} ({kind})", X, y, g, constraint, None, bound))
    X, y, g, _, _ = random_family(0)
    out.append(("random family 0, error-rate parity", X, y, g, "error_rate_parity", None, 0.02))
    for seed in (0, 3):
        X, y, g, _, _ = random_family(seed)
        out.append(
            (f"random family {seed}, DP ratio", X, y, g, "demographic_parity", "ratio", 0.95)
        )
    return out


def main(names=()):
    """One line a case: the advice, its refit, the smallest bound that works."""
    print(
        "| case | bound | advice | refit at it: converged, gap, accuracy "
        "| smallest that works | passes |"
    )
    print("|---|---|---|---|---|---|")
    for name, X, y, g, constraint, form, bound in cases():
        if names and not any(n in name for n in names):
            continue
        clf, advice, _, _ = fit_once(X, y, g, constraint, bound, form)
        refit = "-"
        if advice is not None:
            again, _, value, met = fit_once(X, y, g, constraint, advice, form, checks=False)
            accuracy = float(np.mean(again.predict(X) == y))
            refit = f"{again.converged_ and met}, {value:.4f}, {accuracy:.3f}"
        smallest = "-" if clf.converged_ else smallest_working(X, y, g, constraint, bound, form)
        print(
            f"| {name} | {bound:g} | {advice} | {refit} | {smallest} | {clf.n_data_passes_:.0f} |",
            flush=True,
        )


def _gap(pred, groups):
    """The largest difference of the groups' positive shares."""
    shares = [pred[groups == g].mean() for g in np.unique(groups)]
    return max(shares) - min(shares)


def why(seeds=range(8)):
    """Six races at DP 0.05: the model returned against the constant model on the test
    rows, and the best intercept move of the bound-0.1 fit that meets 0.05 on the training
    rows (what a threshold could give): training and test accuracy, test gap, test
    log-loss."""
    import warnings

    from scipy.special import expit
    from sklearn.metrics import log_loss

    from sklearn_ialm import FairLogisticClassifier

    warnings.simplefilter("ignore")  # (each fit at 0.05 warns: the table says what it reached)
    print(
        "| seed | at 0.05: test acc, log-loss, positive share | constant: test acc, "
        "log-loss | 0.1 fit's intercept moved to 0.05 on training: train acc, test acc, "
        "test gap, test log-loss |"
    )
    print("|---|---|---|---|")
    for seed in seeds:
        Xtr, ytr, gtr, Xte, yte, gte = compas_like(seed)
        fits = []
        for bound in (0.05, 0.1):
            clf = FairLogisticClassifier(bound=bound, random_state=0)
            clf._checks_advice = False
            fits.append(clf.fit(Xtr, ytr, sensitive_features=gtr))
        at, loose = fits
        s, s_te = loose.decision_function(Xtr), loose.decision_function(Xte)
        best = max(
            (float(np.mean((s > t) == ytr)), t) for t in np.unique(s) - 1e-9
            if _gap(s > t, gtr) <= 0.05
        )  # fmt: skip
        accuracy, t = best
        constant = (float(np.mean(yte == int(ytr.mean() > 0.5))),
                    log_loss(yte, np.full(len(yte), ytr.mean())))  # fmt: skip
        print(
            f"| {seed} | {at.score(Xte, yte):.3f}, "
            f"{log_loss(yte, at.predict_proba(Xte)[:, 1]):.4f}, "
            f"{at.predict(Xtr).mean():.3f} | {constant[0]:.3f}, {constant[1]:.4f} | "
            f"{accuracy:.3f}, {np.mean((s_te > t) == yte):.3f}, {_gap(s_te > t, gte):.3f}, "
            f"{log_loss(yte, expit(s_te - t)):.4f} |",
            flush=True,
        )


if __name__ == "__main__":
    import sys

    why() if sys.argv[1:] == ["--why"] else main(sys.argv[1:])
