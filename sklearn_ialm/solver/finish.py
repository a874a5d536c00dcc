"""The deterministic finish: the augmented Lagrangian method on all rows, from the multipliers
that Stoc-iALM found.

Stoc-iALM's minibatch steps find the multipliers (and so which constraints are active) in a
few passes, but their precision is bound by the gradient noise of a small batch: larger or
preconditioned stochastic steps diverge once the penalty grows (see the user guide,
"How a fit ends"). Started from the stochastic phase's point and multipliers, a few outer
iterations of the classical augmented Lagrangian method with exact inner solves end where
``LogisticRegression`` ends: at a gradient as small as its own. With no active constraint
the augmented Lagrangian is the unconstrained objective, so a bound that does not bind gives
the unconstrained model.

With the slacks of the inequalities minimised out, the augmented Lagrangian of
``min g(x) + h(x)  s.t.  c_E(x) = 0, c_I(x) <= 0`` is

    ``g(x) + h(x) + sum_i (w_i^2 - y_i^2) / (2 beta)``,  ``w = y + beta c(x)`` (``w_I >= 0``)

whose gradient is ``grad g + grad h + J^T w``; the multiplier step sets ``y = w``. Free
levels ``tau`` (``c(x) + levels @ tau <= 0``, see :func:`~.kkt.level_shift`) are variables of
the inner solve beside ``x``. ``h`` must be smooth (:class:`~.prox.Ridge`, :class:`~.prox.NoProx`)
or a :class:`~.prox.Box` (its bounds go to L-BFGS-B).

The inner solves are Newton's method where the problem offers
``second_order_evaluation(x) -> (f0, grad, c, J, hessian)`` (every
:class:`~sklearn_ialm.problems.LinearProblem` with one of the package's losses, and its Dask
form) and ``h`` is smooth: ``hessian(mu)`` is the Hessian of ``g + mu . c``, the constraint
curvature weighted by the solve's multipliers. For a linear score that is one weighted Gram
matrix of the rows whatever the number of constraints, so an iteration costs about the same
with one constraint or forty; with the penalty's ``beta J^T J`` it makes the inner solves
converge in a few iterations where L-BFGS-B, blind to the penalty's curvature, needed tens
to hundreds of evaluations (Adult by race, five groups, every fairness kind at 0.05: 301
passes, none converged; on a Dask cluster each evaluation is a compute). Above a thousand
parameters the Hessian is an operator and the steps come from conjugate gradients. Other
problems (a loss of the user's, a box) keep L-BFGS-B (scipy's ``L-BFGS-B``), each evaluation
one read of every row (``problem.full_evaluation``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator

from .kkt import level_values
from .prox import Box, NoProx, Ridge

__all__ = ["FinishResult", "HessianOperator", "finish_applies", "alm_finish"]

#: Penalty growth when an outer iteration did not shrink the constraint violation fourfold
#: (the classical rule of the augmented Lagrangian method).
_PENALTY_GROWTH = 10.0
_PRIMAL_DECREASE = 0.25
#: The inner solves' tolerance: a share of the last constraint violation, at most the first.
_INNER_SHARE = 0.1
_FIRST_INNER_TOL = 1e-3


@dataclass
class FinishResult:
    """What :func:`alm_finish` returns.

    Attributes
    ----------
    x : ndarray of shape (n_params,)
    shift : ndarray of shape (n_constraints,)
        The change of the constraint offsets by the free levels (zeros without levels).
    multipliers : ndarray of shape (n_constraints,)
        ``y`` after the last multiplier step (``>= 0`` on the inequalities).
    solve_multipliers : ndarray of shape (n_constraints,)
        ``y`` of the last inner solve: ``multipliers`` is ``max(solve_multipliers + beta c,
        0)`` (on the inequalities) at ``x``.
    beta : float
        The penalty of the last inner solve.
    primal_residual : float
        ``||k||``, ``k = c(x) + shift + s`` with the slacks at their minimiser.
    dual_residual : float
        ``||grad g + grad h + J^T y||`` (and the levels' block), with the returned ``y``.
    converged : bool
        Both residuals within their tolerances.
    n_evaluations : float
        Reads of every row: calls of ``problem.full_evaluation`` (or
        ``second_order_evaluation``), each one, and the Newton steps' curvature
        (``problem.curvature_passes`` each; a Hessian-vector product one).
    n_outer_iter : int
    message : str
    evaluation : tuple or None
        The problem's ``(f0, grad, c, J)`` at ``x`` on all rows (``c`` with the problem's
        offsets, without ``shift``), where the last inner solve formed it (Newton's): the
        verdict on ``x`` needs no read of its own.
    history : dict of ndarray
        One entry per outer iteration: ``primal_residual``, ``dual_residual``, ``beta`` and
        ``evaluations`` (the count so far).
    """

    x: np.ndarray
    shift: np.ndarray
    multipliers: np.ndarray
    solve_multipliers: np.ndarray
    beta: float
    primal_residual: float
    dual_residual: float
    converged: bool
    n_evaluations: float
    n_outer_iter: int
    message: str
    history: dict
    evaluation: tuple | None = None


def finish_applies(problem) -> bool:
    """Whether :func:`alm_finish` can solve ``problem``: a finite sum whose ``h`` is smooth
    or a box (an L1 term would need a proximal quasi-Newton method)."""
    h = getattr(problem, "h", NoProx())
    return bool(problem.finite) and type(h) in (NoProx, Ridge, Box)


def _h_parts(h, p):
    """``(value, gradient, bounds)`` of ``h`` for L-BFGS-B."""
    if isinstance(h, Ridge):
        return h.value, lambda x: h._lam(x) * x, None
    if isinstance(h, Box):
        lower = np.broadcast_to(h.lower, (p,))
        upper = np.broadcast_to(h.upper, (p,))
        bounds = [(lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)
                  for lo, hi in zip(lower, upper, strict=True)]  # fmt: skip
        return (lambda x: 0.0), (lambda x: np.zeros_like(x)), bounds
    return (lambda x: 0.0), (lambda x: np.zeros_like(x)), None


class _OutOfBudget(Exception):
    """The budget of evaluations is spent (L-BFGS-B's own ``maxfun`` may overrun it)."""


def _newton_applies(problem) -> bool:
    """Whether the inner solves use Newton's method (see the module docstring)."""
    second = getattr(problem, "second_order_evaluation", None)
    available = getattr(problem, "second_order_available", lambda: second is not None)
    return second is not None and available() and type(problem.h) in (NoProx, Ridge)


#: Armijo's sufficient decrease of a Newton step.
_ARMIJO = 1e-4
#: The shortest step of a Newton line search before the inner solve gives up.
_MIN_STEP = 1e-8
#: A Newton step that shrinks the gradient less than this refreshes the data curvature.
_NEWTON_CONTRACTION = 0.25
#: The data curvature is formed at every Newton step when it costs at most this share of an
#: evaluation's arithmetic (``problem.curvature_cost``).
_CHEAP_CURVATURE = 0.5
#: Most Newton iterations of one inner solve.
_NEWTON_MAX_ITER = 50
#: Most sides of the constraints' kinks tried for one Newton step (see
#: :meth:`_AugmentedLagrangian.direction`).
_ACTIVE_SET_ITER = 5
#: Bisections of the shift of :func:`_within` (on a log scale, from 1e-12 of its upper end).
_SHIFT_BISECTIONS = 40
#: Most conjugate-gradient iterations of one Newton step (Hessian-vector products).
_CG_MAX_ITER = 200
#: Conjugate gradients stop at a residual of this share of the inner solve's tolerance.
_CG_FLOOR = 0.5


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


class _AugmentedLagrangian:
    """The augmented Lagrangian in ``(x, tau)`` at fixed ``(y, beta)``, on all rows, with
    the evaluation of the best point of the current solve kept (``best``)."""

    def __init__(self, problem, levels, ineq, max_evaluations):
        self.problem, self.levels, self.ineq = problem, levels, ineq
        self.p = problem.n_params
        self.h_value, self.h_grad, self.bounds = _h_parts(problem.h, self.p)
        self.n_evaluations, self.max_evaluations = 0, max_evaluations
        self.best = None
        self._second = None  # (x's bytes, the problem's second-order evaluation at x)
        self._curvature = None  # the data terms of the Hessian (see hessian)
        self._curvature_at = None  # the x (its bytes) where they were formed
        self.best_jacobian = None  # Jv at best (a Newton solve's)
        self.best_evaluation = None  # the problem's (f0, grad, c, J) at best (the same)
        self.fresh_curvature = False  # whether the data curvature is formed at every step
        self._typical_curvature = None  # the preconditioner's scalar (wide data)
        # The trust region of steps on an indefinite Hessian (see newton; None: none).
        self.radius = None
        self.trust_region = bool(getattr(problem, "trust_region", False))

    def split(self, v):
        return v[: self.p], v[self.p :]

    def shift(self, tau):
        """The change of the constraint offsets by the free levels ``tau``."""
        if self.levels is None:
            return np.zeros(len(self.ineq))
        return self.levels @ tau

    def evaluate(self, v, y, beta):
        if self.n_evaluations >= self.max_evaluations:
            raise _OutOfBudget
        x, tau = self.split(v)
        f0, grad, c, jac_t = self.problem.full_evaluation(x)
        self.n_evaluations += 1
        c = np.asarray(c, dtype=float) + self.shift(tau)
        w = y + beta * c
        w[self.ineq] = np.maximum(w[self.ineq], 0.0)
        value = float(f0) + self.h_value(x) + float(w @ w - y @ y) / (2.0 * beta)
        gx = np.asarray(grad, dtype=float) + self.h_grad(x)
        if len(w):
            gx = gx + jac_t(w)
        gt = self.levels.T @ w if self.levels is not None else np.zeros(0)
        g = np.concatenate([gx, gt])
        if self.best is None or value <= self.best[0]:
            self.best = (value, v.copy(), c, w, g)
        return value, g

    def charge(self, n):
        """Count ``n`` reads of every row, or raise :class:`_OutOfBudget` if they do not fit."""
        if self.n_evaluations + n > self.max_evaluations:
            raise _OutOfBudget
        self.n_evaluations += n

    def point(self, v, y, beta):
        """``(value, gradient, c, w, Jv)`` of the augmented Lagrangian at ``v``, with ``Jv``
        the constraints' Jacobian in ``(x, tau)``: one evaluation of the problem per
        distinct ``x`` (a new ``(y, beta)`` or new levels at the same point, as at the start
        of an outer iteration, read no row)."""
        x, tau = self.split(v)
        key = x.tobytes()  # the levels move the offsets only: no row is read for them
        if self._second is None or self._second[0] != key:
            self.charge(1)
            # The last point's evaluation (its rows' scores, kept for its Hessian: an
            # n-vector) is let go before this one is formed, not after.
            self._second = None
            self._second = (key, self.problem.second_order_evaluation(x))
        f0, grad, c0, J, _ = self._second[1]
        c = np.asarray(c0, dtype=float) + self.shift(tau)
        w = y + beta * c
        w[self.ineq] = np.maximum(w[self.ineq], 0.0)
        value = float(f0) + self.h_value(x) + float(w @ w - y @ y) / (2.0 * beta)
        Jx = np.asarray(J, dtype=float).reshape(len(c), self.p)
        Jv = Jx if self.levels is None else np.hstack([Jx, self.levels])
        g = np.concatenate(
            [np.asarray(grad, dtype=float) + self.h_grad(x), np.zeros(len(v) - self.p)]
        )
        return value, g + Jv.T @ w, c, w, Jv

    def hessian(self, y, beta, w, Jv, refresh, active):
        """The augmented Lagrangian's Hessian at the last :meth:`point` (a matrix, or a
        :class:`~scipy.sparse.linalg.LinearOperator` whose products are counted reads), its
        penalty terms those of the constraints ``active``.

        Its data terms (the objective's and the constraints' second derivatives: a pass over
        the rows with a Gram matrix, :attr:`curvature_passes` reads) are those of the last
        call with ``refresh`` (or the first), which change little over a finish. The other
        terms (``h``'s, and the penalty's ``beta J^T J``) are the point's own.
        """
        if refresh or self._curvature is None:
            # The constraints' curvature weighted by the multipliers of the solve, not by
            # w: far from the constraint surface w (y + beta c) is many times the
            # multiplier it tends to, and its curvature term made steps that the line
            # search cut to a few thousandths (the steering's re-solves at beta = 1000).
            mu = np.minimum(w, np.abs(y))
            self.charge(getattr(self.problem, "curvature_passes", 0))
            self._curvature = None  # (let go first: its row weights are an n-vector)
            self._curvature = self._second[1][4](mu)
            self._curvature_at = self._second[0]
        data, p, q = self._curvature, self.p, Jv.shape[1] - self.p
        # h is NoProx or Ridge: its gradient is linear, its Hessian the diagonal of ones'.
        diag_h = self.h_grad(np.ones(p))
        Ja = np.sqrt(beta) * Jv[active]
        if isinstance(data, np.ndarray):
            H = np.zeros((p + q, p + q))
            H[:p, :p] = data + np.diag(diag_h)
            return H + Ja.T @ Ja

        def matvec(s):
            self.charge(1)  # a product with the data's Hessian reads every row
            out = Ja.T @ (Ja @ s)
            out[:p] += data @ s[:p] + diag_h * s[:p]
            return out

        return HessianOperator(p + q, matvec, precondition=self._preconditioner(data, diag_h, Ja))

    def _preconditioner(self, data, diag_h, Ja):
        """:func:`_woodbury_inverse` of the penalty ``Ja^T Ja`` and a scalar for the rest of the
        Hessian, or None without an active penalty or where ``data`` gives no diagonal.

        The penalty's few eigenvalues grow with ``beta`` (to 1e3) and each cost conjugate
        gradients a product or more; the scalar is the median of the Hessian's diagonal (of
        the first Hessian of the finish that needs it: a read of every row), the typical
        curvature of a parameter. Not the diagonal itself: on non-negative rows (TF-IDF,
        counts) the intercept and the columns' mean direction are nearly parallel, and
        scaled by their diagonal they became an eigenvalue near zero (CSR 2e5 x 1e4, a
        loose bound: 50 products where unpreconditioned CG took 27). On CSR 2e5 x 1e4 at a
        binding bound, the same systems took 46 products where unpreconditioned CG took 53.
        """
        if not len(Ja) or not getattr(data, "has_diagonal", False):
            return None
        if self._typical_curvature is None:
            self.charge(1)
            self._typical_curvature = float(np.median(data.diagonal() + diag_h))
        if not self._typical_curvature > 0:
            return None
        return _woodbury_inverse(self._typical_curvature, Ja)

    def solve(self, v, y, beta, tol, *, newton, bounds):
        """One inner solve from ``v`` (by :meth:`newton`, or L-BFGS-B within ``bounds``), its
        best point in ``best`` (None if no evaluation fitted the budget); whether the budget
        ran out during it."""
        self.best, self.best_jacobian, self.best_evaluation = None, None, None
        try:
            if newton:
                self.newton(v, y, beta, tol)
            else:
                minimize(
                    self.evaluate, v, args=(y, beta), jac=True, method="L-BFGS-B",
                    bounds=bounds,
                    options=dict(maxfun=10**9, maxiter=10**9, gtol=tol / np.sqrt(len(v)),
                                 ftol=1e-15, maxcor=20),
                )  # fmt: skip
        except _OutOfBudget:
            return True
        return False

    def newton_multipliers(self, y, beta):
        """The multipliers of a Newton step on the KKT system from the last solve's point
        (its multipliers ``y`` and penalty ``beta``), or None where they would need a read.

        At the inner solution, ``c`` moves with the multipliers as ``-J H^-1 J^T`` (``H``
        the augmented Lagrangian's Hessian, ``J`` the active constraints' Jacobian), so
        ``y + (J H^-1 J^T)^-1 c`` zeroes the active constraints to first order (at an
        inexact solution, ``c - J H^-1 g`` in place of ``c``: Newton's step on the KKT
        system, whose primal part the next solve's first step takes): an ``m x m`` solve
        that converges quadratically, where the classical step ``y + beta c`` gains a
        constant factor per outer iteration and needs ``beta`` to grow for it (1e6 x 20,
        demographic parity 0.02: the violation 5e-2, 3e-3, 2e-5, 1e-8 at ``beta = 10``,
        where the classical step took five solves and ``beta = 1000``). ``H^-1`` is the
        Cholesky solve of the Newton steps' matrix; with a Hessian operator (wide data) the
        classical step stays (``m`` solves by conjugate gradients would be reads), and so it
        does where the data curvature is not formed at every Newton step: from a curvature
        several steps old the steps converged only linearly, and ended just within ``tol``
        (a positive share bound on 1500 rows: 8e-7 at tol 1e-6, the objective 4e-6 below
        the optimum's), where the classical step's growing penalty ends far within it.
        """
        fresh = self.fresh_curvature and isinstance(self._curvature, np.ndarray)
        if not fresh or self.best_jacobian is None:
            return None
        _, _, c, w, g = self.best
        Jv = self.best_jacobian
        active = ~self.ineq | (w > 0)
        if not np.any(active):
            return None
        H = self.hessian(y, beta, w, Jv, False, active)
        JA = Jv[active]
        X = _solve_matrix(H, np.column_stack([JA.T, g]))
        # The inner solve ends at a gradient g, not at zero: the step's primal part is
        # -H^-1 (g + J^T dy), which moves c by -J H^-1 g as well (an SQP step).
        step = np.linalg.lstsq(JA @ X[:, :-1], c[active] - JA @ X[:, -1], rcond=1e-12)[0]
        out = w.copy()
        out[active] = y[active] + step
        out[self.ineq] = np.maximum(out[self.ineq], 0.0)
        return out if np.all(np.isfinite(out)) else None

    def direction(self, g, y, beta, c, w, Jv, refresh, floor=0.0):
        """The Newton step at the last :meth:`point` (gradient ``g``).

        The augmented Lagrangian is quadratic in each constraint's penalty only on one side
        of the kink of ``max(y + beta c, 0)``: an inequality inactive at the point adds no
        curvature, and a step that crosses its kink ran far past the minimum (on Adult's
        true-positive-rate parity at ``beta = 100``, steps the line search cut a
        thousandfold one after another: 41 reads in one inner solve). The step is the Newton step
        of the piecewise quadratic model on the side of each kink where the step itself
        ends (``y + beta (c + J s) > 0``), found by switching sides a few times (an
        active-set method on the model; no row is read). With a Hessian operator (each
        trial conjugate-gradient products) only the kinks the step crosses into the
        penalty's side are added: a step blind to the penalty it crosses into overshot it
        (CSR 2e5 x 1e4 at ``beta = 1000``: the value 0.59 to 12.2, three reads to cut the
        step back), where a step that leaves a penalty's side is only short.
        """
        active = ~self.ineq | (w > 0)
        smooth = g - Jv.T @ w  # the gradient without the penalty's terms
        a = y + beta * c
        step = None
        for i in range(_ACTIVE_SET_ITER):
            H = self.hessian(y, beta, w, Jv, refresh and i == 0, active)
            trial = _newton_step(H, smooth + Jv[active].T @ a[active], floor, self.radius)
            if step is not None and float(g @ trial) >= 0.0:
                break  # not a descent direction of the function itself: keep the last
            step = trial
            ends = ~self.ineq | (a + beta * (Jv @ step) > 0)
            if not isinstance(H, np.ndarray):
                ends |= active
            if np.array_equal(ends, active):
                break
            active = ends
        return step

    def newton(self, v, y, beta, tol):
        """The inner solve by Newton's method with Armijo steps, to ``||gradient|| <= tol``;
        ``best`` holds its last point (each accepted step lowers the value).

        The data curvature is refreshed (a pass with the Gram matrix) at the accepted point
        when its step shrank the gradient less than fourfold or needed a shorter step.

        Where the problem asks for it (``problem.trust_region``), the steps are kept within a
        trust region (:func:`_next_radius`): an indefinite Hessian's eigenvalues taken in
        absolute value make the steps along the directions of little curvature far too
        long, and so do a positive definite one's at a large penalty. On digits with the
        group tied to the label (per-class bound 0.05), steps the line search cut to a
        tenth, one after another, spent 130 reads of one inner solve and the fit's budget;
        within the region the fit converged in 185 passes.
        """
        value, g, c, w, Jv = self.point(v, y, beta)
        self._keep_best(value, v, c, w, g, Jv)
        self.radius = None
        # A curvature that costs a small share of an evaluation (a sample of many rows, or
        # a cluster's, which comes with each evaluation) is formed at every step: the steps
        # are then Newton's own (a reweighted logistic fit on 1e6 x 20 rows: 6 evaluations,
        # 7 with the rule below), the first included where the last solve's curvature
        # was formed at another point (1e6 x 20, demographic parity 0.02: that step
        # shrank the gradient 12-fold, against 38-fold from the point's own curvature).
        cheap = getattr(self.problem, "curvature_cost", 1.0) <= _CHEAP_CURVATURE
        self.fresh_curvature = cheap
        refresh = cheap and self._curvature_at != self._second[0]
        for _ in range(_NEWTON_MAX_ITER):
            if np.linalg.norm(g) <= tol:
                return
            step = self.direction(g, y, beta, c, w, Jv, refresh, _CG_FLOOR * tol)
            slope, t = float(g @ step), 1.0
            refresh = False
            while True:
                trial = v + t * step
                out = self.point(trial, y, beta)
                # Near the optimum the decrease is at the value's rounding: a step that
                # also shrinks the gradient is taken there.
                rounding = 1e-13 * max(1.0, abs(value))
                if out[0] <= value + _ARMIJO * t * slope or (
                    out[0] <= value + rounding and np.linalg.norm(out[1]) < np.linalg.norm(g)
                ):
                    break
                # The minimum of the quadratic through the value, the slope and the trial's
                # value (each trial is a read of all rows), kept within [t / 10, t / 2].
                curve = out[0] - value - slope * t
                t_min = -slope * t * t / (2.0 * curve) if curve > 0 else 0.5 * t
                t, refresh = min(max(t_min, 0.1 * t), 0.5 * t), True
                if t < _MIN_STEP:
                    return
            if self.trust_region:
                self.radius = _next_radius(self.radius, t, float(np.linalg.norm(step)))
            refresh = (
                cheap
                or refresh
                or np.linalg.norm(out[1]) > _NEWTON_CONTRACTION * np.linalg.norm(g)
            )
            v = trial
            value, g, c, w, Jv = out
            self._keep_best(value, v, c, w, g, Jv)

    def _keep_best(self, value, v, c, w, g, Jv):
        """The Newton solve's point ``v`` (just evaluated by :meth:`point`) as ``best``."""
        self.best, self.best_jacobian = (value, v.copy(), c, w, g), Jv
        self.best_evaluation = self._second[1][:4]


def _next_radius(radius, t, length):
    """The trust region after a Newton step of ``length`` accepted at the share ``t`` of it:
    the accepted step's length where the line search cut it, twice the radius where a full
    step reached it, else as it was."""
    if t < 1.0:
        return t * length
    if radius is not None and length >= 0.99 * radius:
        return 2.0 * radius
    return radius


def _first_of(*values):
    """The first of ``values`` that is not None."""
    return next(v for v in values if v is not None)


def _primal(c, y, beta, ineq):
    """``||c + s||`` with the slacks at the minimiser ``max(-(c + y / beta), 0)``."""
    k = c.copy()
    k[ineq] = np.maximum(c[ineq], -y[ineq] / beta)
    return float(np.linalg.norm(k))


def alm_finish(
    problem,
    x0,
    y0,
    beta0: float,
    *,
    tol: float,
    dual_tol: float,
    max_evaluations: int,
    max_outer_iter: int = 20,
    verbose: int = 0,
    passes_before: float = 0.0,
    pass_share: float = 1.0,
) -> FinishResult:
    """The augmented Lagrangian method with Newton (or L-BFGS-B) inner solves on all rows,
    from ``(x0, y0)`` at penalty ``beta0``.

    Parameters
    ----------
    problem : FiniteSumProblem
        See :func:`finish_applies`. Its ``offset`` is not changed: the levels' change is
        returned as ``shift``.
    x0, y0 : ndarray
        Start (Stoc-iALM's point and multipliers; ``y0`` is clipped to ``>= 0`` on the
        inequalities).
    beta0 : float
        The first inner solve's penalty.
    tol, dual_tol : float
        The primal residual's and the dual residual's (Euclidean norms) tolerances.
    max_evaluations : int
        Budget of reads of every row (evaluations, and the Newton steps' curvature: see
        :class:`FinishResult`'s ``n_evaluations``).
    max_outer_iter : int, default=20
    verbose : int, default=0
        ``> 0`` prints a line per outer iteration: the penalty, both residuals, the
        evaluations, the run's data passes so far and, on a cluster, the computes so far.
    passes_before : float, default=0.0
        The run's data passes before the finish (for the ``verbose`` lines).
    pass_share : float, default=1.0
        Data passes per evaluation (for the ``verbose`` lines).

    Returns
    -------
    FinishResult
    """
    m = problem.n_constraints
    ineq = np.asarray(problem.inequality, dtype=bool) if m else np.zeros(0, bool)
    levels = getattr(problem, "levels", None)
    al = _AugmentedLagrangian(problem, levels, ineq, max_evaluations)
    # A Newton step reads the rows for its point, its curvature and a trial point: with
    # fewer reads left it cannot end, where L-BFGS-B's first steps (a read each) make
    # progress (a 600-row Neyman-Pearson fit at max_passes=5 had 2 reads for its finish:
    # it returned its starting point, the constant model, instead of a model).
    newton = _newton_applies(problem) and max_evaluations >= 2 + getattr(
        problem, "curvature_passes", 0
    )
    y = np.array(y0, dtype=float).reshape(m)
    y[ineq] = np.maximum(y[ineq], 0.0)
    beta = float(beta0)
    v = np.concatenate(
        [np.asarray(x0, dtype=float), np.zeros(0 if levels is None else levels.shape[1])]
    )
    bounds = None if al.bounds is None else al.bounds + [(None, None)] * (len(v) - al.p)
    pres = dres = np.inf
    message, converged, k = "maximum number of outer iterations reached", False, 0
    if max_outer_iter < 1:
        raise ValueError(f"max_outer_iter must be >= 1, got {max_outer_iter!r}.")
    y_solve, beta_solve = y, beta
    # Whether the multipliers may come from Newton's step on the KKT system, whether the
    # last ones did, and the point and classical multipliers they replaced.
    kkt_steps, from_kkt, before_kkt = newton and m > 0, False, None
    record = {"primal_residual": [], "dual_residual": [], "beta": [], "evaluations": []}
    if levels is not None and newton and max_evaluations >= 2:
        # The free levels start where they minimise the augmented Lagrangian at x0 (no
        # further read): a warm start at a moved bound has them at zero, and from there
        # the first Newton steps crossed the kinks of max(y + beta c, 0) back and forth
        # (error-rate parity on Adult by race: 33 reads per re-solve instead of 1 to 3).
        c0 = al.point(v, y, beta)[2]
        v[al.p :] = level_values(levels, c0, y, beta)
    for k in range(max_outer_iter):
        if max_evaluations - al.n_evaluations < 2:
            message = "budget of data passes spent"
            break
        # Inexact inner solves while the multipliers are still moving: to a tenth of the
        # last constraint violation (in the gradient's units, capped at _FIRST_INNER_TOL),
        # the dual tolerance at the end; in the max-norm L-BFGS-B reads (entries within
        # tol / sqrt(n) put the Euclidean norm within tol).
        inner_tol = max(dual_tol, min(_FIRST_INNER_TOL, _INNER_SHARE * pres)) if m else dual_tol
        spent = al.solve(v, y, beta, inner_tol, newton=newton, bounds=bounds)
        if al.best is None:
            message = "budget of data passes spent"
            break
        _, v, c, w, g = al.best
        pres_new = _primal(c, y, beta, ineq) if m else 0.0
        y_solve, beta_solve = y, beta
        y = w.copy()
        dres = float(np.linalg.norm(g))
        for key, value in zip(record, (pres_new, dres, beta, al.n_evaluations), strict=True):
            record[key].append(value)
        if verbose:
            computes = getattr(problem, "describe_computes", lambda: "")()
            print(
                f"[finish] k={k} beta={beta:.3g} pres={pres_new:.2e} dres={dres:.2e} "
                f"evaluations={al.n_evaluations:g} "
                f"passes={passes_before + pass_share * al.n_evaluations:.3f}{computes}",
                flush=True,
            )
        if pres_new <= tol and dres <= dual_tol:
            pres, converged = pres_new, True
            message = "converged: primal and dual residuals <= tol on all rows"
            break
        if spent:
            pres, message = pres_new, "budget of data passes spent"
            break
        if from_kkt and pres_new > pres:
            # The last Newton multipliers moved the constraints away: the linear model of
            # c they solve does not hold this far from the optimum (five groups'
            # demographic parity from zero at beta = 1: the violation 0.15, 1.5, 8.2 and
            # on to 1e4, unconverged in 2000 reads). The solve is undone: the classical
            # steps go on from the last point, as they do where the curvature is not cheap.
            (v, y), kkt_steps, from_kkt = before_kkt, False, False
            al.best_evaluation = None  # (the undone solve's: not at v)
            continue
        kkt = al.newton_multipliers(y_solve, beta_solve) if kkt_steps else None
        before_kkt, from_kkt = (v, y), kkt is not None
        y = _first_of(kkt, y)
        if pres_new > _PRIMAL_DECREASE * pres and pres_new > tol:
            beta *= _PENALTY_GROWTH
        pres = pres_new
    x, tau = al.split(v)
    return FinishResult(
        x=x.copy(),
        shift=al.shift(tau),
        multipliers=y,
        solve_multipliers=y_solve,
        beta=beta_solve,
        primal_residual=float(pres),
        dual_residual=float(dres),
        converged=converged,
        n_evaluations=al.n_evaluations,
        n_outer_iter=k + 1,
        message=message,
        history={key: np.asarray(value) for key, value in record.items()},
        evaluation=al.best_evaluation if al.best is not None else None,
    )
