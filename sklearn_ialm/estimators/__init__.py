"""scikit-learn estimators: validate, build a problem, run the solver, expose the result."""

from ._report import BoundReport
from .fair import FairLogisticClassifier
from .neyman_pearson import NeymanPearsonClassifier

__all__ = ["BoundReport", "FairLogisticClassifier", "NeymanPearsonClassifier"]
