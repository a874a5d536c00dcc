"""Every figure the README and the documentation quote is read from ``benchmarks/results/``
(``.ci/check_figures.py``, run by ``.ci/run`` before the tests; the ``:result:`` role and the
``result-table`` directive of ``doc/sphinxext/bench_figures.py`` read the files in the build).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "doc" / "sphinxext"))
import results_data  # noqa: E402
from results_data import ResultError, lookup, table  # noqa: E402

_spec = importlib.util.spec_from_file_location("check_figures", ROOT / ".ci" / "check_figures.py")
check_figures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_figures)

RESULTS_MD = """\
# A benchmark

Command: `python -m benchmarks.thing`. Machine: 2 CPUs; Python 3.11.

## First part

| case | method | CPU s | passes |
|---|---|---:|---:|
| small | ours | 0.25 | 12.5 |
| small | theirs | 1.50 | - |

Median passes 12.5; paper: 3.87.

```
## not a heading, inside code
| case | method | CPU s | passes |
```

## Second part

| case | method | CPU s | passes |
|---|---|---:|---:|
| small | ours | 0.75 | 40.1 |

Median passes 40.1.
"""


@pytest.fixture
def tree(tmp_path):
    """A checkout with one page, one results file of each kind and no allowed figure."""
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "bench.md").write_text(RESULTS_MD)
    (results / "runs.csv").write_text("n,fit,seconds\n1000,fair,8.7\n10000,fair,144.62\n")
    rows = [{"task": "np", "cpu": 0.123456}, {"task": "fair", "cpu": 2.5}]
    (results / "speed.json").write_text(json.dumps({"rows": rows, "facts": {"cpus": 2}}))
    (tmp_path / "doc").mkdir()
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "figures_allowed.txt").write_text("# file | figure | reason\n")
    (tmp_path / "README.md").write_text("# Project\n\nNo figure here.\n")
    return tmp_path


def _check(tree: Path, page: str) -> list[str]:
    (tree / "doc" / "page.rst").write_text(page)
    return check_figures.check(tree, tree / ".ci" / "figures_allowed.txt")


def test_todays_tree_passes():
    assert check_figures.check() == []


def test_a_stale_figure_in_todays_readme_fails(tmp_path):
    # The README of issue 40 quoted 249 s for the 1e7-row Dask fit; dask.md said 144.6 s.
    for name in ("README.md", ".ci/figures_allowed.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    built = shutil.ignore_patterns(*check_figures.NOT_PAGES)  # a built checkout has them
    shutil.copytree(ROOT / "doc", tmp_path / "doc", ignore=built)
    shutil.copytree(ROOT / "benchmarks" / "results", tmp_path / "benchmarks" / "results")
    assert check_figures.check(tmp_path, tmp_path / ".ci" / "figures_allowed.txt") == []
    readme = tmp_path / "README.md"
    lines = readme.read_text().splitlines()
    lines.insert(3, "On 1e7 rows the Dask fairness fit took 249 s.")
    readme.write_text("\n".join(lines) + "\n")
    problems = check_figures.check(tmp_path, tmp_path / ".ci" / "figures_allowed.txt")
    assert len(problems) == 1
    assert problems[0].startswith("README.md:4: '249 s' is typed by hand")


@pytest.mark.parametrize(
    "figure", ["0.32 s", "5.8x", "15-34x", "40.4 passes", "6 and 5 passes", "1.6 GB", "3 times"]
)
def test_a_figure_typed_into_the_prose_fails(tree, figure):
    problems = _check(tree, f"Title\n=====\n\nThe fit took\n{figure} on the anchor task.\n")
    assert len(problems) == 1
    assert problems[0].startswith(f"doc/page.rst:5: {figure!r} is typed by hand")


def test_figures_in_code_literals_and_roles_pass(tree):
    page = """\
Title
=====

.. code-block:: python

    clf.fit(X)  # 0.32 s

.. live-code::

    print("5.8x")

Printed: :live:`{t:.2f}` s, read: :result:`runs.csv | n=1000; fit=fair | seconds` s,
a setting ``max_passes=300`` and `tol=0.001`, and a figure's options:

.. image:: plot.png
   :width: 100%
   :alt: a plot that took
         12 s

A literal block::

    took 40.4 passes

>>> print("1.6 GB")
1.6 GB
"""
    assert _check(tree, page) == []


def test_an_allowed_figure_passes_and_a_stale_allowance_fails(tree):
    allowed = tree / ".ci" / "figures_allowed.txt"
    allowed.write_text("doc/page.rst | 64 MiB | a constant of the code\n")
    assert _check(tree, "The sample holds at most 64 MiB.\n") == []
    problems = _check(tree, "The sample holds at most a few rows.\n")
    assert problems == ["figures_allowed.txt: doc/page.rst | 64 MiB: no longer in the text"]


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("gone.csv | n=1000 | seconds", "no results file 'gone.csv'"),
        ("runs.csv | n=99 | seconds", "no row with {'n': '99'}"),
        ("runs.csv | fit=fair | seconds", "2 rows match"),
        ("runs.csv | n=1000 | minutes", "no table of runs.csv has a column 'minutes'"),
        ("bench.md#Third part | re:passes ([0-9.]+)", "0 headings start with 'Third part'"),
        ("bench.md | re:Median passes ([0-9.]+)", "matches 2 times, not once"),
        ("runs.csv | n=1000 | fit | :.1f", "cannot format 'fair'"),
    ],
)
def test_a_key_that_does_not_find_its_figure_fails(tree, key, message):
    problems = _check(tree, f"Title\n=====\n\nIt took :result:`{key}` seconds.\n")
    assert len(problems) == 1
    assert problems[0].startswith("doc/page.rst:4: ") and message in problems[0], problems


def test_a_result_table_that_does_not_find_its_rows_fails(tree):
    page = """\
.. result-table:: bench.md#First part
   :rows: method=ours
   :columns: case; CPU s; wall s

.. result-table:: runs.csv
   :columns: n; seconds
   :header: rows
"""
    problems = _check(tree, page)
    assert len(problems) == 2
    assert problems[0].startswith("doc/page.rst:1: ") and "'wall s'" in problems[0]
    assert problems[1].startswith("doc/page.rst:5: ") and "1 header labels" in problems[1]


def test_lookup_reads_each_kind_of_file(tree):
    results = tree / "benchmarks" / "results"
    # A Markdown section's table; the same row of another section is another figure.
    assert lookup("bench.md#First part | method=ours | CPU s", results) == "0.25"
    assert lookup("bench.md#Second part | method=ours | CPU s", results) == "0.75"
    assert lookup("bench.md#First part | method=theirs | passes", results) == "-"
    assert lookup("bench.md | re:Machine: ([^;]*)", results) == "2 CPUs"
    assert lookup("bench.md#Second part | re:Median passes ([0-9.]*[0-9])", results) == "40.1"
    # CSV: numbers match numerically; a key may wrap over lines as a role does.
    assert lookup("runs.csv | n=1e4; fit=fair\n   | seconds | :.0f", results) == "145"
    # JSON rows, formatted.
    assert lookup("speed.json | task=np | cpu | :.3f", results) == "0.123"
    assert lookup("speed.json | task=fair | cpu", results) == "2.5"
    labels, cells = table(
        "bench.md", "method=ours", ["case", "passes"], ["data", "passes"], results
    )
    assert labels == ["data", "passes"] and cells == [["small", "12.5"], ["small", "40.1"]]


def test_lookup_refuses_keys_it_cannot_read(tree):
    results = tree / "benchmarks" / "results"
    with pytest.raises(ResultError, match="no backslash"):
        lookup(r"bench.md | re:passes (\d+)", results)
    with pytest.raises(ResultError, match="is not a file of"):
        lookup("../../README.md | a=1 | b", results)
    with pytest.raises(ResultError, match="write FILE"):
        lookup("runs.csv | seconds", results)
    # A section must be one: "Run 1" would also name "Run 10".
    (results / "runs.md").write_text("## Run 1\n\nx 1\n\n## Run 10\n\nx 2\n")
    assert lookup("runs.md#Run 10 | re:x ([0-9])", results) == "2"
    with pytest.raises(ResultError, match="2 headings start with 'Run 1', not one"):
        lookup("runs.md#Run 1 | re:x ([0-9])", results)


def test_a_quoted_figure_is_the_files_own_text():
    # The role quotes the results file as it stands: the same cell as a plain read of it.
    line = next(
        line
        for line in (results_data.RESULTS / "dask.csv").read_text().splitlines()
        if line.startswith("10000000,fair DP 0.05,dask,")
    )
    seconds = line.split(",")[4]
    key = "dask.csv | n=10000000; fit=fair DP 0.05; where=dask | seconds"
    assert lookup(key) == seconds


README_BLOCK = """\
# Project

<!-- result-table: bench.md#First part | method=ours | case; CPU s; passes | case; s; passes -->
{table}
<!-- /result-table -->
"""


def test_a_readme_result_block_is_the_table_of_its_file(tree):
    """A README block quoting a results file: the copy passes (its figures are not typed by
    hand), a stale copy fails, ``--write`` renders it anew from the file."""
    fresh = "| case | s | passes |\n|---|---|---|\n| small | 0.25 | 12.5 |"
    readme = tree / "README.md"
    readme.write_text(README_BLOCK.format(table=fresh))
    assert _check(tree, "No figure.\n") == []
    readme.write_text(README_BLOCK.format(table=fresh.replace("0.25", "0.20")))
    problems = _check(tree, "No figure.\n")
    assert len(problems) == 1 and "differs from its file" in problems[0]
    check_figures.write(tree)
    assert readme.read_text() == README_BLOCK.format(table=fresh)
    assert _check(tree, "No figure.\n") == []


def test_a_readme_result_block_without_its_table_or_end_fails(tree):
    readme = tree / "README.md"
    readme.write_text(README_BLOCK.format(table="").replace("method=ours", "method=nobody"))
    assert "no row with" in " ".join(_check(tree, "No figure.\n"))
    readme.write_text(README_BLOCK.format(table="").replace("<!-- /result-table -->", ""))
    assert "no <!-- /result-table -->" in " ".join(_check(tree, "No figure.\n"))
