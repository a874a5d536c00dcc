"""The linear algebra of the finish's Newton steps: a dense solve (Cholesky, or the
Hessian made positive definite by flipping its negative eigenvalues, within a trust region),
conjugate gradients on a Hessian operator, and its preconditioner by Woodbury's identity.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.linalg.lapack import dpotrf, dpotrs
from scipy.sparse.linalg import LinearOperator

__all__ = ["HessianOperator"]

#: Bisections of the shift of :func:`_within` (on a log scale, from 1e-12 of its upper end).
_SHIFT_BISECTIONS = 40
#: Most conjugate-gradient iterations of one Newton step (Hessian-vector products).
_CG_MAX_ITER = 200
#: Most shifted factorisations of :func:`_shifted_solve`, and its relative tolerance on the
#: step's length.
_SHIFT_MAX_ITER = 30
_SHIFT_RTOL = 1e-10


def _newton_step(H, g, floor=0.0, radius=None, flip=None):
    """``-H^-1 g``: by Cholesky where ``H`` is positive definite (a convex loss, a ridge),
    else with ``H`` made positive definite (a descent direction where a nonconvex loss
    leaves ``H`` indefinite, or the levels singular): by ``flip`` where given (see
    :func:`_solve_matrix`), else with its eigenvalues taken in absolute value and floored;
    given a ``radius``, a step longer than it is shifted until it is no longer
    (:func:`_within`, :func:`_shifted_solve`); by conjugate gradients where ``H`` is an
    operator (:func:`_cg_step`, to a residual of at least ``floor``)."""
    if not isinstance(H, np.ndarray):
        return _cg_step(H, g, floor)
    return -_solve_matrix(H, g, radius, flip)


def _solve_matrix(H, b, radius=None, flip=None):
    """``H^-1 b`` (``b`` a vector or columns), see :func:`_newton_step`.

    ``flip()``, where given, is ``2 V diag(lam) V^T`` of the negative eigenpairs of the
    leading block of ``H`` that holds all of its indefiniteness (the data curvature; the
    penalty's terms added to it are positive semidefinite): subtracted, it flips their
    sign, and that matrix is factorised by Cholesky. It serves where ``H`` is indefinite,
    and also where ``H``'s own step is longer than the radius (the shift then starts from
    the flipped matrix). The flip is one partial eigendecomposition per data curvature,
    shared by every step that reuses it, where the absolute values took a full one per
    step (digits with a group tied to one class, per-class bound 0.02: 42 of 650 x 650,
    61 % of the fit's CPU).
    """
    try:
        out = _cholesky_solve(H, b)
        # A positive definite H keeps to the radius too: on digits (per-class bound 0.06,
        # the penalty at 1e4) its steps of length 5.8, one after another, were cut to 1e-7
        # of it while the radius was 6e-7 (90 reads for no decrease in one inner solve).
        if radius is None or np.ndim(b) != 1 or np.linalg.norm(out) <= radius:
            return out
    except np.linalg.LinAlgError:
        pass
    if flip is not None:
        M = H + H.T
        M *= 0.5
        F = flip()
        M[: len(F), : len(F)] -= F
        try:
            factor = cho_factor(M, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            pass  # singular where flipped: the absolute values below, floored
        else:
            return _shifted_solve(M, factor, b, radius)
    lam, V = np.linalg.eigh(0.5 * (H + H.T))
    lam = np.abs(lam)
    lam = np.maximum(lam, max(1e-10 * float(lam.max(initial=0.0)), 1e-12))
    if radius is not None and np.ndim(b) == 1:
        return V @ _within(V.T @ b, lam, radius)
    return V @ ((V.T @ b) / (lam if np.ndim(b) == 1 else lam[:, None]))


def _cholesky_solve(H, b):
    """``cho_solve(cho_factor(H), b)``, the same LAPACK routines and bits, called directly
    for float64 inputs: scipy's wrappers (their checks, the routines' look-up, the batch
    dispatch) took as long as a 112 x 112 factorisation (100 groups of 20 rows: 24 a fit).
    Non-finite entries raise scipy's ``ValueError``, a matrix that is not positive definite
    :class:`numpy.linalg.LinAlgError`, as :func:`scipy.linalg.cho_factor` does."""
    if H.dtype != np.float64 or np.asarray(b).dtype != np.float64 or H.ndim != 2:
        return cho_solve(cho_factor(H), b)
    if not (np.isfinite(H).all() and np.isfinite(b).all()):
        return cho_solve(cho_factor(H), b)  # (raises scipy's error)
    c, info = dpotrf(H, lower=0, clean=0, overwrite_a=0)
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor not positive definite")
    if info < 0:
        return cho_solve(cho_factor(H), b)
    out, info = dpotrs(c, b, lower=0)
    if info != 0:
        return cho_solve(cho_factor(H), b)
    return out


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


def _shifted_solve(M, factor, b, radius):
    """``(M + sigma I)^-1 b`` for ``M`` positive definite (``factor`` its lower Cholesky
    factor), ``sigma = 0`` where that is within ``radius`` (or there is none, or ``b`` holds
    columns), else the ``sigma`` whose step's length is the radius: Newton's method on
    ``1 / ||s(sigma)|| = 1 / radius`` (Moré and Sorensen), which rises to it monotonically
    from ``sigma = 0``, a Cholesky factorisation per iteration."""
    out = cho_solve(factor, b, check_finite=False)
    if radius is None or np.ndim(b) != 1 or np.linalg.norm(out) <= radius:
        return out
    sigma, shifted, diagonal = 0.0, M.copy(), np.arange(len(M))
    for _ in range(_SHIFT_MAX_ITER):
        norm = np.linalg.norm(out)
        if abs(norm - radius) <= _SHIFT_RTOL * radius:
            break
        q = solve_triangular(factor[0], out, lower=True, check_finite=False)
        sigma += (norm / np.linalg.norm(q)) ** 2 * (norm - radius) / radius
        shifted[diagonal, diagonal] = M[diagonal, diagonal] + sigma
        factor = cho_factor(shifted, lower=True, check_finite=False)
        out = cho_solve(factor, b, check_finite=False)
    return out * min(1.0, radius / np.linalg.norm(out))


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
    track = H.new_track() if isinstance(H, HessianOperator) else None
    if track is not None:
        H.last_track = track
    s, r = np.zeros_like(b), b.copy()
    d = precondition(r)
    rz, rr = float(r @ d), float(r @ r)
    for _ in range(_CG_MAX_ITER):
        if np.sqrt(rr) <= target:
            break
        Hd = H @ d
        curve = float(d @ Hd)
        if curve <= 1e-14 * float(d @ d):
            if np.any(s):
                return s
            if track is not None:
                track.lose()  # (b's own scores were never formed)
            return b.copy()
        alpha = rz / curve
        s += alpha * d
        if track is not None:
            track.add(alpha)
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
    diagonal; the finish's augmented Lagrangian adds its preconditioner.

    ``image``, where given, is ``(last, key, held)``: each product puts the rows' scores of
    its vector (of the entries the problem reads) in ``last["image"]``, and
    ``held["scores"]`` are the rows' scores at the Hessian's point (until a track moves
    them). Conjugate gradients then
    keep the scores of their step (:meth:`new_track`), so that the point a Newton step
    reaches is scored without a read of its own (``_ScoreTrack.moved``): the scores
    are linear in the parameters (CSR 1e6 x 1e4: an evaluation read the rows twice).
    """

    def __init__(self, n, matvec, *, diagonal=None, precondition=None, image=None):
        super().__init__(dtype=np.dtype(float), shape=(n, n))
        self._product, self._diagonal, self.precondition = matvec, diagonal, precondition
        self.image = image
        self.last_track = None  # the track of the last conjugate-gradient solve

    def new_track(self):
        """A :class:`_ScoreTrack` for a solve by products with this Hessian, or None."""
        return None if self.image is None else _ScoreTrack(self.image)

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


class _ScoreTrack:
    """The rows' scores of a conjugate-gradient solution ``s = sum_i alpha_i d_i``: the sum
    of ``alpha_i`` times the scores of each product's ``d_i`` (see :class:`HessianOperator`)."""

    def __init__(self, image):
        self._last, self._key, self._base = image
        self._sum, self._lost = None, False

    def add(self, alpha):
        """Add ``alpha`` times the last product's scores (read once, then let go)."""
        z = self._last.pop("image", None)
        if z is None:
            self._lost = True
            return
        z *= alpha  # (the product's own array: read no more)
        self._sum = z if self._sum is None else np.add(self._sum, z, out=self._sum)

    def lose(self):
        """The solution is no longer the products' sum."""
        self._lost = True

    def moved(self, t):
        """The rows' scores at the Hessian's point moved by ``t`` times the solution, by the
        key the problem reads them by; None where not known. Once per Hessian: they are
        formed in the sum's own array, and the point's scores are let go (no n-vector more
        at the evaluation that reads them, the finish's peak memory), so a shorter step of
        the line search reads the rows instead."""
        base = None if self._lost or self._sum is None else self._base.pop("scores", None)
        if base is None:
            return None
        out, self._sum, self._lost = self._sum, None, True
        np.multiply(out, t, out=out)
        return {self._key: np.add(base, out, out=out)}
