"""Minibatches drawn from blocks of adjacent rows against uniform draws (issue 21, part 2).

Random single-row reads wait on memory: at a million rows of 20 features a minibatch row
costs several times a row of a sequential pass. A *window draw* reads a minibatch from one
window of ``window`` adjacent rows that starts at a uniformly random row (circularly), the
rows drawn uniformly within it: each draw's marginal is uniform over the rows, so a mean over
the minibatch is unbiased. The draws of one window are not independent, though, so the
U-statistic over all pairs of a minibatch (the default estimator of ``beta J^T k``) is not
unbiased on them; over the pairs that cross two independent windows it is
(:func:`cross_window_penalty`). Both facts are checked exactly in
``tests/test_block_draws.py``.

Usage: ``python -m benchmarks.block_draws`` (dense 1e6 x 20, CSR 1e6 x 1e4 with 20 non-zeros
a row; one thread) writes ``results/block_draws.md``: CPU seconds per pass of minibatches of
the compiled PStorm block, uniform against window draws, and of one sequential stop-test
pass.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from sklearn_ialm.problems import fairness_problem
from sklearn_ialm.solver.pstorm import AugmentedLagrangianEstimator, Counter

RESULTS = Path(__file__).resolve().parent / "results"


def window_draws(rng, n, size, window):
    """``size`` row indices drawn uniformly within one window of ``window`` adjacent rows
    (circular) that starts at a uniform row: each index's marginal is uniform on ``n``."""
    start = rng.integers(n)
    return (start + rng.integers(window, size=size)) % n


def cross_window_penalty(J, K, rows_a, rows_b):
    """``J^T k`` estimated from two halves drawn from independent windows: the mean of
    ``(J_i^T K_j + J_j^T K_i) / 2`` over the pairs ``i`` in ``rows_a``, ``j`` in ``rows_b``.

    ``J``: per-row Jacobians ``(n, m, p)``; ``K``: per-row values ``(n, m)``.
    """
    ja, jb = J[rows_a].mean(axis=0), J[rows_b].mean(axis=0)
    ka, kb = K[rows_a].mean(axis=0), K[rows_b].mean(axis=0)
    return 0.5 * (np.einsum("mp,m->p", ja, kb) + np.einsum("mp,m->p", jb, ka))


def _data(kind, n, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "dense":
        X = rng.standard_normal((n, 20))
        w = rng.normal(0.0, np.sqrt(4.0 / 20), 20)
        score = X @ w
    else:
        d, nnz = 10_000, 20
        indices = rng.integers(d, size=n * nnz).astype(np.int32)
        X = sp.csr_matrix(
            (rng.standard_normal(n * nnz), indices, np.arange(0, n * nnz + 1, nnz)),
            shape=(n, d),
        )
        X.sort_indices()
        score = X @ rng.normal(0.0, 1.0, d)
    y = (score + rng.logistic(size=n) > 0).astype(int)
    A = (score + rng.normal(0.0, 1.2 * score.std(), n) > 0).astype(int)
    return X, y, A


def _time_pass(pb, draws_of, batch, iters, rng):
    """CPU seconds of ``iters`` compiled PStorm iterations with minibatches from
    ``draws_of(rng, T, batch)`` (a ``(T, 2, batch)`` index array), per pass of minibatches."""
    est = AugmentedLagrangianEstimator(pb, "ustat")

    def block_draws(est, batch_size, n_iter, rng, counter, budget):
        return draws_of(rng, n_iter, batch_size)

    pb._block_draws = block_draws
    run = pb.pstorm_block(est)
    z, d = np.zeros(est.dim), np.zeros(est.dim)
    y = np.zeros(pb.n_constraints)
    kw = dict(eta=1e-3, eta_slack=1e-3, keep=0.98, batch_size=batch, rng=rng)
    run(z, d, y, 1.0, n_iter=10, counter=Counter(), budget=np.inf, **kw)  # compiled, warm
    c0 = time.process_time()
    run(z, d, y, 1.0, n_iter=iters, counter=Counter(), budget=np.inf, **kw)
    seconds = time.process_time() - c0
    del pb._block_draws
    evaluations = iters * 2 * 2 * batch  # two kinds of rows, at two points
    return seconds * pb.n_samples / evaluations


def run(n=1_000_000, batch=30, iters=50_000, window_bytes=8192, log=print):
    rows = []
    for kind in ("dense", "csr"):
        X, y, A = _data(kind, n)
        pb = fairness_problem(
            X, y, X, A, bound=0.02, fit_intercept=True, feature_scale="auto"
        )  # fmt: skip
        row_bytes = X.shape[1] * 8 if kind == "dense" else (X.nnz / n) * 12
        window = max(batch, int(window_bytes // row_bytes))

        def uniform(rng, T, b):
            return rng.integers(n, size=(T, 2, b))

        def windows(rng, T, b, window=window):
            # Per iteration three window starts: objective rows, and the two halves of the
            # constraint rows.
            starts = rng.integers(n, size=(T, 3))
            half = b // 2
            which = np.array([[0] * b, [1] * half + [2] * (b - half)])
            return (starts[:, which] + rng.integers(window, size=(T, 2, b))) % n

        rng = np.random.default_rng(0)
        with threadpool_limits(1):
            per_pass = {
                name: _time_pass(pb, draws, batch, iters, rng)
                for name, draws in (("uniform", uniform), ("window_s", windows))
            }
            pb.full_evaluation(np.zeros(pb.n_params))
            c0 = time.process_time()
            for _ in range(3):
                pb.full_evaluation(np.full(pb.n_params, 0.01))
            full = (time.process_time() - c0) / 3
        rows.append(dict(kind=kind, window=window, full=full, **per_pass))
        log(f"{kind}: window {window} rows, {per_pass}, sequential pass {full:.3f} s")
    return rows


def write(rows, n, batch, iters):
    lines = [
        "# Minibatches from windows of adjacent rows (issue 21, part 2)",
        "",
        "Command: `python -m benchmarks.block_draws` (one thread, CPU seconds). The compiled "
        f"PStorm block runs {iters} iterations of minibatch {batch} (objective and constraint "
        f"rows, at two points) of the demographic-parity problem on {n:.0e} rows; the "
        "figures are seconds per pass of minibatches (n row evaluations). A window draw reads "
        "the objective rows from one window of adjacent rows (about 8 KB) at a uniform start, "
        "the constraint rows as two halves from two more windows. The sequential pass is one "
        "stop test on all rows (`full_evaluation`: the compiled pass on dense data, scipy's "
        "products on CSR).",
        "",
        "| data | window rows | uniform draws s/pass | window draws s/pass | uniform / window "
        "| sequential pass s | uniform / sequential |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['kind']} | {r['window']} | {r['uniform']:.3f} | {r['window_s']:.3f} | "
            f"{r['uniform'] / r['window_s']:.2f} | {r['full']:.3f} | "
            f"{r['uniform'] / r['full']:.2f} |"
        )
    (RESULTS / "block_draws.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    N, BATCH, ITERS = 1_000_000, 30, 50_000
    write(run(N, BATCH, ITERS), N, BATCH, ITERS)
