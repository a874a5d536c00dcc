"""The checks of the callables a user gives :class:`~.problem.FunctionProblem` and
:class:`~.problem.SampledProblem`: the arguments they share, and each answer's type and
shape, with an error that names the callable, what it returned and what was expected."""

from __future__ import annotations

from numbers import Real

import numpy as np

from .prox import NoProx


def _check_callable(name, value, signature):
    if not callable(value):
        raise TypeError(f"{name} must be a callable {signature}, got {value!r}.")


def _check_common(problem, objective, constraints, inequality, h, smoothness):
    """Validate the arguments that FunctionProblem and SampledProblem share; set them."""
    what = "(x, idx)" if problem.finite else "(x, samples)"
    _check_callable("objective", objective, f"{what} -> (value, gradient)")
    if problem.n_constraints:
        if constraints is None:
            raise TypeError(
                f"constraints is None but n_constraints={problem.n_constraints} (by default the "
                "size of inequality): for a problem without constraints pass n_constraints=0 "
                "and inequality=[]."
            )
        _check_callable("constraints", constraints, f"{what} -> (C, J)")
    m = problem.n_constraints
    try:
        problem.inequality = np.broadcast_to(np.asarray(inequality, dtype=bool), (m,))
    except ValueError:
        raise ValueError(
            f"inequality must be a bool or {m} bools (one per constraint, n_constraints={m}), "
            f"got {inequality!r}."
        ) from None
    if h is not None and not all(hasattr(h, a) for a in ("prox", "value", "dist_subdiff")):
        raise TypeError(f"h must be a Prox (e.g. L1, Ridge, Box) or None, got {h!r}.")
    problem.h = NoProx() if h is None else h
    if smoothness is not None:
        ok = np.shape(smoothness) == (2,) and all(
            isinstance(v, Real) and np.isfinite(v) and v >= 0 for v in smoothness
        )
        if not (ok and sum(smoothness) > 0):
            raise ValueError(
                "smoothness must be None or a pair (L0, LJ) of finite numbers >= 0, not both "
                f"0, got {smoothness!r}."
            )
        smoothness = tuple(float(v) for v in smoothness)
    problem.smoothness = smoothness


def _pair(out, name, what):
    """The two parts of a user callable's answer, or a TypeError saying what was expected."""
    if not (isinstance(out, tuple | list) and len(out) == 2):
        got = f"a {type(out).__name__}" + (
            f" of length {len(out)}" if hasattr(out, "__len__") else ""
        )
        raise TypeError(f"the {name} callable must return a pair {what}, got {got}.")
    return out


def _checked_shape(value, name, part, n, shape, where):
    """``value`` as a float array of ``shape`` (``(n, m, ...)``), or a ValueError naming the
    callable, what it returned and what was expected. With one constraint its axis may be
    left out (``(n,)`` values, ``(n, d)`` Jacobians)."""
    arr = np.asarray(value, dtype=float)
    if arr.shape == shape:
        return arr
    if shape[1] == 1 and arr.shape == shape[:1] + shape[2:]:
        return arr.reshape(shape)
    raise ValueError(
        f"the {name} callable returned {part} of shape {arr.shape} for {where}, expected "
        f"{shape} (rows, n_constraints{', n_params' if len(shape) == 3 else ''})."
    )


def _checked_gradient(out, n_params):
    """The gradient of a user objective's answer as a float array of shape
    ``(n_params,)``, or an error."""
    grad = np.asarray(_pair(out, "objective", "(value, gradient)")[1], dtype=float)
    if grad.shape != (n_params,):
        raise ValueError(
            f"the objective callable returned a gradient of shape {grad.shape}, expected "
            f"({n_params},) (n_params)."
        )
    return grad


def _checked_value(out):
    """The value of a user objective's answer as a float, or an error."""
    value = np.asarray(_pair(out, "objective", "(value, gradient)")[0], dtype=float)
    if value.size != 1:
        raise ValueError(
            f"the objective callable returned a value of shape {value.shape}, expected a "
            "scalar (the mean over the rows)."
        )
    return float(value.reshape(()))


def _checked_constraints(problem, x, batch, n, where):
    """Per-sample values ``(n, m)`` and the vjp of a user constraints callable's answer."""
    C, J = _pair(problem._constraints(x, batch), "constraints", "(C, J)")
    m, d = problem.n_constraints, problem.n_params
    C = _checked_shape(C, "constraints", "values C", n, (n, m), where)
    J = _checked_shape(J, "constraints", "Jacobians J", n, (n, m, d), where)
    return C, lambda U: np.einsum("bm,bmd->d", U, J)
