"""Fit on rows that no single process holds: X stays on the Dask workers.

Run it as it is (``python dask_fit.py``): it starts a local cluster of two worker processes
and builds X on them (20 million values, never on the client). On a real cluster, connect
to your scheduler instead, ``Client("tcp://scheduler-address:8786")``, and read your data
with ``dask.dataframe.read_parquet`` or ``dask.array.from_zarr``.
"""

import dask.array as da
import numpy as np
from dask.distributed import Client, LocalCluster

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier


def make_data(n=1_000_000, d=20, chunk=100_000):
    """X, labels and a group: row-chunked dask arrays, each block made on a worker."""

    def block(block_id=None):
        return np.random.default_rng(block_id[0]).standard_normal((chunk, d))

    X = da.map_blocks(block, chunks=((chunk,) * (n // chunk), (d,)), dtype=float)
    noise = da.random.default_rng(0).standard_normal(n, chunks=chunk)
    y = (X @ np.linspace(1.0, -1.0, d) + 2 * noise > 0).astype(np.int8)
    groups = (X[:, 0] + noise > 0.5).astype(np.int8)
    return X, y, groups


if __name__ == "__main__":
    # The guard matters: Dask starts its worker processes by importing this file.
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster):
        X, y, groups = make_data()
        fair = FairLogisticClassifier(constraint="demographic_parity", bound=0.05, random_state=0)
        fair.fit(X, y, sensitive_features=groups)
        pred = fair.predict(X)  # a dask array: predictions stay on the workers
        rates = [((pred == 1) & (groups == g)).sum() / (groups == g).sum() for g in (0, 1)]
        rate0, rate1 = da.compute(*rates)
        print(f"parity gap on the training rows: {abs(rate0 - rate1):.4f} (bound 0.05)")
        print(f"converged: {fair.converged_}, {fair.n_data_passes_:.1f} data passes")

        np_clf = NeymanPearsonClassifier(max_fpr=0.1, random_state=0).fit(X, y)
        fpr = (((np_clf.predict(X) == 1) & (y == 0)).sum() / (y == 0).sum()).compute()
        print(f"false-positive rate on the training rows: {fpr:.4f} (max_fpr 0.1)")
