"""Run the ``live-code`` blocks of a page, in order, in one namespace: the plain-Python half
of the ``live_code`` Sphinx extension, which the test suite uses without Sphinx.

A page's numbers are then the numbers of that run: ``live-code`` shows each block's printed
output, and the ``:live:`` role puts values of the same namespace into the prose (an
f-string body, e.g. ``:live:`{soft:.3f}```), so the code, its output, the prose and the
figures cannot disagree.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings

#: ``.. live-code::`` and its content, indented deeper than the directive (which may itself
#: be indented, in a definition list say): options, then the code.
_BLOCK = re.compile(
    r"^([ \t]*)\.\. live-code::[^\n]*\n((?:\1[ \t]+[^\n]*\n|[ \t]*\n)+)", re.MULTILINE
)
#: The ``:live:`` role and its f-string body.
_ROLE = re.compile(r":live:`([^`]+)`")


def new_namespace(name: str = "__main__") -> dict:
    """A fresh namespace for the blocks of one page (run as a script would be)."""
    return {"__name__": name, "__builtins__": __builtins__}


def run_block(code: str, namespace: dict, filename: str) -> tuple[str, list[str]]:
    """Execute ``code`` in ``namespace``.

    Parameters
    ----------
    code : str
        The Python source of one block.
    namespace : dict
        The page's namespace, updated in place.
    filename : str
        Shown in tracebacks.

    Returns
    -------
    output : str
        What the block printed.
    warnings : list of str
        Every warning the block raised, as ``"Category: message"`` (the build fails on
        them: a page must not teach code that warns).
    """
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        exec(compile(code, filename, "exec"), namespace)  # noqa: S102 - the page's own code
    return out.getvalue(), [f"{w.category.__name__}: {w.message}" for w in caught]


def format_role(text: str, namespace: dict) -> str:
    """The value of a ``:live:`` role: ``text`` as the body of an f-string."""
    return eval("f" + repr(text), namespace)  # noqa: S307 - the page's own expression


def page_blocks(rst: str) -> list[str]:
    """The code of every ``live-code`` block of an rst page, in order (options dropped)."""
    blocks = []
    for match in _BLOCK.finditer(rst):
        lines = match.group(2).splitlines()
        if lines and re.match(r"^\s+:[\w-]+:", lines[0]):
            # The options block (which may wrap) ends at the first blank line.
            lines = lines[next((i for i, s in enumerate(lines) if not s.strip()), len(lines)) :]
        body = lines
        indent = min(len(s) - len(s.lstrip()) for s in body if s.strip())
        blocks.append("\n".join(s[indent:] for s in body).strip() + "\n")
    return blocks


def run_page(rst: str, filename: str) -> tuple[dict, list[str], list[str]]:
    """Run a page as the build does: its blocks in order, then its ``:live:`` roles.

    Returns the namespace, the outputs of the blocks and every warning raised. (The build
    evaluates each role where it stands; evaluating them all at the end checks only that
    they are valid, since a role may use a name that a later block changes.)
    """
    namespace = new_namespace()
    outputs, raised = [], []
    for code in page_blocks(rst):
        output, caught = run_block(code, namespace, filename)
        outputs.append(output)
        raised.extend(caught)
    for text in _ROLE.findall(rst):
        format_role(text, namespace)
    return namespace, outputs, raised
