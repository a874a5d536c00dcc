"""scikit-learn estimators: validate, build a problem, run the solver, expose the result."""

# The hook the report layer, above, registers its builder with (see ``bound_report``).
from ._base import register_report_builder as register_report_builder
from .fair import FairLogisticClassifier
from .neyman_pearson import NeymanPearsonClassifier

__all__ = ["FairLogisticClassifier", "NeymanPearsonClassifier"]
