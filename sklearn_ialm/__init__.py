"""Constrained classifiers for scikit-learn, fitted by stochastic inexact augmented Lagrangian."""

from .estimators import BoundReport, FairLogisticClassifier, NeymanPearsonClassifier

__version__ = "0.1.0.dev0"

__all__ = ["BoundReport", "FairLogisticClassifier", "NeymanPearsonClassifier", "__version__"]
