"""Fit on a Dask cluster: the seeds of one model, then a grid search, over the workers.

Run it as it is (``python dask_cluster.py``): it starts a local cluster of two worker
processes. On a real cluster, connect the client to your scheduler instead,
``Client("tcp://scheduler-address:8786")``, and keep the rest.
"""

import joblib
import numpy as np
from dask.distributed import Client, LocalCluster
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV

from sklearn_ialm import FairLogisticClassifier


def make_data():
    """A table whose group membership goes with the first feature, an informative one."""
    X, y = make_classification(
        n_samples=2000, n_features=10, n_informative=5, shuffle=False, random_state=0
    )
    noise = np.random.default_rng(0).normal(scale=0.5, size=len(X))
    groups = (X[:, 0] + noise > 0.5).astype(int)
    return X, y, groups


def fit_models(X, y, groups):
    """Four seeds of one model, then a search over the bound: every run is a joblib task."""
    clf = FairLogisticClassifier(
        constraint="demographic_parity", bound=0.05, n_seeds=4, n_jobs=-1, random_state=0
    )
    clf.fit(X, y, sensitive_features=groups)

    search = GridSearchCV(
        FairLogisticClassifier(constraint="demographic_parity", max_passes=400, random_state=0),
        {"bound": [0.1, 0.2]},
        cv=3,
        n_jobs=-1,
    )
    # Without metadata routing, GridSearchCV splits sensitive_features with the folds.
    search.fit(X, y, sensitive_features=groups)
    return clf, search


if __name__ == "__main__":
    # The guard matters: Dask starts its worker processes by importing this file, and they
    # must not start clusters of their own.
    X, y, groups = make_data()
    with (
        LocalCluster(n_workers=2, threads_per_worker=1) as cluster,
        Client(cluster) as client,
        joblib.parallel_config(backend="dask"),
    ):
        clf, search = fit_models(X, y, groups)
    kept = [s["seed"] for s in clf.seeds_ if s["selected"]][0]
    print(f"seeds run: {len(clf.seeds_)}, kept seed {kept}, converged: {clf.converged_}")
    print(f"search: best {search.best_params_}, accuracy {search.best_score_:.3f}")
