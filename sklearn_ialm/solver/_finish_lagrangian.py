"""The augmented Lagrangian of the finish's inner solves (see :mod:`.finish`): its
evaluations on all rows, counted against the budget, its Hessian, and the inner solve by
Newton's method (or L-BFGS-B).
"""

from __future__ import annotations

import weakref

import numpy as np
from scipy.linalg import eigh
from scipy.optimize import minimize

from ._newton_steps import HessianOperator, _newton_step, _solve_matrix, _woodbury_inverse
from .kkt import level_values
from .prox import Box, Ridge


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
#: Whether a Newton direction's search of the kinks' sides adds the last step's to the
#: point's own (see :meth:`_AugmentedLagrangian.newton`).
_WARM_SIDES = True
#: Conjugate gradients stop at a residual of this share of the inner solve's tolerance.
_CG_FLOOR = 0.5


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
        self._at = None  # what point reads of it whatever (y, beta) (see _terms_at)
        self._curvature = None  # the data terms of the Hessian (see hessian)
        self._curvature_at = None  # the x (its bytes) where they were formed
        self._flip = None  # the flip of their negative eigenvalues (see _data_flip)
        self._data_terms = None  # the Hessian's terms but the penalty's (see hessian)
        self.best_jacobian = None  # Jv at best (a Newton solve's)
        self.best_evaluation = None  # the problem's (f0, grad, c, J) at best (the same)
        self.fresh_curvature = False  # whether the data curvature is formed at every step
        self._typical_curvature = None  # the preconditioner's scalar (wide data)
        # The trust region of steps on an indefinite Hessian (see newton; None: none).
        self.radius = None
        self.sides = None  # the sides of the kinks where the last direction ends
        self.step_track = None  # the rows' scores of the last direction (see direction)
        self._moved = None  # the scores of the point to evaluate next, where known
        self.trust_region = bool(getattr(problem, "trust_region", False))
        # Whether each constraint moves with one free level at most: then the levels that
        # minimise the augmented Lagrangian at a given x are exact (see _levels_solved).
        self.separable_levels = levels is not None and bool(
            np.all(np.count_nonzero(levels, axis=1) <= 1)
        )

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
        c = self.constraint_values(v)
        f, g0, Jv = self._at
        w = y + beta * c
        w[self.ineq] = np.maximum(w[self.ineq], 0.0)
        value = f + float(w @ w - y @ y) / (2.0 * beta)
        return value, g0 + Jv.T @ w, c, w, Jv

    def constraint_values(self, v):
        """The constraint values (with the levels' shift) at ``v``, its evaluation formed
        where ``x`` is new (see :meth:`point`)."""
        x, tau = self.split(v)
        key = x.tobytes()  # the levels move the offsets only: no row is read for them
        if self._second is None or self._second[0] != key:
            self.charge(1)
            # The last point's evaluation (its rows' scores, kept for its Hessian: an
            # n-vector) is let go before this one is formed, not after.
            self._second = self._at = None
            moved, self._moved = self._moved, None
            more = {} if moved is None else {"scores": moved}
            self._second = (key, self.problem.second_order_evaluation(x, **more))
            self._at = self._terms_at(x, len(v))
        return np.asarray(self._second[1][2], dtype=float) + self.shift(tau)

    def _terms_at(self, x, size):
        """What :meth:`point` reads of the evaluation at ``x`` whatever the multipliers and
        levels: ``f0 + h(x)``, the gradient of ``f0 + h`` in ``(x, tau)`` and the Jacobian
        ``Jv`` (formed once per ``x``, where a point of 100 groups formed its 200 x 113
        Jacobian at each of its three or four calls)."""
        f0, grad, c0, J, _ = self._second[1]
        Jx = np.asarray(J, dtype=float).reshape(len(c0), self.p)
        Jv = Jx if self.levels is None else np.hstack([Jx, self.levels])
        g0 = np.concatenate(
            [np.asarray(grad, dtype=float) + self.h_grad(x), np.zeros(size - self.p)]
        )
        return float(f0) + self.h_value(x), g0, Jv

    def _levels_solved(self, v, y, beta):
        """:meth:`point` at ``v`` with its free levels first set, in place, where they
        minimise the augmented Lagrangian at ``v``'s ``x`` (:func:`~.kkt.level_values`; no
        row is read for them, and the value can only fall).

        The levels' part of the augmented Lagrangian is piecewise quadratic, with a kink
        where each constraint of a band turns on or off; Newton's steps in ``(x, tau)``
        crossed those kinks back and forth, the levels' gradient stuck at 2e-3 while ``x``'s
        had converged (Adult by race x sex, demographic parity 0.05: 18 Newton steps, each
        with its curvature, in the first inner solve after the steering moved the bound).
        """
        if not self.separable_levels:
            return self.point(v, y, beta)
        # (Only the values are read here: the point's gradient is formed once, below.)
        c0 = self.constraint_values(v) - self.shift(v[self.p :])
        v[self.p :] = level_values(self.levels, c0, y, beta)
        return self.point(v, y, beta)

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
            if getattr(self.problem, "curvature_at_zero_multipliers", False):
                # A constraint with no multiplier yet (the first solve from zero) has its
                # penalty's weight w: capped at |y| = 0 it added no curvature, and the
                # steps converged only linearly (wine, a group tied to class 0, per-class
                # bound 0.04: the first inner solve took 50 Newton steps, 100 reads).
                mu = np.where(y == 0, w, mu)
            self.charge(getattr(self.problem, "curvature_passes", 0))
            self._curvature = None  # (let go first: its row weights are an n-vector)
            self._curvature = self._second[1][4](mu)
            self._curvature_at = self._second[0]
            self._flip = self._data_terms = None
        data, p, q = self._curvature, self.p, Jv.shape[1] - self.p
        # h is NoProx or Ridge: its gradient is linear, its Hessian the diagonal of ones'.
        diag_h = self.h_grad(np.ones(p))
        Ja = np.sqrt(beta) * Jv[active]
        if isinstance(data, np.ndarray):
            if self._data_terms is None:
                # The data and h terms in (x, tau), formed once per data curvature.
                self._data_terms = np.zeros((p + q, p + q))
                self._data_terms[:p, :p] = data + np.diag(diag_h)
            return self._data_terms + Ja.T @ Ja

        def matvec(s):
            self.charge(1)  # a product with the data's Hessian reads every row
            out = Ja.T @ (Ja @ s)
            out[:p] += data @ s[:p] + diag_h * s[:p]
            return out

        return HessianOperator(
            p + q, matvec, precondition=self._preconditioner(data, diag_h, Ja),
            image=getattr(data, "image", None),
        )  # fmt: skip

    def _flip_of(self, H):
        """:meth:`_data_flip` for the dense Hessians of the problems with a trust region
        (multi-class: their 650 x 650 eigendecompositions were most of a digits fit), else
        None (the full eigendecomposition of small matrices)."""
        return self._data_flip if self.trust_region and isinstance(H, np.ndarray) else None

    def _data_flip(self):
        """``2 V diag(lam) V^T`` of the negative eigenpairs ``(lam, V)`` of the data terms of
        the Hessian (with ``h``'s), formed once per data curvature (see
        :func:`~._newton_steps._solve_matrix`): the penalty's terms are positive
        semidefinite, so the data terms hold all of the Hessian's indefiniteness."""
        if self._flip is None:
            D = self._curvature + np.diag(self.h_grad(np.ones(self.p)))
            lam, V = eigh(D, subset_by_value=(-np.inf, 0.0), driver="evr", check_finite=False)
            self._flip = (V * (2.0 * lam)) @ V.T
        return self._flip

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
                # Held weakly: scipy 1.9's ScalarFunction is a reference cycle (its
                # closures hold it), which kept this object, and the problem's per-row
                # arrays with it, alive until the garbage collector ran (a verdict's
                # refits then held two fits' arrays at once: 1.08 x X).
                evaluate = weakref.WeakMethod(self.evaluate)
                minimize(
                    lambda v, *args: evaluate()(v, *args), v, args=(y, beta), jac=True,
                    method="L-BFGS-B",
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
        X = _solve_matrix(H, np.column_stack([JA.T, g]), flip=self._flip_of(H))
        # The inner solve ends at a gradient g, not at zero: the step's primal part is
        # -H^-1 (g + J^T dy), which moves c by -J H^-1 g as well (an SQP step).
        step = np.linalg.lstsq(JA @ X[:, :-1], c[active] - JA @ X[:, -1], rcond=1e-12)[0]
        out = w.copy()
        out[active] = y[active] + step
        out[self.ineq] = np.maximum(out[self.ineq], 0.0)
        return out if np.all(np.isfinite(out)) else None

    def direction(self, g, y, beta, c, w, Jv, refresh, floor=0.0, start=None):
        """The Newton step at the last :meth:`point` (gradient ``g``); the sides of the
        kinks where it ends in ``self.sides``.

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

        The search starts from the point's own sides, with a Hessian matrix those of
        ``start`` added (where the last step ended, see :meth:`newton`).
        """
        active = ~self.ineq | (w > 0)
        if start is not None and isinstance(self._curvature, np.ndarray):
            # Not with an operator: there the search only adds sides, and the last step's
            # would stay in the model whether or not this step reaches them.
            active |= start
        smooth = g - Jv.T @ w  # the gradient without the penalty's terms
        a = y + beta * c
        step, trials = None, {}
        for i in range(_ACTIVE_SET_ITER):
            # A side of the kinks tried before gives the same step (the same matrix and
            # gradient): it is taken again, not factorised again (the sides cycled in 3 to 7
            # of the 51 to 64 trials of a digits fit, each a 650 x 650 factorisation).
            key = active.tobytes()
            if key not in trials:
                H = self.hessian(y, beta, w, Jv, refresh and i == 0, active)
                rhs = smooth + Jv[active].T @ a[active]
                step_of = _newton_step(H, rhs, floor, self.radius, self._flip_of(H))
                trials[key] = (step_of, getattr(H, "last_track", None))
            trial, track = trials[key]
            if step is not None and float(g @ trial) >= 0.0:
                break  # not a descent direction of the function itself: keep the last
            step, self.step_track = trial, track
            ends = ~self.ineq | (a + beta * (Jv @ step) > 0)
            if not isinstance(H, np.ndarray):
                ends |= active
            if np.array_equal(ends, active):
                break
            active = ends
        # (At every exit, the sides where the kept step ends.)
        self.sides = active
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
        v = v.copy()
        value, g, c, w, Jv = self._levels_solved(v, y, beta)
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
        # Each direction's search of the kinks' sides starts from the point's own and
        # those where the last step ended (a solve's first, the last solve's last): the
        # levels' re-solve at each point turns off most of the sides the steps end on
        # (100 groups of 20 rows: 4 to 65 of the 70 left, 24 factorisations for 11
        # directions; 17 from both sides, the same model).
        start = self.sides if _WARM_SIDES else None
        for _ in range(_NEWTON_MAX_ITER):
            if np.linalg.norm(g) <= tol:
                return
            step = self.direction(g, y, beta, c, w, Jv, refresh, _CG_FLOOR * tol, start)
            start = self.sides if _WARM_SIDES else None
            slope, t = float(g @ step), 1.0
            refresh = False
            # (Only from a Hessian formed at this point: its scores are the point's.)
            track = self.step_track if self._curvature_at == self._second[0] else None
            while True:
                trial = v + t * step
                # (The trial's scores from the direction's, where its products kept them.)
                self._moved = None if track is None else track.moved(t)
                out = self._levels_solved(trial, y, beta)
                self._moved = None
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
