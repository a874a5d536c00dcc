"""The invariants of issue 49 item 7 on a longer search than CI's.

``tests/test_invariants.py`` under hypothesis's ``long`` profile (200 random examples per
invariant, shrunk to a minimal falsifying example; ``tests/_families.py`` has the families
and the profiles). Run from the root of a checkout::

    OMP_NUM_THREADS=1 python -m benchmarks.invariants [pytest arguments, e.g. -k stream]

Each failure prints the ``Family(...)`` and the arguments that reproduce it. A test marked
``xfail`` (a known bug of issue 49) is run as any other: ``--runxfail`` is passed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1] / "tests" / "test_invariants.py"


def main(argv: list[str]) -> int:
    """Run the invariants under the ``long`` profile (unless ``HYPOTHESIS_PROFILE`` says
    another) with pytest's arguments ``argv``; pytest's exit code."""
    os.environ.setdefault("HYPOTHESIS_PROFILE", "long")
    args = [str(TESTS), "-p", "no:cacheprovider", "--runxfail", "--hypothesis-show-statistics"]
    return int(pytest.main(args + argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
