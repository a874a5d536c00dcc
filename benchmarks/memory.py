"""Peak memory of a fit against the size of the training matrix X.

Usage (from the repository root)::

    python -m benchmarks.memory                       # writes benchmarks/results/memory.md
    python -m benchmarks.memory --rows 50000 200000 --features 100 --seeds-rows 200000

Every configuration runs in a fresh subprocess that loads X from disk (so nothing but X and
the labels is resident before the fit) and fits ``FairLogisticClassifier`` (demographic
parity, bound 0.02, logistic loss) or ``NeymanPearsonClassifier`` with a small data-pass
budget (memory does not depend on convergence). X is given as

* ``dense``: a C-ordered float64 ndarray (``np.load``);
* ``csr``: a float64 CSR matrix of the same shape with 10 % nonzeros (``sp.load_npz``);
* ``memmap``: the dense file opened read-only with ``np.load(mmap_mode="r")``.

Measured in the subprocess:

* ``tracemalloc`` peak during ``fit`` (numpy reports its buffers to tracemalloc; the pages of
  a memory-mapped file are not allocations and are not counted): everything the fit
  allocates in the process, in units of ``X.nbytes``;
* the growth of the process's resident memory during the fit (``/proc/self/status`` sampled
  every 5 ms): ``RssAnon`` (private memory, where a copy of X would show even if it were not
  made by numpy) and ``VmRSS`` (which also counts the pages of a memory-mapped file once
  read: shared page cache, not a copy). ``ru_maxrss`` is not used: on Linux a child
  inherits its parent's high-water mark across fork and exec;
* a probe in the process that runs the solver (the main process for one seed; each loky
  worker for ``n_seeds=4, n_jobs=2``), installed by replacing
  ``sklearn_ialm.estimators._base._solve`` with a wrapper in this module (the package is not
  modified). It records what the solver's problem holds as X (ndarray / np.memmap / CSR, and
  the file backing it, following ``.base``), the resident memory of that process by kind
  (``RssAnon``: private, ``RssFile`` and ``RssShmem``: file-backed, shareable) sampled every
  5 ms while the solver runs, and its ``VmHWM``;
* the size of joblib's memmapping folder (``/dev/shm/joblib_memmapping_folder_<pid>_*``, or
  the temp folder), polled every 5 ms: the one copy of X that joblib writes when it memmaps
  an in-memory array for its workers.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

RESULTS = Path(__file__).parent / "results"
MB = 2**20


# -- process memory from /proc (Linux) -----------------------------------------------------------
def proc_status(pid="self") -> dict:
    """``VmRSS``, ``VmHWM``, ``RssAnon``, ``RssFile``, ``RssShmem`` of a process, in bytes."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                    out[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return out


class Sampler:
    """Poll a function every ``period`` seconds in a thread; keep the maximum of each key."""

    def __init__(self, fn, period=0.005):
        self.fn, self.period = fn, period
        self.peak: dict = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for k, v in self.fn().items():
                self.peak[k] = max(self.peak.get(k, 0), v)
            time.sleep(self.period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        for k, v in self.fn().items():
            self.peak[k] = max(self.peak.get(k, 0), v)


def _backing(a):
    """``(kind, filename)`` of what holds the buffer of array ``a``: follows ``.base``."""
    obj, seen = a, 0
    while obj is not None and seen < 20:
        if isinstance(obj, np.memmap):
            return "np.memmap", getattr(obj, "filename", None)
        if type(obj).__name__ == "mmap":
            return "mmap", None
        obj = getattr(obj, "base", None)
        seen += 1
    return "in-process ndarray", None


def describe_matrix(A) -> dict:
    if sp.issparse(A):
        parts = {name: _backing(getattr(A, name)) for name in ("data", "indices", "indptr")}
        return {
            "type": f"{type(A).__name__} ({A.format})",
            "parts": {
                k: f"{kind}{' ' + str(fn) if fn else ''}" for k, (kind, fn) in parts.items()
            },
            "writeable": bool(A.data.flags.writeable),
        }
    kind, fn = _backing(A)
    return {
        "type": type(A).__name__,
        "backing": kind,
        "file": str(fn) if fn else None,
        "writeable": bool(A.flags.writeable),
        "nbytes": int(A.nbytes),
    }


#: Address of the caller's X buffer (data array for CSR), set by the child before the fit.
_CALLER_BUFFER = {"address": None}


def _address(A):
    arr = A.data if sp.issparse(A) else A
    return int(np.asarray(arr).__array_interface__["data"][0])


def _probe_solve(problem, seed, solver_kwargs):
    """Replacement of ``_base._solve``: runs the solver and records memory in this process."""
    from sklearn_ialm.solver import stoc_ialm

    entry = proc_status()
    with Sampler(proc_status) as s:
        result = stoc_ialm(problem, random_state=seed, **solver_kwargs)
    record = dict(
        pid=os.getpid(),
        seed=seed,
        matrix=describe_matrix(problem.A_obj.A),
        same_matrix_for_constraints=problem.A_con.A is problem.A_obj.A,
        callers_buffer=_address(problem.A_obj.A) == _CALLER_BUFFER["address"],
        entry=entry,
        peak=s.peak,
        batch_size_reached=int(result.history["batch_size"][-1]),
    )
    out = os.environ.get("SKLEARN_IALM_MEMPROBE_DIR")
    if out:
        with open(Path(out) / f"probe_{os.getpid()}_{seed}.json", "w") as f:
            json.dump(record, f)
    return result


def _joblib_folder_bytes(pid) -> dict:
    total = 0
    roots = ["/dev/shm", tempfile.gettempdir()]
    for root in roots:
        for d in glob.glob(os.path.join(root, f"joblib_memmapping_folder_{pid}_*")):
            for dirpath, _, files in os.walk(d):
                for fn in files:
                    with contextlib.suppress(OSError):
                        total += os.path.getsize(os.path.join(dirpath, fn))
    return {"joblib_folder": total}


# -- the child: one configuration -----------------------------------------------------------------
def child(cfg: dict) -> dict:
    warnings.simplefilter("ignore")
    from threadpoolctl import threadpool_limits

    import sklearn_ialm.estimators._base as base
    from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

    probe_dir = tempfile.mkdtemp(prefix="memprobe_")
    os.environ["SKLEARN_IALM_MEMPROBE_DIR"] = probe_dir
    base._solve = _probe_solve

    d = Path(cfg["data"])
    if cfg["kind"] == "dense":
        X = np.load(d / "X.npy")
    elif cfg["kind"] == "memmap":
        X = np.load(d / "X.npy", mmap_mode="r")
    else:
        X = sp.load_npz(d / "X_csr.npz").tocsr()
    y = np.load(d / "y.npy")
    A = np.load(d / "A.npy")
    x_nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if sp.issparse(X) else X.nbytes
    dense_nbytes = X.shape[0] * X.shape[1] * 8

    common = dict(
        random_state=0,
        max_passes=cfg["max_passes"],
        n_seeds=cfg["n_seeds"],
        n_jobs=cfg["n_jobs"],
    )
    if cfg["estimator"] == "fair":
        est = FairLogisticClassifier(
            constraint="demographic_parity", bound=0.02, loss="logistic", **common
        )
        fit_kw = dict(sensitive_features=A)
    else:
        est = NeymanPearsonClassifier(**common)
        fit_kw = {}

    _CALLER_BUFFER["address"] = _address(X)
    before = proc_status()
    tracemalloc.start()
    t0 = time.perf_counter()
    with (
        threadpool_limits(1),
        Sampler(lambda: _joblib_folder_bytes(os.getpid())) as jf,
        Sampler(proc_status) as ps,
    ):
        est.fit(X, y, **fit_kw)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    if cfg["n_jobs"] and cfg["n_jobs"] > 1:
        from joblib.externals.loky import get_reusable_executor

        get_reusable_executor().shutdown(wait=True)

    probes = []
    for fn in sorted(Path(probe_dir).glob("probe_*.json")):
        probes.append(json.loads(fn.read_text()))
        fn.unlink()
    os.rmdir(probe_dir)
    return dict(
        cfg={k: v for k, v in cfg.items() if k != "data"},
        shape=list(X.shape),
        x_nbytes=int(x_nbytes),
        dense_nbytes=int(dense_nbytes),
        rss_before=before,
        rss_peak=ps.peak,
        tracemalloc_peak=int(peak),
        joblib_folder_peak=int(jf.peak.get("joblib_folder", 0)),
        seconds=seconds,
        n_data_passes=float(est.n_data_passes_),
        probes=probes,
    )


# -- the parent -----------------------------------------------------------------------------------
def make_data(n, d, path: Path, seed=0):
    """Dense standardised Gaussian features with a label and a binary group (the anchor's
    recipe without ``make_classification``, whose temporaries would be large)."""
    rng = np.random.default_rng(seed)
    path.mkdir(parents=True, exist_ok=True)
    X = rng.standard_normal((n, d))
    w = rng.standard_normal(d) / np.sqrt(d)
    y = (X @ w + 0.5 * rng.standard_normal(n) > 0).astype(np.int64)
    A = (rng.random(n) < 1 / (1 + np.exp(1.3 + 0.6 * y - 0.4 * (1 - y)))).astype(np.int64)
    X[:, -1] = (A - A.mean()) / A.std()
    np.save(path / "X.npy", X)
    mask = rng.random((n, d)) < 0.1
    Xs = sp.csr_matrix(np.where(mask, X, 0.0))
    del mask
    sp.save_npz(path / "X_csr.npz", Xs, compressed=False)
    np.save(path / "y.npy", y)
    np.save(path / "A.npy", A)


def run_child(cfg) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--child", json.dumps(cfg)],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child failed for {cfg}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mb(b):
    return f"{b / MB:.1f}"


def report(results, command, args) -> str:
    import joblib
    import scipy
    import sklearn

    lines = [
        "# Memory of a fit against the size of X",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {os.cpu_count()} CPUs, Linux {platform.release()}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"scikit-learn {sklearn.__version__}, joblib {joblib.__version__}. Each row is a fresh "
        "subprocess (see the docstring of `benchmarks/memory.py` for what is measured). "
        f"Budget `max_passes={args.max_passes}` (memory does not depend on convergence; the "
        "ConvergenceWarning is expected). X: float64, `d` features; CSR: 10 % nonzeros, "
        "int32 indices.",
        "",
        "## One seed, in process: what the fit allocates besides X",
        "",
        "`tracemalloc peak` is the largest total of live allocations during `fit`, X itself "
        "not included (it was loaded before). `x X` divides it by the bytes of X as given "
        "(CSR: data + indices + indptr); `x dense` by the bytes X would take densified. "
        "`RssAnon +` / `VmRSS +`: peak growth of the process's private / total resident "
        "memory during the fit (VmRSS counts a memmap's pages once read: shared page cache, "
        "not a copy). `solver's X`: what the solver's problem object holds, and whether it is "
        "the caller's buffer itself (same address). `batch`: the minibatch size the adaptive "
        "rule reached (each minibatch block is a copy of `batch x d` rows).",
        "",
        "| estimator | X | n x d | X MB | tracemalloc peak MB | x X | x dense | RssAnon + MB "
        "| VmRSS + MB | solver's X | batch | fit s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in results:
        c = r["cfg"]
        if c["n_seeds"] != 1:
            continue
        pr = r["probes"][0] if r["probes"] else {}
        m = pr.get("matrix", {})
        if "parts" in m:
            seen = f"{m['type']}, data: {m['parts']['data'].split(' /')[0]}"
        else:
            seen = m.get("type", "?")
            if m.get("backing") != "in-process ndarray":
                seen += f" backed by {m.get('backing')}"
            seen += " (read-only)" if not m.get("writeable", 1) else ""
        seen += ": the caller's buffer" if pr.get("callers_buffer") else ": a copy"
        b, pk = r["rss_before"], r["rss_peak"]
        lines.append(
            f"| {c['estimator']} | {c['kind']} | {r['shape'][0]} x {r['shape'][1]} "
            f"| {_mb(r['x_nbytes'])} | {_mb(r['tracemalloc_peak'])} "
            f"| {r['tracemalloc_peak'] / r['x_nbytes']:.3f} "
            f"| {r['tracemalloc_peak'] / r['dense_nbytes']:.3f} "
            f"| {_mb(pk.get('RssAnon', 0) - b.get('RssAnon', 0))} "
            f"| {_mb(pk.get('VmRSS', 0) - b.get('VmRSS', 0))} | {seen} "
            f"| {pr.get('batch_size_reached', '')} | {r['seconds']:.1f} |"
        )
    lines += [
        "",
        "## Four seeds on two loky workers (`n_seeds=4, n_jobs=2`)",
        "",
        "One line per seed, as seen by the worker process that ran it. `RssAnon` is the "
        "worker's private resident memory (a copy of X would be here), `RssShmem` / "
        "`RssFile` its shared, file-backed pages (a memory-mapped X is here), both at their "
        "peak while the solver ran. `solver's X` is what the problem object held inside the "
        "worker. `joblib dump MB` is the peak size of joblib's memmapping folder during the "
        "fit (the one extra copy of an in-memory X that joblib writes for all workers), "
        "`parent tracemalloc MB` the main process's allocations.",
        "",
        "| estimator | X | X MB | parent tracemalloc MB | joblib dump MB | worker pid / seed "
        "| solver's X | read-only | RssAnon entry -> peak MB | RssShmem peak MB "
        "| RssFile peak MB |",
        "|---|---|---:|---:|---:|---|---|---|---:|---:|---:|",
    ]
    for r in results:
        c = r["cfg"]
        if c["n_seeds"] == 1:
            continue
        for i, pr in enumerate(sorted(r["probes"], key=lambda p: p["seed"])):
            m = pr["matrix"]
            if "parts" in m:
                seen = "; ".join(f"{k}: {v}" for k, v in m["parts"].items())
            else:
                seen = f"{m['type']}, {m['backing']}" + (f" `{m['file']}`" if m["file"] else "")
            head = (
                f"| {c['estimator']} | {c['kind']} | {_mb(r['x_nbytes'])} "
                f"| {_mb(r['tracemalloc_peak'])} | {_mb(r['joblib_folder_peak'])} "
                if i == 0
                else "| | | | | "
            )
            lines.append(
                head + f"| {pr['pid']} / {pr['seed']} | {seen} | {not m['writeable']} "
                f"| {_mb(pr['entry'].get('RssAnon', 0))} -> {_mb(pr['peak'].get('RssAnon', 0))} "
                f"| {_mb(pr['peak'].get('RssShmem', 0))} | {_mb(pr['peak'].get('RssFile', 0))} |"
            )
    return "\n".join(lines + findings(results)) + "\n"


def findings(results) -> list[str]:
    """The conclusions, with this run's numbers."""
    one = [r for r in results if r["cfg"]["n_seeds"] == 1]
    par = [r for r in results if r["cfg"]["n_seeds"] != 1]
    out = ["", "## Findings", ""]
    if one:
        worst = max(one, key=lambda r: r["tracemalloc_peak"] / r["dense_nbytes"])
        per_row = max(r["tracemalloc_peak"] / r["shape"][0] for r in one)
        same = all(r["probes"] and r["probes"][0].get("callers_buffer") for r in one)
        out.append(
            "- **One seed: X is held once.** In every in-process configuration the solver's "
            "problem reads the caller's own buffer "
            f"({'same address for all' if same else 'NOT for all rows: see the table'}); "
            "nothing the fit allocates comes near the size of X: the largest tracemalloc peak "
            f"is {worst['tracemalloc_peak'] / worst['dense_nbytes']:.2f} x the dense size "
            f"({worst['cfg']['estimator']}, {worst['cfg']['kind']}, n = {worst['shape'][0]}), "
            f"at most {per_row:.0f} bytes per row whatever d: O(n) vectors (scores, "
            "residuals, the constraint weights `W` of shape (n, m), the margins and row "
            "weights) and minibatch blocks. CSR input is never densified (peak ~ the same "
            "O(n) vectors, a small fraction of the dense size; relative to a 10 %-dense CSR "
            "itself they are about its size). A read-only memory-mapped X is read in place: "
            "its private memory grows as for an in-memory X, its resident total by the pages "
            "read."
        )
    for r in par:
        pr = r["probes"]
        if not pr:
            continue
        grow = max(p["peak"].get("RssAnon", 0) - p["entry"].get("RssAnon", 0) for p in pr)
        entry = max(p["entry"].get("RssAnon", 0) for p in pr)
        shm = max(p["peak"].get("RssShmem", 0) for p in pr)
        filep = max(p["peak"].get("RssFile", 0) for p in pr)
        kind = r["cfg"]["kind"]
        m = pr[0]["matrix"]
        if "parts" in m:
            held = (
                "CSR ("
                + "; ".join(f"{k}: {v.split(' /')[0]}" for k, v in m["parts"].items())
                + ")"
            )
        else:
            held = f"{m['backing']}" + (f" of `{Path(m['file']).name}`" if m["file"] else "")
        shared = (
            f"their file-backed pages reach {_mb(filep)} MB (X's file through the page cache, "
            "plus the shared libraries)"
            if kind == "memmap"
            else f"their shared-memory pages reach {_mb(shm)} MB (the same pages in both)"
        )
        out.append(
            f"- **Four seeds, two workers, {kind} X ({_mb(r['x_nbytes'])} MB): shared, not "
            f"copied.** In each worker the problem holds X as a read-only {held}; the "
            f"workers' private memory is {_mb(entry)} MB at the solver's entry (the "
            "interpreter, numpy, scipy, sklearn) and grows by at most "
            f"{_mb(grow)} MB while it runs (its O(n) vectors); {shared}. joblib's memmapping "
            "folder peaked at "
            f"{_mb(r['joblib_folder_peak'])} MB"
            + (
                " (the other arrays of the problem: margins, row weights, W; X itself is "
                "passed as a reference to the caller's file)."
                if kind == "memmap"
                else " (X plus the problem's other arrays > 1 MB, written once per fit and "
                "shared by all four seeds)."
            )
        )
    if par:
        out += [
            "- **Why they share, precisely.** `BaseIALMClassifier._fit` "
            "(`sklearn_ialm/estimators/_base.py`) builds one problem object and calls "
            "`Parallel(n_jobs=self.n_jobs)(delayed(_solve)(problem, seed, solver_kwargs) for "
            "seed in seeds)`. With the default loky backend joblib pickles each task with its "
            "memmapping reducer (`max_nbytes='1M'`, `mmap_mode='r'`): every ndarray larger "
            "than 1 MB anywhere in the pickled object graph (X or the CSR's data and "
            "indices, `W`, `b`, `u`, `bu`) is written once per `Parallel` call to "
            "`/dev/shm/joblib_memmapping_folder_*` (an identity-keyed cache, so four tasks "
            "write it once) and every task receives a read-only `np.memmap` of that file; an "
            "array already backed by an `np.memmap` is passed as a reference to its own "
            "file. Arrays of at most 1 MB (e.g. the CSR's `indptr` below 262144 rows) are "
            "pickled by value into each task: negligible.",
            "- **What this costs.** With an in-memory X and `n_jobs > 1`, the machine holds X "
            "twice during the fit: the caller's array and joblib's dump in `/dev/shm` "
            "(tmpfs, i.e. RAM), and the dump is rewritten at every fit (each candidate and "
            "fold of a `GridSearchCV` with `n_jobs` on the estimator). Passing a "
            "memory-mapped X avoids the dump entirely. With `max_nbytes=None` "
            "(`joblib.parallel_config`) joblib would instead pickle X by value into every "
            "task: one private copy per worker-task. Nothing in `_base.py` needs to change "
            "for the 'no per-seed copy' requirement; the user guide could say that a "
            "memory-mapped X is the way to hold it exactly once with parallel seeds.",
            "- **A bound to keep in mind.** A minibatch block is `A[rows]`, a copy of "
            "`batch x d` (`_Rows.__call__` in `problems/linear.py`, one cached block for the "
            "objective and one for the constraints), and the adaptive minibatch may grow up "
            "to the number of rows (`max_batch_size=None` means n in `stoc_ialm`). On the "
            "anchor task it reaches 960 of 30000 rows; if it ever reached n, the two blocks "
            "would be two full copies of X.",
        ]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, nargs="+", default=[50_000, 200_000])
    ap.add_argument("--seeds-rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--max-passes", type=float, default=0.5)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--json", type=Path, default=None, help="also dump the raw measurements")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    command = "python -m benchmarks.memory " + " ".join(argv if argv is not None else sys.argv[1:])
    results = []
    with tempfile.TemporaryDirectory(prefix="ialm_mem_") as tmp:
        sizes = sorted(set(args.rows) | {args.seeds_rows})
        for n in sizes:
            path = Path(tmp) / str(n)
            make_data(n, args.features, path)
            configs = []
            if n in args.rows:
                for kind in ("dense", "csr", "memmap"):
                    configs.append(("fair", kind, 1, None))
                configs.append(("np", "dense", 1, None))
            if n == args.seeds_rows:
                for kind in ("dense", "csr", "memmap"):
                    configs.append(("fair", kind, 4, 2))
            for est, kind, seeds, jobs in configs:
                cfg = dict(
                    data=str(path),
                    estimator=est,
                    kind=kind,
                    n_seeds=seeds,
                    n_jobs=jobs,
                    max_passes=args.max_passes,
                )
                print(f"[memory] n={n} {est} {kind} seeds={seeds} jobs={jobs}", flush=True)
                results.append(run_child(cfg))
    args.out.mkdir(parents=True, exist_ok=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    text = report(results, command, args)
    (args.out / "memory.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
