"""Do the bounds hold on the predictions users measure? Beside the baselines users would try.

Fairness (every parity kind, fairlearn's metric of ``predict``) on the anchor task, a9a and
bank: LogisticRegression, FairLogisticClassifier at the bound, ExponentiatedGradient at the
bound, and ours at EG's training gap. Neyman-Pearson (rates of ``predict``) on spambase and
the anchor task: ours against LogisticRegression thresholded at the same training FPR, and
``calibration="umbrella"`` against nproc's logistic umbrella. Times: CPU seconds of the fit.
Writes ``bounds.md`` and ``bounds.csv``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from benchmarks.common import (
    RESULTS,
    load_bank,
    logistic_umbrella,
    make_anchor,
    warm_up,
    write,
    write_csv,
)
from benchmarks.families import _METRIC
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier
from sklearn_ialm.datasets import load_a9a, load_spambase


def fairness_tasks():
    yield "anchor", 0.02, make_anchor()
    a9a = load_a9a()
    yield "a9a", 0.05, (a9a.data, a9a.target, a9a.groups, a9a.data_test, a9a.target_test,
                        a9a.groups_test)  # fmt: skip
    try:
        bank = load_bank()
    except OSError:
        print("bank: no local copy under ../shared/data, skipped", file=sys.stderr)
        return
    yield "bank", 0.05, (bank.data, bank.target, bank.groups, bank.data_test,
                         bank.target_test, bank.groups_test)  # fmt: skip


def _timed(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.process_time()
        model = fit()
        seconds = time.process_time() - t0
    notes = sorted({w.category.__name__ for w in caught})
    return model, seconds, notes


def run_fairness(rows, kinds):
    for name, bound, data in fairness_tasks():
        _fairness_task(rows, name, bound, *data, kinds=kinds)


def _gap(kind, y, pred, groups):
    """fairlearn's metric of the kind (``families._METRIC``)."""
    return _METRIC[kind][0](y, pred, sensitive_features=groups)


def _fairness_task(rows, name, bound, X, y, A, Xt, yt, At, kinds):
    from fairlearn.reductions import ExponentiatedGradient

    dense = X.toarray() if hasattr(X, "toarray") else X
    lr_t = _timed(lambda: LogisticRegression(max_iter=1000).fit(X, y))[1]
    lr, t_lr, notes_lr = _timed(lambda: LogisticRegression(max_iter=1000).fit(X, y))
    for kind in kinds:

        def record(method, predict, seconds, notes, extra="", kind=kind):
            p, pt = predict(X), predict(Xt)
            rows.append(dict(
                task="fairness", data=name, kind=kind, bound=bound, method=method,
                gap_train=_gap(kind, y, p, A), gap_test=_gap(kind, yt, pt, At),
                acc_train=np.mean(p == y), acc_test=np.mean(pt == yt),
                seconds=seconds, ratio_lr=seconds / lr_t, notes=" ".join(notes) + extra,
            ))  # fmt: skip
            print(rows[-1], flush=True)

        record("LogisticRegression", lr.predict, t_lr, notes_lr)

        def ours(b, kind=kind):
            return FairLogisticClassifier(constraint=kind, bound=b, random_state=0).fit(
                X, y, sensitive_features=A
            )

        clf, t, notes = _timed(lambda: ours(bound))
        passes = f" passes={clf.n_data_passes_:.1f}"
        record("FairLogisticClassifier", clf.predict, t, notes, passes)

        def eg_fit(b, kind=kind):
            moment = _METRIC[kind][1](difference_bound=b)
            eg = ExponentiatedGradient(LogisticRegression(max_iter=1000), moment)
            return eg.fit(dense, y, sensitive_features=A)

        eg, t, notes = _timed(lambda: eg_fit(bound))

        def eg_predict(Z, eg=eg):
            # Seeded, so the randomized classifier gives the same predictions on a re-run.
            Z = Z.toarray() if hasattr(Z, "toarray") else Z
            return eg.predict(Z, random_state=0)

        record("ExponentiatedGradient", eg_predict, t, notes)
        eg_gap = rows[-1]["gap_train"]
        eg_bound = max(eg_gap, 1e-3)
        clf, t, notes = _timed(lambda b=eg_bound: ours(b))
        record(
            "FairLogisticClassifier at EG's training gap", clf.predict, t, notes,
            f" bound={eg_gap:.4f} passes={clf.n_data_passes_:.1f}",
        )  # fmt: skip


def _logistic_quantile(X, y, max_fpr):
    """LogisticRegression thresholded at the largest training FPR <= max_fpr."""
    from sklearn_ialm.estimators._hard_rates import rate_threshold

    lr = LogisticRegression(max_iter=1000).fit(X, y)
    s = lr.decision_function(X)
    t = rate_threshold(s[y == 0], np.ones(int(np.sum(y == 0))), max_fpr)
    return lambda Z: (lr.decision_function(Z) > t).astype(int)


def np_tasks(n_splits):
    X, y = load_spambase(return_X_y=True, preprocess=True)
    for split in range(n_splits):
        yield (
            "spambase",
            split,
            train_test_split(X, y, test_size=0.3, stratify=y, random_state=split),
        )
    X, y, _, Xt, yt, _ = make_anchor()
    yield "anchor", 0, (X, Xt, y, yt)


def run_np(rows, n_splits, delta=0.05):
    for name, split, (X, Xt, y, yt) in np_tasks(n_splits):
        for max_fpr in (0.05, 0.1):
            _np_task(rows, name, split, max_fpr, delta, X, Xt, y, yt)


def _np_task(rows, name, split, max_fpr, delta, X, Xt, y, yt):
    lr_t = _timed(lambda: LogisticRegression(max_iter=1000).fit(X, y))[1]

    def record(method, predict, seconds, notes, extra=""):
        p, pt = predict(X), predict(Xt)
        rows.append(dict(
                task="np", data=name, split=split, bound=max_fpr, method=method,
                fpr_train=np.mean(p[y == 0]), fpr_test=np.mean(pt[yt == 0]),
                fnr_test=np.mean(1 - pt[yt == 1]), seconds=seconds,
                ratio_lr=seconds / lr_t, notes=" ".join(notes) + extra,
            ))  # fmt: skip
        print(rows[-1], flush=True)

    def np_fit(**kw):
        clf = NeymanPearsonClassifier(max_fpr=max_fpr, random_state=split, **kw)
        return clf.fit(X, y)

    clf, t, notes = _timed(np_fit)
    record("NeymanPearsonClassifier", clf.predict, t, notes)
    pred, t, notes = _timed(lambda: _logistic_quantile(X, y, max_fpr))
    record("LogisticRegression, threshold at the training FPR", pred, t, notes)
    clf, t, notes = _timed(lambda: np_fit(calibration="umbrella", delta=delta))
    record("NeymanPearsonClassifier(calibration='umbrella')", clf.predict, t, notes)
    pred, t, notes = _timed(lambda: logistic_umbrella(X, y, max_fpr, delta, split))
    record("logistic umbrella (nproc's recipe)", pred, t, notes)


def _fmt(v):
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def report(rows, n_splits):
    """Write ``bounds.csv`` (every row) and ``bounds.md``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    keys = sorted({k for r in rows for k in r})
    write_csv(RESULTS / "bounds.csv", rows, keys)
    lines = [
        "# Bounds on the predictions users measure",
        "",
        "Generated by `OMP_NUM_THREADS=1 python -m benchmarks.bounds "
        f"--splits {n_splits}`; do not edit by hand. CPU seconds of the fit alone; "
        "`x LR` is the ratio to LogisticRegression's fit on the same rows in the same run.",
        "",
        "## Fairness: the gap of `predict` as fairlearn measures it, train and test",
        "",
        "Each kind's difference form; ExponentiatedGradient with fairlearn's moment of the "
        "same kind and bound (its predictions drawn with `random_state=0`).",
        "",
        "| data | kind | bound | method | gap train | gap test | acc train | acc test | CPU s "
        "| x LR | notes |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["task"] == "fairness":
            lines.append(
                "| " + " | ".join(_fmt(r[k]) for k in (
                    "data", "kind", "bound", "method", "gap_train", "gap_test", "acc_train",
                    "acc_test", "seconds", "ratio_lr", "notes",
                )) + " |"
            )  # fmt: skip
    lines += [
        "",
        "## Neyman-Pearson: rates of `predict`, mean over splits (spambase) or one run (anchor)",
        "",
        "| data | max_fpr | method | FPR train | FPR test | FNR test | test FPR > max_fpr "
        "| FNR vs baseline (mean, wins) | CPU s | x LR |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    baseline = {
        "NeymanPearsonClassifier": "LogisticRegression, threshold at the training FPR",
        "NeymanPearsonClassifier(calibration='umbrella')": "logistic umbrella (nproc's recipe)",
    }
    np_rows = [r for r in rows if r["task"] == "np"]
    for data in dict.fromkeys(r["data"] for r in np_rows):
        for bound in (0.05, 0.1):
            sel = [r for r in np_rows if r["data"] == data and r["bound"] == bound]
            for method in dict.fromkeys(r["method"] for r in sel):
                mine = [r for r in sel if r["method"] == method]
                vs = ""
                if method in baseline:
                    base = {r["split"]: r for r in sel if r["method"] == baseline[method]}
                    d = [r["fnr_test"] - base[r["split"]]["fnr_test"] for r in mine]
                    vs = f"{np.mean(d):+.4f} ({sum(x < 0 for x in d)}/{len(d)})"
                lines.append(
                    f"| {data} | {bound} | {method} | "
                    f"{np.mean([r['fpr_train'] for r in mine]):.4f} | "
                    f"{np.mean([r['fpr_test'] for r in mine]):.4f} | "
                    f"{np.mean([r['fnr_test'] for r in mine]):.4f} | "
                    f"{sum(r['fpr_test'] > bound for r in mine)}/{len(mine)} | {vs} | "
                    f"{np.median([r['seconds'] for r in mine]):.3f} | "
                    f"{np.median([r['ratio_lr'] for r in mine]):.1f} |"
                )
    write("bounds.md", "\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--splits", type=int, default=8)
    parser.add_argument("--only", choices=["fairness", "np"], default=None)
    parser.add_argument("--kinds", nargs="*", default=list(_METRIC), choices=list(_METRIC))
    args = parser.parse_args(argv)
    warm_up()
    rows = []
    if args.only in (None, "fairness"):
        run_fairness(rows, args.kinds)
    if args.only in (None, "np"):
        run_np(rows, args.splits)
    report(rows, args.splits)


if __name__ == "__main__":
    main()
