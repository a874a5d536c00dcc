"""Every figure of the README and the documentation pages is read from a results file.

The pages quote a benchmark's figures with the ``:result:`` role and the ``result-table``
directive (``doc/sphinxext/bench_figures.py``), which read ``benchmarks/results/`` when the
pages are built. This check, run by ``.ci/run`` before the tests (standard library only),
fails when

(a) a ``:result:`` key or a ``result-table`` names a file, section, row, column or value
    that is not there (or more than one row that fits), and when
(b) the prose of ``README.md`` or of a page under ``doc/`` holds a figure typed by hand:
    a number with a unit of time, speed, size or cost (``0.32 s``, ``5.8x``, ``40.4
    passes``, ``1.6 GB``, ``3 times``, ``55 %``) or with three decimals or more
    (``0.7831``), outside code (blocks and inline literals) and outside roles, unless
    ``.ci/figures_allowed.txt`` lists it for that file with the reason it is not a measured
    figure (a default, a setting, a definition).

An entry of ``figures_allowed.txt`` that no longer matches anything fails too, so that the
list stays the list of figures that are in the text. A figure printed by ``live-code``
(``:live:``) comes from the run of the pages and needs no file.

``README.md`` is read where no build runs (a repository's front page, a package index), so
it quotes a results file by a copy: a block between ``<!-- result-table: SPEC -->`` and
``<!-- /result-table -->``, ``SPEC`` being ``FILE#Section | rows | columns | header`` as
the ``result-table`` directive takes them (``;`` between columns, empty parts allowed), holds
the pipe table that those rows render to. The check fails when the block differs from what
the file says now; ``python .ci/check_figures.py --write`` rewrites the blocks from the files.

Usage: ``python .ci/check_figures.py [--write]`` from anywhere in the checkout; exit status
1 and one line per problem when something is wrong.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "doc" / "sphinxext"))
from results_data import RESULTS, ResultError, lookup, table  # noqa: E402

ALLOWED = ROOT / ".ci" / "figures_allowed.txt"
#: What under ``doc/`` is build output (``doc/.gitignore``) or templates, not pages.
NOT_PAGES = {
    "_build",
    "_live",
    "_templates",
    "generated",
    "auto_examples",
    "sg_execution_times.rst",
}

_NUMBER = r"(?<![\w.])\d+(?:\.\d+)?(?:(?:-| to | and )\d+(?:\.\d+)?)?"
_UNIT = (
    r"(?:x(?![\w*])"
    r"| ?%"
    r"| (?:times|s|ms|seconds?|minutes?|hours?|(?:data )?passes|computes|iterations)\b"
    r"| ?[KMGT]i?B\b)"
)
#: A figure typed by hand: a number with a unit, or with three decimals or more.
FIGURE = re.compile(rf"{_NUMBER}{_UNIT}|(?<![\w.])\d+\.\d{{3,}}\b")

#: Directives whose body is code, data or a key, never prose.
_CODE_DIRECTIVES = {
    "code",
    "code-block",
    "sourcecode",
    "live-code",
    "literalinclude",
    "include",
    "math",
    "doctest",
    "testcode",
    "testoutput",
    "raw",
    "result-table",
}
_EXPLICIT = re.compile(r"^(\s*)\.\.(?:\s+([\w-]+)::|\s|$)")
_INLINE = re.compile(r":[\w-]+:`[^`]*`|``.+?``|`[^`]*`", re.DOTALL)
_RESULT_ROLE = re.compile(r":result:`([^`]+)`")
_RESULT_TABLE = re.compile(r"^(\s*)\.\. result-table::\s*(.+)$")


def pages(root: Path = ROOT) -> list[Path]:
    """README.md and every reStructuredText page of ``doc/``."""
    found = [root / "README.md"]
    for path in sorted((root / "doc").rglob("*.rst")):
        if not NOT_PAGES & set(path.relative_to(root / "doc").parts):
            found.append(path)
    return found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def rst_prose(text: str) -> list[str]:
    """The lines of a page with code blocks, comments and keys blanked (numbers kept)."""
    lines, out = text.splitlines(), []
    skip_deeper_than = None  # blank every line indented more than this
    in_options = False  # the lines after a directive, to the first blank line
    for i, line in enumerate(lines):
        if skip_deeper_than is not None:
            if not line.strip() or _indent(line) > skip_deeper_than:
                out.append("")
                continue
            skip_deeper_than, in_options = None, False
        if in_options and line.strip():
            out.append("")  # a directive's arguments and options (:width: 100%), not prose
            continue
        explicit = _EXPLICIT.match(line)
        in_options = bool(explicit)
        if explicit and (explicit.group(2) is None or explicit.group(2) in _CODE_DIRECTIVES):
            skip_deeper_than = _indent(line)  # a comment, a target or code
            out.append("")
        elif line.lstrip().startswith(">>>"):
            skip_deeper_than = _indent(line) - 1  # a doctest block, to its blank line
            out.append("")
        else:
            out.append(line)
            if line.rstrip().endswith("::") and not explicit:
                # A literal block follows: everything indented more than this paragraph.
                start = i
                while start > 0 and lines[start - 1].strip():
                    start -= 1
                skip_deeper_than = _indent(lines[start])
    return out


_BLOCK_START = re.compile(r"^<!-- result-table:\s*(.+?)\s*-->\s*$")
_BLOCK_END = "<!-- /result-table -->"


def md_prose(text: str) -> list[str]:
    """The lines of a Markdown file with fenced code and result blocks blanked."""
    out, fenced, quoted = [], False, False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        elif not fenced and (_BLOCK_START.match(line) or line.strip() == _BLOCK_END):
            quoted = bool(_BLOCK_START.match(line))
            out.append("")
        else:
            out.append("" if fenced or quoted else line)
    return out


def render_block(spec: str, results: Path = RESULTS) -> list[str]:
    """The pipe table of a README result block's ``spec`` (see the module docstring)."""
    parts = [p.strip() for p in spec.split("|")] + [""] * 3
    source, conditions, columns, header = parts[:4]
    split = [[c.strip() for c in x.split(";") if c.strip()] or None for x in (columns, header)]
    labels, cells = table(source, conditions, *split, results=results)
    return [
        "| " + " | ".join(labels) + " |",
        "|" + "---|" * len(labels),
        *("| " + " | ".join(row) + " |" for row in cells),
    ]


def blocks(text: str, results: Path = RESULTS):
    """``(line number, problem, text with every block rendered anew)`` of a Markdown file's
    result blocks: a problem for a spec that finds no table, a block that differs from its
    table, or a block without its end."""
    lines, out, problems, i = text.splitlines(), [], [], 0
    while i < len(lines):
        start = _BLOCK_START.match(lines[i])
        out.append(lines[i])
        i += 1
        if not start:
            continue
        end = next((j for j in range(i, len(lines)) if lines[j].strip() == _BLOCK_END), None)
        if end is None:
            problems.append((i, f"no {_BLOCK_END} after this result block"))
            continue
        try:
            rendered = render_block(start.group(1), results)
        except ResultError as exc:
            problems.append((i, str(exc)))
            rendered = lines[i:end]
        if lines[i:end] != rendered:
            stale = "the result block differs from its file: run .ci/check_figures.py --write"
            problems.append((i, stale))
        out.extend(rendered)
        i = end
    return problems, "\n".join(out) + ("\n" if text.endswith("\n") else "")


def figures(path: Path) -> list[tuple[int, str]]:
    """``(line number, figure)`` for every hand-typed figure of the page's prose."""
    text = path.read_text(encoding="utf-8")
    prose = md_prose(text) if path.suffix == ".md" else rst_prose(text)
    # Inline markup can wrap: join each paragraph before removing literals and roles.
    found, start, block = [], 0, []
    for i, line in enumerate([*prose, ""]):
        if line.strip():
            start = start if block else i
            block.append(line)
            continue
        if block:
            joined = _INLINE.sub(" ", "\n".join(block))
            for match in FIGURE.finditer(joined):
                found.append((start + 1 + joined.count("\n", 0, match.start()), match.group(0)))
        block = []
    return found


def keys(path: Path, results: Path = RESULTS) -> list[tuple[int, str]]:
    """``(line number, problem)`` for every ``:result:`` key or ``result-table`` of a page
    that does not find its figures."""
    text = path.read_text(encoding="utf-8")
    problems = blocks(text, results)[0] if path.suffix == ".md" else []
    for match in _RESULT_ROLE.finditer(text):
        try:
            lookup(match.group(1), results)
        except ResultError as exc:
            problems.append((text.count("\n", 0, match.start()) + 1, str(exc)))
    lines = text.splitlines()
    for i, line in enumerate(lines):
        directive = _RESULT_TABLE.match(line)
        if not directive:
            continue
        options = {}
        for option in lines[i + 1 :]:
            found = re.match(r"^\s+:([\w-]+):\s*(.*)$", option)
            if not found:
                break
            options[found.group(1)] = found.group(2)
        split = [
            [p.strip() for p in options.get(name, "").split(";") if p.strip()]
            for name in ("columns", "header")
        ]
        try:
            table(directive.group(2).strip(), options.get("rows", ""), *split, results=results)
        except ResultError as exc:
            problems.append((i + 1, str(exc)))
    return problems


def allowed(path: Path = ALLOWED) -> dict[tuple[str, str], str]:
    """``{(file, figure): reason}`` from ``figures_allowed.txt``."""
    entries = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" | ")]
        if len(parts) != 3 or not all(parts):
            raise SystemExit(f"{path}:{number}: write 'file | figure | reason'")
        entries[(parts[0], parts[1])] = parts[2]
    return entries


def check(root: Path = ROOT, allowed_path: Path = ALLOWED) -> list[str]:
    """Every problem of the pages under ``root``, one line each (empty: all is well)."""
    problems, used, permitted = [], set(), allowed(allowed_path)
    for path in pages(root):
        name = path.relative_to(root).as_posix()
        for line, problem in keys(path, root / "benchmarks" / "results"):
            problems.append(f"{name}:{line}: {problem}")
        for line, figure in figures(path):
            if (name, figure) in permitted:
                used.add((name, figure))
                continue
            problems.append(
                f"{name}:{line}: {figure!r} is typed by hand: read it from "
                f"{RESULTS.relative_to(ROOT).as_posix()}/ with :result: or result-table, "
                f"print it with live-code, or list it in {allowed_path.name} with a reason"
            )
    for name, figure in sorted(set(permitted) - used):
        problems.append(f"{allowed_path.name}: {name} | {figure}: no longer in the text")
    return problems


def write(root: Path = ROOT) -> None:
    """Rewrite the result blocks of ``README.md`` from the results files."""
    readme = root / "README.md"
    _, text = blocks(readme.read_text(encoding="utf-8"), root / "benchmarks" / "results")
    readme.write_text(text, encoding="utf-8")


def main() -> int:
    if "--write" in sys.argv[1:]:
        write()
    problems = check()
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} figure problem(s): see the docstring of {Path(__file__).name}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
