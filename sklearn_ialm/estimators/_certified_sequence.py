"""Fixed-sequence testing of a certified fit's candidate models.

A certified fit (:mod:`._certified`, :mod:`._certified_multiclass`) does not bet on one
training bound. It sets a short list of candidate training bounds, from the tightest (a model
there passes the certificate about 99 times in 100) to the loosest (about 2 times in 10),
trains a model at each in that order on the training rows (each from the one before:
``warm_start``), certifies each on the same held-out rows at ``delta``, stops at the first
that fails, and keeps the loosest certified.

**Why one ``delta`` covers every look.** The candidates and their order are set from the
held-out counts and the training rows' predictions, never from the held-out predictions:
given those, every candidate model is fixed. Take the first candidate in the order whose
population metric is worse than the bound (fixed, as the models are). A model worse than the
bound is certified only if that candidate passes its certificate, an event of probability at
most ``delta``: the sequence stops at the first failure, so no later candidate is tested
unless every earlier one passed. This is fixed-sequence testing, as in Learn then Test
(Angelopoulos, Bates, Candes, Jordan and Lei, 2021, arXiv:2110.01052). Testing on past a
failure would lose it: every tested model worse than the bound would get its own chance to
pass (``tests/test_certificate_coverage.py`` checks both).

What is guaranteed is the bound: ``P(kept model's population metric worse than bound) <=
delta``. ``certificate_.value`` is the kept model's Clopper-Pearson worst case, which would
hold at ``delta`` were that model the only one tested.
"""

from __future__ import annotations

__all__ = ["POWERS", "candidate_bounds", "certify_in_sequence", "fixed_sequence"]

#: The probabilities of passing (at the model's rates, read from a trial fit) at which the
#: candidate training bounds are set, tightest first. 0.9 is where a single look trained;
#: the tighter two raise the chance of a certificate, the looser ones train nearer the bound
#: where the held-out rows allow it.
POWERS = (0.99, 0.95, 0.9, 0.8, 0.65, 0.5, 0.35, 0.2)


def candidate_bounds(bound_at, looser_up: bool) -> list[float]:
    """The distinct training bounds ``bound_at(power)`` for ``power`` in :data:`POWERS` that
    exist (not None), tightest first; ``looser_up`` when a larger bound is looser (a
    difference), else a smaller one is (a ratio, a minimum share)."""
    bounds = {float(b) for b in map(bound_at, POWERS) if b is not None}
    return sorted(bounds, reverse=not looser_up)


def fixed_sequence(candidates, passes) -> list:
    """The candidates that pass, in order, up to the first that fails (which is tested,
    and nothing after it): ``passes(candidate)`` is called in the order given."""
    certified = []
    for candidate in candidates:
        if not passes(candidate):
            break
        certified.append(candidate)
    return certified


def certify_in_sequence(est, fit, certify, candidates, *, spent, held_share):
    """Fit ``est`` at each of ``candidates`` in order (``fit(bound, certify)`` trains on the
    training rows and certifies on the held-out ones) up to the first that fails, and leave
    it as the loosest certified, or as the first candidate when none is.

    Returns the fit's caught warnings and the training bound of the model kept. Sets
    ``certification_path_`` (each tested candidate's training bound, certified value and
    verdict, in order) and ``n_data_passes_``: ``spent`` (the trial fits' passes) plus every
    candidate's, each with its held-out predictions (``held_share`` of a pass).
    """
    warm_start, kept, path = est.warm_start, [], []

    def passes(train_bound):
        nonlocal spent
        caught = fit(train_bound, certify)
        spent += est.n_data_passes_ + held_share
        cert = est.certificate_
        path.append((train_bound, float(cert.value), bool(cert.certified)))
        # The fitted state, whole (a fit replaces est.__dict__, it never edits it in place).
        kept.append((dict(est.__dict__), caught, train_bound))
        return bool(est.certified_)

    est.warm_start = True  # each candidate from the one before: a few passes each
    try:
        certified = fixed_sequence(candidates, passes)
    finally:
        est.warm_start = warm_start
    state, caught, train_bound = kept[len(certified) - 1] if certified else kept[0]
    est.__dict__ = state
    est.warm_start = warm_start
    est.certification_path_ = path
    est.n_data_passes_ = float(spent)
    return caught, train_bound
