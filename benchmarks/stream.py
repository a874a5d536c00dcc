"""Data seen once: ``partial_fit`` on a stream, beside SGDClassifier and the in-memory fit
(issue 43).

The stream: 20 standard-normal features, ``y = 1[x.w + logistic noise > 0]``, a group (31 %
of the rows) a noisy threshold of the feature the label leans on most, so that demographic
parity binds. It is generated in chunks from their own seeds, never held in memory. For each
batch size, over the same batches, one process times the ``partial_fit`` calls alone of
SGDClassifier, ``FairLogisticClassifier(bound=0.02)`` and
``NeymanPearsonClassifier(max_fpr=0.05)``; the final models are scored on the rows seen and
on fresh rows, beside the in-memory fit of the first 1e6 rows. Writes ``stream.md`` and
``stream_figures.txt``.

``--max-passes`` instead fits a dask array of the stream's rows (blocks of ``--block-rows``,
the synchronous scheduler) with that budget, counting each block's reads and the computes,
and appends a row to ``stream_dask.md``.
"""

from __future__ import annotations

import argparse
import copy
import time
import warnings

import numpy as np
from sklearn.linear_model import SGDClassifier

from benchmarks.common import RESULTS, write
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

D, CHUNK, SEED = 20, 10_000, 0
BOUND, MAX_FPR = 0.02, 0.05
#: The fresh rows start at this chunk, past any stream the benchmark runs.
FRESH_CHUNK = 10**6
IN_MEMORY_ROWS = 1_000_000


def chunk(i):
    """Rows ``i * CHUNK`` to ``(i + 1) * CHUNK`` of the stream: ``(X, y, group)``."""
    w = np.random.default_rng(SEED).standard_normal(D) / np.sqrt(D) * 2
    j = int(np.argmax(np.abs(w)))
    rng = np.random.default_rng([SEED, i])
    X = rng.standard_normal((CHUNK, D))
    y = (X @ w + rng.logistic(size=CHUNK) > 0).astype(int)
    g = (np.sign(w[j]) * X[:, j] + rng.normal(size=CHUNK) > 0.7).astype(int)
    return X, y, g


def batches(n, size, first_chunk=0):
    """The first ``n`` rows from ``first_chunk`` on, in batches of ``size`` rows."""
    parts, held, i, done = [], 0, first_chunk, 0
    while done < n:
        while held < min(size, n - done):
            parts.append(chunk(i))
            held += CHUNK
            i += 1
        X, y, g = (np.concatenate(p) for p in zip(*parts, strict=True))
        start = 0
        while held - start >= size or (done + held - start >= n and start < held):
            take = min(size, n - done)
            yield X[start : start + take], y[start : start + take], g[start : start + take]
            start, done = start + take, done + take
            if done >= n:
                return
        parts, held = [(X[start:], y[start:], g[start:])], held - start


def _gap_counts(pred, y, g):
    """Per group: rows and positive predictions (demographic parity reads these)."""
    return np.array([[np.sum(g == k), np.sum(pred[g == k])] for k in (0, 1)], dtype=float)


def score_rows(models, n, first_chunk=0):
    """Each model's gap, accuracy, FPR and FNR over ``n`` rows, generated again."""
    out = {name: dict(counts=np.zeros((2, 2)), right=0, fp=0, neg=0, fn=0, pos=0)
           for name in models}  # fmt: skip
    for X, y, g in batches(n, 100_000, first_chunk):
        for name, model in models.items():
            pred = model.predict(X)
            o = out[name]
            o["counts"] += _gap_counts(pred, y, g)
            o["right"] += int(np.sum(pred == y))
            o["fp"] += int(np.sum(pred[y == 0]))
            o["neg"] += int(np.sum(y == 0))
            o["fn"] += int(np.sum(1 - pred[y == 1]))
            o["pos"] += int(np.sum(y == 1))
    return {
        name: dict(gap=float(abs(np.subtract(*o["counts"][:, 1] / o["counts"][:, 0]))),
                   accuracy=o["right"] / n, fpr=o["fp"] / o["neg"], fnr=o["fn"] / o["pos"])
        for name, o in out.items()
    }  # fmt: skip


def _warm_up():
    """One call of each estimator, so that the compiled kernels load outside the timing."""
    X, y, g = chunk(FRESH_CHUNK + 10**5)
    FairLogisticClassifier(bound=BOUND).partial_fit(
        X, y, classes=[0, 1], groups=[0, 1], sensitive_features=g
    )
    NeymanPearsonClassifier(max_fpr=MAX_FPR).partial_fit(X, y, classes=[0, 1])
    SGDClassifier(loss="log_loss").partial_fit(X, y, classes=[0, 1])


def stream(n, size, passes):
    """The three streams over the same batches; CPU seconds and the models after each pass."""
    sgd = SGDClassifier(loss="log_loss", random_state=0)
    fair = FairLogisticClassifier(bound=BOUND, random_state=0)
    npc = NeymanPearsonClassifier(max_fpr=MAX_FPR, random_state=0)
    cpu = dict(sgd=0.0, fair=0.0, np=0.0)
    after = []
    for _ in range(passes):
        for X, y, g in batches(n, size):
            t = time.process_time()
            sgd.partial_fit(X, y, classes=[0, 1])
            t1 = time.process_time()
            fair.partial_fit(X, y, classes=[0, 1], groups=[0, 1], sensitive_features=g)
            t2 = time.process_time()
            npc.partial_fit(X, y, classes=[0, 1])
            t3 = time.process_time()
            cpu["sgd"] += t1 - t
            cpu["fair"] += t2 - t1
            cpu["np"] += t3 - t2
        after.append(dict(
            fair=copy.deepcopy(fair), np=copy.deepcopy(npc), sgd=copy.deepcopy(sgd), cpu=dict(cpu),
            running_gap=float(fair.running_constraint_values_[0]),
            running_fpr=float(npc.running_constraint_values_[0]),
        ))  # fmt: skip
    return after


def in_memory():
    X, y, g = next(batches(IN_MEMORY_ROWS, IN_MEMORY_ROWS))
    t = time.process_time()
    fair = FairLogisticClassifier(bound=BOUND, random_state=0).fit(X, y, sensitive_features=g)
    t_fair = time.process_time() - t
    t = time.process_time()
    npc = NeymanPearsonClassifier(max_fpr=MAX_FPR, random_state=0).fit(X, y)
    t_np = time.process_time() - t
    return dict(fair=fair, np=npc, cpu=dict(fair=t_fair, np=t_np))


def _e(count):
    """``1e6`` for 1000000 (the command line's spelling)."""
    exponent = int(np.log10(count))
    return f"1e{exponent}" if count == 10**exponent else str(count)


def _fmt(x, digits=4):
    return f"{x:.{digits}f}"


def report(n, sizes, passes, n_fresh, results, memory, seconds):
    lines = [
        "# Data seen once: partial_fit on a stream",
        "",
        f"Command: `OMP_NUM_THREADS=1 python -m benchmarks.stream --n {_e(n)} --batches "
        f"{','.join(_e(s) for s in sizes)} --passes {passes} --fresh {_e(n_fresh)}` "
        "(module docstring: the stream and what is timed). Demographic parity bound "
        f"{BOUND}, Neyman-Pearson max_fpr {MAX_FPR}; fresh rows: {_e(n_fresh)} rows the "
        f"stream never showed; in-memory fits on the first {_e(IN_MEMORY_ROWS)} rows of the "
        "stream. CPU ratios are measured in one process over the same batches.",
        "",
        "## Fairness: FairLogisticClassifier(bound=0.02)",
        "",
        "| batch | pass | running gap | gap on rows seen | gap on fresh rows | fresh accuracy "
        "| in-memory fresh accuracy (gap) | SGD fresh accuracy (gap) | CPU s | CPU / SGD |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    mem = memory["scores"]
    for size in sizes:
        for k, res in enumerate(results[size]):
            seen, fresh = res["seen"]["fair"], res["fresh"]["fair"]
            sgd = res["fresh"]["sgd"]
            lines.append(
                f"| {size:g} | {k + 1} | {_fmt(res['running_gap'])} | {_fmt(seen['gap'])} | "
                f"{_fmt(fresh['gap'])} | {_fmt(fresh['accuracy'])} | "
                f"{_fmt(mem['fair']['accuracy'])} ({_fmt(mem['fair']['gap'])}) | "
                f"{_fmt(sgd['accuracy'])} ({_fmt(sgd['gap'])}) | {res['cpu']['fair']:.2f} | "
                f"{res['cpu']['fair'] / res['cpu']['sgd']:.2f} |"
            )
    lines += [
        "",
        "## Neyman-Pearson: NeymanPearsonClassifier(max_fpr=0.05)",
        "",
        "| batch | pass | running FPR | fresh FPR | fresh FNR | in-memory fresh FPR / FNR "
        "| CPU s | CPU / SGD |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        for k, res in enumerate(results[size]):
            fresh = res["fresh"]["np"]
            lines.append(
                f"| {size:g} | {k + 1} | {_fmt(res['running_fpr'])} | {_fmt(fresh['fpr'])} | "
                f"{_fmt(fresh['fnr'])} | {_fmt(mem['np']['fpr'])} / {_fmt(mem['np']['fnr'])} | "
                f"{res['cpu']['np']:.2f} | {res['cpu']['np'] / res['cpu']['sgd']:.2f} |"
            )
    lines += [
        "",
        "SGDClassifier CPU seconds per pass: "
        + ", ".join(f"batches of {size:g}: {results[size][0]['cpu']['sgd']:.2f}" for size in sizes)
        + f". In-memory fits on {_e(IN_MEMORY_ROWS)} rows: FairLogisticClassifier "
        f"{memory['cpu']['fair']:.1f} s, NeymanPearsonClassifier {memory['cpu']['np']:.1f} s.",
        "",
        "The running gap (FPR) counts each row as the model of its time predicted it, before "
        "learning from it; the gap on the rows seen and on fresh rows is the final model's. "
        "CPU seconds are cumulative over the passes.",
        "",
        f"Total time {seconds / 60:.1f} min.",
        "",
    ]
    return "\n".join(lines)


def figures(n, sizes, n_fresh, results, memory):
    """The user guide's summary (``doc/user_guide/streams.rst`` includes it), one pass."""
    mem = memory["scores"]
    lines = [
        f"One pass over {_e(n)} rows, the final models scored on {_e(n_fresh)} fresh rows, "
        "CPU seconds of the calls in one process:",
        "",
    ]
    for size in sizes:
        res = results[size][0]
        fair, npf = res["fresh"]["fair"], res["fresh"]["np"]
        cpu = res["cpu"]
        lines += [
            f"* batches of {size:,} rows: demographic parity {BOUND} -- running gap "
            f"{res['running_gap']:.4f}, the final model's gap {res['seen']['fair']['gap']:.4f} "
            f"on the rows seen and {fair['gap']:.4f} on fresh rows, accuracy "
            f"{fair['accuracy']:.4f} (in memory {mem['fair']['accuracy']:.4f}), CPU "
            f"{cpu['fair'] / cpu['sgd']:.2f} times SGDClassifier's; Neyman-Pearson "
            f"max_fpr {MAX_FPR} -- running FPR {res['running_fpr']:.4f}, fresh FPR "
            f"{npf['fpr']:.4f}, FNR {npf['fnr']:.4f} (in memory {mem['np']['fnr']:.4f}), CPU "
            f"{cpu['np'] / cpu['sgd']:.2f} times SGDClassifier's.",
        ]
    return "\n".join(lines) + "\n"


class _Reads:
    """Counts the reads of each block of X (tasks of a map_blocks over it)."""

    def __init__(self, n_blocks):
        self.reads = np.zeros(n_blocks, dtype=int)

    def __call__(self, block, block_info=None):
        if block_info is not None and block.shape[0]:
            self.reads[block_info[0]["chunk-location"][0]] += 1
        return block


def dask_fit(n, max_passes, block_rows, out):
    """``fit`` with ``max_passes`` on a dask array of the first ``n`` rows (module docstring)."""
    import dask
    import dask.array as da

    X, y, g = next(batches(n, n))
    reads = _Reads(-(-n // block_rows))
    Xd = da.from_array(X, chunks=(block_rows, D)).map_blocks(reads, dtype=X.dtype)
    yd, gd = (da.from_array(v, chunks=block_rows) for v in (y, g))
    clf = FairLogisticClassifier(bound=BOUND, max_passes=max_passes, random_state=0)
    counted = [0]
    real = dask.compute

    def compute(*args, **kwargs):
        counted[0] += 1
        return real(*args, **kwargs)

    t = time.process_time()
    with dask.config.set(scheduler="sync"), warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        dask.compute = compute  # every compute of the fit goes through dask.compute
        try:
            clf.fit(Xd, yd, sensitive_features=gd)
        finally:
            dask.compute = real
    seconds = time.process_time() - t
    m = min(n, IN_MEMORY_ROWS)
    ref = FairLogisticClassifier(bound=BOUND, random_state=0).fit(
        X[:m], y[:m], sensitive_features=g[:m]
    )
    seen = score_rows({"stream": clf, "full": ref}, n)
    fresh = score_rows({"stream": clf, "full": ref}, 10**6, FRESH_CHUNK)
    row = {
        "rows": f"{n:.0e}", "max_passes": max_passes, "block rows": f"{block_rows:g}",
        "passes over X": int(reads.reads.max()), "computes": counted[0],
        "n_computes_": clf.n_computes_, "training gap": f"{clf.hard_constraint_values_[0]:.4f}"
        if max_passes >= 2 else "-", "running gap": f"{clf.running_constraint_values_[0]:.4f}",
        "bound_met_": clf.bound_met_, "converged_": clf.converged_,
        "accuracy": f"{seen['stream']['accuracy']:.4f}",
        "full fit rows": f"{m:.0e}", "full fit accuracy": f"{seen['full']['accuracy']:.4f}",
        "full fit gap": f"{seen['full']['gap']:.4f}",
        "fresh gap": f"{fresh['stream']['gap']:.4f}",
        "fresh accuracy": f"{fresh['stream']['accuracy']:.4f}",
        "full fit fresh accuracy": f"{fresh['full']['accuracy']:.4f}",
        "CPU s": f"{seconds:.1f}",
    }  # fmt: skip
    warned = [str(w.message) for w in said if "max_passes" in str(w.message)]
    header = (
        "# fit on dask input with max_passes <= 3: X streamed once, then measured\n\n"
        "Command: `python -m benchmarks.stream --n N --max-passes P --block-rows B` (module "
        f"docstring). Demographic parity, bound {BOUND}, the stream's rows in a dask array "
        "(synchronous scheduler); accuracy and the full fit's gap on the training rows; the "
        "full fit is the in-memory fit of (at most) the first 1e6 of them; fresh: 1e6 new "
        "rows.\n\n"
    )
    keys = list(row)
    if not out.exists():
        out.write_text(header + "| " + " | ".join(keys) + " |\n|" + "---|" * len(keys) + "\n")
    with out.open("a") as f:
        f.write("| " + " | ".join(str(row[k]) for k in keys) + " |\n")
    print(row, warned, sep="\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7, help="rows of the stream")
    parser.add_argument("--batches", default="1e4,1e3", help="batch sizes, comma-separated")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--fresh", type=float, default=1e6, help="fresh rows to score on")
    parser.add_argument("--max-passes", type=float, default=None,
                        help="fit on a dask array with this budget instead (<= 3)")  # fmt: skip
    parser.add_argument("--block-rows", type=float, default=1e6)
    args = parser.parse_args(argv)
    if args.max_passes is not None:
        warnings.simplefilter("ignore")
        return dask_fit(int(args.n), args.max_passes, int(args.block_rows),
                        RESULTS / "stream_dask.md")  # fmt: skip
    n, n_fresh = int(args.n), int(args.fresh)
    sizes = [int(float(s)) for s in args.batches.split(",")]
    start = time.time()
    warnings.simplefilter("ignore")
    memory = in_memory()
    memory["scores"] = score_rows({"fair": memory["fair"], "np": memory["np"]}, n_fresh,
                                  FRESH_CHUNK)  # fmt: skip
    _warm_up()
    results = {}
    for size in sizes:
        results[size] = stream(n, size, args.passes)
        for res in results[size]:
            models = {key: res[key] for key in ("fair", "np", "sgd")}
            res["seen"] = score_rows({"fair": models["fair"]}, n)
            res["fresh"] = score_rows(models, n_fresh, FRESH_CHUNK)
            print(size, res["running_gap"], res["seen"]["fair"], res["fresh"], res["cpu"],
                  flush=True)  # fmt: skip
    write("stream.md", report(n, sizes, args.passes, n_fresh, results, memory,
                              time.time() - start))  # fmt: skip
    write("stream_figures.txt", figures(n, sizes, n_fresh, results, memory))


if __name__ == "__main__":
    main()
