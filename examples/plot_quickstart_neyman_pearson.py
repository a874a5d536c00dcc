r"""
Quick start: a spam filter with a bounded false-positive rate
=============================================================

A spam filter makes two kinds of mistakes: it lets spam through (a false negative) or it
sends real mail to the spam folder (a false positive). The second is the costly one, so we
ask for a model that misses as little spam as possible **subject to** flagging at most 10 % of
the real mail. :class:`~sklearn_ialm.NeymanPearsonClassifier` fits exactly that:

.. math::

    \begin{aligned}
    \min_x \quad & \text{mean over spam of } (1 - p(x)) \\
    \text{s.t.} \quad & \text{mean over real mail of } p(x) \le \texttt{max_fpr},
    \end{aligned}

where :math:`p(x)` is the sigmoid of the linear score, the *soft* prediction. We use the
UCI spambase data that ship with the package.
"""

# %%
# Fit
# ---
# The paper standardises the features and scales every row to unit norm; in a pipeline
# these steps learn their statistics on the training rows only. On a few thousand rows a
# small minibatch (``batch_size=10``, the paper's) checks the stopping rule more often.
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
# Did it converge, and does the constraint hold?
# ----------------------------------------------
# ``converged_`` says that both KKT residuals fell below ``tol`` (1e-2). The constraint was
# written on the *soft* false-positive rate of the training rows, which is
# ``constraint_values_``; the rate of the actual 0/1 predictions is
# ``hard_constraint_values_``. A converged fit keeps the soft rate within ``tol`` of the bound.
print(
    f"converged: {clf.converged_} after {clf.n_data_passes_:.1f} data passes"
)
print(
    f"primal residual {clf.primal_residual_:.1e}, dual residual {clf.dual_residual_:.1e}"
)
print(
    f"training FPR: soft {clf.train_soft_fpr_:.3f}, hard {clf.train_fpr_:.3f}, bound 0.1"
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
# The convergence picture
# -----------------------
# Left: the soft false-positive rate at every check of the stopping rule, against the bound
# (dashed) and the bound plus ``tol`` (grey band). Right: the primal residual (how far the
# constraint is from holding) and the dual residual (how far the point is from stationary)
# against ``tol``; thin vertical lines mark where an outer iteration ended, the multiplier was
# updated and the penalty grew.
display = ConvergenceDisplay.from_estimator(clf)

# %%
# Check
# -----
assert clf.converged_
assert clf.train_soft_fpr_ <= 0.1 + clf.tol  # the bound holds, up to tol
assert test_fpr <= 0.1
