"""numba, optional: its import and the decorators that compile the kernels.

Compiled code is cached on disk (``cache=True``), so the compile cost is paid once per
installation and argument types, not once per process.
"""

from __future__ import annotations

from ..solver._numba import _import_numba

numba = _import_numba()


# Reassociation lets the row loops vectorise; no finite-math or approximate-function flags,
# which would change results beyond rounding.
FM = {"reassoc", "contract", "nsz", "arcp"}


def _jit(fn):
    if numba is None:
        return fn
    return numba.njit(cache=True, nogil=True, fastmath=FM)(fn)


def _jit_ieee(fn):
    """Compiled without ``fastmath``: each operation rounded as numpy rounds it, in the
    order written, for kernels that must give numpy's bits."""
    if numba is None:
        return fn
    return numba.njit(cache=True, nogil=True)(fn)


def _helper(fn):
    """A function called only from compiled code: no Python entry point to build (each one
    costs about 0.05 s of the first, uncached compile)."""
    if numba is None:
        return fn
    return numba.njit(cache=True, fastmath=FM, no_cpython_wrapper=True, no_cfunc_wrapper=True)(fn)


def _stage(fn):
    """A stage of :func:`_block`, inlined into it by numba (``inline="always"``, on numba's
    own IR): the block compiles to one function, as it was written before its split.

    Called as a separate function instead, a stage is optimised on its own, and with
    ``fastmath`` its rounding then depended on the specialisation's argument types (a
    read-only or non-contiguous array); since a call runs any loaded specialisation its
    arguments convert to, the last bits of a fit depended on what the process had compiled
    or loaded before (measured: 4 of 140 recorded blocks).
    """
    if numba is None:
        return fn
    return numba.njit(
        inline="always", fastmath=FM, no_cpython_wrapper=True, no_cfunc_wrapper=True
    )(fn)
