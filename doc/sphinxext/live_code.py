"""Sphinx extension: ``live-code`` blocks run in the build, and ``:live:`` values in prose.

``.. live-code::`` shows a block of Python, runs it in the page's namespace (shared by the
page's blocks, in order), and shows what it printed and the matplotlib figures it drew.
``:live:`{clf.tol:g}``` puts a value of that namespace into the text. A block that raises,
or warns, is a build warning, so ``-W`` fails the build. See ``live_run`` for the running.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from live_run import format_role, new_namespace, run_block
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

#: Figures are written here, under the source folder, so that Sphinx copies them as images.
FIGURE_DIR = "_live"


def _namespace(env) -> dict:
    # temp_data lives while one document is read: one namespace per page.
    return env.temp_data.setdefault("live_code_namespace", new_namespace())


class LiveCode(SphinxDirective):
    """The ``live-code`` directive (options: ``:alt:`` for its figures, ``:hide-code:``)."""

    has_content = True
    option_spec = {"alt": directives.unchanged, "hide-code": directives.flag}

    def run(self):
        import matplotlib.pyplot as plt

        code = "\n".join(self.content) + "\n"
        docname = self.env.docname
        namespace = _namespace(self.env)
        location = self.get_location()
        result = []
        if "hide-code" not in self.options:
            block = nodes.literal_block(code, code, language="python")
            result.append(block)
        before = set(plt.get_fignums())
        try:
            output, caught = run_block(code, namespace, f"{docname}.rst, line {self.lineno}")
        except Exception as exc:  # noqa: BLE001 - reported as a build warning, -W fails
            logger.warning("live-code failed: %s: %s", type(exc).__name__, exc, location=location)
            return result
        for message in caught:
            logger.warning("live-code warned: %s", message, location=location)
        if output:
            out = nodes.literal_block(output, output.rstrip("\n"), language="none")
            out["classes"].append("live-output")
            result.append(out)
        counter = self.env.temp_data.setdefault("live_code_figures", 0)
        for num in sorted(set(plt.get_fignums()) - before):
            counter += 1
            name = f"{docname.replace('/', '_')}_{counter}.png"
            target = Path(self.env.srcdir) / FIGURE_DIR / name
            target.parent.mkdir(parents=True, exist_ok=True)
            figure = plt.figure(num)
            figure.savefig(target, dpi=100, bbox_inches="tight")
            plt.close(figure)
            result.append(
                nodes.image(uri=f"/{FIGURE_DIR}/{name}", alt=self.options.get("alt", ""))
            )
        self.env.temp_data["live_code_figures"] = counter
        return result


def live_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``:live:`f-string body``` : the value, formatted, from the page's namespace."""
    env = inliner.document.settings.env
    try:
        value = format_role(text, _namespace(env))
    except Exception as exc:  # noqa: BLE001 - reported as a build warning, -W fails
        msg = inliner.reporter.warning(f":live:`{text}` failed: {type(exc).__name__}: {exc}")
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    return [nodes.Text(value)], []


def setup(app):
    app.add_directive("live-code", LiveCode)
    app.add_role("live", live_role)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
