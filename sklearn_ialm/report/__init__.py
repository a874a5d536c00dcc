"""The bound report: does a fitted model's bound hold on given rows, for whom, at what cost.

A layer above the estimators, as :mod:`sklearn_ialm.plotting` is: it reads the predictions of
a fitted :class:`~sklearn_ialm.FairLogisticClassifier` or
:class:`~sklearn_ialm.NeymanPearsonClassifier` on any rows (training, test, held-out) and
puts side by side, per group (and per class where the constraint conditions on it): the
counts, the rate of ``predict`` that the constraint uses, its exact (Clopper-Pearson)
interval, the constrained metric as fairlearn computes it, the bound, and whether it is met;
optionally the same for an unconstrained baseline model. No solver is run.

**What the intervals mean.** Each rate is a share of rows (``k`` of ``n``): the interval is
the two-sided exact binomial interval at ``confidence`` (each side ``(1 - confidence) / 2``).
It covers the population rate of the model with that probability when the rows are a
random draw that the model was not fitted on (a test set, ``calibration_indices_``); on the
training rows it only shows the size of the sampling noise. The *limit* of a bound is the
worst value of its metric over the groups' intervals (``upper[a] - lower[b]`` over the
constrained pairs for a difference, ``lower[b] / upper[a]`` for a ratio, the smallest lower
limit for a share), the construction of :class:`~sklearn_ialm.FairLogisticClassifier`'s
certificate: on new rows, the population metric is worse than the limit with probability at
most ``1 - confidence``, and the bound is *certified* when the limit meets it.

**With sample weights** the rates are weighted (as fairlearn's ``sample_params``) and the
intervals use Kish's effective sample size ``n_eff = (sum w)^2 / sum w^2`` of the rows of
each rate, with ``k_eff = rate * n_eff``: an approximation (exact when all weights are
equal), not a guarantee.

The modules: :mod:`._rates` (one rate's count, value and interval), :mod:`._records` (the
report's records from labels and predictions), :mod:`._render` (its text, HTML, Markdown,
JSON and DataFrame views) and :mod:`._bound_report` (the class).
"""

from ..estimators import register_report_builder
from ._bound_report import BoundReport

# The estimators' ``bound_report`` calls the builder registered here: the report reads the
# estimators, and the estimators import nothing of the report.
register_report_builder(BoundReport.from_estimator)

__all__ = ["BoundReport"]
