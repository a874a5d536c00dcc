"""The parameters that the paper's complexity proof prescribes (Lemma 3, Theorem 3).

They make every PStorm call provably return an eps-stationary point of the augmented
Lagrangian in expectation, from the smoothness constants, the variance bounds and a bound on
the initial gap of the subproblem. They are what the proof needs, not what runs fast: the
iteration count ``T`` carries a constant of about ``3.3e6``, and the default settings of
:func:`~sklearn_ialm.solver.stoc_ialm` reach the same tolerance orders of magnitude sooner.
"""

from __future__ import annotations

import math

__all__ = ["theory_parameters"]


def theory_parameters(
    L0: float,
    LJ: float,
    sigma_g: float,
    sigma_c: float,
    gap: float,
    y_norm: float,
    beta: float,
    eps: float,
) -> dict:
    """PStorm's parameters for outer iteration ``k`` (Theorem 3 with Lemma 3).

    Parameters
    ----------
    L0, LJ : float
        Mean-squared smoothness constants of ``G0`` and of ``C`` (and of ``J^T C``).
    sigma_g, sigma_c : float
        Standard deviation bounds of the stochastic gradient of ``G0``, of ``J_C`` and of
        ``J_C^T C`` (Assumption 5).
    gap : float
        An upper bound of ``F_k(x_k) - min F_k`` (the paper's Remark 3 allows a bound).
    y_norm, beta : float
        ``||y_k||`` and ``beta_k``.
    eps : float
        The tolerance.

    Returns
    -------
    dict with ``L``, ``sigma``, ``T``, ``step`` (eta bar), ``delta``, ``m0``, ``m1``.

    Examples
    --------
    >>> p = theory_parameters(1.0, 1.0, 0.1, 0.1, 1.0, 0.0, 1.0, 0.5)
    >>> p["T"] > 10**6
    True
    """
    L = math.sqrt(3 * L0**2 + 3 * LJ**2 * y_norm**2 + 3 * beta**2 * LJ**2)
    sigma = math.sqrt(3 * sigma_g**2 + 3 * sigma_c**2 * y_norm**2 + 3 * beta**2 * sigma_c**2)
    LG = L * max(gap, 1.0)
    eta = (10 / 24**2) ** (1 / 3) * LG ** (1 / 3) / sigma ** (2 / 3)
    c0 = (24**2 / 10) ** (1 / 3) * sigma ** (8 / 3) / (20 * LG ** (4 / 3))
    T = math.ceil(1920**1.5 * 3**1.5 * (24**2 / 10) ** 0.5 * sigma * LG / eps**3)
    step = eta / (L * T ** (1 / 3))
    delta = (4 * eta**2 + 10 * eta**2 * (2 - eta * T ** (-1 / 3))) / (T ** (2 / 3) + 4 * eta**2)
    return dict(
        L=L,
        sigma=sigma,
        T=T,
        step=step,
        delta=delta,
        m0=math.ceil(c0 * T ** (1 / 3)),
        m1=math.ceil(48 * sigma**2 / eps**2),
    )
