"""The invariants of randomised families (issue 49 item 7) at length: the suite's
``tests/test_invariants.py`` under hypothesis's ``long`` profile, where CI draws a few
examples of each (``tests/_families.py`` says what the families vary and what holds).

Each invariant draws ``--examples`` families from ``--seed``; the same seed and code draw
the same families, after any failing ones that hypothesis's database (``.hypothesis/``)
kept from earlier runs. Writes ``invariants.md``: each invariant's outcome and seconds and, where
one failed, hypothesis's falsifying example (a ``Family(...)`` to paste into an
``@example``). Needs the test extra (pytest, hypothesis, fairlearn, dask).

Usage (from the root of a checkout, one thread)::

    OMP_NUM_THREADS=1 python -m benchmarks.invariants --examples 150 --seed 2026
    OMP_NUM_THREADS=1 python -m benchmarks.invariants --examples 2 --only monotone
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from benchmarks.common import ROOT, machine_facts, md_table, write

TESTS = "tests/test_invariants.py"


def run(examples: int, seed: int, only: str | None) -> list[dict]:
    """One pytest process over :data:`TESTS`: a row per test (its name, outcome, seconds and
    the falsifying example of a failure)."""
    env = dict(os.environ, HYPOTHESIS_PROFILE="long", HYPOTHESIS_MAX_EXAMPLES=str(examples))
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        command = [
            sys.executable, "-m", "pytest", TESTS, "-q", "-p", "no:randomly",
            "-p", "no:cacheprovider", f"--hypothesis-seed={seed}", f"--junitxml={report}",
        ] + (["-k", only] if only else [])  # fmt: skip
        subprocess.run(command, cwd=ROOT, env=env)
        return [_row(case) for case in ET.parse(report).getroot().iter("testcase")]


def _row(case) -> dict:
    """A junit ``testcase`` as a row of the table."""
    failed = case.find("failure")
    if failed is None:
        failed = case.find("error")
    skipped = case.find("skipped")
    outcome = "failed" if failed is not None else "skipped" if skipped is not None else "passed"
    if skipped is not None and "xfail" in (skipped.get("type") or "") + (
        skipped.get("message") or ""
    ):
        outcome = "xfailed"
    return {
        "invariant": case.get("name"),
        "outcome": outcome,
        "seconds": round(float(case.get("time") or 0.0), 1),
        "falsifying example": _falsifying(failed.text or "") if failed is not None else "",
    }


def _falsifying(text: str) -> str:
    """Hypothesis's failing call (``Falsifying example: ...`` or, in later versions,
    ``Failing test case: ...``) on one line, its comments dropped; else the error's last line.
    Where hypothesis found several distinct failures (an exception group, its lines drawn
    after ``|``), the first one's, with how many more."""
    lines = [line for line in map(_said, text.splitlines()) if line is not None]
    said = [re.sub(r"\s+#.*$", "", line.strip()) for line in lines]
    joined = " ".join(said)
    found = re.search(r"(?:Falsifying example|Failing test case): ", joined)
    if found is None:
        return text.strip().splitlines()[-1] if text.strip() else ""
    more = len(re.findall(r"(?:Falsifying example|Failing test case): ", joined)) - 1
    call, depth = joined[found.end() :], 0
    for i, char in enumerate(call):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ")" and depth == 0:
            call = call[: i + 1].replace("( ", "(").replace(", )", ")")
            break
    return call + (f" (and {more} more)" if more > 0 else "")


def _said(line: str) -> str | None:
    """A line of pytest's error text (``E`` first) or of an exception group's (``|``
    first, after spaces and ``+``), else None."""
    if line[:1] == "E":
        return line[1:]
    inner = line.lstrip(" +")
    return inner[1:] if inner[:1] == "|" else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=150, help="examples per invariant")
    parser.add_argument("--seed", type=int, default=2026, help="hypothesis's seed")
    parser.add_argument("--only", default=None, help="pytest's -k expression")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = run(args.examples, args.seed, args.only)
    minutes = (time.perf_counter() - start) / 60
    counts = {k: sum(r["outcome"] == k for r in rows) for k in ("passed", "failed", "xfailed")}
    only = f" --only {shlex.quote(args.only)}" if args.only else ""
    facts = machine_facts()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    lines = [
        "# Invariants on randomised families, at length (issue 49 item 7)",
        "",
        f"Command: `OMP_NUM_THREADS=1 python -m benchmarks.invariants --examples {args.examples} "
        f"--seed {args.seed}{only}`, at commit {commit}; {facts['cpus']} cores ({facts['cpu']}), "
        f"numpy {facts['numpy']}, scipy {facts['scipy']}, scikit-learn {facts['sklearn']}, load "
        f"{facts['load']:.1f} at the end; {minutes:.0f} minutes. Generated; do not edit.",
        "",
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['xfailed']} xfailed "
        "(a known failure of main, named in the test's marker). What each invariant asserts: "
        "`tests/test_invariants.py`'s docstring; the families: `tests/_families.py`.",
        "",
        *md_table(rows),
        "",
    ]
    write("invariants.md", "\n".join(lines))


if __name__ == "__main__":
    main()
