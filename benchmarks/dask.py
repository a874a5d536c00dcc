"""Fits on a Dask cluster against the in-memory fit: time per row and data passes.

For each size ``n`` (``d = 20``), two single-threaded workers (in processes of their own,
so that the client's traced peak memory is its own) build ``X`` block by block, and
``FairLogisticClassifier(bound=0.05)`` and ``NeymanPearsonClassifier(max_fpr=0.1)`` fit the
dask array: wall time, graphs sent, passes, accuracy, the bound's value on ``predict``. Up to
``--max-memory`` rows the same rows are also fitted in memory; dask-ml's
``LogisticRegression`` (ADMM and L-BFGS, no bound) runs beside when installed. Writes
``dask.md`` and ``dask.csv`` after every fit, keeping the rows of sizes not run.
``--multiclass``: issue 36's multi-class fits (``dask_multiclass.txt``).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import time
import tracemalloc
import warnings
from pathlib import Path

import dask
import dask.array as da
import numpy as np
from dask.distributed import Client, LocalCluster
from distributed.deploy.subprocess import SubprocessCluster
from sklearn.datasets import make_classification

from benchmarks.common import RESULTS, machine_facts, md_table, write, write_csv
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

D = 20


def make_data(n, chunk):
    def block(block_id=None):
        return np.random.default_rng(block_id[0]).standard_normal((chunk, D))

    X = da.map_blocks(block, chunks=((chunk,) * (n // chunk), (D,)), dtype=float)
    noise = da.random.default_rng(0).standard_normal(n, chunks=chunk)
    y = (X @ np.linspace(1.0, -1.0, D) + 2 * noise > 0).astype(np.int8)
    groups = (X[:, 0] + noise > 0.5).astype(np.int8)
    return X, y, groups


def estimators():
    return [
        (
            "fair DP 0.05",
            FairLogisticClassifier(constraint="demographic_parity", bound=0.05, random_state=0),
            True,
        ),
        ("NP max_fpr 0.1", NeymanPearsonClassifier(max_fpr=0.1, random_state=0), False),
    ]


def bound_value(pred, y, groups, with_groups):
    if with_groups:
        rates = [((pred == 1) & (groups == g)).sum() / (groups == g).sum() for g in (0, 1)]
        r0, r1 = da.compute(*rates) if isinstance(pred, da.Array) else rates
        return abs(float(r0) - float(r1))
    fpr = ((pred == 1) & (y == 0)).sum() / (y == 0).sum()
    return float(fpr.compute() if isinstance(fpr, da.Array) else fpr)


def in_memory_data(n, chunk, y, groups):
    """The same rows in a numpy array, built here block by block with the workers' generator
    (computing X from the cluster would gather it through one worker); the labels and groups
    (2 bytes a row) are computed by dask."""
    X = np.empty((n, D))
    for k in range(n // chunk):
        X[k * chunk : (k + 1) * chunk] = np.random.default_rng(k).standard_normal((chunk, D))
    return (X, *dask.compute(y, groups))


@contextlib.contextmanager
def two_workers(memory_limit):
    """A client of two single-threaded workers of ``memory_limit`` each, the scheduler and
    the workers in processes of their own (the client's memory is the client's alone)."""
    with (
        SubprocessCluster(
            n_workers=2, threads_per_worker=1, dashboard_address=None,
            worker_kwargs={"memory_limit": memory_limit},
        ) as cluster,
        Client(cluster) as client,
    ):  # fmt: skip
        yield client


class ComputeCount:
    """Counts the graphs the client sends to the scheduler (``dask.compute``, ``.compute()``,
    ``persist``, ``Client.compute``) while it is entered: each reads the partitions it
    needs."""

    def __enter__(self):
        from distributed import Client as C

        self.n, self._saved = 0, (C.get, C.persist, C.compute)

        def counted(method):
            def call(client, *args, **kwargs):
                self.n += 1
                self.sent()
                return method(client, *args, **kwargs)

            return call

        C.get, C.persist, C.compute = (counted(m) for m in self._saved)
        return self

    def sent(self):
        """Called for each graph sent, before it is (a subclass's hook)."""

    def __exit__(self, *exc):
        from distributed import Client as C

        C.get, C.persist, C.compute = self._saved


def _add(rows, write, n, fit, where, computes, wall, X, peak, passes, acc, bound, converged):
    """Append a row of the results (rounded as the files show them), print it, write all."""
    rows.append(dict(
        n=n, fit=fit, where=where, computes=computes, seconds=round(wall, 2),
        X_MB=round(X.nbytes / 1e6), client_peak_MB=peak, us_per_row=round(1e6 * wall / n, 3),
        passes=round(passes, 1), accuracy=round(float(acc), 4), bound_value=round(bound, 4),
        converged=converged,
    ))  # fmt: skip
    print(rows[-1], flush=True)
    write()


def run(n, max_memory, rows, write, dask_ml_minutes=30.0):
    chunk = min(n, 250_000)
    X, y, groups = make_data(n, chunk)
    in_memory = None
    if n <= max_memory:
        in_memory = in_memory_data(n, chunk, y, groups)
    # Imports and compiled code are a fixed cost of a process's first fits, not memory for
    # data: both estimators fit once on a slice first.
    for _, clf, with_groups in estimators():
        kw = {"sensitive_features": groups[:20_000]} if with_groups else {}
        clf.fit(X[:20_000], y[:20_000], **kw)
    for name, clf, with_groups in estimators():
        kw = {"sensitive_features": groups} if with_groups else {}
        with ComputeCount() as computes:
            tracemalloc.start()
            t = time.perf_counter()
            clf.fit(X, y, **kw)
            wall = time.perf_counter() - t
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        pred = clf.predict(X)
        acc, value = (pred == y).mean().compute(), bound_value(pred, y, groups, with_groups)
        _add(rows, write, n, name, "dask", computes.n, wall, X, round(peak / 1e6, 1),
             clf.n_data_passes_, acc, value, clf.converged_)  # fmt: skip
        if in_memory is not None:
            Xm, ym, gm = in_memory
            kw = {"sensitive_features": gm} if with_groups else {}
            t = time.perf_counter()
            clf.fit(Xm, ym, **kw)
            wall = time.perf_counter() - t
            pred = clf.predict(Xm)
            acc, value = np.mean(pred == ym), bound_value(pred, ym, gm, with_groups)
            _add(rows, write, n, name, "memory", 0, wall, X, float("nan"), clf.n_data_passes_,
                 acc, value, clf.converged_)  # fmt: skip
    try:
        from dask_ml.linear_model import LogisticRegression
    except ImportError:
        return
    for solver in ("admm", "lbfgs"):  # dask-ml's default, and its L-BFGS
        _dask_ml_fit(LogisticRegression(solver=solver), n, X, y, groups, rows, write,
                     dask_ml_minutes)  # fmt: skip


def _dask_ml_fit(lr, n, X, y, groups, rows, write, dask_ml_minutes):
    """dask-ml's ``LogisticRegression`` on the same cluster and rows (no bound)."""
    import threading

    name = f"dask-ml LogisticRegression ({lr.solver})"
    with ComputeCount() as computes:
        t = time.perf_counter()
        # In a thread, to be given up after `dask_ml_minutes` (it did not finish at 10**7
        # rows in 12 minutes): the cluster's closing then ends it.
        fitting = threading.Thread(target=lr.fit, args=(X, y), daemon=True)
        fitting.start()
        fitting.join(60 * dask_ml_minutes)
        wall = time.perf_counter() - t
    if fitting.is_alive():
        rows.append(
            dict(n=n, fit=name, where="dask", computes=computes.n,
                 seconds=f"> {wall:.0f} (stopped)", X_MB=round(X.nbytes / 1e6),
                 client_peak_MB=float("nan"), us_per_row=f"> {1e6 * wall / n:.1f}",
                 passes=float("nan"), accuracy=float("nan"), bound_value=float("nan"),
                 converged=False)
        )  # fmt: skip
        print(rows[-1], flush=True)
        write()
        return
    pred = lr.predict(X)
    _add(rows, write, n, name, "dask", computes.n, wall, X, float("nan"), float("nan"),
         (pred == y).mean().compute(), bound_value(pred, y, groups, True), True)  # fmt: skip


def machine() -> str:
    """The machine the figures come from: cores, CPU model, memory."""
    facts = machine_facts()
    ram = "unknown"
    with contextlib.suppress(OSError, ValueError):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        ram = f"{kb / 2**20:.0f} GiB"
    return f"{facts['cpus']} cores ({facts['cpu'] or 'unknown CPU'}), {ram} of RAM"


#: Columns of the CSV file only: the Markdown file says them once per size, above the table.
RUN_COLUMNS = ("command", "machine")


def kept_rows(sizes):
    """The rows of the other sizes in ``dask.csv``: a run of some sizes replaces their rows
    and keeps the others' (each row says the command and machine it came from)."""
    path = RESULTS / "dask.csv"
    if not path.exists():
        return []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [r for r in rows if "command" in r and int(float(r["n"])) not in sizes]


def multiclass(n: int, K: int) -> None:
    """Issue 36's multi-class fits (parity per class 0.05; ``max_class_error={0: 0.1}``) on
    ``n`` x 20 rows of ``K`` classes, in memory and on a dask array of 4 blocks on two
    single-threaded workers, and the largest difference of their coefficients: writes
    ``dask_multiclass.txt``."""
    lines = [
        f"python -m benchmarks.dask --multiclass --n {n:g} --classes {K}   "
        f"({machine()}, shared with other jobs; one run)"
    ]
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
        lines.append(f"n={n} d=20 K={K}, 4 blocks, LocalCluster of 2 single-threaded workers")
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
            lines.append(
                f"{name}: in memory {t_mem:.2f} s acc {acc_mem:.4f} | dask {t_dask:.2f} s "
                f"computes {count.n} passes {clf.n_data_passes_:.0f} acc {acc:.4f} "
                f"bound met {clf.bound_met_} | max |coef diff| {diff:.1e}"
            )

    write("dask_multiclass.txt", "\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7])
    parser.add_argument("--max-memory", type=float, default=1e7)
    parser.add_argument("--memory-limit", default="1GiB")
    parser.add_argument(
        "--dask-ml-minutes", type=float, default=30.0, help="dask-ml's fit is given up after"
    )
    parser.add_argument("--multiclass", action="store_true", help="multi-class fits only")
    parser.add_argument("--n", type=float, default=2e5, help="rows of --multiclass")
    parser.add_argument("--classes", type=int, default=3, help="classes of --multiclass")
    args = parser.parse_args()
    if args.multiclass:
        multiclass(int(args.n), args.classes)
        return
    sizes = [int(n) for n in args.sizes]
    kept, rows = kept_rows(sizes), []
    command = (
        f"`python -m benchmarks.dask --sizes {' '.join(f'{s:g}' for s in args.sizes)} "
        f"--memory-limit {args.memory_limit} --dask-ml-minutes {args.dask_ml_minutes:g}`"
    )
    where = f"{machine()}, shared with other jobs while it ran"

    def write_results():
        """The results so far (after every fit: a size cut short keeps the fits done), with
        the rows of the sizes not run now."""
        RESULTS.mkdir(parents=True, exist_ok=True)
        ordered = sorted(
            kept + [dict(r, command=command, machine=where) for r in rows],
            key=lambda r: int(float(r["n"])),
        )
        write_csv(RESULTS / "dask.csv", ordered)
        columns = [c for c in ordered[0] if c not in RUN_COLUMNS]
        runs = dict.fromkeys((int(float(r["n"])), r["command"], r["machine"]) for r in ordered)
        lines = [
            "# Fits on a two-worker LocalCluster against the in-memory fit",
            "",
            *(f"- n = {n:g}: {cmd}; machine: {mach}." for n, cmd, mach in runs),
            "",
            f"d = {D}, two single-threaded workers of the memory limit given. "
            "`where`: `dask` fits the dask array (X made on the workers, never on the "
            "client); `memory` fits the same rows built in a numpy array on the client. "
            "`computes`: the client's `Client.get`, `Client.compute` and `Client.persist` "
            "calls during the fit (each `dask.compute`, `persist` or graph of futures; each "
            "one that reads X recomputes it here, "
            "as it would re-read X's files, unless X is kept on the workers). "
            "`client_peak_MB`: the most memory the client's Python allocations held at "
            "once during the dask fit (`tracemalloc`). "
            "`bound_value`: the parity gap (fair) or the false-positive rate (NP) of "
            "`predict` on the training rows.",
            "",
            *md_table(ordered, columns),
        ]
        write("dask.md", "\n".join(lines) + "\n")

    with two_workers(args.memory_limit):
        for n in sizes:
            run(n, args.max_memory, rows, write_results, args.dask_ml_minutes)


if __name__ == "__main__":
    main()
