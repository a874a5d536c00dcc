"""Plots of fitted models and solver runs (matplotlib, from the ``plot`` extra).

matplotlib is imported when something is drawn, not when this package is imported: install
it with ``pip install "sklearn-ialm[plot]"``.
"""

from .convergence import ConvergenceDisplay

__all__ = ["ConvergenceDisplay"]
