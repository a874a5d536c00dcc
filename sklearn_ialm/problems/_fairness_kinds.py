"""The fairness constraints' kinds and forms (see :mod:`.fairness`), and each group-level
rate as a linear function of the predictions, shared by the metric and the constraints.
"""

from __future__ import annotations

__all__ = ["CONSTRAINTS", "FORMS"]

# The group-level rates behind each parity kind, in the order their constraints appear.
_PARITY_RATES = {
    "demographic_parity": ("selection_rate",),
    "true_positive_rate_parity": ("true_positive_rate",),
    "false_positive_rate_parity": ("false_positive_rate",),
    "equalized_odds": ("true_positive_rate", "false_positive_rate"),
    "error_rate_parity": ("error_rate",),
}
_SHORT = {"true_positive_rate": "tpr", "false_positive_rate": "fpr"}
CONSTRAINTS = ("positive_share", "disparate_impact", *_PARITY_RATES)
FORMS = ("difference", "ratio")


def _check_form(kind, form):
    """The form of ``kind``: parity kinds take both, the others only their own."""
    if kind not in CONSTRAINTS:
        raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {kind!r}.")
    if kind in _PARITY_RATES:
        if form is None:
            return "difference"
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS} or None, got {form!r}.")
        return form
    own = "ratio" if kind == "disparate_impact" else None
    if form is not None and form != own:
        allowed = "None or 'ratio'" if own else "None"
        raise ValueError(f"form must be {allowed} for constraint={kind!r}, got {form!r}.")
    return own


def _rate_terms(rate, y):
    """Rows a rate averages over (``None``: all), and ``(c, s)``: a row counts ``c + s pred``."""
    if rate == "selection_rate":
        return None, 0.0, 1.0
    if rate == "true_positive_rate":
        return y, 0.0, 1.0
    if rate == "false_positive_rate":
        return ~y, 0.0, 1.0
    # error_rate: 1[pred != y] = y + (1 - 2 y) pred
    return None, y.astype(float), 1.0 - 2.0 * y


def _is_zero(c) -> bool:
    """Whether a rate's constant term ``c`` (see :func:`_rate_terms`) is the scalar 0."""
    return isinstance(c, float) and c == 0.0


def _is_one(s) -> bool:
    """Whether a rate's slope ``s`` is the scalar 1 (a product by it changes nothing)."""
    return isinstance(s, float) and s == 1.0
