"""The package's layers: plotting and report -> estimators -> problems -> solver.

Every import statement of every module is read from the source (at module level and inside
functions alike: an import in a function runs as surely as one at the top, only later), and
the test fails on an import circle or on an import that reaches up a layer. No link up is
allowed: the estimators' ``bound_report`` calls the builder that the report registers on
import, so the estimators import nothing of the report.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sklearn_ialm

ROOT = Path(sklearn_ialm.__file__).parent
PACKAGE = "sklearn_ialm"

#: The layers, lowest first: a module may import its own layer and those below it.
LAYERS = ("solver", "problems", "estimators", "report", "plotting")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(importer: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The package's modules that ``node`` in module ``importer`` imports by name."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            is_package = MODULES[importer].name == "__init__.py"
            base = importer.split(".")
            base = base[: len(base) - node.level + is_package]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module
        # ``from package import name``: the submodule ``name`` if there is one, else the package.
        names = [
            f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in MODULES else stem
            for alias in node.names
        ]
    return [name for name in names if name == PACKAGE or name.startswith(PACKAGE + ".")]


def _imports(module: str):
    """``(imported, function)`` of every import of ``module``; ``function`` is the name of the
    innermost enclosing function, None at module (or class) level."""
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.extend((name, function) for name in _resolve(module, child))
            visit(child, function)

    visit(ast.parse(MODULES[module].read_text()), None)
    return found


def _edges():
    """``{importer: {imported: [function, ...]}}``. Importing ``a.b.c`` also runs the
    packages ``a`` and ``a.b``: those count too, unless the importer is inside them."""
    edges = {module: {} for module in MODULES}
    for module in MODULES:
        for name, function in _imports(module):
            parts = name.split(".")
            targets = {name}
            targets.update(
                ".".join(parts[:i])
                for i in range(1, len(parts))
                if not (module + ".").startswith(".".join(parts[:i]) + ".")
            )
            for target in targets - {module}:
                edges[module].setdefault(target, []).append(function)
    return edges


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _cycles(edges) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return out


def test_every_module_is_read():
    assert {"sklearn_ialm.estimators._base", "sklearn_ialm.report", "sklearn_ialm.solver"} <= set(
        MODULES
    )
    edges = _edges()
    assert "sklearn_ialm.solver.ialm" in edges["sklearn_ialm.solver"]
    # An import inside a function is seen (not only those at the top of a file).
    assert edges["sklearn_ialm.report._records"]["sklearn_ialm._version"] == ["fit_record"]
    # The report reaches the estimators (down); the estimators reach no report module.
    assert "sklearn_ialm.estimators" in edges["sklearn_ialm.report"]
    assert not any(
        b.startswith("sklearn_ialm.report")
        for a, targets in edges.items()
        if _layer(a) == "estimators"
        for b in targets
    )


def test_no_import_circle():
    assert _cycles({a: set(targets) for a, targets in _edges().items()}) == []


@pytest.mark.parametrize("layer", LAYERS)
def test_no_upward_import(layer):
    rank = LAYERS.index(layer)
    upward = [
        (a, b, f)
        for a, targets in _edges().items()
        if _layer(a) == layer
        for b, functions in targets.items()
        for f in functions
        if _layer(b) in LAYERS[rank + 1 :] or b == PACKAGE
    ]
    assert upward == []


def test_the_top_package_is_imported_by_no_layer():
    """``sklearn_ialm/__init__`` imports every layer: a layer importing it closes a circle."""
    users = [a for a, targets in _edges().items() if PACKAGE in targets and _layer(a)]
    assert users == []
