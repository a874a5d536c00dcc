"""The documentation runs: gallery examples, user-guide doctests, an example for every name.

Every ``examples/plot_*.py`` runs here as a script under the Agg backend and must assert
something about its outcome (the gallery shows the same code). Optional peers (fairlearn)
are hidden, so the suite takes the same, short, time everywhere.
"""

from __future__ import annotations

import ast
import doctest
import inspect
import re
import runpy
import sys
from pathlib import Path

import matplotlib
import pytest
import sklearn

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import sklearn_ialm  # noqa: E402
from sklearn_ialm import datasets, plotting, problems, solver  # noqa: E402
from sklearn_ialm.problems import losses  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
USER_GUIDE = sorted((ROOT / "doc" / "user_guide").glob("*.rst"))

#: The public API: every name exported by a public package, and the loss classes that
#: ``LOSSES`` maps to. Constants are documented by their comment, not by an example.
PUBLIC = {
    "sklearn_ialm": sklearn_ialm,
    "sklearn_ialm.plotting": plotting,
    "sklearn_ialm.solver": solver,
    "sklearn_ialm.problems": problems,
    "sklearn_ialm.problems.losses": losses,
    "sklearn_ialm.datasets": datasets,
}


def _public_objects():
    for module_name, module in PUBLIC.items():
        for name in module.__all__:
            obj = getattr(module, name)
            if name.startswith("__") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            yield f"{module_name}.{name}", obj


PUBLIC_OBJECTS = dict(_public_objects())


def _asserts(path: Path) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sum(isinstance(node, ast.Assert) for node in ast.walk(tree))


def test_examples_exist():
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_and_checks_its_outcome(path, monkeypatch):
    assert _asserts(path) >= 1, f"{path.name} must assert something about its outcome"
    monkeypatch.setitem(sys.modules, "fairlearn", None)  # optional peer: left out
    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    monkeypatch.chdir(path.parent)
    try:
        with sklearn.config_context():  # an example may switch metadata routing on
            runpy.run_path(str(path), run_name="__main__")
    finally:
        plt.close("all")


def test_examples_have_a_title_and_sections():
    # sphinx-gallery needs a docstring with a title; the sections make the notebook cells.
    for path in EXAMPLES:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert doc, path.name
        title, underline = doc.splitlines()[:2]
        assert set(underline) == {"="} and len(underline) >= len(title), path.name


@pytest.mark.parametrize("path", USER_GUIDE, ids=[p.stem for p in USER_GUIDE])
def test_user_guide_doctests(path):
    result = doctest.testfile(
        str(path),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        raise_on_error=False,
        verbose=False,
    )
    assert result.failed == 0
    if ">>>" in path.read_text(encoding="utf-8"):
        assert result.attempted > 0


@pytest.mark.parametrize("name", sorted(PUBLIC_OBJECTS))
def test_public_name_has_an_example(name):
    doc = inspect.getdoc(PUBLIC_OBJECTS[name]) or ""
    sections = re.findall(r"^(\w[\w ]*)\n-{3,}$", doc, flags=re.MULTILINE)
    assert "Examples" in sections, f"{name}: no numpydoc Examples section"
    examples = doc.split("Examples\n--------", 1)[1]
    assert ">>>" in examples, f"{name}: the Examples section has no doctest"


def test_api_reference_lists_every_public_name():
    api = (ROOT / "doc" / "api.rst").read_text(encoding="utf-8")
    listed = set(re.findall(r"^   (\w+)$", api, flags=re.MULTILINE))
    constants = {name for module in PUBLIC.values() for name in module.__all__ if name.isupper()}
    missing = {name.rsplit(".", 1)[1] for name in PUBLIC_OBJECTS} | constants
    missing -= listed
    assert not missing, f"not in doc/api.rst: {sorted(missing)}"
