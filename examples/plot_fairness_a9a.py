r"""
Fairness on a9a: the paper's constraint and the four-fifths rule
================================================================

The a9a data (UCI Adult) predict whether a person earns more than 50K a year. An
unconstrained model rarely gives a positive prediction to the minority group of the paper's
experiment (race = Black, about 10 % of the rows). :class:`~sklearn_ialm.FairLogisticClassifier`
fits a logistic model (the paper's is the truncated logistic loss, ``loss=
"truncated_logistic"``) under one of these group constraints, which hold on the predictions
of the training rows (the solver works on the soft prediction
:math:`p = \sigma(\text{score})`):

* ``"positive_share"`` (the paper's): the group receives at least the share ``bound`` of all
  positive predictions, :math:`\sum_{S_g} p \ge \text{bound} \sum_S p`;
* ``"disparate_impact"``: the group's mean prediction is at least ``bound`` times the overall
  mean, :math:`\text{mean}_{S_g} p \ge \text{bound} \cdot \text{mean}_S p`; at ``bound=0.8``
  this is the "four-fifths rule" of US hiring guidelines;
* ``"demographic_parity"``: the group's mean prediction differs from the others' by at most
  ``bound``.

The training file a9a is the training set; the test file a9a.t measures what the constraint
does on new rows.
"""

# %%
# The data and an unconstrained baseline
# --------------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from sklearn_ialm import FairLogisticClassifier
from sklearn_ialm.datasets import load_a9a
from sklearn_ialm.plotting import ConvergenceDisplay

# sphinx_gallery_thumbnail_number = 2

a9a = load_a9a()
X, y, groups = (
    a9a.data,
    a9a.target,
    a9a.groups,
)  # groups: 1 = the minority group
X_test, y_test, groups_test = a9a.data_test, a9a.target_test, a9a.groups_test


def report(name, model):
    """Test accuracy, the group's share of the positives, its impact ratio."""
    pred = model.predict(X_test)
    share = pred[groups_test == 1].sum() / pred.sum()
    ratio = pred[groups_test == 1].mean() / pred.mean()
    accuracy = np.mean(pred == y_test)
    print(
        f"{name:22s} accuracy {accuracy:.4f}, share {share:.3f}, ratio {ratio:.2f}"
    )
    return dict(name=name, accuracy=accuracy, share=share, ratio=ratio)


results = [
    report("LogisticRegression", LogisticRegression(max_iter=1000).fit(X, y))
]

# %%
# The paper's constraint: a share of at least 0.1
# -----------------------------------------------
# ``sensitive_features`` gives the group of every training row. With two groups the smaller
# one is protected (``protected_groups_``); name others with ``protected_groups``.
share_clf = FairLogisticClassifier(
    constraint="positive_share", bound=0.1, random_state=0
)
share_clf.fit(X, y, sensitive_features=groups)
print(
    f"converged: {share_clf.converged_}, protected group: {share_clf.protected_groups_}"
)
print(
    f"training share: soft {share_clf.constraint_values_[0]:.3f}, "
    f"hard {share_clf.hard_constraint_values_[0]:.3f}, bound {share_clf.bound_}"
)
results.append(report("share >= 0.1", share_clf))

# %%
# The bound holds on the training predictions (``hard_constraint_values_``): the solver works
# on the soft share, and the fit moves the soft problem until the predictions meet the bound.
# The convergence display shows the soft constraint of the solver's runs.
display = ConvergenceDisplay.from_estimator(share_clf)

# %%
# A larger share: ``bound=0.12``
# ------------------------------
# The bound is a dial: a larger share for the group, at some accuracy.
larger = FairLogisticClassifier(
    constraint="positive_share", bound=0.12, random_state=0
)
larger.fit(X, y, sensitive_features=groups)
print(
    f"converged: {larger.converged_} after {larger.n_data_passes_:.0f} data passes; "
    f"training share: hard {larger.hard_constraint_values_[0]:.3f}"
)
results.append(report("share >= 0.12", larger))

# %%
# The four-fifths rule
# --------------------
four_fifths = FairLogisticClassifier(
    constraint="disparate_impact", bound=0.8, random_state=0
)
four_fifths.fit(X, y, sensitive_features=groups)
soft, hard = (
    four_fifths.constraint_values_[0],
    four_fifths.hard_constraint_values_[0],
)
print(
    f"converged: {four_fifths.converged_}; training impact ratio: soft {soft:.2f}, hard {hard:.2f}"
)
results.append(report("ratio >= 0.8", four_fifths))

# %%
# Side by side on the test rows
# -----------------------------
# The constraints cost little accuracy. They hold on the training rows; on new rows the
# rates are a fresh sample and land near the bounds (``calibration="clopper-pearson"``
# certifies a bound on new data).
fig, axes = plt.subplots(
    1, 3, figsize=(10, 3), sharey=True, layout="constrained"
)
names = [r["name"] for r in results]
panels = (
    ("accuracy", None, "test accuracy", (0.8, 0.86)),
    ("share", 0.1, "minority share of positives (bound 0.1)", (0, 0.13)),
    ("ratio", 0.8, "impact ratio (bound 0.8)", (0, 1.2)),
)
for ax, (key, bound, title, xlim) in zip(axes, panels, strict=True):
    ax.barh(names, [r[key] for r in results], color=["0.6", "C0", "C0", "C1"])
    if bound is not None:
        ax.axvline(bound, color="k", ls="--", lw=1)
    ax.set(title=title, xlim=xlim)
axes[0].invert_yaxis()  # the y axis is shared: the first model on top
plt.show()

# %%
# Check
# -----
# Every fit converged, and each bound holds on the training predictions.
for clf in (share_clf, larger, four_fifths):
    assert clf.converged_ and clf.bound_met_
assert share_clf.hard_constraint_values_[0] >= 0.1
assert larger.hard_constraint_values_[0] >= 0.12
assert four_fifths.hard_constraint_values_[0] >= 0.8
assert results[1]["share"] > results[0]["share"]  # fairer than LogReg
