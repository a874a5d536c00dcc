"""The numerical layer: problems, prox operators, Stoc-iALM with PStorm, and IPC.

Arrays in, a result object out; nothing here imports scikit-learn.
"""

from .ialm import PRESETS, IALMResult, stoc_ialm
from .ipc import IPC_TUNED, IPCResult, ipc
from .kkt import kkt_dual_residual, optimal_dual, original_residuals, slack_residuals
from .problem import FiniteSumProblem, FunctionProblem, Problem, SampledProblem
from .prox import L1, Box, NoProx, Prox

__all__ = [
    "L1",
    "PRESETS",
    "Box",
    "FiniteSumProblem",
    "FunctionProblem",
    "IALMResult",
    "IPCResult",
    "IPC_TUNED",
    "NoProx",
    "Problem",
    "Prox",
    "SampledProblem",
    "ipc",
    "kkt_dual_residual",
    "optimal_dual",
    "original_residuals",
    "slack_residuals",
    "stoc_ialm",
]
