"""Memory a fit allocates beyond X (issue 51): ``tracemalloc``'s peak during ``fit``.

Each (case, method) runs in a fresh process: the data built, one small fit of the same
method on 2000 rows of the same recipe (imports, compiled kernels and caches are not the
fit's), then the traced fit. numpy reports its buffers to ``tracemalloc``; X itself is made
before tracing starts, so the peak is what the fit adds. Ratios are to
``LogisticRegression()`` on the same rows. ``--sites N`` also prints the N largest
allocation sites (file:line) alive at the peak, found by a snapshot whenever the traced
memory reaches a new high (slow: for diagnosis, at ``--quick`` sizes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tracemalloc
import warnings

from benchmarks.common import BOUND, ROOT, write
from benchmarks.families import binding_csr, binding_data

CASES = {  # key -> (label, X, y, groups of n rows); groups not in X, tied to the score
    "dense": ("dense n x 20", lambda n: binding_data(1.5, n=n)[:3]),
    "csr": ("CSR n x 1e4, 30 non-zeros a row", lambda n: binding_csr(1.5, n=n, nnz=30)[:3]),
}
RUNS = [("dense", "LogisticRegression"), ("dense", "FairLogisticClassifier"),
        ("dense", "NeymanPearsonClassifier"), ("csr", "LogisticRegression"),
        ("csr", "FairLogisticClassifier")]  # fmt: skip


def _fit(method, X, y, g):
    from sklearn.linear_model import LogisticRegression

    from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

    if method == "LogisticRegression":
        return LogisticRegression().fit(X, y)
    if method == "NeymanPearsonClassifier":
        return NeymanPearsonClassifier(max_fpr=0.05, random_state=0).fit(X, y)
    est = FairLogisticClassifier(constraint="demographic_parity", bound=BOUND, random_state=0)
    return est.fit(X, y, sensitive_features=g)


def _sites_at_peak(top):
    """A profile hook that snapshots the traces at each new high of the traced memory."""
    state = {"high": 0, "snap": None}

    def hook(frame, event, arg):
        if event in ("return", "c_return"):
            current = tracemalloc.get_traced_memory()[0]
            if current > state["high"] + (1 << 20):
                state["high"], state["snap"] = current, tracemalloc.take_snapshot()

    def report():
        stats = state["snap"].statistics("lineno")[:top]
        return [f"{s.size / 1e6:8.2f} MB {s.count:6d} blocks {s.traceback}" for s in stats]

    return hook, report


def measure_one(case, method, n, top=0):
    """Peak (bytes) that ``method``'s fit on ``case`` at ``n`` rows allocates; X's bytes."""
    X, y, g = CASES[case][1](n)
    nbytes = (
        X.nbytes if hasattr(X, "nbytes") else sum(a.nbytes for a in (X.data, X.indices, X.indptr))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(method, *CASES[case][1](2000))
        hook, report = _sites_at_peak(top)
        tracemalloc.start()
        if top:
            sys.setprofile(hook)
        _fit(method, X, y, g)
        sys.setprofile(None)
        peak = tracemalloc.get_traced_memory()[1]
    sites = report() if top else []
    tracemalloc.stop()
    return dict(case=case, method=method, n=n, peak=peak, x_bytes=int(nbytes), sites=sites)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="1e5 rows (smoke runs)")
    ap.add_argument("--n", type=float, default=None, help="rows (1e6; --quick 1e5)")
    ap.add_argument("--sites", type=int, default=0, help="print the top N sites at the peak")
    ap.add_argument("--one", nargs=2, metavar=("CASE", "METHOD"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    n = int(args.n or (1e5 if args.quick else 1e6))
    if args.one:
        print(json.dumps(measure_one(*args.one, n, args.sites)))
        return
    rows = []
    for case, method in RUNS:
        cmd = [sys.executable, "-m", "benchmarks.memory", "--one", case, method, "--n", str(n)]
        out = subprocess.run(cmd + ["--sites", str(args.sites)], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout  # fmt: skip
        row = json.loads(out.splitlines()[-1])
        rows.append(row)
        print(f"{case} {method}: {row['peak'] / 1e6:.1f} MB", *row["sites"], sep="\n  ")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    command = "python -m benchmarks.memory" + (" --quick" if args.quick else "")
    lines = [
        "# Memory a fit allocates beyond X (issue 51)", "",
        f"Command: `{command}` (n = {n}), at commit {commit}. Generated; do not edit.", "",
        "Peak of `tracemalloc` during `fit`, each in a fresh process after one small fit of "
        "the same method; X is made before tracing. Target: at most 2x LogisticRegression().",
        "", "| case | method | X MB | peak MB | / LR | target |", "|---|---|---:|---:|---:|---|",
    ]  # fmt: skip
    for row in rows:
        lr = next(r for r in rows if (r["case"], r["method"]) == (row["case"], RUNS[0][1]))
        ratio = row["peak"] / lr["peak"]
        verdict = "-" if row is lr else "met" if ratio <= 2 else "**NOT MET**"
        lines.append(
            f"| {CASES[row['case']][0]} | {row['method']} | {row['x_bytes'] / 1e6:.0f} | "
            f"{row['peak'] / 1e6:.1f} | {ratio:.2f} | {verdict} |"
        )
    write("memory.md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
