"""Proximal operators for the nonsmooth part ``h`` of the objective.

Each operator knows four things about its convex function ``h``: its value, its
proximal map ``prox_{eta h}``, the distance from a vector ``-g`` to the subdifferential,
``dist(0, g + dh(x))``, which is what the KKT residuals need, and the subdifferential
itself as an interval per coordinate, in which the KKT multipliers' least squares takes
the subgradient.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Box", "L1", "NoProx", "Prox", "Ridge"]


class Prox:
    """Base class of the nonsmooth terms ``h``: ``h = 0``.

    A subclass overrides ``value(x)``, ``prox(x, eta)`` (the proximal map
    ``argmin_u h(u) + ||u - x||^2 / (2 eta)``), ``dist_subdiff(x, g)`` and
    ``subgradient_bounds(x)``; the solvers use nothing else (and a user's ``h`` without
    ``subgradient_bounds`` only leaves the KKT multipliers fitted to the smooth gradient).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.solver import Prox
    >>> h = Prox()
    >>> h.value(np.array([1.0, -2.0])), h.prox(np.array([1.0, -2.0]), 0.1)
    (0.0, array([ 1., -2.]))
    >>> h.dist_subdiff(np.zeros(2), np.array([1.0, -2.0]))  # |g| where h is smooth
    array([1., 2.])
    """

    def value(self, x: np.ndarray) -> float:
        return 0.0

    def prox(self, x: np.ndarray, eta: float) -> np.ndarray:
        return x

    def dist_subdiff(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Componentwise ``dist(0, g_i + dh_i(x_i))`` (``h`` is separable)."""
        return np.abs(g)

    def subgradient_bounds(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each coordinate's subdifferential ``dh_i(x_i)`` as an interval ``[lower_i,
        upper_i]`` (equal where ``h`` is differentiable, infinite ends for a normal cone).

        The KKT multipliers' least squares (:func:`~sklearn_ialm.solver.kkt_dual_residual`)
        takes the subgradient as unknowns in these intervals. A subclass that overrides
        :meth:`dist_subdiff` overrides this too; where it does not, the multipliers are
        fitted to the smooth gradient alone.

        Parameters
        ----------
        x : ndarray of shape (n_params,)
            The point.

        Returns
        -------
        lower, upper : ndarray of shape (n_params,)
            The ends of each coordinate's interval.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ialm.solver import L1
        >>> L1(0.5).subgradient_bounds(np.array([2.0, 0.0]))
        (array([ 0.5, -0.5]), array([0.5, 0.5]))
        """
        return np.zeros_like(x, dtype=float), np.zeros_like(x, dtype=float)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class NoProx(Prox):
    """``h = 0``: the prox is the identity (the default of every problem).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.solver import NoProx
    >>> NoProx().prox(np.array([1.0, 2.0]), 0.1)
    array([1., 2.])
    """


class L1(Prox):
    """``h(x) = strength * sum_i mask_i |x_i|`` (the mask leaves e.g. an intercept free).

    Parameters
    ----------
    strength : float
        The weight of the penalty, ``>= 0``.
    mask : array-like of bool, shape (n_params,), default=None
        The entries that are penalised; ``None`` penalises all.

    Examples
    --------
    The prox is soft-thresholding:

    >>> import numpy as np
    >>> from sklearn_ialm.solver import L1
    >>> h = L1(0.5)
    >>> h.value(np.array([1.0, -2.0]))
    1.5
    >>> h.prox(np.array([1.0, -0.2, 0.3]), 1.0)
    array([ 0.5, -0. ,  0. ])
    """

    def __init__(self, strength: float, mask: np.ndarray | None = None):
        if not np.isfinite(strength) or strength < 0:
            raise ValueError(f"L1 strength must be a finite number >= 0, got {strength!r}.")
        self.strength = float(strength)
        self.mask = None if mask is None else np.asarray(mask, dtype=bool)

    def _lam(self, x):
        return self.strength if self.mask is None else self.strength * self.mask

    def value(self, x):
        lam = self._lam(x)
        return float(np.sum(lam * np.abs(x)))

    def prox(self, x, eta):
        t = eta * self._lam(x)
        return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)

    def dist_subdiff(self, x, g):
        lam = np.broadcast_to(self._lam(x), x.shape)
        off = x != 0
        out = np.maximum(np.abs(g) - lam, 0.0)
        out[off] = np.abs(g[off] + lam[off] * np.sign(x[off]))
        return out

    def subgradient_bounds(self, x):
        # lam sign(x_i) off zero; at zero the whole [-lam, lam] (the kink).
        lam = np.broadcast_to(self._lam(x), x.shape).astype(float)
        at_zero = x == 0
        return np.where(at_zero, -lam, lam * np.sign(x)), np.where(at_zero, lam, lam * np.sign(x))

    def __repr__(self):
        return f"L1(strength={self.strength})"


class Box(Prox):
    """Indicator of ``lower <= x <= upper``; the prox is the projection.

    ``Box(0, inf)`` is the nonnegativity of slack variables.

    Parameters
    ----------
    lower, upper : float or array-like of shape (n_params,), default=-inf, inf
        The bounds, ``lower <= upper``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.solver import Box
    >>> h = Box(0.0, 1.0)
    >>> h.prox(np.array([-1.0, 0.5, 2.0]), 0.1)
    array([0. , 0.5, 1. ])
    >>> h.value(np.array([0.5])), h.value(np.array([2.0]))
    (0.0, inf)
    """

    def __init__(self, lower=-np.inf, upper=np.inf):
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        if np.any(self.lower > self.upper):
            raise ValueError("Box needs lower <= upper.")

    def value(self, x):
        inside = np.all(x >= self.lower) and np.all(x <= self.upper)
        return 0.0 if inside else np.inf

    def prox(self, x, eta):
        return np.clip(x, self.lower, self.upper)

    def dist_subdiff(self, x, g):
        # The normal cone at an active bound absorbs the part of g that points outward.
        out = np.abs(g)
        at_lo = x <= self.lower
        at_hi = x >= self.upper
        out = np.where(at_lo, np.maximum(-g, 0.0), out)
        out = np.where(at_hi, np.maximum(g, 0.0), out)
        return np.where(at_lo & at_hi, 0.0, out)

    def subgradient_bounds(self, x):
        # The normal cone: (-inf, 0] at the lower bound, [0, inf) at the upper, 0 inside.
        at_lo, at_hi = x <= self.lower, x >= self.upper
        return np.where(at_lo, -np.inf, 0.0), np.where(at_hi, np.inf, 0.0)

    def __repr__(self):
        return f"Box(lower={self.lower}, upper={self.upper})"


class Ridge(Prox):
    """``h(x) = strength / 2 * sum_i mask_i x_i^2`` (the mask leaves e.g. an intercept free).

    An L2 penalty as a prox rather than as part of the smooth objective: the prox is exact
    (a shrinkage), so the penalty adds nothing to the smoothness constant of ``g`` and the
    step rule, the minibatch gradients and their variance are those of the unpenalised
    problem.

    Parameters
    ----------
    strength : float
        The weight of the penalty, ``>= 0``.
    mask : array-like of bool, shape (n_params,), default=None
        The entries that are penalised; ``None`` penalises all.

    Examples
    --------
    The prox divides the penalised entries by ``1 + eta * strength``:

    >>> import numpy as np
    >>> from sklearn_ialm.solver.prox import Ridge
    >>> h = Ridge(1.0, mask=[True, False])
    >>> h.value(np.array([2.0, 3.0]))
    2.0
    >>> h.prox(np.array([2.0, 3.0]), 1.0)
    array([1., 3.])
    """

    def __init__(self, strength: float, mask: np.ndarray | None = None):
        if not np.isfinite(strength) or strength < 0:
            raise ValueError(f"Ridge strength must be a finite number >= 0, got {strength!r}.")
        self.strength = float(strength)
        self.mask = None if mask is None else np.asarray(mask, dtype=bool)

    def _lam(self, x):
        return self.strength if self.mask is None else self.strength * self.mask

    def value(self, x):
        return float(0.5 * np.sum(self._lam(x) * x * x))

    def prox(self, x, eta):
        return x / (1.0 + eta * self._lam(x))

    def dist_subdiff(self, x, g):
        return np.abs(g + self._lam(x) * x)

    def subgradient_bounds(self, x):
        grad = np.broadcast_to(self._lam(x) * x, x.shape).astype(float)
        return grad, grad.copy()

    def __repr__(self):
        return f"Ridge(strength={self.strength})"
