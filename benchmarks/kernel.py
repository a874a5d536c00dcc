"""The compiled PStorm block (numba) against the numpy path: the figures behind the choice.

CPU time under one thread: the first fit in a fresh process with an empty numba cache
(cold) and with the cache it left (warm), against the numpy path; and the time per PStorm
inner iteration on the anchor (dense 30000 x 100) and a9a (CSR 32561 x 123). ``--quick``:
one repeat, no fresh processes. (Other measurements of the choice:
``git log -- benchmarks/results/kernel.md``.)
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
from threadpoolctl import threadpool_limits

from benchmarks.common import ROOT, load_a9a_task, make_anchor, write
from sklearn_ialm.problems import LinearProblem, _kernels
from sklearn_ialm.problems.losses import Logistic
from sklearn_ialm.solver.pstorm import AugmentedLagrangianEstimator, Counter, pstorm

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
    code = FRESH_FIT.format(use=use)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return tuple(map(float, out.stdout.split()))


def _fair_problem(X, A):
    """The anchor fit's problem shape: logistic loss, both sides of a parity gap, intercept."""
    group = A == 1
    col = group / group.mean() - ~group / (~group).mean()
    return X, np.column_stack([col, -col]), np.array([-0.02, -0.02])


def per_iteration(X, y, A, n_iter, use):
    """CPU seconds per PStorm inner iteration (minibatch 60): ``n_iter`` iterations, then one
    (free) check."""
    X, W, offset = _fair_problem(X, A)
    pb = LinearProblem(
        X, np.where(y == 1, 1.0, -1.0), Logistic(), X, W, offset, fit_intercept=True
    )
    pb.use_kernel = use
    est = AugmentedLagrangianEstimator(pb, "ustat")
    z = np.zeros(est.dim)
    d = np.zeros(est.dim)
    kw = dict(eta=0.1, eta_slack=0.5, delta=0.02, batch_size=60, budget=10**12)
    never = lambda z, d, t, b: (True, b, z, d)  # noqa: E731
    # A short run first compiles (or loads) the kernel, outside the timing.
    for n, seed in ((2, 1), (n_iter, 0)):
        t0 = time.process_time()
        pstorm(
            est, z, d, np.zeros(W.shape[1]), 1.0, rng=np.random.default_rng(seed),
            counter=Counter(), check=never, eval_every=n, **kw,
        )  # fmt: skip
    return (time.process_time() - t0) / n_iter


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if not _kernels.available():
        sys.exit("numba is not installed: nothing to compare (pip install numba).")
    threadpool_limits(1)
    lines = ["# Compiled PStorm block (numba) vs the numpy path", ""]
    lines += ["Command (from the repository root): `python -m benchmarks.kernel`", ""]
    import llvmlite
    import numba

    lines += [
        f"Python {sys.version.split()[0]}, numpy {np.__version__}, numba {numba.__version__}, "
        f"llvmlite {llvmlite.__version__}; {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f} at the start. CPU time (`process_time`), one BLAS thread.",
    ]
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

    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        write("kernel.md", text)


if __name__ == "__main__":
    main()
