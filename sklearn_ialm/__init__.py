"""Constrained classifiers for scikit-learn, fitted by stochastic inexact augmented Lagrangian."""

from . import estimators
from ._version import __version__
from .estimators import FairLogisticClassifier, NeymanPearsonClassifier
from .report import BoundReport

# ``sklearn_ialm.estimators.BoundReport``, where the report lived before it became a layer of
# its own above the estimators, still names it. Set here, above both layers: the estimators
# package importing the report would close an import circle.
estimators.BoundReport = BoundReport

__all__ = ["BoundReport", "FairLogisticClassifier", "NeymanPearsonClassifier", "__version__"]
