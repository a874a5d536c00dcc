"""The scaling series: time per row and pass, memory beyond X, accuracy, as n grows.

Each fit runs in a fresh subprocess (``python -m benchmarks.speed.scaling --one KIND N
--method NAME``) so that its peak resident memory is its own (an earlier fit's freed memory,
still resident, would hide a later fit's): the kernel's peak counter (``VmHWM``) is reset
after the data are built and a small warm-up fit has loaded the compiled kernel, and "memory
beyond X" is the peak during the fit minus the resident set just before it. Every fit runs
under ``threadpool_limits(1)`` and is timed in CPU seconds.

Data (seeded, one recipe per kind; the label depends on X and on a binary group A, so an
unconstrained model has a demographic-parity gap to close and a false-positive rate above 0.2):

* ``dense``: n x 20 float64, 19 standard-normal columns and A (30 % ones) as the last column;
* ``csr``: n x 10000 canonical CSR, 20 nonzeros drawn per row (uniform columns, the rare
  duplicates summed; standard-normal values); A is passed as ``sensitive_features`` only.

Methods: ``LogisticRegression()`` (the reference), ``FairLogisticClassifier(constraint=
"demographic_parity", bound=0.02)`` and ``NeymanPearsonClassifier()``, defaults otherwise,
``random_state=0``. Accuracy is on 100000 fresh test rows of the same recipe.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from threadpoolctl import threadpool_limits

from benchmarks.speed.common import (
    BOUND,
    ROOT,
    dp_gap,
    fpr_fnr,
    rss_now_and_reset_peak,
    rss_peak,
)

N_TEST = 100_000
CSR_COLS = 10_000
CSR_NNZ = 20
METHODS = ("LogisticRegression", "FairLogisticClassifier", "NeymanPearsonClassifier")
CASES = {
    "dense": [10_000, 100_000, 1_000_000, 10_000_000],
    "csr": [10_000, 100_000, 1_000_000],
}


def make(kind, n, seed):
    """``X, y, A`` of one kind; the model's weights are fixed, the rows come from ``seed``."""
    rng = np.random.default_rng(seed)
    w_rng = np.random.default_rng(12345)
    A = (rng.random(n) < 0.3).astype(np.int64)
    if kind == "dense":
        X = rng.standard_normal((n, 20))
        X[:, -1] = A
        w = np.append(0.6 * w_rng.standard_normal(19), 0.0)
        score = X @ w
    else:
        indices = rng.integers(0, CSR_COLS, size=n * CSR_NNZ, dtype=np.int32)
        data = rng.standard_normal(n * CSR_NNZ)
        indptr = np.arange(0, n * CSR_NNZ + 1, CSR_NNZ, dtype=np.int32)
        X = sp.csr_matrix((data, indices, indptr), shape=(n, CSR_COLS))
        # Canonical CSR (sorted, no duplicates), as most producers give: the estimators copy a
        # non-canonical matrix first, which would count as the fit's memory.
        X.sum_duplicates()
        score = X @ (0.5 * w_rng.standard_normal(CSR_COLS))
    # the minority group is less often positive: a parity gap for the constraint to close
    y = (rng.random(n) < expit(score + 0.3 - 1.0 * A)).astype(np.int64)
    return X, y, A


def nbytes(X):
    if sp.issparse(X):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return X.nbytes


def run_one(kind, n, method, max_passes=None):
    """Fit one method on one case; return its row dict."""
    from sklearn.linear_model import LogisticRegression

    from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

    # compile the kernel on a small case first: its memory and time are not the fit's
    Xw, yw, Aw = make(kind, 2000, seed=2)
    warnings.simplefilter("ignore")  # the warm-up's budget is too small to converge
    FairLogisticClassifier(constraint="demographic_parity", bound=BOUND, max_passes=5).fit(
        Xw, yw, sensitive_features=Aw
    )
    NeymanPearsonClassifier(max_passes=5).fit(Xw, yw)
    del Xw, yw, Aw
    warnings.resetwarnings()
    t0 = time.perf_counter()
    X, y, A = make(kind, n, seed=0)
    X_te, y_te, A_te = make(kind, N_TEST, seed=1)
    build = time.perf_counter() - t0
    extra = {} if max_passes is None else {"max_passes": max_passes}
    methods = {
        "LogisticRegression": (LogisticRegression, {}, False),
        "FairLogisticClassifier": (
            FairLogisticClassifier,
            dict(constraint="demographic_parity", bound=BOUND, random_state=0, **extra),
            True,
        ),
        "NeymanPearsonClassifier": (
            NeymanPearsonClassifier,
            dict(random_state=0, **extra),
            False,
        ),
    }
    cls, kw, groups = methods[method]
    gc.collect()
    before = rss_now_and_reset_peak()
    c0, w0 = time.process_time(), time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", FutureWarning)
        model = cls(**kw)
        model.fit(X, y, sensitive_features=A) if groups else model.fit(X, y)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    peak = rss_peak() - before
    pred_tr, pred_te = model.predict(X), model.predict(X_te)
    passes = float(getattr(model, "n_data_passes_", np.nan))
    return dict(
        kind=kind,
        n=n,
        d=X.shape[1],
        method=method,
        X_MB=nbytes(X) / 2**20,
        beyond_X_MB=peak / 2**20,
        beyond_over_X=peak / nbytes(X),
        cpu=cpu,
        wall=wall,
        passes=passes,
        us_per_row_pass=1e6 * cpu / (n * passes) if passes == passes else np.nan,
        us_per_row=1e6 * cpu / n,
        acc_test=float(np.mean(pred_te == y_te)),
        dp_train=dp_gap(y, pred_tr, A),
        dp_test=dp_gap(y_te, pred_te, A_te),
        fpr_train=fpr_fnr(y, pred_tr)[0],
        fpr_test=fpr_fnr(y_te, pred_te)[0],
        max_passes=kw.get("max_passes", ""),
        warnings="; ".join(sorted({type(w.message).__name__ for w in caught})),
        build_s=build,
    )


def run(log=print, max_passes_for=lambda kind, n: None, cases=CASES):
    """Every fit in its own subprocess; one row per fit."""
    rows = []
    # A fixed mmap threshold: glibc otherwise raises it after frees (up to 32 MB) and keeps
    # freed arrays resident, so a later fit could reuse them unseen by the peak counter.
    env = dict(
        os.environ,
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MALLOC_MMAP_THRESHOLD_="131072",
        MALLOC_TRIM_THRESHOLD_="131072",
    )
    for kind, sizes in cases.items():
        for n in sizes:
            log(f"scaling {kind} n={n:.0e} ...")
            for method in METHODS:
                cmd = [sys.executable, "-m", "benchmarks.speed.scaling", "--one", kind, str(n)]
                cmd += ["--method", method]
                mp = max_passes_for(kind, n)
                if mp is not None:
                    cmd += ["--max-passes", str(mp)]
                out = subprocess.run(
                    cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False
                )
                if out.returncode != 0:
                    log(f"  {method} failed: {out.stderr[-2000:]}")
                    rows.append(dict(kind=kind, n=n, method="(failed)", error=out.stderr[-500:]))
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                log(
                    f"  {r['method']:24s} cpu {r['cpu']:8.2f} s  passes {r['passes']:7.2f}  "
                    f"{r['us_per_row_pass']:.3g} us/row/pass  beyond X {r['beyond_over_X']:.2f}x"
                    f"  acc {r['acc_test']:.4f}"
                )
                rows.append(r)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.speed.scaling", description=__doc__)
    ap.add_argument("--one", nargs=2, metavar=("KIND", "N"), required=True)
    ap.add_argument("--method", choices=METHODS, required=True)
    ap.add_argument("--max-passes", type=float, default=None)
    args = ap.parse_args(argv)
    kind, n = args.one[0], int(float(args.one[1]))
    with threadpool_limits(1):
        row = run_one(kind, n, args.method, args.max_passes)
    print(json.dumps(row, default=float))


if __name__ == "__main__":
    main()
