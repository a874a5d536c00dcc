"""The history of a Stoc-iALM run: one row per evaluation of the stopping rule."""

from __future__ import annotations

import numpy as np

__all__ = ["HISTORY_COUNTS", "History"]

#: The columns of ``IALMResult.history`` that count from the start of the run (data passes,
#: stop-test passes, the paper's passes, oracle calls, draws, inner iterations); the others
#: are values at each stop test.
HISTORY_COUNTS = (
    "data_passes",
    "check_passes",
    "paper_passes",
    "oracle_calls",
    "objective_draws",
    "constraint_draws",
    "inner_iter",
)

_VALUES = (
    "outer_iter",
    "beta",
    "primal_residual",
    "dual_residual",
    "primal_residual_se",
    "dual_residual_se",
    "objective",
    "constraint",
    "batch_size",
    "check_rows",
)


class History:
    """The rows of :attr:`~sklearn_ialm.solver.IALMResult.history`, with the counts of
    ``counter`` at each one."""

    def __init__(self, counter, n_constraints):
        self.counter = counter
        self.n_constraints = n_constraints
        self.columns = {key: [] for key in HISTORY_COUNTS + _VALUES}

    def record(self, verdict) -> None:
        """Append the row of one evaluation of the stopping rule (a ``Verdict``)."""
        counter = self.counter
        _, beta, k, inner = verdict.al
        for key, val in (
            ("data_passes", counter.passes()),
            ("check_passes", counter.passes(counter.check_evaluations)),
            ("paper_passes", counter.paper_passes()),
            ("oracle_calls", counter.evaluations),
            ("objective_draws", counter.objective_draws),
            ("constraint_draws", counter.constraint_draws),
            ("inner_iter", inner),
            ("outer_iter", k),
            ("beta", beta),
            ("primal_residual", verdict.pres),
            ("dual_residual", verdict.dres),
            ("primal_residual_se", verdict.pres_se),
            ("dual_residual_se", verdict.dres_se),
            ("objective", verdict.objective),
            ("constraint", float(np.max(verdict.c)) if self.n_constraints else np.nan),
            ("batch_size", verdict.batch_size),
            ("check_rows", verdict.check_rows),
        ):
            self.columns[key].append(val)

    def as_arrays(self) -> dict:
        return {key: np.asarray(val) for key, val in self.columns.items()}
