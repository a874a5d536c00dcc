"""The one count of a run: rows touched and samples drawn, and what they convert to."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Counter"]


@dataclass
class Counter:
    """Per-sample oracle evaluations and draws, by kind, with the set-up and stop tests apart.

    ``objective_evaluations`` and ``constraint_evaluations`` count the minibatch work: every
    per-sample evaluation (a sample used at two points counts twice). ``setup_evaluations``
    counts the rows read before the first iteration (smoothness estimates) and
    ``check_evaluations`` those of the stopping rule's evaluations. ``evaluations`` is the
    sum of all four, what a budget is charged. ``draws`` count each drawn sample once;
    ``second_batch_draws`` is the part of ``constraint_draws`` drawn as the second,
    independent constraint batch of ``estimator="independent"``, which the paper's tables do
    not count (see :attr:`~sklearn_ialm.solver.IALMResult.n_paper_passes`).

    A counter made by :meth:`for_problem` also knows the rows of a pass and the budget: it
    converts its counts to data passes (:meth:`passes`, :meth:`paper_passes`) and says
    whether work fits in the budget (:meth:`fits`). A bare ``Counter()`` only counts.
    """

    objective_evaluations: int = 0
    constraint_evaluations: int = 0
    objective_draws: int = 0
    constraint_draws: int = 0
    setup_evaluations: int = 0
    check_evaluations: int = 0
    second_batch_draws: int = 0
    #: Rows read by the deterministic finish (:mod:`.finish`): a pass per evaluation.
    finish_evaluations: int = 0
    #: Rows of one data pass (objective plus constraint rows); None: not a finite sum.
    n_samples: int | None = field(default=None, repr=False, compare=False)
    #: Rows of each set, for the paper's count (constraint rows: None without constraints).
    n_objective_samples: int | None = field(default=None, repr=False, compare=False)
    n_constraint_samples: int | None = field(default=None, repr=False, compare=False)
    #: ``problem.paper_settings["count_scale"]`` (one half for the paper's fairness model).
    count_scale: float = field(default=1.0, repr=False, compare=False)
    #: Whether the set-up is in the paper's count (not with the paper's constants).
    setup_in_paper_count: bool = field(default=True, repr=False, compare=False)
    #: Cap of ``evaluations`` for the minibatch work.
    budget: float = field(default=np.inf, repr=False, compare=False)

    @classmethod
    def for_problem(cls, problem, *, max_passes, max_oracle_calls, count_scale=1.0):
        """A counter for a run on ``problem``: a budget of ``max_passes`` data passes for a
        finite sum, of ``max_oracle_calls`` oracle calls (``None``: ``10**7``) otherwise."""
        if not problem.finite:
            budget = 10**7 if max_oracle_calls is None else int(max_oracle_calls)
            return cls(budget=budget)
        n_samples = problem.n_samples
        return cls(
            n_samples=n_samples,
            n_objective_samples=problem.n_objective_samples,
            n_constraint_samples=problem.n_constraint_samples if problem.n_constraints else None,
            count_scale=count_scale,
            budget=max_passes * n_samples,
        )

    @property
    def minibatch_evaluations(self) -> int:
        return self.objective_evaluations + self.constraint_evaluations

    @property
    def evaluations(self) -> int:
        return (
            self.minibatch_evaluations
            + self.setup_evaluations
            + self.check_evaluations
            + self.finish_evaluations
        )

    def add(self, kind: str, *, draws: int = 0, evaluations: int = 0) -> None:
        """Count ``draws`` new samples and ``evaluations`` per-sample evaluations of ``kind``."""
        if kind == "objective":
            self.objective_draws += draws
            self.objective_evaluations += evaluations
        else:
            self.constraint_draws += draws
            self.constraint_evaluations += evaluations

    def fits(self, evaluations) -> bool:
        """Whether minibatch work of this many evaluations fits in what is left of the budget."""
        return self.evaluations + evaluations <= self.budget

    def passes(self, evaluations=None) -> float:
        """``evaluations`` (by default all of them) in data passes; ``nan`` without a pass."""
        if evaluations is None:
            evaluations = self.evaluations
        return evaluations / self.n_samples if self.n_samples else np.nan

    def paper_passes(self) -> float:
        """The paper's count: each drawn sample once, set by set, the second independent
        constraint batch and the stop tests left out, the set-up in (see IALMResult)."""
        if not self.n_samples:
            return np.nan
        used = self.objective_draws / self.n_objective_samples
        if self.n_constraint_samples is not None:
            used += (self.constraint_draws - self.second_batch_draws) / self.n_constraint_samples
        setup = self.passes(self.setup_evaluations) if self.setup_in_paper_count else 0.0
        return setup + self.count_scale * used

    def describe(self) -> str:
        """The count so far, for a progress line."""
        if self.n_samples:
            return f"passes={self.passes():.3f}"
        return f"oracle calls={self.evaluations}"
