"""The constrained problem seen by the solvers.

``min_x g(x) + h(x)  s.t.  c_E(x) = 0,  c_I(x) <= 0``

with ``g(x) = E[G0(x; xi)]`` and ``c(x) = E[C(x; xi)]`` in ``R^m``. In the finite-sum case
``xi`` is a row index, uniform over ``n_objective_samples`` rows for ``g`` and over
``n_constraint_samples`` rows for ``c`` (the two sets may differ, like the paper's D and S).
In the expectation case a *sampler* draws ``xi`` on demand (:class:`SampledProblem`).

The solver only ever asks a problem for

* ``sample(rng, size, kind)``: a batch of ``size`` i.i.d. draws for ``kind`` in
  ``{"objective", "constraint"}`` (row indices, or samples from a sampler);
* ``evaluation_batch(rng, kind)``: the batch on which the stopping rule is evaluated (all rows
  of a finite sum; a fresh large sample for a sampler);
* ``objective(x, batch)``: the mean of ``grad G0(x; xi)`` over the batch;
  ``objective_value(x, batch)`` its value;
* ``constraints(x, batch)``: the per-sample values ``C(x; xi_i)`` as a ``(b, m)`` array and a
  vector-Jacobian product ``vjp(U) = sum_i J_C(x; xi_i)^T U_i`` for a ``(b, m)`` array ``U``.

The vjp form lets the solver build any unbiased estimator of ``J(x)^T c(x)`` from one batch
(the U-statistic over distinct pairs) without ever forming a Jacobian. Inequalities become
``c_I(x) + s = 0`` with slacks ``s >= 0`` inside the solver; problems never see slacks.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral
from typing import Any, NamedTuple

import numpy as np

from ._user_callables import (
    _check_callable,
    _check_common,
    _checked_constraints,
    _checked_gradient,
    _checked_value,
)
from .prox import NoProx, Prox

__all__ = ["FiniteSumProblem", "FunctionProblem", "Problem", "SampledProblem"]


class JacobianMatrix:
    """``jac_t`` (``v -> J^T v``) of an evaluation that holds the Jacobian ``J`` itself:
    :func:`jacobian_matrix` takes it without a product per constraint."""

    def __init__(self, J):
        self.J = J

    def __call__(self, v):
        return self.J.T @ v

    def matrix(self):
        return self.J


def jacobian_matrix(jac_t, m, p):
    """The ``(m, p)`` Jacobian behind ``jac_t`` (``jac_t(v) = J^T v``), C-ordered: its
    ``matrix()`` where it has one (the same numbers: ``J^T e_k`` is ``J``'s row ``k``), else
    ``m`` products (200 constraints: 600 calls of a fit of 0.1 s). (In the same order: the
    KKT multipliers' least squares on 200 constraints moved by 0.3 % with ``J``'s
    transpose.)"""
    if not m:
        return np.zeros((0, p))
    matrix = getattr(jac_t, "matrix", None)
    if matrix is not None:
        return np.ascontiguousarray(matrix(), dtype=float)
    return np.vstack([jac_t(e) for e in np.eye(m)])


KINDS = ("objective", "constraint")

#: What a solver reads of a problem (see the module docstring).
_PROTOCOL = (
    "n_params", "n_constraints", "inequality", "h", "finite", "sample", "evaluation_batch",
    "batch_size", "objective", "objective_value", "constraints", "full_evaluation",
)  # fmt: skip


def check_problem(problem) -> None:
    """Raise a TypeError naming what is missing if ``problem`` lacks the solvers' protocol."""
    missing = [name for name in _PROTOCOL if not hasattr(problem, name)]
    if missing:
        got = repr(problem) if len(missing) == len(_PROTOCOL) else f"one without {missing}"
        raise TypeError(
            "problem must be a Problem (e.g. a FunctionProblem, a FiniteSumProblem subclass "
            f"or a SampledProblem), got {got}."
        )


def _check_count(name, value, minimum, why=""):
    """``value`` as an int, or a ValueError naming ``name`` (``bool`` and 2.5 are not
    counts)."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}{why}, got {value!r}.")
    return int(value)


def _realigned(value, memo):
    """``value`` with every NumPy array it holds at an address aligned for its dtype (see
    :meth:`Problem.__setstate__`): an unaligned array is copied, once (``memo``, by ``id``,
    keeps an array that several attributes share shared); this package's objects,
    scipy.sparse matrices, dicts and lists are updated in place, a tuple is rebuilt if an
    item changed. Anything else is kept as it is.
    """
    key = id(value)
    if key in memo:
        return memo[key][1]
    # Before the items (a cycle ends here); value kept: its id names no other object.
    memo[key] = (value, value)
    if isinstance(value, np.ndarray):
        if not value.flags.aligned:
            memo[key] = (value, np.require(value, requirements="A"))  # a copy, same layout
    elif isinstance(value, tuple):
        items = [_realigned(v, memo) for v in value]
        if any(a is not b for a, b in zip(items, value, strict=True)):
            new = type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
            memo[key] = (value, new)
    else:
        own = type(value).__module__.startswith(("sklearn_ialm.", "scipy.sparse."))
        if isinstance(value, list | dict) or (own and hasattr(value, "__dict__")):
            items = value if isinstance(value, list | dict) else vars(value)
            for k, v in items.items() if isinstance(items, dict) else enumerate(items):
                items[k] = _realigned(v, memo)
    return memo[key][1]


class Problem:
    """Base class of constrained problems (see the module docstring for the protocol).

    Attributes
    ----------
    n_params : int
        Dimension of ``x``.
    n_constraints : int
        Number ``m`` of constraint functions.
    inequality : ndarray of bool, shape (m,)
        ``True`` where the constraint reads ``c_j(x) <= 0``, ``False`` for ``c_j(x) = 0``.
    h : Prox
        The nonsmooth convex part of the objective.
    smoothness : tuple (L0, LJ) or None
        The step rule uses ``L(beta) = L0 + LJ * beta`` as the smoothness of the augmented
        Lagrangian; ``None`` lets the solver estimate it from finite differences.
    finite : bool
        ``True`` for a finite sum (cost counted in data passes), ``False`` for a sampler
        (cost counted in oracle calls).

    See Also
    --------
    FunctionProblem : A finite sum from two callables.
    FiniteSumProblem : The base class to subclass for a finite sum.
    SampledProblem : An expectation over a sampler.

    Examples
    --------
    Every problem answers the same few questions; here one from :class:`FunctionProblem`:

    >>> import numpy as np
    >>> from sklearn_ialm.solver import FunctionProblem, Problem
    >>> a = np.random.default_rng(0).normal(1.0, 0.1, size=(200, 2))
    >>> def objective(x, idx):
    ...     r = x - a[idx]
    ...     return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)
    >>> def constraints(x, idx):
    ...     n = len(a[idx])
    ...     return np.full((n, 1), x.sum() - 1.0), np.ones((n, 1, 2))
    >>> problem = FunctionProblem(objective, constraints, n_params=2,
    ...                           n_objective_samples=200, n_constraint_samples=200)
    >>> isinstance(problem, Problem), problem.n_params, problem.inequality, problem.finite
    (True, 2, array([ True]), True)
    >>> batch = problem.sample(np.random.default_rng(0), 5, "constraint")  # 5 row indices
    >>> C, vjp = problem.constraints(np.zeros(2), batch)
    >>> C.shape, vjp(np.ones((5, 1)))  # values per row, and sum_i J_i^T U_i
    ((5, 1), array([5., 5.]))
    """

    n_params: int
    n_constraints: int = 0
    inequality: np.ndarray
    h: Prox = NoProx()
    smoothness: tuple[float, float] | None = None
    finite: bool = True

    def __setstate__(self, state):
        """Restore a pickled problem with its arrays at aligned addresses.

        Dask rebuilds a pickled array in place in the message it received, at whatever
        offset the parts before it leave: ``X`` arrived in a worker at an address of 2 mod 8,
        not aligned for float64. The last bits of a result then depended on where the
        problem ran, through NumPy: ``A.T @ r`` with an unaligned ``A`` first copies ``A.T``
        into an aligned C-ordered buffer and calls BLAS on that transposed layout (another
        order of the sums: a few units in the last place of the finish's Gram matrix, 1e-14
        on the coefficients), a sum over an unaligned array is taken in buffered chunks
        (another pairwise order), and numba compiles another specialisation for unaligned
        arrays. An unaligned array is copied here (once, where several attributes share
        it); aligned ones, as every array made in the process is, are kept as they are.
        """
        # (A subclass with __slots__ pickles (dict, slots), as object.__getstate__ does.)
        attrs, slots = state if isinstance(state, tuple) else (state, None)
        memo = {}
        vars(self).update({k: _realigned(v, memo) for k, v in (attrs or {}).items()})
        for k, v in (slots or {}).items():
            setattr(self, k, _realigned(v, memo))

    def __copy__(self):
        """``copy.copy``: a problem that shares this one's attributes as they are (the
        realignment of :meth:`__setstate__` is for arrays that arrive pickled; through it,
        a walk over every attribute, the steering's copies took 3 ms of a 0.1 s fit)."""
        new = type(self).__new__(type(self))
        state = self.__getstate__()
        attrs, slots = state if isinstance(state, tuple) else (state, None)
        vars(new).update(attrs or {})
        for k, v in (slots or {}).items():
            setattr(new, k, v)
        return new

    # --- sampling -------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, size: int, kind: str) -> Any:
        raise NotImplementedError

    def constraint_batch_length(self, size: int) -> int:
        """Rows in a constraint minibatch drawn with ``sample(rng, size, "constraint")``."""
        return size

    def batch_strata(self, batch: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(codes, alpha, counts)`` of a stratified constraint minibatch, else None.

        ``codes[i]`` is row ``i``'s stratum, ``counts[s]`` the rows drawn from stratum ``s``
        and ``alpha[i] = share[s] / counts[s]`` its weight: ``sum_i alpha_i C_i`` is unbiased
        for the constraints' mean (see :meth:`FiniteSumProblem.stratify_constraints`).
        """
        return None

    def evaluation_batch(self, rng: np.random.Generator, kind: str) -> Any:
        raise NotImplementedError

    def batch_size(self, batch: Any, kind: str) -> int:
        raise NotImplementedError

    # --- oracles --------------------------------------------------------------------------
    def objective(self, x: np.ndarray, batch: Any) -> np.ndarray:
        raise NotImplementedError

    def objective_value(self, x: np.ndarray, batch: Any) -> float:
        raise NotImplementedError

    def constraints(self, x: np.ndarray, batch: Any) -> tuple[np.ndarray, Callable]:
        raise NotImplementedError

    # --- conveniences built on the oracles ------------------------------------------------
    def full_evaluation(self, x: np.ndarray, rng=None, batches=None):
        """Objective value and gradient, constraint values and a vjp on the evaluation batches.

        Returns ``(f0, grad_g, c, jac_t)`` where ``jac_t(v) = J(x)^T v`` for ``v`` in ``R^m``.
        """
        if batches is None:
            batches = (
                self.evaluation_batch(rng, "objective"),
                self.evaluation_batch(rng, "constraint"),
            )
        bo, bc = batches
        grad = self.objective(x, bo)
        f0 = self.objective_value(x, bo)
        if self.n_constraints == 0 or bc is None:
            return f0, grad, np.zeros(0), lambda v: np.zeros_like(x)
        C, vjp = self.constraints(x, bc)
        n = C.shape[0]
        c = C.mean(axis=0)

        def jac_t(v):
            return vjp(np.broadcast_to(np.asarray(v, dtype=float) / n, C.shape))

        return f0, grad, c, jac_t


class _Strata(NamedTuple):
    """The constraint rows by stratum: each row's code, the strata's sizes and shares, and
    the rows sorted by stratum (``order``) with each stratum's first position (``starts``)."""

    codes: np.ndarray
    counts: np.ndarray
    order: np.ndarray
    starts: np.ndarray
    share: np.ndarray


class FiniteSumProblem(Problem):
    """A finite sum: ``xi`` is a row index drawn uniformly with replacement.

    Subclasses implement the oracles on integer index arrays; the evaluation batch is
    ``slice(None)`` (every row), which subclasses must accept too.

    Parameters
    ----------
    n_objective_samples : int
        Rows of the objective's sum.
    n_constraint_samples : int
        Rows of the constraints' sum.

    Examples
    --------
    Minimise the mean of ``|x - a_i|^2 / 2`` over the disk ``|x|^2 <= 1``. A subclass sets
    ``n_params``, ``n_constraints`` and ``inequality``, and answers ``objective`` (mean
    gradient), ``objective_value`` and ``constraints`` (per-row values and a
    vector-Jacobian product ``vjp(U) = sum_i J_i^T U_i``) on index arrays:

    >>> import numpy as np
    >>> from sklearn_ialm.solver import FiniteSumProblem, stoc_ialm
    >>> a = np.random.default_rng(0).normal(1.0, 0.1, size=(200, 2))
    >>> class MeanInDisk(FiniteSumProblem):
    ...     n_params, n_constraints, inequality = 2, 1, np.array([True])
    ...     def objective(self, x, idx):
    ...         return (x - a[idx]).mean(axis=0)
    ...     def objective_value(self, x, idx):
    ...         return 0.5 * np.mean(np.sum((x - a[idx]) ** 2, axis=1))
    ...     def constraints(self, x, idx):
    ...         C = np.full((len(a[idx]), 1), x @ x - 1.0)  # the same for every row
    ...         return C, lambda U: 2.0 * x * U.sum()
    >>> problem = MeanInDisk(n_objective_samples=200, n_constraint_samples=200)
    >>> result = stoc_ialm(problem, random_state=0)
    >>> bool(result.converged), np.round(result.x, 1)
    (True, array([0.7, 0.7]))
    """

    finite = True
    #: The labels constraint minibatches are stratified by (:meth:`stratify_constraints`).
    constraint_strata = None
    #: ``[_Strata or None]``: the strata of ``constraint_strata``, built at the first draw
    #: that reads them (:attr:`_strata`); a list, shared by the solver's copies of the
    #: problem (``copy.copy``), so that they build them once.
    _built_strata = None

    def __init__(self, n_objective_samples: int, n_constraint_samples: int):
        self.n_objective_samples = _check_count(
            "n_objective_samples",
            n_objective_samples,
            1,
            " (a problem with no objective samples has nothing to minimise)",
        )
        self.n_constraint_samples = _check_count("n_constraint_samples", n_constraint_samples, 0)

    def _n(self, kind):
        return self.n_objective_samples if kind == "objective" else self.n_constraint_samples

    def sample(self, rng, size, kind, stratified=True):
        stratified = stratified and kind == "constraint" and self.constraint_strata is not None
        if stratified:
            strata = self._strata
            # The same number of i.i.d. draws from every stratum, at least two (the
            # U-statistic within a stratum needs a pair): each stratum is in every batch.
            per = self._per_stratum(size)
            counts = strata.counts[:, None]
            u = rng.random((len(strata.counts), per))
            within = np.minimum((u * counts).astype(np.intp), counts - 1)
            return strata.order[(strata.starts[:, None] + within).ravel()]
        # i.i.d. draws (with replacement): the U-statistic over distinct positions of one
        # batch is then exactly unbiased for J^T c.
        return rng.integers(self._n(kind), size=size)

    def stratify_constraints(self, labels) -> None:
        """Draw every constraint minibatch stratified by ``labels`` (one per constraint row).

        A batch then holds ``max(2, ceil(size / S))`` i.i.d. draws from each of the ``S``
        strata, weighted back by the stratum's share of the rows (:meth:`batch_strata`). Where a
        constraint reads a small stratum only (a small group's rate), a uniform batch finds
        it now and then and its estimate is a lottery; a stratified one finds it every time.
        ``labels=None`` returns to uniform draws.
        """
        if labels is not None and np.size(labels) != self.n_constraint_samples:
            raise ValueError(
                f"labels has {np.size(labels)} entries for {self.n_constraint_samples} "
                "constraint rows."
            )
        self.constraint_strata = labels
        # Built at the first stratified draw, not here: a fit whose solves never draw
        # (the second-order finish alone) never sorts the labels (3.1 ms of a default fit
        # on Adult by race, demographic parity, which posed its problem twice, each sorted).
        self._built_strata = [None]

    @property
    def _strata(self) -> _Strata | None:
        """The strata of ``constraint_strata`` (None: uniform draws), built once."""
        if self.constraint_strata is None:
            return None
        built = self._built_strata
        if built is None:  # (constraint_strata set without stratify_constraints)
            built = self._built_strata = [None]
        if built[0] is None:
            labels = np.asarray(self.constraint_strata).reshape(-1)
            codes = np.unique(labels, return_inverse=True)[1].reshape(-1).astype(np.intp)
            counts = np.bincount(codes)
            order = np.argsort(codes, kind="stable")
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            built[0] = _Strata(codes, counts, order, starts, counts / len(codes))
        return built[0]

    def _per_stratum(self, size):
        return max(2, -(-int(size) // len(self._strata.counts)))

    def constraint_batch_length(self, size):
        if self.constraint_strata is None:
            return size
        return self._per_stratum(size) * len(self._strata.counts)

    def batch_strata(self, batch):
        if self.constraint_strata is None or isinstance(batch, slice):
            return None  # (an evaluation on every row needs no strata: none built)
        strata = self._strata
        codes = strata.codes[batch]
        counts = np.bincount(codes, minlength=len(strata.counts))
        return codes, strata.share[codes] / counts[codes], counts

    def evaluation_batch(self, rng, kind):
        return slice(None)

    def batch_size(self, batch, kind):
        if isinstance(batch, slice):
            return self._n(kind)
        return len(batch)

    @property
    def n_samples(self) -> int:
        """Samples in one data pass: objective rows plus constraint rows."""
        return self.n_objective_samples + (self.n_constraint_samples if self.n_constraints else 0)


class SampledProblem(Problem):
    """An expectation problem: a sampler draws ``xi`` on demand.

    Parameters
    ----------
    sampler : callable ``(rng, n) -> samples``
        Draws ``n`` i.i.d. samples of ``xi`` (any object that ``objective`` and ``constraints``
        understand, typically an array with one row per sample).
    objective : callable ``(x, samples) -> (value, grad)``
        Mean value and mean gradient of ``G0(x; xi)`` over the samples.
    constraints : callable ``(x, samples) -> (C, J)``
        Per-sample constraint values ``C`` of shape ``(n, m)`` and Jacobians ``J`` of shape
        ``(n, m, d)``.
    n_params, n_constraints : int
    inequality : bool or array of bool
    evaluation_size : int
        Size of the fresh sample on which residuals are estimated for the stopping rule.
    h : Prox, optional
    smoothness : (L0, LJ), optional

    Examples
    --------
    Minimise ``E |x - xi|^2 / 2`` with ``xi ~ N((1, 1), 0.25 I)`` subject to
    ``x_0 + x_1 <= 1``. The solver draws samples as it needs them, counts every one as an
    oracle call, and estimates its residuals (with standard errors) on fresh samples:

    >>> import numpy as np
    >>> from sklearn_ialm.solver import SampledProblem, stoc_ialm
    >>> def sampler(rng, n):
    ...     return rng.normal(1.0, 0.5, size=(n, 2))
    >>> def objective(x, xi):
    ...     r = x - xi
    ...     return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)
    >>> def constraints(x, xi):
    ...     n = len(xi)
    ...     return np.full((n, 1), x.sum() - 1.0), np.ones((n, 1, 2))
    >>> problem = SampledProblem(sampler, objective, constraints, n_params=2,
    ...                          n_constraints=1, evaluation_size=2000, smoothness=(1.0, 2.0))
    >>> result = stoc_ialm(problem, random_state=0)
    >>> bool(result.converged), np.round(result.x, 1), result.n_oracle_calls > 0
    (True, array([0.5, 0.5]), True)
    """

    finite = False

    def __init__(
        self,
        sampler,
        objective,
        constraints,
        n_params,
        n_constraints,
        inequality=True,
        evaluation_size=10_000,
        h=None,
        smoothness=None,
    ):
        _check_callable("sampler", sampler, "(rng, n) -> samples")
        self.sampler = sampler
        self._objective = objective
        self._constraints = constraints
        self.n_params = _check_count("n_params", n_params, 1)
        self.n_constraints = _check_count("n_constraints", n_constraints, 0)
        self.evaluation_size = _check_count(
            "evaluation_size", evaluation_size, 10, " (its standard errors use 10 chunks)"
        )
        _check_common(self, objective, constraints, inequality, h, smoothness)

    def sample(self, rng, size, kind):
        return self.sampler(rng, size)

    def evaluation_batch(self, rng, kind):
        return self.sampler(rng, self.evaluation_size)

    def batch_size(self, batch, kind):
        return len(batch)

    def objective(self, x, batch):
        return _checked_gradient(self._objective(x, batch), self.n_params)

    def objective_value(self, x, batch):
        return _checked_value(self._objective(x, batch))

    def constraints(self, x, batch):
        return _checked_constraints(self, x, batch, len(batch), f"a batch of {len(batch)} samples")


class FunctionProblem(FiniteSumProblem):
    """A finite-sum problem from plain callables on row indices.

    Parameters
    ----------
    objective : callable ``(x, idx) -> (value, grad)``
        Mean value and gradient of the objective terms of rows ``idx`` (an integer array, or
        ``slice(None)`` for all rows).
    constraints : callable ``(x, idx) -> (C, J)`` or None
        Per-row constraint values ``(len(idx), m)`` and Jacobians ``(len(idx), m, d)``
        (``(len(idx),)`` and ``(len(idx), d)`` with one constraint). ``None`` for a problem
        without constraints (with ``n_constraints=0``).
    n_params : int >= 1
    n_objective_samples : int >= 1
        The rows of the objective: ``idx`` is drawn from ``range(n_objective_samples)``, and
        ``slice(None)`` stands for all of them.
    n_constraint_samples : int >= 0
        The rows of the constraints, likewise (at least 1 when there are constraints).
    inequality : bool or array of bool, shape (m,)
    h : Prox, optional
    smoothness : (L0, LJ), optional
    n_constraints : int, optional
        The number ``m`` of constraints; by default the size of ``inequality`` (1 for a
        scalar).

    Raises
    ------
    TypeError, ValueError
        At construction for an argument of the wrong kind; at the first call of a callable
        whose answer does not have the shapes above, naming the callable and both shapes.

    Examples
    --------
    Minimise the mean of ``|x - a_i|^2 / 2`` subject to ``x_0 + x_1 <= 1`` (the constraint is
    the same for every row here):

    >>> import numpy as np
    >>> from sklearn_ialm.solver import FunctionProblem, stoc_ialm
    >>> a = np.random.default_rng(0).normal(1.0, 0.1, size=(200, 2))
    >>> def objective(x, idx):
    ...     r = x - a[idx]
    ...     return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)
    >>> def constraints(x, idx):
    ...     n = len(a[idx])
    ...     return np.full((n, 1), x.sum() - 1.0), np.ones((n, 1, 2))
    >>> problem = FunctionProblem(objective, constraints, n_params=2,
    ...                           n_objective_samples=200, n_constraint_samples=200,
    ...                           inequality=True, smoothness=(1.0, 2.0))
    >>> result = stoc_ialm(problem, random_state=0)
    >>> bool(result.converged), np.round(result.x, 1)
    (True, array([0.5, 0.5]))
    """

    def __init__(
        self,
        objective,
        constraints,
        n_params,
        n_objective_samples,
        n_constraint_samples,
        inequality=True,
        h=None,
        smoothness=None,
        n_constraints=None,
    ):
        super().__init__(n_objective_samples, n_constraint_samples)
        self._objective = objective
        self._constraints = constraints
        self.n_params = _check_count("n_params", n_params, 1)
        if n_constraints is None:
            n_constraints = np.size(inequality) if np.ndim(inequality) else 1
        self.n_constraints = _check_count("n_constraints", n_constraints, 0)
        if self.n_constraints:
            _check_count(
                "n_constraint_samples", n_constraint_samples, 1, " (the problem has constraints)"
            )
        _check_common(self, objective, constraints, inequality, h, smoothness)

    def objective(self, x, batch):
        return _checked_gradient(self._objective(x, batch), self.n_params)

    def objective_value(self, x, batch):
        return _checked_value(self._objective(x, batch))

    def constraints(self, x, batch):
        n = self.batch_size(batch, "constraint")
        if isinstance(batch, slice):
            where = f"idx=slice(None), all n_constraint_samples={n} rows"
        else:
            where = f"idx of {n} rows"
        return _checked_constraints(self, x, batch, n, where)
