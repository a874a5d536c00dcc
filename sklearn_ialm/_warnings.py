"""Warnings that point at the user's line, whatever the depth of the package's call.

A fixed ``stacklevel`` counts the frames between ``warnings.warn`` and the user's call, and
that count changes with every path through the package (a fit on a working copy, a certified
fit around a plain one, seeds run through joblib): a miscount points the warning at a line of
the library (``fair.py:637``), which the user cannot act on, and which Python's "default"
filter then shows once for all the calls of a session. :func:`warn` finds the line instead:
the frame that called into the package, outside it (the user's script, or scikit-learn's
``cross_val_score`` that called ``fit``).
"""

from __future__ import annotations

import sys
import warnings

__all__ = ["warn"]

_PACKAGE = __name__.partition(".")[0]


def _in_package(frame) -> bool:
    name = frame.f_globals.get("__name__") or ""
    return name == _PACKAGE or name.startswith(_PACKAGE + ".")


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the frame that called into the
    package: the one just outside its outermost frame on the stack.

    The outermost, not the nearest: a call that leaves the package and comes back (joblib
    running the package's function for it) is still the package's work.

    Parameters
    ----------
    message : str
    category : type of Warning, default=UserWarning
    """
    # stacklevel 1 is this function, 2 its caller (the package's frame that warns).
    frame, level, outermost = sys._getframe(1), 2, 2
    while frame is not None:
        if _in_package(frame):
            outermost = level
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=outermost + 1)
