"""The paper's models as problem objects for the solvers."""

from .fairness import CONSTRAINTS, FORMS, fairness_metric, fairness_problem
from .gaussian import GaussianNeymanPearson
from .linear import LinearProblem
from .losses import LOSSES
from .neyman_pearson import neyman_pearson_logistic_problem, neyman_pearson_problem

__all__ = [
    "CONSTRAINTS",
    "FORMS",
    "LOSSES",
    "GaussianNeymanPearson",
    "LinearProblem",
    "fairness_metric",
    "fairness_problem",
    "neyman_pearson_logistic_problem",
    "neyman_pearson_problem",
]
