"""Figures of ``benchmarks/results/`` by key: the plain-Python half of the ``results`` Sphinx
extension, which ``.ci/check_figures.py`` and the test suite use without Sphinx.

A figure quoted in the documentation is read from the results file that a benchmark wrote,
when the pages are built, so that the text says what the file says. A key names the file
(relative to ``benchmarks/results/``), optionally a section of a Markdown file (``#`` and the
start of its heading), then either a cell of a table or a regular expression::

    dask.csv | n=10000000; fit=fair DP 0.05; where=dask | seconds
    dask.csv | n=10000000; fit=fair DP 0.05; where=dask | seconds | :.0f
    np_spambase.md#Stoc-iALM, default settings | re:#data median ([0-9.]+)

Tables are the rows of a CSV file, the pipe tables of a Markdown file (or of its section)
and the ``rows`` list of a JSON file. The filter ``column=value; ...`` must match exactly
one row that has the column: a file that gains a second such row, or loses the row, fails
the lookup instead of quoting another figure. A regular expression must match exactly
once; the value is its first group (the whole match without one). The value is the file's
text as written, or formatted by the last part when that starts with ``:``
(``format(float(value), spec)``). A key may wrap over lines (a line break reads as a space)
and holds no backslash, which reStructuredText would take for an escape.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

#: Where the benchmarks write their results.
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


class ResultError(ValueError):
    """A key whose file, section, row, column or value is missing, or not unique."""


def _read(name: str, results: Path) -> str:
    path = (results / name).resolve()
    if results.resolve() not in path.parents:
        raise ResultError(f"{name!r} is not a file of {results}")
    if not path.is_file():
        raise ResultError(f"no results file {name!r} in {results}")
    return path.read_text(encoding="utf-8")


def _section(text: str, name: str, heading: str) -> str:
    """The lines under the one heading that starts with ``heading``, down to the next
    heading of the same level or above (headings inside fenced code are not headings)."""
    fenced, headings = False, []  # (line index, level, title)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match:
            headings.append((i, len(match.group(1)), match.group(2)))
    found = [h for h in headings if h[2].startswith(heading)]
    if len(found) != 1:
        raise ResultError(f"{name}: {len(found)} headings start with {heading!r}, not one")
    start, level, _ = found[0]
    end = next((i for i, lv, _ in headings if i > start and lv <= level), len(lines))
    return "\n".join(lines[start + 1 : end])


def _cells(line: str) -> list[str]:
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") and not line.endswith("\\|") else line
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line)]


def _markdown_rows(text: str) -> list[dict]:
    """The rows of every pipe table in ``text``, each a dict of its table's header."""
    rows, header, lines = [], None, text.splitlines()
    for i, line in enumerate(lines):
        if not line.lstrip().startswith("|"):
            header = None
        elif header is None:
            if i + 1 < len(lines) and _SEPARATOR.match(lines[i + 1].strip()):
                header = _cells(line)
        elif not _SEPARATOR.match(line.strip()):
            rows.append(dict(zip(header, _cells(line), strict=False)))
    return rows


def _split_name(spec: str) -> tuple[str, str | None]:
    name, _, heading = spec.strip().partition("#")
    return name.strip(), (heading.strip() or None)


def path_of(spec: str, results: Path = RESULTS) -> Path:
    """The file that ``FILE`` or ``FILE#Section`` reads."""
    return results / _split_name(spec)[0]


def source_text(spec: str, results: Path = RESULTS) -> str:
    """The text of ``FILE`` or ``FILE#Section``."""
    name, heading = _split_name(spec)
    text = _read(name, results)
    if heading is not None:
        if not name.endswith(".md"):
            raise ResultError(f"{spec}: only Markdown files have sections")
        text = _section(text, name, heading)
    return text


def rows(spec: str, results: Path = RESULTS) -> list[dict]:
    """Every table row of ``FILE`` or ``FILE#Section``, as dicts of column to value."""
    name, _ = _split_name(spec)
    text = source_text(spec, results)
    if name.endswith(".csv"):
        return list(csv.DictReader(text.splitlines()))
    if name.endswith(".json"):
        data = json.loads(text)
        found = data.get("rows") if isinstance(data, dict) else data
        if not isinstance(found, list) or not all(isinstance(r, dict) for r in found):
            raise ResultError(f"{name}: no list of rows (a 'rows' list of objects)")
        return found
    if name.endswith(".md"):
        return _markdown_rows(text)
    raise ResultError(f"{name}: tables are read from .csv, .md and .json files")


def _same(cell, wanted: str) -> bool:
    if str(cell) == wanted:
        return True
    try:
        return float(cell) == float(wanted)
    except (TypeError, ValueError):
        return False


def parse_filter(text: str) -> dict[str, str]:
    """``"a=1; b=x y"`` as ``{"a": "1", "b": "x y"}`` (an empty text: no condition)."""
    conditions = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        column, sep, value = part.partition("=")
        if not sep:
            raise ResultError(f"row filter {part!r}: write column=value")
        conditions[column.strip()] = value.strip()
    return conditions


def select(table: list[dict], conditions: dict[str, str], where: str) -> list[dict]:
    """The rows of ``table`` that match every condition (at least one, or an error)."""
    found = [
        row
        for row in table
        if all(col in row and _same(row[col], value) for col, value in conditions.items())
    ]
    if not found:
        raise ResultError(f"{where}: no row with {conditions}")
    return found


def _format(value, spec: str | None, key: str) -> str:
    if spec is None:
        return str(value)
    try:
        return format(float(value), spec)
    except (TypeError, ValueError) as exc:
        raise ResultError(f"{key}: cannot format {value!r} with {spec!r}: {exc}") from None


def lookup(key: str, results: Path = RESULTS) -> str:
    """The figure that ``key`` names (see the module docstring), as text.

    Parameters
    ----------
    key : str
        ``FILE[#Section] | column=value; ... | COLUMN [| :spec]`` or
        ``FILE[#Section] | re:PATTERN [| :spec]``.
    results : Path
        The folder of the results files.

    Returns
    -------
    str
        The value, as the file writes it or formatted by ``spec``.

    Raises
    ------
    ResultError
        When the file, the section, the row, the column or the match is missing, or when
        more than one row or match fits.
    """
    if "\\" in key:
        raise ResultError(
            f"{key}: no backslash in a key (reStructuredText reads it as an escape): "
            "write [0-9] for \\d, [.] for \\."
        )
    # A key may wrap over lines in a page, as the text of a role does.
    parts = [p.strip() for p in re.sub(r"\s*\n\s*", " ", key).split(" | ")]
    spec = parts.pop()[1:] if len(parts) > 2 and parts[-1].startswith(":") else None
    if len(parts) == 2 and parts[1].startswith("re:"):
        text = source_text(parts[0], results)
        matches = list(re.finditer(parts[1][3:], text))
        if len(matches) != 1:
            raise ResultError(f"{key}: the pattern matches {len(matches)} times, not once")
        match = matches[0]
        return _format(match.group(1) if match.re.groups else match.group(0), spec, key)
    if len(parts) != 3:
        raise ResultError(f"{key!r}: write FILE | column=value; ... | COLUMN [| :spec]")
    source, conditions, column = parts
    table = [row for row in rows(source, results) if column in row]
    if not table:
        raise ResultError(f"{key}: no table of {source} has a column {column!r}")
    found = select(table, parse_filter(conditions), key)
    if len(found) > 1:
        raise ResultError(f"{key}: {len(found)} rows match; add a condition")
    return _format(found[0][column], spec, key)


def table(
    source: str,
    conditions: str = "",
    columns: list[str] | None = None,
    header: list[str] | None = None,
    results: Path = RESULTS,
) -> tuple[list[str], list[list[str]]]:
    """The cells of the rows of ``source`` that match ``conditions``, in ``columns``.

    Parameters
    ----------
    source : str
        ``FILE`` or ``FILE#Section``.
    conditions : str
        A row filter, ``column=value; ...`` (empty: every row).
    columns : list of str, optional
        The columns, in order; only the tables that have them are read (default: every
        table, and the first matching row's columns).
    header : list of str, optional
        A label for each column (default: the column names).
    results : Path
        The folder of the results files.

    Returns
    -------
    labels : list of str
        The header of the table.
    cells : list of list of str
        One list of cells per row.
    """
    every = rows(source, results)
    if columns:  # the tables of the file that have these columns
        every = [row for row in every if all(c in row for c in columns)]
        if not every:
            raise ResultError(f"{source}: no table has the columns {columns}")
    found = select(every, parse_filter(conditions), source)
    columns = list(columns or found[0])
    for row in found:
        missing = [c for c in columns if c not in row]
        if missing:
            raise ResultError(f"{source}: no column {missing} in a row of {conditions!r}")
    if header and len(header) != len(columns):
        raise ResultError(f"{source}: {len(header)} header labels for {len(columns)} columns")
    return list(header or columns), [[str(row[c]) for c in columns] for row in found]
