"""The documentation runs: gallery examples, the user guide's live code, the README's quick
start, an example for every name.

Every ``examples/plot_*.py`` runs here as a script under the Agg backend and must assert
something about its outcome (the gallery shows the same code); optional peers (fairlearn)
are hidden from them, so they take the same, short, time everywhere. The user guide's
``live-code`` blocks run as the doc build runs them (``doc/sphinxext/live_run.py``), and
must not warn. The README's fairness quick start must show what its text says.
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
sys.path.insert(0, str(ROOT / "doc" / "sphinxext"))
import live_run  # noqa: E402

EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))
USER_GUIDE = sorted((ROOT / "doc" / "user_guide").glob("*.rst"))
LIVE_PAGES = [
    p for p in [ROOT / "doc" / "index.rst", *USER_GUIDE] if "live-code::" in p.read_text("utf-8")
]

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


@pytest.mark.parametrize("path", LIVE_PAGES, ids=[p.stem for p in LIVE_PAGES])
def test_user_guide_live_code_runs_without_warnings(path):
    text = path.read_text(encoding="utf-8")
    try:
        _, outputs, raised = live_run.run_page(text, str(path))
    finally:
        plt.close("all")
    assert len(outputs) == text.count(".. live-code::")
    assert raised == []


def test_live_code_blocks_share_a_namespace_and_roles_format_from_it():
    rst = (
        "Text.\n\n.. live-code::\n   :alt: a figure\n         on two lines\n\n"
        "    a = 2\n    print(a * 3)\n\nMore :live:`{a / 3:.2f}` text.\n\n"
        ".. live-code::\n\n    import warnings\n    warnings.warn('careful')\n    b = a + 1\n"
    )
    namespace, outputs, raised = live_run.run_page(rst, "page.rst")
    assert outputs == ["6\n", ""]
    assert namespace["b"] == 3
    assert live_run.format_role("{a / 3:.2f}", namespace) == "0.67"
    assert raised == ["UserWarning: careful"]


def _readme_quick_start() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


def test_readme_quick_start_runs_and_the_bound_changes_the_model():
    blocks = _readme_quick_start()
    assert len(blocks) == 2
    for code in blocks:
        namespace = live_run.new_namespace()
        output, raised = live_run.run_block(code, namespace, "README.md")
        assert raised == []
    # The text's claims: without the bound the gap is several times it; the bound changes
    # the model; and fairlearn's gap of predict is the rate the fit reports.
    fair, before, after = namespace["fair"], namespace["gap_before"], namespace["gap_after"]
    assert before >= 3 * fair.bound
    assert after < before / 3
    assert abs(fair.hard_constraint_values_[0]) == pytest.approx(after)
    assert f"{before:.3f} without the bound" in output


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
