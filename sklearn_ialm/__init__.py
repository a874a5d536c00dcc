"""Constrained classifiers for scikit-learn, fitted by stochastic inexact augmented Lagrangian."""

from .estimators import FairLogisticClassifier, NeymanPearsonClassifier

__version__ = "0.1.0.dev0"

__all__ = ["FairLogisticClassifier", "NeymanPearsonClassifier", "__version__"]
