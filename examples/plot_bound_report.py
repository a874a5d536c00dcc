r"""
A bound report for a reviewer: per-group rates, intervals and the certificate
==============================================================================

After a fit with a fairness bound the questions are: does the bound hold, on which rows, for
whom, and at what cost? :meth:`~sklearn_ialm.FairLogisticClassifier.bound_report` answers
them on any rows in one object (:class:`~sklearn_ialm.BoundReport`): per group the counts,
the rate of ``predict`` that the bound is on with its exact (Clopper-Pearson) interval, the
metric as fairlearn computes it, the bound and its status, and an unconstrained model beside
it. :class:`~sklearn_ialm.plotting.BoundDisplay` draws the same on training and test rows.

The data are a9a (UCI Adult: does a person earn more than 50K a year?), bundled with the
package: a training file and a test file. The groups are the sex column of Adult (LIBSVM
feature 72, "Female"). The bound: demographic parity, the selection rates of women and men
at most 0.05 apart, **certified on new data** with ``calibration="clopper-pearson"``: 30 %
of the training rows are held out, the model is trained inside the bound by the margin they
call for, and exact binomial limits of the held-out rates give a worst case of the gap that
holds with probability 95 %.
"""

# %%
# Data, the constrained model and an unconstrained baseline
# ---------------------------------------------------------
import textwrap

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from sklearn_ialm import FairLogisticClassifier
from sklearn_ialm.datasets import load_a9a
from sklearn_ialm.plotting import BoundDisplay

a9a = load_a9a()
FEMALE = 71  # 0-based column of LIBSVM feature 72 (sex = Female)


def sex(X):
    return np.where(X[:, FEMALE].toarray().ravel() == 1, "female", "male")


X, y, groups = a9a.data, a9a.target, sex(a9a.data)
X_test, y_test, groups_test = (
    a9a.data_test,
    a9a.target_test,
    sex(a9a.data_test),
)

clf = FairLogisticClassifier(
    constraint="demographic_parity",
    bound=0.05,
    calibration="clopper-pearson",
    delta=0.05,
    random_state=0,
).fit(X, y, sensitive_features=groups)
baseline = LogisticRegression(max_iter=1000).fit(X, y)
print(textwrap.fill(clf.certificate_.message, 79))

# %%
# The report on the test rows
# ---------------------------
# The test file played no part in the fit, so the intervals are valid for it: the *limit*
# is the gap's worst case over the two groups' intervals (upper limit of one rate minus the
# lower limit of the other), and the bound is *certified* on these rows when the limit meets
# it. The baseline's columns give the price of the bound.
test_report = clf.bound_report(
    X_test, y_test, sensitive_features=groups_test, baseline=baseline
)
print(test_report)

# %%
# In a notebook the report shows as HTML tables; ``to_frame`` gives them as pandas
# DataFrames (``"rates"``, ``"bounds"``, ``"summary"``).
test_report.to_frame("bounds")

# %%
# The report on the training rows
# -------------------------------
# The bound holds on the training rows (``bound_met_``); there the intervals only show the
# sampling noise, since the model was fitted on these rows. The certificate of the fit
# (from the held-out rows) is what speaks for new data.
train_report = clf.bound_report(
    X, y, sensitive_features=groups, baseline=baseline
)
print(train_report)

# %%
# The figure: rates per group and the bound
# -----------------------------------------
# Left: the selection rate of each group with its 95 % exact interval, training and test
# rows side by side; the shaded bands are 0.05 wide, centred between the groups' rates, so
# the bound holds where the rates fit in the band of their colour. Right: the gap
# (fairlearn's ``demographic_parity_difference``), its worst case (end of the bar) and the
# bound (dashed); the shaded side breaks it.
display = BoundDisplay.from_estimator(
    clf,
    X,
    y,
    sensitive_features=groups,
    X_test=X_test,
    y_test=y_test,
    sensitive_features_test=groups_test,
)
plt.show()

# %%
# For a model card
# ----------------
# ``to_markdown`` gives a short table a README or a skops model card can carry, and
# ``to_dict`` the same as JSON-ready Python.
print(test_report.to_markdown())

# %%
# Check
# -----
# The certificate holds, the report's gap is the gap of ``predict`` on the test rows, the
# bound is certified on them too, and the baseline breaks it.
pred = clf.predict(X_test)
gap = abs(
    pred[groups_test == "female"].mean() - pred[groups_test == "male"].mean()
)
bound = test_report.bounds[0]
assert clf.certified_
assert bound["value"] == gap
assert bound["status"] == "certified" and bound["limit"] <= 0.05
assert bound["baseline_status"] == "not met"
assert train_report.bounds[0]["value"] <= 0.05 + 1e-12
