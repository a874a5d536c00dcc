"""The weight of a Neyman-Pearson fit's negatives that puts the logistic boundary near the
false-positive budget (:func:`fit_negative_weight`).
"""

from __future__ import annotations

import numpy as np

from ._hard_rates import HardRateFit, _finish, _pass_share, _say, _secant_slope, _Units

__all__ = ["fit_negative_weight"]


def fit_negative_weight(
    problem, solve, negatives, weights, max_rate, *, budget, max_rounds=8, rel_tol=0.25,
    verbose=0,
) -> HardRateFit:  # fmt: skip
    """Weight the negatives of a logistic ``problem`` until ``score > 0`` flags about
    ``max_rate`` of them.

    The false-positive rate of the weighted logistic fit falls as the negatives' weight
    grows, roughly like a power of it: secant steps on ``log rate`` against ``log weight``
    (warm started) stop when the rate is within a factor ``1 + rel_tol`` of ``max_rate``.
    The weight need not be exact: the estimator's threshold then spends the budget exactly;
    the weight only puts the logistic fit's boundary, where it ranks best, near the operating
    point.

    Parameters
    ----------
    problem : LinearProblem
        The weighted logistic problem (no constraints; its constraint rows are all rows).
    solve : callable
        As for :func:`fit_hard_rates`.
    negatives : ndarray of bool
        The negative rows (of the problem's rows).
    weights : ndarray
        The rows' sample weights, for the rate.
    max_rate : float
    budget : float
        Data passes for all solves together.
    verbose : int
        ``> 0`` prints a line before each solve: which one, and why it is needed.
    """
    base_u = problem.u  # read only: each round's weights are a new array
    share = getattr(problem, "positive_share", None)  # rows on a cluster: reductions
    if share is None:
        floor = 0.5 * weights[negatives].min() / weights[negatives].sum()
    else:
        floor = 0.5 * problem.smallest_weight_share(negatives)
    log_w, trace, results, passes = 0.0, [], [], 0.0
    best = None  # (|log error|, x, scores, result, log weight)
    warm = None
    for rnd in range(max_rounds):
        if passes >= budget:
            break
        if rnd == 0:
            _say(verbose, "solve 1: logistic regression, the negatives weighing 1")
            pb = problem
        else:
            u = np.where(negatives, np.exp(log_w), 1.0)
            u *= base_u
            pb = problem.with_objective_weights(u, overwrite=True)
            del u
        result = solve(pb, rnd, warm, budget - passes)
        del pb  # its weights (two n-vectors) are not needed past its solve
        results.append(result)
        passes += result.n_data_passes + _pass_share(problem)
        scores = problem.constraint_scores(result.x)
        if share is not None:
            rate = share(scores, negatives)
        else:
            rate = np.dot(weights[negatives], scores[negatives] > 0) / weights[negatives].sum()
        error = np.log(max(rate, floor)) - np.log(max_rate)
        if best is None or abs(error) < best[0]:
            best = (abs(error), result.x, scores, result, log_w)
        if abs(error) <= np.log1p(rel_tol):
            break
        trace.append((log_w, error))
        # The rate falls about as the weight grows; at most a factor e^3 a step. The first
        # step, without a slope yet, from the first solve's scores (_prior_shift).
        if len(trace) == 1:
            step = _prior_shift(problem, scores, negatives, weights, max_rate)
            passes += 0.0 if share is None else _pass_share(problem)
        else:
            step = -error / _secant_slope(trace, -1.0, -4.0, -0.25)
        log_w += float(np.clip(step, -3.0, 3.0))
        if rnd + 1 < max_rounds and passes < budget:
            _say(
                verbose,
                f"solve {rnd + 2}: the boundary flags {rate:.4f} of the negatives, not within "
                f"a factor {1 + rel_tol:g} of max_fpr={max_rate:g} ({passes:.3g} of "
                f"{budget:g} passes spent): weighting the negatives {np.exp(log_w):.4g}",
            )
        warm = (result.x, None, None)
        # Kept in best if needed; the next round's scores do not come on top.
        del scores
    _, x, scores, result, log_w = best
    fit = _finish(problem, _Units(problem), x, scores, results, [result], 0.0, passes)
    fit.negative_weight = float(np.exp(log_w))
    return fit


#: The log weights the first step may take: a grid within the steps' clip (+-3), the same in
#: memory and on a cluster (where the negatives' scores are never in one place).
_SHIFT_GRID = np.arange(-192, 193) / 64.0


def _prior_shift(problem, scores, negatives, weights, max_rate):
    """The log weight of the negatives that would move the logistic boundary to the score
    above which ``max_rate`` of them lie (weighted): weighting a class by ``e^t`` shifts a
    logistic fit's intercept by about ``-t`` (a change of class prior) and leaves its
    direction nearly as it was. The least point of :data:`_SHIFT_GRID` that flags at most
    ``max_rate`` (in memory from ``scores``; on a cluster in one reduction, the blocks'
    sums of the report's threshold grid, so that both find the same point).

    The secant's first step, blind to the scores (slope -1), overshot: 2e6 x 50 noisy
    labels, max_fpr 0.05, the weight 5.90 flagged 0.0144 and two more solves found 3.22;
    this rule gives 3.28 from the first solve (CSR 1e6 x 1e4: 3.72, within the tolerance,
    where three solves found 3.49).
    """
    ts = _SHIFT_GRID
    if getattr(problem, "positive_share", None) is None:
        w = weights[negatives]
        at = np.searchsorted(ts, scores[negatives], side="left")
        bins = np.bincount(at, weights=w, minlength=len(ts) + 1)
        above, total = np.cumsum(bins[::-1])[::-1][1:], w.sum()
    else:
        from ._dask_report import report_block

        _, v, b0 = scores.expr  # the scores of a point: X @ v + b0
        mask = np.asarray(negatives, dtype=float)
        above, total, _ = problem.A_con.reduce(report_block, v, b0, len(mask), ts, mask)
        total = total[0]
    ok = np.flatnonzero(above / total <= max_rate * (1 + 1e-12))
    return float(ts[ok[0]]) if len(ok) else float(ts[-1])
