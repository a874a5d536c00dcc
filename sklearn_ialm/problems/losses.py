"""Per-sample losses of a margin ``m = b * score`` (``b`` in {-1, +1}), with derivatives.

Each loss has ``value(m)``, ``derivative(m)``, ``second_derivative(m)`` (for the Newton steps
of the finish), ``curvature``, an upper bound of ``|loss''|`` used for the step size, and
``convex`` (whether the solver's finish may start from any multipliers, see
:func:`sklearn_ialm.solver._ialm_search._sized_search_applies`). All are written to stay finite for
any float margin.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["LOSSES", "Logistic", "SigmoidLoss", "TruncatedLogistic"]

# max |sigmoid''| = 1 / (6 sqrt 3), reached at logit(1/2 +- 1/(2 sqrt 3)).
SIGMOID_CURVATURE = 1.0 / (6.0 * np.sqrt(3.0))


class Logistic:
    """``log(1 + exp(-m))``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.problems.losses import Logistic
    >>> loss = Logistic()
    >>> np.round(loss.value(np.array([-2.0, 0.0, 2.0])), 4)
    array([2.1269, 0.6931, 0.1269])
    >>> np.round(loss.derivative(np.array([-2.0, 0.0, 2.0])), 4)
    array([-0.8808, -0.5   , -0.1192])
    """

    curvature = 0.25
    convex = True

    def value(self, m):
        # Each step in place on a float array: the finish's evaluation at 1e6 rows (CSR)
        # peaked in this loss's temporaries (the same values).
        if not _floats(m):
            return np.logaddexp(0.0, -m)
        neg = np.negative(m)
        return np.logaddexp(0.0, neg, out=neg)

    def derivative(self, m):
        if not _floats(m):
            return -expit(-m)
        out = np.negative(m)
        return np.negative(expit(out, out=out), out=out)

    def second_derivative(self, m):
        # sigmoid(m) sigmoid(-m) with one exponential: e / (1 + e)**2, each step in place
        # (two n-vectors at a time beside m, not five: the finish's Hessian at 1e6 rows).
        if np.ndim(m) == 0:
            e = np.exp(-np.abs(m))
            return e / (1.0 + e) ** 2
        e = np.abs(m)
        e = np.exp(np.negative(e, out=e), out=e)
        d = np.add(1.0, e)
        return np.divide(e, np.square(d, out=d), out=e)


def _floats(m):
    """Whether ``m`` is a float64 array of at least one dimension (a loss's steps can then
    be formed in one new array of its shape)."""
    return isinstance(m, np.ndarray) and m.ndim > 0 and m.dtype == np.float64


class TruncatedLogistic:
    """The paper's truncated logistic loss ``alpha * log(1 + log(1 + exp(-m)) / alpha)``.

    Bounded growth (it is ``log``-like for large losses) makes it robust to outliers and
    nonconvex; ``alpha = 2`` in the paper.

    Parameters
    ----------
    alpha : float, default=2.0
        The truncation level; the loss tends to the logistic loss as ``alpha`` grows.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.problems.losses import TruncatedLogistic
    >>> np.round(TruncatedLogistic(2.0).value(np.array([-2.0, 0.0, 2.0])), 4)
    array([1.4488, 0.5951, 0.1231])
    """

    curvature = 0.25  # phi_alpha is concave and increasing with phi' <= 1: l'' <= logistic''
    convex = False

    def __init__(self, alpha: float = 2.0):
        if not (np.isfinite(alpha) and alpha > 0):
            raise ValueError(f"truncation must be a number > 0, got {alpha!r}.")
        self.alpha = float(alpha)

    def value(self, m):
        return self.alpha * np.log1p(np.logaddexp(0.0, -m) / self.alpha)

    def derivative(self, m):
        return -expit(-m) / (1.0 + np.logaddexp(0.0, -m) / self.alpha)

    def second_derivative(self, m):
        # alpha log(1 + L / alpha) of the logistic loss L: L'' / s - L'^2 / (alpha s^2),
        # s = 1 + L / alpha.
        inner = 1.0 + np.logaddexp(0.0, -m) / self.alpha
        d1 = expit(-m)
        return expit(m) * d1 / inner - d1 * d1 / (self.alpha * inner * inner)


class SigmoidLoss:
    """``1 / (1 + exp(m))``, the smooth 0-1 loss of the paper's Neyman-Pearson model.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ialm.problems.losses import SigmoidLoss
    >>> np.round(SigmoidLoss().value(np.array([-2.0, 0.0, 2.0])), 4)
    array([0.8808, 0.5   , 0.1192])
    """

    curvature = SIGMOID_CURVATURE
    convex = False

    def value(self, m):
        return expit(-m)

    def derivative(self, m):
        p = expit(m)
        return -p * (1.0 - p)

    def second_derivative(self, m):
        p = expit(m)
        return -p * (1.0 - p) * (1.0 - 2.0 * p)


LOSSES = {
    "logistic": Logistic,
    "truncated_logistic": TruncatedLogistic,
    "sigmoid": SigmoidLoss,
}
