"""What a stream's ``bound_met_`` says (:mod:`._stream`'s publishing side).

The running rates (``running_constraint_values_``) count every prediction a stream made, its
first models' too, and those miss the bound: over 20000 rows they read a gap of 0.108 where
the published model's on new rows is 0.005. The verdict reads the *recent* rows instead:
those of the last calls, each batch predicted by the model its call published, with the
sampling margin of so many rows (two standard errors, by the delta method on the binomial
rates of the cells, group x label); the call that finds them missing the bound says so once.
Where that margin is wider than the room the bound leaves, the reading itself must meet it.
"""

from __future__ import annotations

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._warnings import warn

__all__ = [
    "cell_rates",
    "count_recent",
    "publish_recent",
    "warn_if_constant",
    "warn_if_missed",
    "warn_if_worse",
]

#: ``bound_met_`` judges the rows of the recent calls, each predicted by the model its call
#: published: at least the last RECENT_SHARE of the rows seen, and RECENT_MIN rows (or all
#: of them, and at least the last call), at most twice that and a call (a window of two
#: blocks, the older dropped when the newer fills).
RECENT_SHARE = 0.1
RECENT_MIN = 5000
#: ``bound_met_`` is False when those rows miss the bound by more than this many standard
#: errors of their sampling spread (``recent_margin_``).
RECENT_Z = 2.0
#: A model is worse than the constant model on the recent rows when its mean log-loss
#: exceeds the constant's by more than RECENT_Z standard errors and this many nats: on the
#: group tied to the score (sd 2, 2e5 rows), a near-constant model meeting the bound at
#: accuracy 0.524 read 0.0028 over it (0.0011 on fresh rows), a model ranking the rows
#: backwards (accuracy 0.434) 0.022.
WORSE_TOL = 0.005
#: ... and the recent rows are at least this many (the fewest rows a stream learns from at
#: once: fewer are predicted by the null model, and a handful of rows' spread is no spread).
WORSE_MIN = 1000


def count_recent(state, X, codes, w, groups):
    """Count the call's rows, predicted by the model it publishes, into the recent window:
    per cell their weight, that of their positive predictions, their squared weights and
    their number. The running rates count the predictions of a stream's early models too, and
    a stream's first models miss its bound: over 20000 rows they read a gap of 0.108 where
    the model's on new rows is 0.005."""
    if state.kind == "softmax":
        return
    cells, n = state.pose.cells(codes, groups), state.pose.n_cells
    excess = _log_loss_excess(state, X, codes)
    values = (w, w * state.predicted(X), w * w, np.ones(len(w)), w * excess, w * excess**2)
    sums = np.stack([np.bincount(cells, weights=v, minlength=n) for v in values])
    if state.recent is None or state.recent.shape[1:] != sums.shape:
        # (A stream pickled before the log-losses were counted starts a new window.)
        state.recent = np.zeros((2, *sums.shape))
    state.recent[1] += sums
    if state.recent[1, 3].sum() >= max(RECENT_SHARE * state.n_seen, RECENT_MIN):
        state.recent = np.stack([state.recent[1], np.zeros_like(sums)])


def _log_loss_excess(state, X, codes):
    """Each row's log-loss under the published model less the constant model's (the
    log-odds of the classes' weights so far): a fairness stream's own objective, against
    the model that meets any bound on its groups' rates. Zeros for the other streams."""
    if state.kind != "fair":
        return np.zeros(len(codes))
    margins = np.where(codes == 1, 1.0, -1.0)
    loss = np.logaddexp(0.0, -margins * state.scores(X, state.published))
    share = np.clip(state.class_totals[1] / state.class_totals.sum(), 1e-12, 1 - 1e-12)
    return loss + np.log(np.where(codes == 1, share, 1.0 - share))


def _worse_than_constant(state):
    """``(excess, margin, worse)``: the recent rows' mean log-loss of the published model
    over the constant model's, RECENT_Z standard errors of it (Kish's effective number of
    rows), and whether it is worse beyond that margin and :data:`WORSE_TOL` (no verdict on
    under :data:`WORSE_MIN` rows, or before every class has come)."""
    t, _, t2, count, d, d2 = state.recent.sum(axis=0).sum(axis=1)
    if t <= 0 or count < WORSE_MIN or np.any(state.class_totals <= 0):
        # (A class not seen yet: the constant model's log-loss, 0 on the rows so far, is
        # no model's; a stream starting with 3 batches of negatives was told worse.)
        return 0.0, np.nan, False
    excess = d / t
    margin = RECENT_Z * np.sqrt(max(d2 / t - excess**2, 0.0) * t2 / t**2)
    return float(excess), float(margin), bool(excess - margin > WORSE_TOL)


def _judge_recent(work, state):
    """``(values, margin, met, fpr, n)`` of the recent rows: the constrained metric of their
    predictions, RECENT_Z standard errors of it, whether the bound is met within that margin
    (``fpr``: the false-positive rate and its margin with ``max_fpr``, else None), and their
    number."""
    t, positive, t2, count = state.recent.sum(axis=0)[:4]
    values, point_met, fpr = cell_rates(work, state, t, positive)
    se = _standard_errors(work, state, t, positive, t2, values)
    margin = RECENT_Z * se
    if state.kind == "fair":
        met = work._meets(values - margin, {"bound": state.pose.bound}) or work._meets(
            values + margin, {"bound": state.pose.bound}
        )  # (the one shift that helps: every value is bounded on the same side)
    else:
        met = bool(values[0] - margin[0] <= state.pose.max_fpr + 1e-12)
    if fpr is not None:
        negatives = np.arange(len(t)) % 2 == 0
        fpr_margin = RECENT_Z * _rate_se(positive[negatives].sum(), t[negatives].sum(),
                                         t2[negatives].sum())  # fmt: skip
        met = met and fpr - fpr_margin <= state.pose.max_fpr + 1e-12
        fpr = (fpr, fpr_margin)
    if state.worse[2]:
        # A model worse than the constant one, which meets the bound, gets no benefit of
        # the sampling doubt: it meets the bound on the recent rows' own values or not.
        met = met and point_met
    elif _wider_than_the_bound(work, state, margin):
        # Nor does a reading whose margin is wider than the bound's own room: it cannot
        # tell the bound from several times it (TPR parity 0.02 on 10 % positives, three
        # groups: 0.092 +/- 0.091 read "met" where the model's gap on new rows was 0.076).
        # A conservative verdict: a model on the bound reads over it about half the time
        # (a gap between noisy rates also reads high), and is then told to stream more
        # rows or fit, where "met" would have passed a model at several times the bound.
        met = met and point_met
    return values, margin, bool(met), fpr, int(count.sum())


def _wider_than_the_bound(work, state, margin) -> bool:
    """Whether the recent rows' sampling margin of a fairness bound is wider than the room
    the bound leaves (``bound`` for a difference, ``1 - bound`` for a ratio): their reading
    then cannot tell a model on the bound from one at several times it."""
    margin = np.asarray(margin, dtype=float)
    if state.kind != "fair" or work._form() == "share" or not np.all(np.isfinite(margin)):
        return False
    if margin.size == 0:  # (no constrained pair left: every group but one too small)
        return False
    return bool(np.max(margin) > _room(work, state))


def _room(work, state) -> float:
    return state.pose.bound if work._form() == "difference" else 1.0 - state.pose.bound


def _rate_se(positive, total, total_sq):
    """The standard error of a weighted share ``positive / total`` of rows whose squared
    weights add up to ``total_sq``: ``p (1 - p) / n`` with Kish's effective number ``n`` and
    ``p`` taken as ``(k + 1) / (n + 2)`` (a share of 0 or 1 in a few rows is no certainty)."""
    if total <= 0:
        return np.nan
    n = total**2 / total_sq
    p = (positive / total * n + 1.0) / (n + 2.0)
    return float(np.sqrt(p * (1.0 - p) / n))


def _standard_errors(work, state, t, positive, t2, values):
    """The standard error of each value of the metric of the cells' rates, by the delta
    method: the metric's slope in each cell's rate (by finite differences on the metric
    itself, so every kind and form) against that rate's standard error."""
    if state.kind != "fair":
        return np.array([_rate_se(positive[0], t[0], t2[0])])
    live = np.flatnonzero(t > 0)
    rates, labels, weights = positive[live] / t[live], live % 2, t[live]
    # (The same arrays and context at each call: the report builds its rows once.)
    context = _context(state.pose, live)
    variance = np.zeros(len(values))
    step = 1e-6
    for j, cell in enumerate(live):
        moved = rates.copy()
        moved[j] += step if rates[j] < 0.5 else -step
        try:
            shifted = work._constraint_report(moved, labels, weights, context)
        except ValueError:  # a protected group not among the recent rows: no verdict
            return np.full(len(values), np.nan)
        slope = (shifted - values) / (moved[j] - rates[j])
        variance += slope**2 * _rate_se(positive[cell], t[cell], t2[cell]) ** 2
    return np.sqrt(variance)


def _verdict(attributes) -> str:
    """``"met"``, ``"missed"`` or ``"unjudged"`` (the recent rows lack a rate the bound
    divides by): a stream's verdict from its published attributes."""
    if attributes.get("bound_met_", True):
        return "met"
    return "unjudged" if np.isnan(attributes["recent_constraint_values_"]).any() else "missed"


def _warn_missed(work):
    """The warning of a call that finds the stream's recent rows missing its bound."""
    fair = hasattr(work, "constraint")
    what = work._bound_text({"bound": work.bound_ if fair else work.max_fpr_})
    reached = ", ".join(
        f"{v:.4f} (+/- {m:.4f})"
        for v, m in zip(work.recent_constraint_values_, work.recent_margin_, strict=True)
    )
    if getattr(work, "recent_fpr_", None) is not None:  # a fair stream's max_fpr too
        what += f" with max_fpr={work.max_fpr:g}"
        reached += f"; false-positive rate {work.recent_fpr_:.4f}"
    if np.isnan(work.recent_constraint_values_).any():
        warn(
            f"partial_fit: the {what} cannot be judged on the stream's last "
            f"{work.n_samples_recent_} rows (of the {work.n_samples_seen_} seen): they hold "
            "no row of a rate it divides by (a group, or a class, the bound reads), so "
            "bound_met_ is False. Stream rows of every group and class: the verdict comes "
            "with them.",
            ConvergenceWarning,
        )
        return
    beyond = f"beyond {RECENT_Z:g} standard errors of their sampling"
    if _wider_than_the_bound(work, work._stream, work.recent_margin_):
        beyond = (
            "over it, with a sampling margin wider than the bound itself: so few rows of "
            "a rate it reads cannot show it met (a margin of the bound's size needs about "
            f"{_rows_for_the_bound(work):.2g} recent rows)"
        )
    warn(
        f"partial_fit: the {what} is not met on the stream's recent rows: {reached}, "
        f"{beyond}, on the last "
        f"{work.n_samples_recent_} of the {work.n_samples_seen_} rows seen, each predicted "
        "by the model its call published (bound_met_ is False). A stream comes to its bound "
        "over enough rows: stream more of them (bound_met_ turns True when the recent rows "
        "meet it), or fit the model on stored rows with fit, which puts its training rows on "
        "the bound.",
        ConvergenceWarning,
    )


def _rows_for_the_bound(work) -> float:
    """The recent rows whose margin would be the bound's room: a margin shrinks as one over
    the square root of the rows."""
    room = _room(work, work._stream)
    return work.n_samples_recent_ * (np.max(work.recent_margin_) / room) ** 2


def warn_if_missed(work, before: dict) -> None:
    """Warn when the verdict just published on ``work`` is a miss (or no verdict) that the
    stream's attributes ``before`` the call did not hold: once, at the call that finds it."""
    verdict = _verdict(work.__dict__)
    if verdict != "met" and verdict != _verdict(before if "_stream" in before else {}):
        _warn_missed(work)


def warn_if_constant(work, before: dict) -> None:
    """Warn at the call whose stream published the constant model in place of a model it
    dominates (:meth:`~._stream_measurements.HeldOutMeasurements._publish_constant_if_dominated`),
    once until a model measured better than the constant one is published again: a stream
    too short for its bound ends no longer silently below the constant model."""
    state, old = work._stream, before.get("_stream")
    reading = getattr(state, "constant_reading", None)
    if reading is None or getattr(old, "constant_reading", None) is not None:
        return
    accuracy, constant_accuracy, weight, hard, rows = reading
    values, _, _ = cell_rates(work, state, weight, hard)
    fair = hasattr(work, "constraint")
    what = work._bound_text({"bound": work.bound_ if fair else work.max_fpr_})
    reached = ", ".join(f"{v:.4f}" for v in values)
    warn(
        f"partial_fit: the stream's model is no better than the constant model on the "
        f"{int(rows)} rows it was measured on before learning from them: accuracy "
        f"{accuracy:.4f} against the constant model's {constant_accuracy:.4f}, at {reached} "
        f"for the {what}. The constant model (coef_ 0), which meets the bound, is published "
        "until a model measured on new rows beats it. Where the bound is dear, the "
        "multipliers take many rows to settle: stream more rows, or fit the model on stored "
        "rows with fit.",
        ConvergenceWarning,
    )


def warn_if_worse(work, before: dict) -> None:
    """Warn at the call that finds the published model worse than the constant model on
    the stream's recent rows, by the log-loss it minimises (once until it is not)."""
    state, old = work._stream, before.get("_stream")
    excess, margin, worse = getattr(state, "worse", (0.0, np.nan, False))
    if not worse or getattr(old, "worse", (0.0, np.nan, False))[2]:
        return
    warn(
        f"partial_fit: the stream's model is worse than the constant model on the stream's "
        f"last {work.n_samples_recent_} rows: its log-loss exceeds the constant model's by "
        f"{excess:.4f} (+/- {margin:.4f}), each batch predicted by the model its call "
        "published. Where the bound is dear, the multipliers take many rows to settle: "
        "stream more rows, or fit the model on stored rows with fit.",
        ConvergenceWarning,
    )


def publish_recent(work, state):
    """``bound_met_`` and what it reads: the recent rows' metric, its margin, their rows."""
    if state.recent is None:  # no row of nonzero weight yet: the null model
        work.recent_constraint_values_ = np.full(len(work.running_constraint_values_), np.nan)
        work.recent_margin_ = work.recent_constraint_values_.copy()
        work.n_samples_recent_, work.bound_met_ = 0, True
        return
    state.worse = _worse_than_constant(state)
    values, margin, met, fpr, n = _judge_recent(work, state)
    work.recent_constraint_values_, work.recent_margin_ = values, margin
    work.n_samples_recent_, work.bound_met_ = n, met
    if fpr is not None:
        work.recent_fpr_ = fpr[0]


def cell_rates(work, state, t, positive):
    """``(values, met, fpr)``: the constrained metric of predictions whose weight per cell
    is ``positive`` among the cells' weights ``t``, whether it meets the bound, and (with
    ``max_fpr``, else None) the false-positive rate."""
    pose = state.pose
    if state.kind != "fair":
        fpr = _share(positive[0], t[0])
        return np.array([fpr]), bool(fpr <= pose.max_fpr), None
    live = np.flatnonzero(t > 0)
    context = _context(pose, live)
    try:
        values = work._constraint_report(positive[live] / t[live], live % 2, t[live], context)
    except ValueError:  # a protected group not seen yet
        values = np.full(1 if pose.kind not in ("positive_share", "disparate_impact")
                         else len(pose.protected), np.nan)  # fmt: skip
    met = work._meets(values, {"bound": pose.bound})
    fpr = None
    if pose.max_fpr is not None:
        negatives = live[live % 2 == 0]
        fpr = _share(positive[negatives].sum(), t[negatives].sum())
        met = met and fpr <= pose.max_fpr + 1e-12
    return np.asarray(values, dtype=float), bool(met), fpr


def _context(pose, live):
    """The report's context of the cells ``live``: their groups (a group left out of the
    constraints, min_group_size, hosted by a kept one at weight 0) and the protected ones."""
    codes, kept = pose.constrained(live // 2, np.ones(len(live)))
    context = {"codes": codes, "protected": pose.protected}
    if len(pose.excluded):
        context["kept"] = kept
    return context


def _share(part, total):
    return float(part / total) if total > 0 else float("nan")
