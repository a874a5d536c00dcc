"""numba's import, optional (the solver's own compiled code, and the problems' through
:mod:`sklearn_ialm.problems._numba`)."""

from __future__ import annotations

import sys


def _import_numba():
    """numba, or None when it is not installed.

    An import cut short (Ctrl-C while numba loads, in the first fit of a process) leaves
    numba's finished submodules in ``sys.modules`` without their parents' links to them;
    every later ``import numba`` then fails ("module 'numba' has no attribute 'core'") and
    no fit could run again. The modules the failed import added are forgotten, so the next
    fit imports numba afresh.
    """
    loaded = set(sys.modules)
    try:
        import numba
    except BaseException as exc:
        for name in set(sys.modules) - loaded:
            sys.modules.pop(name, None)
        if isinstance(exc, ImportError):  # pragma: no cover - numba is not installed
            return None
        raise
    return numba
