"""Constrained classifiers for scikit-learn, fitted by stochastic inexact augmented Lagrangian."""

__version__ = "0.1.0.dev0"
