"""Binding ratio bounds on the anchor task and Adult by race: data passes, CPU against
``LogisticRegression``'s (one thread, one process, the compiled kernels loaded before any
timed fit), ``converged_`` and the bound on the training predictions (fairlearn).

Run from the root of a checkout (its ``sklearn_ialm`` is imported)::

    OMP_NUM_THREADS=1 SKLEARN_IALM_SHARED_DATA=... python -m benchmarks.ratio_finish
"""

from __future__ import annotations

import time
import warnings

from fairlearn import metrics as fm
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from benchmarks import families
from benchmarks.speed.common import make_anchor
from sklearn_ialm import FairLogisticClassifier

_METRIC = {
    "disparate_impact": fm.demographic_parity_ratio,
    "demographic_parity": fm.demographic_parity_ratio,
    "false_positive_rate_parity": fm.false_positive_rate_ratio,
    "true_positive_rate_parity": fm.true_positive_rate_ratio,
    "equalized_odds": fm.equalized_odds_ratio,
}
CASES = {
    "anchor": (
        lambda: make_anchor(0),
        [("disparate_impact", 0.8), ("demographic_parity", 0.9),
         ("false_positive_rate_parity", 0.8), ("true_positive_rate_parity", 0.9)],
    ),
    "adult_race": (
        families.adult_race,
        [("disparate_impact", 0.5), ("demographic_parity", 0.5),
         ("false_positive_rate_parity", 0.5), ("true_positive_rate_parity", 0.7),
         ("equalized_odds", 0.5)],
    ),
}  # fmt: skip


def main():
    print("| data | bound | passes | CPU / LogisticRegression | converged_ | training ratio "
          "(fairlearn) | test accuracy |\n|---|---|---|---|---|---|---|")  # fmt: skip
    with threadpool_limits(1):
        X, y, A, *_ = CASES["anchor"][0]()
        with warnings.catch_warnings():  # the compiled kernels, loaded before any timed fit
            warnings.simplefilter("ignore")
            FairLogisticClassifier(max_passes=2).fit(
                X[:2000], y[:2000], sensitive_features=A[:2000]
            )
        for name, (make, bounds) in CASES.items():
            X, y, A, Xt, yt, _ = make()
            t = time.process_time()
            LogisticRegression(max_iter=1000).fit(X, y)
            lr_cpu = time.process_time() - t
            for kind, bound in bounds:
                form = None if kind == "disparate_impact" else "ratio"
                clf = FairLogisticClassifier(
                    constraint=kind, form=form, bound=bound, random_state=0
                )
                t = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf.fit(X, y, sensitive_features=A)
                cpu = time.process_time() - t
                ratio = _METRIC[kind](y, clf.predict(X), sensitive_features=A)
                row = (name, f"{kind} {bound}", f"{clf.n_data_passes_:.1f}", f"{cpu / lr_cpu:.1f}")
                row += (str(clf.converged_), f"{ratio:.3f}", f"{clf.score(Xt, yt):.4f}")
                print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
