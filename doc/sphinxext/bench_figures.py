"""Sphinx extension: figures of ``benchmarks/results/`` read when the pages are built.

``:result:`dask.csv | n=10000000; fit=fair DP 0.05; where=dask | seconds``` puts one value
of a results file into the text; ``.. result-table:: dask.csv`` (options ``:rows:``, a row
filter, ``:columns:`` and ``:header:``, lists separated by ``;``) shows rows of a table. The
keys are those of ``results_data``; a key that no longer finds its value is a build
warning, so ``-W`` fails the build, and ``.ci/check_figures.py`` checks every key before
the tests. No figure of a benchmark is typed into the pages by hand.
"""

from __future__ import annotations

from docutils import nodes, utils
from docutils.parsers.rst import directives
from results_data import ResultError, lookup, path_of, table
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


def _list(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(";") if part.strip()]


def result_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``:result:`key``` : the value the key names, as text."""
    text = utils.unescape(text)
    # A regenerated results file makes the page stale: Sphinx rereads it.
    inliner.document.settings.env.note_dependency(str(path_of(text.split(" | ")[0])))
    try:
        value = lookup(text)
    except ResultError as exc:
        msg = inliner.reporter.warning(f":result:`{text}`: {exc}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    return [nodes.Text(value)], []


def _row(cells: list[str]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        # A literal cell: a value such as "-" or "> 300" is text, not markup.
        entry += nodes.paragraph("", "", nodes.Text(cell))
        row += entry
    return row


class ResultTable(SphinxDirective):
    """The ``result-table`` directive: rows of a results file's table, as a table."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {
        "rows": directives.unchanged,
        "columns": directives.unchanged,
        "header": directives.unchanged,
    }

    def run(self):
        source = self.arguments[0]
        columns, header = _list(self.options.get("columns")), _list(self.options.get("header"))
        self.env.note_dependency(str(path_of(source)))
        try:
            labels, cells = table(source, self.options.get("rows", ""), columns, header)
        except ResultError as exc:
            logger.warning("result-table: %s", exc, location=self.get_location())
            return []
        group = nodes.tgroup(cols=len(labels))
        for _ in labels:
            group += nodes.colspec(colwidth=1)
        thead = nodes.thead()
        thead += _row(labels)
        body = nodes.tbody()
        for row in cells:
            body += _row(row)
        group += thead
        group += body
        result = nodes.table("", group, classes=["result-table"])
        return [result]


def setup(app):
    app.add_role("result", result_role)
    app.add_directive("result-table", ResultTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
