"""Print the declared minimum versions of pyproject.toml as pip constraints.

``python .ci/min_requirements.py [EXTRA ...]`` writes one ``name==floor`` line for every
runtime dependency and every requirement of the named extras (none by default), so that
``pip install -c <that file> -e ".[EXTRA]"`` installs the oldest versions the project says it
supports. pyproject.toml stays the one place where floors are written: a dependency added
there is pinned here without another edit.

A requirement without a lower bound (``>=``, ``~=`` or ``==``) is an error, since its floor
could not be tested. Extras of a requirement (``dask[distributed]``) are dropped, as pip does
not accept them in a constraints file; environment markers are kept. The interpreter cannot
be pinned: a note on stderr says when it is not the ``requires-python`` floor.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

# name, optional [extras], version specifiers, optional ; marker (PEP 508, without URLs).
_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*"
    r"(?P<specs>[^;]*?)\s*(?:;\s*(?P<marker>.+?))?\s*$"
)
_SPEC = re.compile(r"^\s*(?P<op>===|==|~=|>=|<=|!=|>|<)\s*(?P<version>[^\s,]+)\s*$")


def floor_pin(requirement: str) -> str:
    """``name==floor`` (with the requirement's marker, if any) for one PEP 508 requirement.

    Parameters
    ----------
    requirement : str
        A requirement as written in pyproject.toml, e.g. ``"numpy>=1.24"``.

    Returns
    -------
    str
        The constraint line, e.g. ``"numpy==1.24"``.

    Raises
    ------
    ValueError
        If the requirement cannot be read or has no lower bound.
    """
    match = _REQUIREMENT.match(requirement)
    if match is None:
        raise ValueError(f"cannot read the requirement {requirement!r}")
    floor = None
    specs = [s for s in match["specs"].split(",") if s.strip()]
    for spec in specs:
        parsed = _SPEC.match(spec)
        if parsed is None:
            raise ValueError(f"cannot read the version specifier {spec!r} of {requirement!r}")
        if parsed["op"] in ("==", "===", ">=", "~="):
            floor = parsed["version"]
    if floor is None:
        raise ValueError(
            f"{requirement!r} has no minimum version (>=, ~= or ==): give it the oldest "
            "version that was tested, so that the minimum-versions CI run can pin it"
        )
    line = f"{match['name']}=={floor}"
    return f"{line}; {match['marker']}" if match["marker"] else line


def min_constraints(pyproject: dict, extras: list[str]) -> list[str]:
    """The constraint lines for the runtime dependencies and the given extras.

    Parameters
    ----------
    pyproject : dict
        The parsed pyproject.toml.
    extras : list of str
        Names of ``[project.optional-dependencies]`` groups to include.

    Returns
    -------
    list of str
        One ``name==floor`` line per package, in the order of first appearance.

    Raises
    ------
    ValueError
        If an extra does not exist, a requirement has no lower bound, or one package gets
        two different floors.
    """
    project = pyproject["project"]
    optional = project.get("optional-dependencies", {})
    requirements = list(project.get("dependencies", []))
    for extra in extras:
        if extra not in optional:
            raise ValueError(f"extra {extra!r} is not in pyproject.toml: {sorted(optional)}")
        requirements += optional[extra]
    pins: dict[str, str] = {}
    for requirement in requirements:
        line = floor_pin(requirement)
        name = re.split(r"[=;]", line, maxsplit=1)[0].lower().replace("_", "-")
        if pins.setdefault(name, line) != line:
            raise ValueError(f"two floors for {name}: {pins[name]!r} and {line!r}")
    return list(pins.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("extras", nargs="*", help="optional-dependency groups to include")
    args = parser.parse_args(argv)
    with PYPROJECT.open("rb") as f:
        pyproject = tomllib.load(f)
    try:
        pins = min_constraints(pyproject, args.extras)
    except ValueError as exc:
        parser.error(f"{PYPROJECT}: {exc}")
    print("\n".join(pins))
    # pip cannot pin the interpreter: say when the run is not on the oldest supported Python.
    python_floor = pyproject["project"]["requires-python"].removeprefix(">=")
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    if running != python_floor:
        print(f"note: Python {running}, not the floor {python_floor}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
