"""Plots of fitted models and solver runs (matplotlib, from the ``plot`` extra).

matplotlib is imported when something is drawn, not when this package is imported: install
it with ``pip install "sklearn-ialm[plot]"``.
"""

from .bound import BoundDisplay
from .convergence import ConvergenceDisplay
from .np_roc import NPROCDisplay

__all__ = ["BoundDisplay", "ConvergenceDisplay", "NPROCDisplay"]
