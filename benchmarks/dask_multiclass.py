"""Multi-class fits on a Dask cluster against the in-memory fit (issue 36).

Usage (from the repository root)::

    python -m benchmarks.dask_multiclass                 # 200000 x 20, 3 classes
    python -m benchmarks.dask_multiclass --n 1e6 --classes 4

Prints, for ``FairLogisticClassifier(bound=0.05)`` (demographic parity per class, two
groups) and ``NeymanPearsonClassifier(max_class_error={0: 0.1})``: the in-memory fit's wall
time and training accuracy, the fit on a row-chunked dask array (4 blocks) on a
``LocalCluster`` of two single-threaded workers: its wall time, the graphs it sent
(``Client.get``, ``compute`` and ``persist``, counted as :mod:`benchmarks.dask` counts
them), its accuracy and the largest coefficient difference from the in-memory model.
"""

from __future__ import annotations

import argparse
import time
import warnings

import dask.array as da
import numpy as np
from dask.distributed import Client, LocalCluster
from sklearn.datasets import make_classification

from benchmarks.dask import ComputeCount
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=2e5)
    parser.add_argument("--classes", type=int, default=3)
    args = parser.parse_args(argv)
    n, K = int(args.n), args.classes
    X, y = make_classification(
        n, 20, n_informative=8, n_classes=K, n_clusters_per_class=1, random_state=0
    )
    groups = (X[:, 0] + np.random.default_rng(0).normal(size=n) > 0.3).astype(np.int8)
    chunk = -(-n // 4)
    cases = [
        ("fair DP 0.05", FairLogisticClassifier(bound=0.05, random_state=0), True),
        ("NP error[0] 0.1", NeymanPearsonClassifier(max_class_error={0: 0.1}), False),
    ]
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster,
        Client(cluster),
    ):
        Xd = da.from_array(X, chunks=(chunk, -1)).persist()
        yd, gd = da.from_array(y, chunks=chunk), da.from_array(groups, chunks=chunk)
        print(f"n={n} d=20 K={K}, 4 blocks, LocalCluster of 2 single-threaded workers")
        for name, clf, with_groups in cases:
            kw = {"sensitive_features": groups} if with_groups else {}
            dkw = {"sensitive_features": gd} if with_groups else {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                clf.fit(X, y, **kw)
                t_mem = time.perf_counter() - t
                coef, acc_mem = clf.coef_.copy(), float(np.mean(clf.predict(X) == y))
                with ComputeCount() as count:
                    t = time.perf_counter()
                    clf.fit(Xd, yd, **dkw)
                    t_dask = time.perf_counter() - t
            acc = float(np.mean(clf.predict(Xd).compute() == y))
            diff = np.abs(clf.coef_ - coef).max()
            print(
                f"{name}: in memory {t_mem:.2f} s acc {acc_mem:.4f} | dask {t_dask:.2f} s "
                f"computes {count.n} passes {clf.n_data_passes_:.0f} acc {acc:.4f} "
                f"bound met {clf.bound_met_} | max |coef diff| {diff:.1e}"
            )


if __name__ == "__main__":
    main()
