r"""
Quick start: a spam filter with a bounded false-positive rate
=============================================================

A spam filter makes two kinds of mistakes: it lets spam through (a false negative) or it
sends real mail to the spam folder (a false positive). The second is the costly one, so we
ask for a model that misses as little spam as possible **subject to** flagging at most 10 % of
the real mail. :class:`~sklearn_ialm.NeymanPearsonClassifier` fits exactly that: its
predictions flag at most ``max_fpr`` of the real mail it was trained on, and as close to that
budget as the scores allow, with the score that misses the least spam there.

The score is a logistic regression. Its real-mail rows carry a weight, chosen so that the
model's own boundary sits near the budget. The decision threshold then spends the budget on
the training rows. We use the UCI spambase data that ship with the package.
"""

# %%
# Fit
# ---
# The paper standardises the features and scales every row to unit norm. In a pipeline
# these steps learn their statistics on the training rows only. ``batch_size=10`` is the
# paper's minibatch. It changes nothing here: on a few thousand rows the default solver
# skips the minibatch phase (``n_iter_`` is 0) and solves on all rows.
import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

from sklearn_ialm import NeymanPearsonClassifier
from sklearn_ialm.datasets import load_spambase
from sklearn_ialm.plotting import ConvergenceDisplay

X, y = load_spambase(return_X_y=True)  # y = 1: spam
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, stratify=y, random_state=0
)
model = make_pipeline(
    StandardScaler(),
    Normalizer(),
    NeymanPearsonClassifier(max_fpr=0.1, batch_size=10, random_state=0),
)
model.fit(X_train, y_train)
clf = model[-1]

# %%
# Did it converge, and does the bound hold?
# -----------------------------------------
# ``converged_`` says that the solver's optimality checks passed (``tol``). The bound is on
# the predictions: ``train_fpr_`` is the share of the training real mail that ``predict``
# flags, and ``threshold_`` the cut on the score that gives it.
print(
    f"converged: {clf.converged_} after {clf.n_data_passes_:.1f} data passes"
)
train_pred = model.predict(X_train)
train_fpr = np.mean(train_pred[y_train == 0] == 1)
print(
    f"training FPR {train_fpr:.4f} (bound 0.1), threshold {clf.threshold_:.3f}"
)

# %%
# On held-out mail the hard rates are what a user sees:
pred = model.predict(X_test)
test_fpr = np.mean(pred[y_test == 0] == 1)
test_fnr = np.mean(pred[y_test == 1] == 0)
print(
    f"test: {test_fpr:.1%} of real mail flagged, {test_fnr:.1%} of spam missed"
)

# %%
# The same budget spent by logistic regression (threshold on the training real mail):
from sklearn.linear_model import LogisticRegression  # noqa: E402

logreg = make_pipeline(StandardScaler(), Normalizer(), LogisticRegression())
logreg.fit(X_train, y_train)
s_train = logreg.decision_function(X_train)[y_train == 0]
cut = np.sort(s_train)[::-1][int(np.floor(train_fpr * len(s_train)))]
lr_pred = logreg.decision_function(X_test) > cut
print(
    f"LogisticRegression: {np.mean(lr_pred[y_test == 0]):.1%} of real mail flagged, "
    f"{np.mean(~lr_pred[y_test == 1]):.1%} of spam missed"
)

# %%
# The convergence picture
# -----------------------
# The solver's residuals against ``tol`` at every check of the stopping rule. This model
# keeps no constraint inside its solver (the threshold meets the bound), so the left panel
# says so in words, and the right one draws the dual residual only: the primal residual is
# 0 at every check, which a log axis cannot show.
display = ConvergenceDisplay.from_estimator(clf)

# %%
# Check
# -----
assert clf.converged_
assert clf.n_iter_ == 0  # no minibatch phase on these rows (see Fit)
assert (
    0.1 - 0.01 <= train_fpr <= 0.1
)  # the bound holds on the predictions, budget spent
assert train_fpr == clf.train_fpr_
# On new mail the rate is a sample: within 3 standard errors of the bound.
n_real = np.sum(y_test == 0)
assert test_fpr <= 0.1 + 3 * np.sqrt(0.1 * 0.9 / n_real)
