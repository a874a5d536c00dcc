"""Neyman-Pearson classification of two Gaussian classes: an expectation problem with a truth.

Positives ``a ~ N(mu_+, Sigma)``, negatives ``a ~ N(mu_-, Sigma)``, a linear score
``z = a.w + b`` and the paper's sigmoid loss ``phi(u) = 1 / (1 + exp(u))``:

    min_x  f0(x) = E_+[sigmoid(-z)] + l2/2 ||w||^2   s.t.   c(x) = E_-[sigmoid(z)] - max_fpr <= 0.

One sample ``xi`` is a pair (one positive row, one negative row), so the objective and the
constraint share one random variable as in the paper's eq. (1). The solver only sees the
sampler (:meth:`GaussianNeymanPearson.problem`); the *population* functions are computed
independently of it: for a class with mean ``mu``, ``z ~ N(m, s^2)`` with ``m = w.mu + b`` and
``s^2 = w' Sigma w``, so every expectation is a one-dimensional integral against the normal
density, and by Stein's lemma ``E[phi'(z) a] = E[phi'(z)] mu + E[phi''(z)] Sigma w``.

Why ``l2``: with a shared covariance the optimal test of the two classes is a linear threshold
(Neyman-Pearson lemma), and ``sigmoid(z)`` is a randomised test that only reaches it as
``||w|| -> inf``. Without a penalty the soft false-negative rate keeps decreasing along a ray
and has no finite minimiser, whatever the means; a small ridge term (not on the intercept)
gives a finite optimum with an active constraint.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.integrate import quad
from scipy.optimize import NonlinearConstraint, minimize
from scipy.special import expit

from ..solver.problem import SampledProblem
from .losses import SIGMOID_CURVATURE

__all__ = ["GaussianNeymanPearson"]

_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _sigmoid_derivatives(u: float) -> tuple[float, float, float]:
    """``sigmoid(u)`` and its first two derivatives, accurate in both tails."""
    e = math.exp(-abs(u))
    p = 1.0 / (1.0 + e) if u >= 0 else e / (1.0 + e)
    d1 = e / (1.0 + e) ** 2
    return p, d1, d1 * math.tanh(-0.5 * u)


def _sigmoid_moments(m: float, s: float) -> np.ndarray:
    """``E[sigmoid^(k)(m + s t)]`` for ``k = 0, 1, 2`` and ``t ~ N(0, 1)``, by adaptive quadrature.

    Each is ``int sigmoid^(k)(m + s t) exp(-t^2/2) / sqrt(2 pi) dt`` over the real line, split
    where the sigmoid is steepest (``m + s t = 0``) so that a sharp score law is resolved.
    """
    if s == 0.0:
        return np.array(_sigmoid_derivatives(m))
    t0 = -m / s
    pieces = [(-np.inf, t0), (t0, np.inf)] if abs(t0) < 30.0 else [(-np.inf, np.inf)]
    out = np.empty(3)
    for k in range(3):

        def integrand(t, k=k):
            return _sigmoid_derivatives(m + s * t)[k] * math.exp(-0.5 * t * t) / _SQRT_2PI

        out[k] = sum(
            quad(integrand, a, b, epsabs=1e-13, epsrel=1e-12, limit=200)[0] for a, b in pieces
        )
    return out


class GaussianNeymanPearson:
    """Neyman-Pearson classification of two Gaussian classes, from a sampler or in population.

    Minimise the soft false-negative rate ``E_+[sigmoid(-z)]`` (plus ``l2/2 ||w||^2``) of the
    linear score ``z = a.w + b`` subject to the soft false-positive rate
    ``E_-[sigmoid(z)] <= max_fpr``, for positives ``a ~ N(mean_positive, cov)`` and negatives
    ``a ~ N(mean_negative, cov)``. The parameters are ``x = (w, b)`` (``x = w`` without an
    intercept).

    Parameters
    ----------
    mean_positive, mean_negative : array-like of shape (n_features,)
    cov : array-like of shape (n_features, n_features), optional
        Shared covariance, symmetric positive definite; identity by default.
    max_fpr : float in (0, 1)
        Bound on the soft false-positive rate.
    fit_intercept : bool, default=True
    l2 : float >= 0, default=0.02
        Ridge strength on ``w``. With ``l2 = 0`` (the paper's model) the problem has no finite
        minimiser for Gaussian classes of equal covariance (see the module docstring): the
        sampler still works, but :meth:`reference_solution` refuses.

    Attributes
    ----------
    n_features, n_params : int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.problems import GaussianNeymanPearson
    >>> gnp = GaussianNeymanPearson([1.0, 0.5], [-1.0, 0.0], [[1.0, 0.3], [0.3, 0.5]],
    ...                             max_fpr=0.15)
    >>> gnp.sampler(np.random.default_rng(0), 4).shape   # 4 (positive, negative) pairs
    (4, 2, 2)
    >>> x_star, lam = gnp.reference_solution()           # scipy on the integrals
    >>> np.round(x_star, 3), round(lam, 3)
    (array([ 2.733,  0.161, -0.684]), 1.397)

    Fit from the sampler, then judge the returned point on the population:

    >>> from sklearn_ialm.solver import stoc_ialm
    >>> result = stoc_ialm(gnp.problem(evaluation_size=2_000), tol=0.05, random_state=0)
    >>> pres, dres = gnp.population_residuals(result.x, result.slack, result.multipliers)
    >>> bool(result.converged), bool(pres <= 0.05 and dres <= 0.05)
    (True, True)
    """

    def __init__(
        self,
        mean_positive,
        mean_negative,
        cov=None,
        *,
        max_fpr,
        fit_intercept=True,
        l2=0.02,
    ):
        self.mean_positive = np.asarray(mean_positive, dtype=float).ravel()
        self.mean_negative = np.asarray(mean_negative, dtype=float).ravel()
        d = self.mean_positive.size
        if self.mean_negative.size != d or d == 0:
            raise ValueError(
                "mean_positive and mean_negative must be nonempty and of the same length, "
                f"got {self.mean_positive.size} and {self.mean_negative.size}."
            )
        cov = np.eye(d) if cov is None else np.asarray(cov, dtype=float)
        if cov.shape != (d, d) or not np.allclose(cov, cov.T):
            raise ValueError(f"cov must be a symmetric ({d}, {d}) matrix.")
        try:
            self._chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            raise ValueError("cov must be positive definite.") from None
        self.cov = cov
        if not (np.isfinite(max_fpr) and 0.0 < max_fpr < 1.0):
            raise ValueError(f"max_fpr must be in (0, 1), got {max_fpr!r}.")
        self.max_fpr = float(max_fpr)
        if not (np.isfinite(l2) and l2 >= 0):
            raise ValueError(f"l2 must be a number >= 0, got {l2!r}.")
        self.l2 = float(l2)
        self.fit_intercept = bool(fit_intercept)
        self.n_features = d
        self.n_params = d + self.fit_intercept

    # -- sampling and per-sample oracles (what the solver sees) -----------------------------------
    def sampler(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` i.i.d. pairs: ``out[i, 0]`` a positive row, ``out[i, 1]`` a negative row."""
        noise = rng.standard_normal((int(n), 2, self.n_features))
        means = np.stack([self.mean_positive, self.mean_negative])
        return noise @ self._chol.T + means

    def _split(self, x):
        x = np.asarray(x, dtype=float).reshape(self.n_params)
        return x[: self.n_features], (x[-1] if self.fit_intercept else 0.0)

    def _grad(self, A, r):
        """``mean_i r_i (a_i, 1)`` (the intercept column only when fitted)."""
        g = A.T @ r / len(r)
        return np.append(g, r.mean()) if self.fit_intercept else g

    def _objective(self, x, samples):
        w, b = self._split(x)
        A = samples[:, 0, :]
        p = expit(A @ w + b)
        value = float(np.mean(1.0 - p)) + 0.5 * self.l2 * (w @ w)
        grad = self._grad(A, -p * (1.0 - p))
        grad[: self.n_features] += self.l2 * w
        return value, grad

    def _constraints(self, x, samples):
        w, b = self._split(x)
        A = samples[:, 1, :]
        p = expit(A @ w + b)
        C = (p - self.max_fpr)[:, None]
        dp = (p * (1.0 - p))[:, None]
        J = dp * A
        if self.fit_intercept:
            J = np.hstack([J, dp])
        return C, J[:, None, :]

    def smoothness(self) -> tuple[float, float]:
        """``(L0, LJ)`` for the solver's step, from the population second moments.

        As for :class:`~sklearn_ialm.problems.LinearProblem`: ``L0 = |sigmoid''|_max
        lambda_max(E_+[a~ a~']) + l2`` and ``LJ = lambda_max(E_-[a~ a~']) (1/16 + (1 + max_fpr)
        |sigmoid''|_max)`` with ``a~ = (a, 1)``.
        """
        lam_pos = np.linalg.eigvalsh(self._second_moment(self.mean_positive))[-1]
        lam_neg = np.linalg.eigvalsh(self._second_moment(self.mean_negative))[-1]
        L0 = SIGMOID_CURVATURE * lam_pos + self.l2
        LJ = lam_neg * (1.0 / 16.0 + (1.0 + self.max_fpr) * SIGMOID_CURVATURE)
        return float(L0), float(LJ)

    def _second_moment(self, mu):
        S = self.cov + np.outer(mu, mu)
        if not self.fit_intercept:
            return S
        return np.block([[S, mu[:, None]], [mu[None, :], np.ones((1, 1))]])

    def variance_bounds(self) -> tuple[float, float]:
        """``(sigma_g, sigma_c)`` of the paper's Assumption 5 (bounds, valid for every ``x``).

        ``|sigmoid'| <= 1/4`` and ``|C| <= 1`` bound each per-sample gradient and Jacobian (and
        ``J_C' C``) by ``|a~| / 4``; a second moment bounds the variance.
        """
        tr_pos = np.trace(self._second_moment(self.mean_positive))
        tr_neg = np.trace(self._second_moment(self.mean_negative))
        return 0.25 * float(np.sqrt(tr_pos)), 0.25 * float(np.sqrt(tr_neg))

    def problem(self, evaluation_size: int = 10_000) -> SampledProblem:
        """The expectation problem for :func:`~sklearn_ialm.solver.stoc_ialm`.

        Parameters
        ----------
        evaluation_size : int, default=10_000
            Fresh samples on which the solver estimates its residuals at each stop test.

        Returns
        -------
        SampledProblem
        """
        return SampledProblem(
            self.sampler,
            self._objective,
            self._constraints,
            n_params=self.n_params,
            n_constraints=1,
            inequality=True,
            evaluation_size=evaluation_size,
            smoothness=self.smoothness(),
        )

    # -- population quantities (independent of the solver) ----------------------------------------
    def _score_law(self, x, mu):
        w, b = self._split(x)
        return w, float(w @ mu + b), float(np.sqrt(max(w @ self.cov @ w, 0.0)))

    def _moments(self, x, mu):
        w, m, s = self._score_law(x, mu)
        return w, _sigmoid_moments(m, s)

    def _chain(self, w, mu, e1, e2):
        """Gradient of ``E[phi(z)]`` from ``e1 = E[phi'(z)]``, ``e2 = E[phi''(z)]`` (Stein)."""
        g = e1 * mu + e2 * (self.cov @ w)
        return np.append(g, e1) if self.fit_intercept else g

    def population_objective(self, x) -> float:
        """``f0(x) = E_+[sigmoid(-z)] + l2/2 ||w||^2``."""
        w, (e0, _, _) = self._moments(x, self.mean_positive)
        return float(1.0 - e0 + 0.5 * self.l2 * (w @ w))

    def population_constraint(self, x) -> float:
        """``c(x) = E_-[sigmoid(z)] - max_fpr`` (feasible when ``<= 0``)."""
        _, (e0, _, _) = self._moments(x, self.mean_negative)
        return float(e0 - self.max_fpr)

    def population_gradients(self, x) -> tuple[np.ndarray, np.ndarray]:
        """``(grad f0(x), grad c(x))``, differentiated under the integral.

        ``sigmoid(-z) = 1 - sigmoid(z)`` gives the objective's derivatives with a minus sign.
        """
        w, (_, e1p, e2p) = self._moments(x, self.mean_positive)
        gf = -self._chain(w, self.mean_positive, e1p, e2p)
        gf[: self.n_features] += self.l2 * w
        _, (_, e1n, e2n) = self._moments(x, self.mean_negative)
        gc = self._chain(w, self.mean_negative, e1n, e2n)
        return gf, gc

    def population_residuals(self, x, slack, multiplier) -> tuple[float, float]:
        """True residuals of the slack reformulation ``c(x) + s = 0, s >= 0``.

        As the solver defines them (:func:`~sklearn_ialm.solver.slack_residuals`), with the
        population ``c`` and gradients: ``pres = |c(x) + s|`` and
        ``dres = sqrt(|grad f0 + y grad c|^2 + r_s^2)``, ``r_s = |y|`` if ``s > 0`` else
        ``max(-y, 0)``.

        Parameters
        ----------
        x : array-like of shape (n_params,)
        slack, multiplier : float or array-like of shape (1,)

        Returns
        -------
        (pres, dres) : tuple of float
        """
        s = float(np.ravel(slack)[0])
        y = float(np.ravel(multiplier)[0])
        gf, gc = self.population_gradients(x)
        pres = abs(self.population_constraint(x) + s)
        rs = abs(y) if s > 0 else max(-y, 0.0)
        rx = gf + y * gc
        return float(pres), float(np.sqrt(rx @ rx + rs * rs))

    def reference_solution(self, x0=None) -> tuple[np.ndarray, float]:
        """Solve the population problem with ``scipy.optimize.minimize(method="trust-constr")``.

        The multiplier is the least-squares one of the stationarity condition at the solution,
        ``lambda* = max(-grad f0 . grad c / |grad c|^2, 0)``, checked against trust-constr's.

        Returns
        -------
        x_star : ndarray of shape (n_params,)
        lambda_star : float
            Multiplier of the constraint, ``>= 0``.

        Raises
        ------
        ValueError
            With ``l2 = 0`` (no finite minimiser), or when trust-constr does not reach a KKT
            point to ``1e-7``.
        """
        if self.l2 == 0.0:
            raise ValueError(
                "with l2=0 the population problem has no finite minimiser (the soft rates of a "
                "sigmoid score only reach the optimal linear test as ||w|| -> inf)."
            )
        x0 = np.zeros(self.n_params) if x0 is None else np.asarray(x0, dtype=float)
        con = NonlinearConstraint(
            self.population_constraint,
            -np.inf,
            0.0,
            jac=lambda x: self.population_gradients(x)[1][None, :],
        )
        with warnings.catch_warnings():
            # The quasi-Newton Hessian skips its update on the last, tiny steps and says so.
            warnings.filterwarnings("ignore", message="delta_grad == 0.0", category=UserWarning)
            res = minimize(
                self.population_objective,
                x0,
                jac=lambda x: self.population_gradients(x)[0],
                method="trust-constr",
                constraints=[con],
                options=dict(gtol=1e-11, xtol=1e-13, maxiter=3000),
            )
        x = res.x
        gf, gc = self.population_gradients(x)
        lam = max(-(gf @ gc) / (gc @ gc), 0.0)
        c = self.population_constraint(x)
        kkt = max(float(np.linalg.norm(gf + lam * gc)), max(c, 0.0), abs(lam * c))
        lam_tc = float(np.ravel(res.v[0])[0]) if res.v else lam
        if kkt > 1e-7 or abs(lam_tc - lam) > 1e-5 * max(1.0, lam):
            raise ValueError(
                f"trust-constr did not converge to a KKT point (residual {kkt:.2e}, "
                f"multipliers {lam:.6g} and {lam_tc:.6g}): {res.message}"
            )
        return x, float(lam)
