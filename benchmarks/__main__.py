"""The benchmark suite's one entry point: every results file the README and the guide read.

Usage (from the root of a checkout, its ``sklearn_ialm`` imported)::

    python -m benchmarks list                   # the sections, their commands and files
    python -m benchmarks all                    # every section, as the committed files were
    python -m benchmarks speed kernel           # some sections
    python -m benchmarks all --quick            # small runs: does the code still run?
    python -m benchmarks all --out /tmp/bench   # write elsewhere (--quick: a new temp dir)

A section is a list of commands (``python -m benchmarks.<module> ARGS``), each run in a
process of its own under one BLAS thread (``OMP_NUM_THREADS=1``), with ``BENCHMARKS_RESULTS``
naming the folder the results files go to (``benchmarks/results/`` by default); its full
commands are those that wrote the committed files, its ``quick`` ones exercise the same
code on small data in a few minutes. ``all`` takes about a day on two cores (``paper`` and
``finish_ab`` the longest); ``all --quick`` about a quarter of an hour.

To add a figure the docs will quote: write it with ``benchmarks.common.write`` from a module
(or a new case of one), add its command here under a section (a new key of ``SECTIONS``),
and quote it from the pages with ``:result:`` (``doc/sphinxext/results_data.py``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import RESULTS, ROOT


@dataclass(frozen=True)
class Section:
    """Commands (each the arguments of ``python -m``) and the results files they write."""

    about: str
    commands: tuple[tuple[str, ...], ...]
    quick: tuple[tuple[str, ...], ...]
    writes: tuple[str, ...]


def _commands(*lines: str) -> tuple[tuple[str, ...], ...]:
    """Each line of arguments of ``python -m``, split at the spaces."""
    return tuple(tuple(line.split()) for line in lines)


def _paper(extra: str) -> tuple[tuple[str, ...], ...]:
    tasks = ("fairness --dataset a9a", "fairness --dataset bank", "np --dataset spambase")
    return _commands(*(f"benchmarks.paper {task} {extra}" for task in tasks))


SECTIONS = {
    "speed": Section(
        "the anchor task and binding bounds against LogisticRegression and the peers",
        _commands("benchmarks.speed"),
        _commands("benchmarks.speed --parts anchor --repeats 1"),
        ("speed.md", "speed_anchor.json", "speed_binding.json"),
    ),
    "finish_ab": Section(
        "the default fit (A) against no stochastic phase (B) and LogisticRegression (C)",
        _commands(
            "benchmarks.finish_ab --cases anchor,dense1e6,csr2e5,adult,multiclass --seeds 0,1,2"
        ),
        _commands("benchmarks.finish_ab --quick --cases anchor,multiclass"),
        ("finish_ab.md", "finish_ab.csv"),
    ),
    "multiclass_sweep": Section(
        "multi-class fairness on digits and wine across bounds, ties and draws (issue 49)",
        _commands("benchmarks.multiclass_sweep"),
        _commands("benchmarks.multiclass_sweep --names wine --draws 0"),
        ("multiclass_sweep.md",),
    ),
    "small_groups": Section(
        "binary fairness with groups of a few rows across bounds and kinds (issue 49)",
        _commands("benchmarks.small_groups"),
        _commands("benchmarks.small_groups --draws 2"),
        ("small_groups.md",),
    ),
    "bounds": Section(
        "do the bounds hold on the predictions, beside the baselines (README)",
        _commands("benchmarks.bounds --splits 8"),
        _commands("benchmarks.bounds --splits 1 --only np"),
        ("bounds.md", "bounds.csv"),
    ),
    "paper": Section(
        "the paper's Tables 1-2, and the readings of its settings",
        _paper("--seeds 10 --n-jobs 1") + _paper("--seeds 5 --variants --max-passes 400"),
        _commands("benchmarks.paper np --dataset spambase --seeds 1 --no-ipc"),
        tuple(
            f"{stem}{end}"
            for stem in ("fairness_a9a", "fairness_bank", "np_spambase")
            for end in (".md", "_runs.csv", "_variants.md")
        ),
    ),
    "robust": Section(
        "the data families judged against the constant model and the peers",
        _commands("benchmarks.robust"),
        _commands("benchmarks.robust small_table"),
        ("robust.md",),
    ),
    "penalty_schedule": Section(
        "FairLogisticClassifier's penalty schedule over seeds",
        _commands("benchmarks.robust --schedule --seeds 8"),
        _commands("benchmarks.robust --schedule --seeds 1"),
        ("penalty_schedule.md",),
    ),
    "np_small_data": Section(
        "when the Neyman-Pearson bound on the training rows carries to new rows",
        _commands("benchmarks.certificates --small-data"),
        _commands("benchmarks.certificates --small-data --reps 5"),
        ("np_small_data.md",),
    ),
    "kernel": Section(
        "the compiled PStorm block against the numpy path",
        _commands("benchmarks.kernel"),
        _commands("benchmarks.kernel --quick"),
        ("kernel.md",),
    ),
    "dask": Section(
        "fits on a two-worker Dask cluster against the in-memory fit",
        _commands(
            "benchmarks.dask --sizes 1e6 --dask-ml-minutes 30",
            "benchmarks.dask --sizes 1e7 --dask-ml-minutes 5",
            "benchmarks.dask --multiclass",
        ),
        _commands(
            "benchmarks.dask --sizes 2e4 --dask-ml-minutes 1",
            "benchmarks.dask --multiclass --n 2e4",
        ),
        ("dask.md", "dask.csv", "dask_multiclass.txt"),
    ),
    "stream": Section(
        "partial_fit on a stream of ten million rows; fit on a dask array in three passes",
        _commands(
            "benchmarks.stream --n 1e7 --batches 1e4,1e3 --passes 2 --fresh 1e6",
            "benchmarks.stream --n 1e6 --max-passes 3 --block-rows 2.5e5",
            "benchmarks.stream --n 1e7 --max-passes 3 --block-rows 2e6",
        ),
        _commands(
            "benchmarks.stream --n 1e5 --batches 1e4 --passes 1 --fresh 1e4",
            "benchmarks.stream --n 1e5 --max-passes 3 --block-rows 5e4",
        ),
        ("stream.md", "stream_figures.txt", "stream_dask.md"),
    ),
    "memory": Section(
        "memory a fit allocates beyond X against LogisticRegression (tracemalloc's peak)",
        _commands("benchmarks.memory"),
        _commands("benchmarks.memory --quick"),
        ("memory.md",),
    ),
    "invariants": Section(
        "the invariants of randomised families at length (hypothesis's long profile)",
        _commands("benchmarks.invariants --examples 150 --seed 2026"),
        _commands("benchmarks.invariants --examples 2"),
        ("invariants.md",),
    ),
    "certificates": Section(
        "certificates on new rows: coverage, price, real tables against the peers (guide)",
        (("benchmarks.certificates",),),
        (("benchmarks.certificates", "--quick"),),
        ("certificates_new_rows.md",),
    ),
}


def run(names: list[str], quick: bool, out: Path) -> int:
    """Run the sections ``names`` into ``out``; the number of commands that failed."""
    env = dict(os.environ, OMP_NUM_THREADS="1", BENCHMARKS_RESULTS=str(out))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    failed = 0
    for name in names:
        section = SECTIONS[name]
        for command in section.quick if quick else section.commands:
            print(f"== {name}: python -m {' '.join(command)}", flush=True)
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, env=env)
            failed += done.returncode != 0
            status = "ok" if done.returncode == 0 else f"FAILED ({done.returncode})"
            print(f"== {name}: {status} in {time.perf_counter() - start:.0f} s", flush=True)
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("sections", nargs="+", help="'all', 'list' or section names")
    parser.add_argument("--quick", action="store_true", help="small runs of the same code")
    parser.add_argument("--out", type=Path, default=None, help="folder of the results")
    args = parser.parse_args(argv)
    if args.sections == ["list"]:
        for name, section in SECTIONS.items():
            print(f"{name}: {section.about}")
            for command in section.commands:
                print(f"    python -m {' '.join(command)}")
            print(f"    writes: {', '.join(section.writes) or 'nothing (prints)'}")
        return 0
    names = list(SECTIONS) if args.sections == ["all"] else args.sections
    unknown = sorted(set(names) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {list(SECTIONS)}")
    out = args.out or (Path(tempfile.mkdtemp(prefix="bench_")) if args.quick else RESULTS)
    print(f"results go to {out}", flush=True)
    failed = run(names, args.quick, out)
    print(f"{failed} command(s) failed; results in {out}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
