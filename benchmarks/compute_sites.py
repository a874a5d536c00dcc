"""Where a Dask fit's computes come from: the graphs a fit sends, counted per call site.

Usage (from the repository root)::

    python -m benchmarks.compute_sites              # 10**6 x 20, as benchmarks.dask
    python -m benchmarks.compute_sites --n 2e5

Counts what :class:`benchmarks.dask.ComputeCount` counts (``Client.get``, ``Client.compute``
and ``Client.persist``: the set-up, the checks, the report's reads, every pass) for each
estimator of :func:`benchmarks.dask.estimators` on :func:`benchmarks.dask.make_data`, and
prints each distinct chain of the package's functions that sent one, with how many it sent.
"""

from __future__ import annotations

import argparse
import collections
import traceback

from .dask import ComputeCount, estimators, make_data, two_workers


class ComputeSites(ComputeCount):
    """Counts the client's graphs (``n``) and, per call site (the package's frames on the
    stack), ``sites``: a chain ``outer > ... > inner`` to its count, while it is entered."""

    def __init__(self, depth=4):
        self.depth = depth

    def __enter__(self):
        self.sites = collections.Counter()
        return super().__enter__()

    def sent(self):
        frames = [
            f"{f.filename.rsplit('sklearn_ialm/', 1)[1]}:{f.name}:{f.lineno}"
            for f in traceback.extract_stack()
            if "sklearn_ialm/" in f.filename
        ]
        self.sites[" > ".join(frames[-self.depth :]) or "(outside the package)"] += 1

    def table(self) -> str:
        return "\n".join(f"{k:4d}  {site}" for site, k in self.sites.most_common())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=float, default=1e6)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--memory-limit", default="1GiB")
    args = parser.parse_args()
    n = int(args.n)
    X, y, groups = make_data(n, min(n, 250_000))
    with two_workers(args.memory_limit):
        for name, clf, with_groups in estimators():
            kw = {"sensitive_features": groups} if with_groups else {}
            with ComputeSites(args.depth) as sites:
                clf.fit(X, y, **kw)
            print(f"{name}: {sites.n} computes")
            print(sites.table(), flush=True)


if __name__ == "__main__":
    main()
