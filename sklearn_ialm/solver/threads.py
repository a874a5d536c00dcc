"""One BLAS thread for the products of a small fit.

A fit of a few thousand to a hundred thousand rows calls BLAS on small arrays: Cholesky
factors of the Newton steps' ``p x p`` matrices, products of ``(n, m)`` constraint weights by
``m`` multipliers. On such arrays BLAS threads only wait on one another, and on a machine
whose cores are busy they wait for a core each time (Adult by race, equalized odds at 0.05,
on 2 busy cores: 7.4 s wall and 7.1 s CPU with OpenBLAS's two threads, 0.61 s with one; a
128 x 128 Cholesky factor took 84 ms). One thread also makes such a fit's results the same
whatever the thread count the user's environment sets.
"""

from __future__ import annotations

import contextlib

__all__ = ["SMALL_VALUES", "one_blas_thread"]

#: Fits whose data hold at most this many values (rows x columns dense, non-zeros sparse)
#: run their BLAS calls on one thread; larger ones keep the user's setting.
SMALL_VALUES = 10_000_000

_controller = None


def one_blas_thread(n_values: float):
    """A context in which BLAS runs on one thread if ``n_values`` is at most
    :data:`SMALL_VALUES`, else one that changes nothing.

    The libraries are looked up once per process (``threadpoolctl``'s controller took 7 ms
    to find them, 1.5 ms with its cache; its limit then takes 0.01 ms).
    """
    if not n_values <= SMALL_VALUES:
        return contextlib.nullcontext()
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
