"""Issue 49's multi-class sweep: test accuracy, ``converged_``, passes, the worst per-class
gap (training, test), training log-loss and CPU by the per-class demographic-parity bound,
on ``families.multiclass_ties`` (digits and wine, the group tied to the label). Prints.
"""

from __future__ import annotations

import argparse
import time
import warnings

from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from benchmarks.common import dp_gap_per_class
from benchmarks.families import multiclass_ties as data
from sklearn_ialm import FairLogisticClassifier

BOUNDS = {
    "digits": (0.09, 0.08, 0.07, 0.06, 0.05, 0.04, 0.03, 0.02),
    "wine": (0.15, 0.1, 0.09, 0.08, 0.07, 0.06, 0.05, 0.04, 0.03, 0.02),
}


def sweep(name, tie, bounds):
    """Print the case's lines."""
    X, X_test, y, y_test, g, g_test = data(name, tie)
    t = time.process_time()
    lr = LogisticRegression(max_iter=10_000).fit(X, y)
    lr_cpu = time.process_time() - t
    print(
        f"{name}/{tie}: LogisticRegression accuracy {lr.score(X_test, y_test):.3f}, worst "
        f"gap {dp_gap_per_class(y, lr.predict(X), g):.3f}, "
        f"log-loss {log_loss(y, lr.predict_proba(X)):.4f}"
    )
    print(
        "| bound | test acc | converged | passes | solves | gap train | gap test | log-loss "
        "| CPU s |"
    )
    for bound in bounds:
        t = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = FairLogisticClassifier(bound=bound, random_state=0)
            clf.fit(X, y, sensitive_features=g)
        cpu = time.process_time() - t
        print(
            f"| {bound:.2f} | {clf.score(X_test, y_test):.3f} | {clf.converged_} | "
            f"{clf.n_data_passes_:.0f} | {clf.n_rounds_} | "
            f"{dp_gap_per_class(y, clf.predict(X), g):.3f} | "
            f"{dp_gap_per_class(y_test, clf.predict(X_test), g_test):.3f} | "
            f"{log_loss(y, clf.predict_proba(X), labels=clf.classes_):.4f} | "
            f"{cpu:.1f} ({cpu / lr_cpu:.0f}x) |",
            flush=True,
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["digits", "wine"], action="append")
    parser.add_argument("--tie", choices=["halves", "one", "random"], action="append")
    parser.add_argument("--bounds", help="comma-separated (default: the data set's sweep)")
    args = parser.parse_args(argv)
    for name in args.data or ["digits", "wine"]:
        bounds = BOUNDS[name]
        if args.bounds:
            bounds = tuple(float(b) for b in args.bounds.split(","))
        for tie in args.tie or ["halves", "one", "random"]:
            sweep(name, tie, bounds)


if __name__ == "__main__":
    main()
