"""The linear algebra of the finish's Newton steps: a dense solve (Cholesky, or the
Hessian's eigenvalues taken in absolute value, within a trust region), conjugate gradients
on a Hessian operator, and its preconditioner by Woodbury's identity.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.sparse.linalg import LinearOperator

__all__ = ["HessianOperator"]

#: Bisections of the shift of :func:`_within` (on a log scale, from 1e-12 of its upper end).
_SHIFT_BISECTIONS = 40
#: Most conjugate-gradient iterations of one Newton step (Hessian-vector products).
_CG_MAX_ITER = 200


def _newton_step(H, g, floor=0.0, radius=None):
    """``-H^-1 g``: by Cholesky where ``H`` is positive definite (a convex loss, a ridge),
    else with ``H``'s eigenvalues taken in absolute value and floored (a descent direction
    where a nonconvex loss leaves ``H`` indefinite, or the levels singular); given a
    ``radius``, a step longer than it is shifted until it is no longer (:func:`_within`); by
    conjugate gradients where ``H`` is an operator (:func:`_cg_step`, to a residual of at
    least ``floor``)."""
    if not isinstance(H, np.ndarray):
        return _cg_step(H, g, floor)
    return -_solve_matrix(H, g, radius)


def _solve_matrix(H, b, radius=None):
    """``H^-1 b`` (``b`` a vector or columns), see :func:`_newton_step`."""
    try:
        out = cho_solve(cho_factor(H), b)
        # A positive definite H keeps to the radius too: on digits (per-class bound 0.06,
        # the penalty at 1e4) its steps of length 5.8, one after another, were cut to 1e-7
        # of it while the radius was 6e-7 (90 reads for no decrease in one inner solve).
        if radius is None or np.ndim(b) != 1 or np.linalg.norm(out) <= radius:
            return out
    except np.linalg.LinAlgError:
        pass
    lam, V = np.linalg.eigh(0.5 * (H + H.T))
    lam = np.abs(lam)
    lam = np.maximum(lam, max(1e-10 * float(lam.max(initial=0.0)), 1e-12))
    if radius is not None and np.ndim(b) == 1:
        return V @ _within(V.T @ b, lam, radius)
    return V @ ((V.T @ b) / (lam if np.ndim(b) == 1 else lam[:, None]))


def _within(r, lam, radius):
    """``r / (lam + sigma)`` with about the least ``sigma >= 0`` whose norm is at most
    ``radius`` (``lam > 0``; ``r`` in the eigenvectors' coordinates): the step of a trust
    region of that radius on the model whose curvatures are ``lam`` (a Levenberg-Marquardt
    shift, by bisection on ``log(sigma)``: the norm falls as ``sigma`` grows)."""
    step = r / lam
    if np.linalg.norm(step) <= radius:
        return step
    hi = float(np.linalg.norm(r)) / radius  # there the norm is below radius
    lo = 1e-12 * hi
    for _ in range(_SHIFT_BISECTIONS):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if np.linalg.norm(r / (lam + mid)) > radius else (lo, mid)
    return r / (lam + hi)


def _cg_step(H, g, floor=0.0):
    """An inexact Newton step by conjugate gradients on ``H s = -g``, to a residual of
    ``min(0.5, sqrt(||g||)) ||g||`` (superlinear as ``g`` vanishes) or ``floor``, whichever
    is larger (a residual below the inner solve's tolerance buys nothing: on CSR 2e5 x 1e4
    the last step of a solve took 16 products to reach a gradient of 3e-7 where 9e-7 was
    asked)."""
    norm = np.linalg.norm(g)
    target = max(min(0.5, np.sqrt(norm)) * norm, floor)
    return _cg_solve(H, -g, target, getattr(H, "precondition", None))


def _cg_solve(H, b, target, precondition=None):
    """``H^-1 b`` by conjugate gradients, to a residual ``||H s - b||`` of ``target``,
    preconditioned by ``precondition(r)`` (an approximate ``H^-1 r``; None: none); at a
    direction of negative curvature it stops (with ``b`` itself, the steepest descent of
    ``H``'s quadratic, if it is the first)."""
    if precondition is None:
        precondition = np.copy
    s, r = np.zeros_like(b), b.copy()
    d = precondition(r)
    rz, rr = float(r @ d), float(r @ r)
    for _ in range(_CG_MAX_ITER):
        if np.sqrt(rr) <= target:
            break
        Hd = H @ d
        curve = float(d @ Hd)
        if curve <= 1e-14 * float(d @ d):
            return s if np.any(s) else b.copy()
        alpha = rz / curve
        s += alpha * d
        r -= alpha * Hd
        z = precondition(r)
        rz, rz_old, rr = float(r @ z), rz, float(r @ r)
        d = z + (rz / rz_old) * d
    return s


def _woodbury_inverse(alpha, Ja):
    """``r -> P^-1 r`` for ``P = alpha I + Ja^T Ja`` (``Ja`` of few rows): by Woodbury's
    identity, one solve of ``alpha I + Ja Ja^T``."""
    factor = cho_factor(alpha * np.eye(len(Ja)) + Ja @ Ja.T)

    def apply(r):
        return (r - Ja.T @ cho_solve(factor, Ja @ r)) / alpha

    return apply


class HessianOperator(LinearOperator):
    """An ``n x n`` Hessian as products ``matvec`` (each a read of every row), with, where
    given, its ``diagonal()`` (a callable: one more read) and ``precondition(r)``, an
    approximate ``H^-1 r`` for conjugate gradients. The problems' wide Hessians give their
    diagonal; the finish's augmented Lagrangian adds its preconditioner."""

    def __init__(self, n, matvec, *, diagonal=None, precondition=None):
        super().__init__(dtype=np.dtype(float), shape=(n, n))
        self._product, self._diagonal, self.precondition = matvec, diagonal, precondition

    def _matvec(self, v):
        return self._product(np.ravel(v))

    @property
    def has_diagonal(self) -> bool:
        return self._diagonal is not None

    def diagonal(self) -> np.ndarray:
        """The Hessian's diagonal (a read of every row)."""
        if self._diagonal is None:
            raise NotImplementedError("this Hessian operator gives no diagonal")
        return self._diagonal()
