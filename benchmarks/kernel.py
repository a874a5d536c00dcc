"""The compiled PStorm block (numba) against the numpy path: the figures behind the choice.

Usage (from the repository root, with numba installed, e.g. ``pip install numba``)::

    python -m benchmarks.kernel            # writes benchmarks/results/kernel.md
    python -m benchmarks.kernel --quick    # 1 repeat, no cold-compile subprocesses

Measured (CPU time, ``time.process_time``, under ``threadpool_limits(1)``):

* install size of numba and llvmlite (the installed package directories, ``du``-style);
* first fit in a fresh process (``python -c``, the anchor fit, import of the package and of
  numba included) with an empty numba cache directory (cold: the compile) and again with
  the cache that run left (warm: the load), and the same with the numpy path;
* time per PStorm inner iteration, numpy path and kernel, on the anchor (dense 30000 x 100)
  and a9a (CSR 32561 x 123), by running ``pstorm`` for a fixed number of iterations with a
  check that never stops (minibatch 60, the size the anchor fit grows to);
* kernel time per inner iteration on text-like CSR data (20 non-zeros a row, 1e3 to 1e5
  columns, minibatch 30, with a demographic-parity constraint and without) beside dense
  ``d = 100``;
* time of one full evaluation (a stopping test: objective value and gradient, constraint
  values and ``J^T``) on the same data, numpy path and kernel, beside one product ``X @ v``
  (the floor: every row read once);
* whole-fit time of ``FairLogisticClassifier(constraint="demographic_parity", bound=0.02,
  loss="logistic", random_state=0)`` with either path, as a ratio to
  ``LogisticRegression()`` fitted in the same process (medians over repeats).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from benchmarks.common import load_a9a_task, make_anchor, write
from sklearn_ialm.estimators import FairLogisticClassifier
from sklearn_ialm.problems import LinearProblem, _kernels
from sklearn_ialm.solver.pstorm import AugmentedLagrangianEstimator, Counter, pstorm

ROOT = Path(__file__).resolve().parent.parent


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def install_size() -> dict:
    """Bytes on disk of the installed numba and llvmlite packages (with their dist-info)."""
    import llvmlite
    import numba

    out = {}
    for mod in (numba, llvmlite):
        pkg = Path(mod.__file__).parent
        info = sum(_du(p) for p in pkg.parent.glob(f"{mod.__name__}-*.dist-info"))
        out[f"{mod.__name__} {mod.__version__}"] = _du(pkg) + info
    return out


FRESH_FIT = """
import time
t0 = time.process_time(); w0 = time.perf_counter()
from threadpoolctl import threadpool_limits
threadpool_limits(1)
from benchmarks.common import make_anchor
X, y, A, *_ = make_anchor()
from sklearn_ialm.estimators import FairLogisticClassifier
from sklearn_ialm.problems import LinearProblem
LinearProblem.use_kernel = {use}
t1 = time.process_time(); w1 = time.perf_counter()
FairLogisticClassifier(constraint="demographic_parity", bound=0.02, loss="logistic",
                       random_state=0).fit(X, y, sensitive_features=A)
print(time.process_time() - t1, time.perf_counter() - w1)
"""


def fresh_fit(use: bool, cache_dir: str) -> tuple[float, float]:
    """(CPU, wall) seconds of the first fit in a new process, data made beforehand."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, OMP_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-c", FRESH_FIT.format(use=use)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    cpu, wall = map(float, out.stdout.split())
    return cpu, wall


def _fair_problem(X, A):
    """The anchor fit's problem shape: logistic loss, both sides of a parity gap, intercept."""
    group = A == 1
    col = group / group.mean() - ~group / (~group).mean()
    return X, np.column_stack([col, -col]), np.array([-0.02, -0.02])


def per_iteration(X, y, A, n_iter, use, batch_size=60, constrained=True, lazy="auto"):
    """CPU seconds per PStorm inner iteration: ``n_iter`` iterations, then one (free) check."""
    X, W, offset = _fair_problem(X, A)
    if not constrained:
        W, offset = np.zeros((X.shape[0], 0)), np.zeros(0)
    pb = LinearProblem(
        X, np.where(y == 1, 1.0, -1.0), _logistic(), X, W, offset, fit_intercept=True
    )
    pb.use_kernel = use
    pb.lazy_updates = lazy
    est = AugmentedLagrangianEstimator(pb, "ustat")
    z = np.zeros(est.dim)
    d = np.zeros(est.dim)
    kw = dict(eta=0.1, eta_slack=0.5, delta=0.02, batch_size=batch_size, budget=10**12)
    never = lambda z, d, t, b: (True, b, z, d)  # noqa: E731
    # A short run first compiles (or loads) the kernel, outside the timing.
    for n, seed in ((2, 1), (n_iter, 0)):
        t0 = time.process_time()
        pstorm(
            est, z, d, np.zeros(W.shape[1]), 1.0, rng=np.random.default_rng(seed),
            counter=Counter(), check=never, eval_every=n, **kw,
        )  # fmt: skip
    return (time.process_time() - t0) / n_iter


def sparse_task(n_features, n_samples=20_000, nnz_per_row=20, seed=0):
    """Text-like CSR data: ``nnz_per_row`` non-zeros per row at random columns, random labels
    and a random binary group."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    cols = rng.integers(n_features, size=(n_samples, nnz_per_row))
    X = sp.csr_matrix(
        (
            rng.standard_normal(n_samples * nnz_per_row),
            cols.ravel(),
            np.arange(0, n_samples * nnz_per_row + 1, nnz_per_row),
        ),
        shape=(n_samples, n_features),
    )
    X.sum_duplicates()
    return X, rng.integers(2, size=n_samples), rng.integers(2, size=n_samples)


def sparse_scaling(n_iter):
    """Per-iteration CPU seconds of the kernel on CSR data of growing width (20 non-zeros a
    row, minibatch 30), with a demographic-parity constraint and without, beside dense
    ``d = 100``: ``{(label, constrained, lazy): seconds}``, ``lazy`` False (every coordinate
    every iteration) or "auto" (the default)."""
    out = {}
    rng = np.random.default_rng(0)
    Xd = rng.standard_normal((20_000, 100))
    tasks = [("dense d=100", (Xd, rng.integers(2, size=20_000), rng.integers(2, size=20_000)))]
    tasks += [(f"CSR d={d:.0e}", sparse_task(d)) for d in (1000, 10_000, 100_000)]
    for label, (X, y, A) in tasks:
        for constrained in (True, False):
            for lazy in (False, "auto") if label.startswith("CSR") else ("auto",):
                out[label, constrained, lazy] = per_iteration(
                    X, y, A, n_iter, True, batch_size=30, constrained=constrained, lazy=lazy
                )
    return out


def full_evaluation_time(X, y, A, use, repeats=20):
    """CPU seconds of one ``full_evaluation`` (median), and of one product ``X @ v``."""
    X, W, offset = _fair_problem(X, A)
    pb = LinearProblem(
        X, np.where(y == 1, 1.0, -1.0), _logistic(), X, W, offset, fit_intercept=True
    )
    pb.use_kernel = use
    x = np.random.default_rng(0).standard_normal(pb.n_params) * 0.1
    v = x[:-1]
    times = {"eval": [], "gemv": []}
    pb.full_evaluation(x)  # compiles (or loads) the kernel, outside the timing
    for _ in range(repeats):
        t0 = time.process_time()
        pb.full_evaluation(x)
        t1 = time.process_time()
        X @ v
        times["eval"].append(t1 - t0)
        times["gemv"].append(time.process_time() - t1)
    return float(np.median(times["eval"])), float(np.median(times["gemv"]))


def _logistic():
    from sklearn_ialm.problems.losses import Logistic

    return Logistic()


def whole_fit(X, y, A, repeats):
    """Median CPU seconds of LR and of our fit with either path, in this process."""
    times = {"LogisticRegression": [], "numpy path": [], "kernel": []}
    n_iter = {}
    for _ in range(repeats):
        t0 = time.process_time()
        LogisticRegression().fit(X, y)
        times["LogisticRegression"].append(time.process_time() - t0)
        for name, use in (("numpy path", False), ("kernel", True)):
            LinearProblem.use_kernel = use
            clf = FairLogisticClassifier(
                constraint="demographic_parity", bound=0.02, loss="logistic", random_state=0
            )
            t0 = time.process_time()
            clf.fit(X, y, sensitive_features=A)
            times[name].append(time.process_time() - t0)
            n_iter[name] = (clf.n_iter_, round(clf.n_data_passes_, 2))
    LinearProblem.use_kernel = True
    return {k: float(np.median(v)) for k, v in times.items()}, n_iter


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if not _kernels.available():
        sys.exit("numba is not installed: nothing to compare (pip install numba).")
    threadpool_limits(1)
    repeats = 1 if args.quick else 5
    lines = ["# Compiled PStorm block (numba) vs the numpy path", ""]
    lines += ["Command (from the repository root): `python -m benchmarks.kernel`", ""]
    import llvmlite
    import numba

    lines += [
        f"Python {sys.version.split()[0]}, numpy {np.__version__}, numba {numba.__version__}, "
        f"llvmlite {llvmlite.__version__}; {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f} at the start. CPU time (`process_time`), one BLAS thread.",
        "",
        "## Install size",
        "",
        "| package | installed |",
        "|---|---:|",
    ]
    for name, size in install_size().items():
        lines.append(f"| {name} | {size / 2**20:.0f} MiB |")

    if not args.quick:
        lines += ["", "## First fit in a fresh process (anchor, compile or cache load included)"]
        lines += ["", "| path | numba cache | CPU s | wall s |", "|---|---|---:|---:|"]
        with tempfile.TemporaryDirectory() as cache:
            for label, use in (("kernel", True), ("kernel", True), ("numpy path", False)):
                state = "-" if not use else ("cold (empty)" if not any(Path(cache).iterdir())
                                             else "warm")  # fmt: skip
                cpu, wall = fresh_fit(use, cache)
                lines.append(f"| {label} | {state} | {cpu:.2f} | {wall:.2f} |")

    lines += ["", "## Time per inner iteration (minibatch 60, U-statistic, 2 constraints)", ""]
    lines += ["| data | numpy path | kernel | speed-up |", "|---|---:|---:|---:|"]
    anchor = make_anchor()[:3]
    a9a = load_a9a_task()[:3]
    n_iter = 500 if args.quick else 3000
    for name, (X, y, A) in (("anchor (dense 30000 x 100)", anchor), ("a9a (CSR)", a9a)):
        slow = per_iteration(X, y, A, n_iter // 5, False)
        fast = per_iteration(X, y, A, n_iter, True)
        lines.append(
            f"| {name} | {1e6 * slow:.0f} us | {1e6 * fast:.1f} us | {slow / fast:.0f}x |"
        )

    lines += ["", "## Kernel time per inner iteration on wide CSR data (20 non-zeros a row)", ""]
    lines += [
        "Minibatch 30, U-statistic; 20000 rows. Eager: every coordinate every iteration (as",
        "dense data); default: lazy updates (only the coordinates a row reads) when there are",
        "more than `LinearProblem.LAZY_RATIO` (3) times as many features as non-zeros in an",
        "iteration's rows (30 x 20 without constraint, 60 x 20 with).",
        "",
        "| data | DP, eager | DP, default | no constraint, eager | no constraint, default |",
        "|---|---:|---:|---:|---:|",
    ]
    scaling = sparse_scaling(n_iter)
    for name in dict.fromkeys(k[0] for k in scaling):
        cells = [scaling.get((name, c, lazy)) for c in (True, False) for lazy in (False, "auto")]
        cells = ["-" if v is None else f"{1e6 * v:.1f} us" for v in cells]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")

    lines += ["", "## One full evaluation (a stopping test; median of 20)", ""]
    lines += [
        "| data | numpy path | kernel | `X @ v` | kernel / `X @ v` |",
        "|---|---:|---:|---:|---:|",
    ]
    full_rows = (("anchor (dense 30000 x 100)", anchor), ("a9a (CSR: scipy on both)", a9a))
    for name, (X, y, A) in full_rows:
        slow, _ = full_evaluation_time(X, y, A, False)
        fast, gemv = full_evaluation_time(X, y, A, True)
        lines.append(
            f"| {name} | {1e3 * slow:.2f} ms | {1e3 * fast:.2f} ms | {1e3 * gemv:.2f} ms | "
            f"{fast / gemv:.1f} |"
        )

    lines += ["", f"## Whole fit (median of {repeats}; FairLogisticClassifier DP 0.02)", ""]
    lines += [
        "| data | LR s | numpy path s (ratio to LR) | kernel s (ratio to LR) | inner it, passes |",
        "|---|---:|---:|---:|---|",
    ]
    for name, (X, y, A) in (("anchor", anchor), ("a9a", a9a)):
        t, it = whole_fit(X, y, A, repeats)
        lr = t["LogisticRegression"]
        lines.append(
            f"| {name} | {lr:.3f} | {t['numpy path']:.3f} ({t['numpy path'] / lr:.1f}x) | "
            f"{t['kernel']:.3f} ({t['kernel'] / lr:.1f}x) | numpy {it['numpy path']}, "
            f"kernel {it['kernel']} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        write("kernel.md", text)


if __name__ == "__main__":
    main()
