"""``python -m sklearn_ialm``: the two constrained classifiers on bundled data, with a report.

Fits, with the default settings:

* :class:`~sklearn_ialm.NeymanPearsonClassifier` on spambase (the paper's preprocessing,
  ``max_fpr = 0.2``), on a stratified 70 % of the rows;
* :class:`~sklearn_ialm.FairLogisticClassifier` on a9a with the paper's constraint: the
  group race = Black receives at least 10 % of the positive predictions
  (``constraint="positive_share"``, ``bound=0.1``), trained on the a9a training file;

and prints, for each bound, the rate that ``predict`` gives on the training rows and on
rows the model has not seen (the rest of spambase; the a9a test file), whether the bound is
met on each, the smooth ("soft") rate the solver worked with beside them, the model's
accuracy next to :class:`~sklearn.linear_model.LogisticRegression`'s, and the cost.

Then, because one split at one bound shows one side of the story, Neyman-Pearson against
``LogisticRegression`` thresholded at the same training false-positive rate over
``--splits`` random splits of spambase at ``max_fpr`` 0.05, 0.1 and 0.2, with the
preprocessing a user reaches for first (``StandardScaler``): how often each has the lower
false-negative rate on the new rows. At 0.05 and 0.1 LogisticRegression usually wins.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from . import FairLogisticClassifier, NeymanPearsonClassifier, __version__
from .datasets import load_a9a, load_spambase


def _met(value: float, bound: float, upper: bool) -> str:
    ok = value <= bound if upper else value >= bound
    return "met" if ok else f"NOT met (by {abs(value - bound):.4f})"


def _fit(estimator, *args, **kwargs):
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(*args, **kwargs)
    for w in caught:
        print(f"  warning: {w.message}")
    return time.perf_counter() - t0


def _cost(clf, seconds: float) -> None:
    state = "yes" if clf.converged_ else "NO (see the warning above)"
    print(
        f"  converged        {state}: the solver's optimality checks passed (primal "
        f"{clf.primal_residual_:.1e}, dual {clf.dual_residual_:.1e}, tol {clf.tol:g})"
    )
    print(
        f"  cost             {seconds:.2f} s; the fit read the training data "
        f"{clf.n_data_passes_:.1f} times over (data passes, every row touched counted)"
    )


def neyman_pearson(seed: int, max_fpr: float = 0.2) -> bool:
    X, y = load_spambase(return_X_y=True, preprocess=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
    clf = NeymanPearsonClassifier(max_fpr=max_fpr, random_state=seed)
    seconds = _fit(clf, X_tr, y_tr)
    print(
        f"Neyman-Pearson classification on spambase: {len(y_tr)} training rows, "
        f"{len(y_te)} new rows; positive = spam"
    )
    print(f"  bound            false-positive rate (ham flagged as spam) <= {max_fpr}")
    for name, Xs, ys in (("training rows", X_tr, y_tr), ("new rows", X_te, y_te)):
        pred = clf.predict(Xs)
        fpr, fnr = np.mean(pred[ys == 0] == 1), np.mean(pred[ys == 1] == 0)
        print(
            f"  {name:<15}  false-positive rate {fpr:.4f}  {_met(fpr, max_fpr, True):<22} "
            f"false-negative rate {fnr:.4f}"
        )
    print(f"  soft rate        {clf.train_soft_fpr_:.4f} (mean sigmoid score of the ham rows)")
    # The baseline a user would try: logistic regression, thresholded on the training ham so
    # that it flags the same share.
    pred = _lr_at_training_fpr(X_tr, y_tr, clf.train_fpr_)(X_te)
    print(
        f"  LogisticRegression at the same training FPR: new rows FPR "
        f"{np.mean(pred[y_te == 0]):.4f}, FNR {np.mean(~pred[y_te == 1]):.4f}"
    )
    _cost(clf, seconds)
    return clf.converged_ and clf.train_fpr_ <= max_fpr


def _lr_at_training_fpr(X_tr, y_tr, fpr):
    """LogisticRegression thresholded so that it flags the share ``fpr`` of the training
    negatives: the baseline a user would try."""
    lr = LogisticRegression(max_iter=1000).fit(X_tr, y_tr)
    s_tr = lr.decision_function(X_tr)
    t = np.quantile(s_tr[y_tr == 0], 1 - fpr, method="higher")
    return lambda X: lr.decision_function(X) > t


def neyman_pearson_both_ways(seed: int, splits: int = 10, max_fprs=(0.05, 0.1, 0.2)) -> dict:
    """Win counts of Neyman-Pearson and of LogisticRegression (same training FPR) on the new
    rows' false-negative rate, over ``splits`` splits of spambase, standardised."""
    X, y = load_spambase(return_X_y=True)
    print(
        f"Neyman-Pearson against LogisticRegression at the same training FPR: spambase, "
        f"StandardScaler, {splits} random 70/30 splits per bound; lower false-negative rate "
        "on the new rows wins"
    )
    print(
        "  max_fpr  NP wins  LR wins  ties  new rows: NP FNR  LR FNR  NP FPR  LR FPR"
    )  # fmt: skip
    counts = {}
    for max_fpr in max_fprs:
        rows = []
        for split in range(splits):
            X_tr, X_te, y_tr, y_te = train_test_split(
                X, y, test_size=0.3, stratify=y, random_state=seed + 1000 * split + 1
            )
            scaler = StandardScaler().fit(X_tr)
            X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
            clf = NeymanPearsonClassifier(max_fpr=max_fpr, random_state=seed + split)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # judged below on the new rows
                clf.fit(X_tr, y_tr)
            lr = _lr_at_training_fpr(X_tr, y_tr, clf.train_fpr_)
            np_pred, lr_pred = clf.predict(X_te) == 1, lr(X_te)
            rows.append([
                np.mean(~np_pred[y_te == 1]), np.mean(~lr_pred[y_te == 1]),
                np.mean(np_pred[y_te == 0]), np.mean(lr_pred[y_te == 0]),
            ])  # fmt: skip
        r = np.array(rows)
        won = int(np.sum(r[:, 0] < r[:, 1]))
        lost = int(np.sum(r[:, 0] > r[:, 1]))
        counts[max_fpr] = (won, lost, splits - won - lost)
        mean = r.mean(axis=0)
        tied = splits - won - lost
        print(
            f"  {max_fpr:<7g}  {won:>3}/{splits:<3}  {lost:>3}/{splits:<3}  {tied:>4}"
            f"  {mean[0]:15.4f}  {mean[1]:.4f}  {mean[2]:.4f}  {mean[3]:.4f}"
        )
    return counts


def fairness(seed: int, bound: float = 0.1) -> bool:
    data = load_a9a()
    X, y, g = data.data, data.target, data.groups
    X_te, y_te, g_te = data.data_test, data.target_test, data.groups_test
    clf = FairLogisticClassifier(constraint="positive_share", bound=bound, random_state=seed)
    seconds = _fit(clf, X, y, sensitive_features=g)
    print(
        f"Fairness-constrained classification on a9a: {X.shape[0]} training rows, "
        f"{X_te.shape[0]} new rows; protected group race = Black "
        f"({int(g.sum())} and {int(g_te.sum())} rows); positive = income > 50K"
    )
    print(f"  bound            the group's share of the positive predictions >= {bound}")
    for name, Xs, ys, gs in (("training rows", X, y, g), ("new rows", X_te, y_te, g_te)):
        pred = clf.predict(Xs)
        share = pred[gs == 1].sum() / max(pred.sum(), 1)
        print(
            f"  {name:<15}  share {share:.4f}  {_met(share, bound, False):<22} "
            f"accuracy {np.mean(pred == ys):.4f}"
        )
    print(f"  soft rate        {clf.constraint_values_[0]:.4f} (share of the sigmoid scores)")
    lr = LogisticRegression(max_iter=1000).fit(X, y)
    pred = lr.predict(X_te)
    print(
        f"  LogisticRegression (no constraint): new rows share "
        f"{pred[g_te == 1].sum() / max(pred.sum(), 1):.4f}, accuracy {np.mean(pred == y_te):.4f}"
    )
    _cost(clf, seconds)
    print("\n  The bound report on the new rows (exact 95 % intervals):")
    report = clf.bound_report(X_te, y_te, sensitive_features=g_te, baseline=lr)
    print("\n".join("  " + line for line in str(report).splitlines()))
    return clf.converged_ and clf.bound_met_


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sklearn_ialm", description=__doc__)
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--splits", type=int, default=10, help="splits per bound of the comparison (default 10)"
    )
    args = parser.parse_args(argv)
    print(f"sklearn-ialm {__version__}: default settings, seed {args.seed}\n")
    ok = neyman_pearson(args.seed)
    print()
    neyman_pearson_both_ways(args.seed, args.splits)
    print()
    ok &= fairness(args.seed)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
