"""The package's sizes, read from the source: no class over 500 lines of code, no function of
the estimators over 100 lines, and one place for each step of a fit.

Lines of code leave out blank lines, comments and docstrings; a function's lines are its
whole span (its docstring included), so that what a reader must take in at once stays
within two screens.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sklearn_ialm

ROOT = Path(sklearn_ialm.__file__).parent
FILES = sorted(ROOT.rglob("*.py"))
MAX_CLASS_CODE = 500
MAX_FUNCTION_SPAN = 100


def _docstring_lines(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                out.update(range(first.lineno, first.end_lineno + 1))
    return out


def code_lines(lines, node, docs) -> int:
    """Lines of ``node`` that are code: not blank, not a comment, not a docstring."""
    return sum(
        1
        for i in range(node.lineno, node.end_lineno + 1)
        if i not in docs and lines[i - 1].strip() and not lines[i - 1].strip().startswith("#")
    )


def _parsed(path):
    source = path.read_text()
    tree = ast.parse(source)
    return tree, source.splitlines(), _docstring_lines(tree)


def test_code_lines_leave_out_docstrings_comments_and_blanks():
    source = 'class A:\n    """Doc\n    string."""\n\n    # why\n    x = 1\n'
    tree = ast.parse(source)
    assert code_lines(source.splitlines(), tree.body[0], _docstring_lines(tree)) == 2


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_class_over_500_lines_of_code(path):
    tree, lines, docs = _parsed(path)
    big = {
        node.name: code_lines(lines, node, docs)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }
    assert {k: v for k, v in big.items() if v > MAX_CLASS_CODE} == {}


@pytest.mark.parametrize(
    "path",
    [p for p in FILES if p.parent.name == "estimators"],
    ids=lambda p: p.name,
)
def test_no_function_of_the_estimators_over_100_lines(path):
    tree, _, _ = _parsed(path)
    long = {
        node.name: node.end_lineno - node.lineno + 1
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    assert {k: v for k, v in long.items() if v > MAX_FUNCTION_SPAN} == {}


def test_each_step_of_a_fit_is_defined_once():
    """The steps' names of the old parallel fit paths (a ``_validated``, ``_conclude`` or
    ``_fit_or_raise`` per path) are gone, and ``conclude`` and ``steps`` are defined once, in
    ``_steps.py``."""
    defined = {}
    for path in FILES:
        if path.parent.name != "estimators":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                defined.setdefault(node.name, []).append(path.name)
    for old in ("_validated", "_conclude", "_fit_or_raise", "fit_multiclass", "fit_dask"):
        assert old not in defined, (old, defined.get(old))
    assert defined["steps"] == ["_steps.py"]
    assert defined["conclude"] == ["_steps.py"]
