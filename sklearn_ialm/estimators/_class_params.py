"""The parameters that name classes (``pos_label``, ``max_class_error``, ``max_fpr``)
checked against the classes of ``y``, and class labels shown with their type.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ._inputs import _label

__all__ = [
    "binary_max_fpr",
    "check_every_class_weighted",
    "check_two_class_params",
    "typed",
    "typed_classes",
]


def _python(value):
    return value.item() if isinstance(value, np.generic) else value


def typed(value) -> str:
    """``value``'s repr and its type, ``'1' (str)``: a label the classes do not hold may
    look like one of them in another type."""
    value = _python(value)
    return f"{value!r} ({type(value).__name__})"


def typed_classes(classes) -> str:
    """The classes as a list with their type, ``[0, 1, 2] (int)`` (each one's type if they
    differ)."""
    values = [_python(c) for c in classes]
    kinds = {type(v).__name__ for v in values}
    if len(kinds) == 1:
        return f"{values!r} ({kinds.pop()})"
    return "[" + ", ".join(typed(v) for v in values) + "]"


def _class_bounds(est, classes):
    """``{class code: alpha}`` of ``max_class_error`` (validated against ``classes``)."""
    spec = est.max_class_error
    if not isinstance(spec, dict) or not spec:
        raise ValueError(
            "max_class_error must be a non-empty dict {class label: alpha} with alpha in "
            f"(0, 1), got {spec!r}."
        )
    listed = classes.tolist()
    out = {}
    for label, alpha in spec.items():
        hits = [i for i, c in enumerate(listed) if c == label]
        if len(hits) != 1:
            raise ValueError(
                f"max_class_error key {typed(label)} is not one of the classes of y: "
                f"{typed_classes(classes)}."
            )
        ok = isinstance(alpha, Real) and not isinstance(alpha, bool) and 0 < alpha < 1
        if not ok:
            raise ValueError(
                f"max_class_error[{label!r}] must be a number in (0, 1), got {alpha!r}."
            )
        out[hits[0]] = float(alpha)
    return out


def binary_max_fpr(est, classes) -> float:
    """The ``max_fpr`` of a two-class fit given ``max_class_error={negative: alpha}``.

    ``classes`` are the two classes in the fit's order (negative first, see ``pos_label``);
    ``max_fpr`` must not be set (they are two forms of one bound).
    """
    if est.max_fpr is not None:
        raise ValueError(
            f"Set either max_fpr or max_class_error, not both (got max_fpr={est.max_fpr!r} and "
            f"max_class_error={est.max_class_error!r}); max_class_error={{negative: alpha}} "
            "is max_fpr=alpha (leave max_fpr at its default, None)."
        )
    bounds = _class_bounds(est, classes)
    if list(bounds) != [0]:
        raise ValueError(
            "With two classes, max_class_error bounds the error of the negative class "
            f"({_label(classes[0])}, its false-positive rate) only, got "
            f"{est.max_class_error!r}: the binary model keeps max_fpr's form."
        )
    return bounds[0]


def check_two_class_params(est, K):
    """Refuse the two-class parameters set on ``K > 2`` classes: a bound or a label the user
    sets is applied or refused, never dropped."""
    pos_label = getattr(est, "pos_label", None)
    if pos_label is not None:
        raise ValueError(
            f"pos_label={pos_label!r} names the positive class of a two-class fit, but y "
            f"has {K} classes, none of them positive: leave pos_label=None."
        )
    if hasattr(est, "max_class_error") and est.max_fpr is not None:
        raise ValueError(
            f"max_fpr={est.max_fpr!r} bounds the false-positive rate of two classes, but y "
            f"has {K} classes: bound class errors with max_class_error={{class label: alpha, "
            "...}, and leave max_fpr=None."
        )


def check_every_class_weighted(est, totals, classes):
    """Refuse a class of zero total weight (``totals``, by class): a Neyman-Pearson fit bounds
    and reports each class's error, a share of its weight, undefined for that class."""
    if np.all(totals > 0):
        return
    none = classes[totals <= 0]
    which = f"class {typed(none[0])}" if len(none) == 1 else f"classes {typed_classes(none)}"
    raise ValueError(
        f"sample_weight is 0 on every row of {which} of y: the error of a class, which "
        f"{type(est).__name__} bounds and reports (train_class_errors_), is a share of its "
        "weight, undefined without any. Drop those rows from X and y to fit the other "
        "classes, or give them a positive weight."
    )
