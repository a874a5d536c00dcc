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

from .dask import estimators, make_data, two_workers


class ComputeSites:
    """Counts the client's graphs per call site (the package's frames on the stack) while
    it is entered; ``sites`` maps a chain ``outer > ... > inner`` to its count."""

    def __init__(self, depth=4):
        self.depth = depth

    def __enter__(self):
        from distributed import Client as C

        self.sites = collections.Counter()
        self._saved = C.get, C.persist, C.compute

        def counted(method):
            def call(client, *args, **kwargs):
                frames = [
                    f"{f.filename.rsplit('sklearn_ialm/', 1)[1]}:{f.name}:{f.lineno}"
                    for f in traceback.extract_stack()[:-1]
                    if "sklearn_ialm/" in f.filename
                ]
                self.sites[" > ".join(frames[-self.depth :]) or "(outside the package)"] += 1
                return method(client, *args, **kwargs)

            return call

        C.get, C.persist, C.compute = (counted(m) for m in self._saved)
        return self

    def __exit__(self, *exc):
        from distributed import Client as C

        C.get, C.persist, C.compute = self._saved

    @property
    def n(self) -> int:
        return sum(self.sites.values())

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
