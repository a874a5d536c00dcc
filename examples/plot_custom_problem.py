r"""
The solver on a problem of your own
===================================

:func:`~sklearn_ialm.solver.stoc_ialm` solves

.. math::

    \min_x \ \frac{1}{N}\sum_{i=1}^N G_0(x; i) + h(x)
    \quad \text{s.t.} \quad \frac{1}{M}\sum_{j=1}^M C(x; j) \le 0 \ (\text{or} = 0),

reading the objective terms and the constraint terms by minibatches of row indices. You
describe the problem with two functions and a :class:`~sklearn_ialm.solver.FunctionProblem`;
the estimators of this package do the same with the paper's models.

Here: find the point closest, on average, to a cloud of points :math:`a_i`, while staying
on average within distance 1 of a second cloud :math:`b_j` (an *expectation* constraint):

.. math::

    \min_x \ \frac{1}{N}\sum_i \tfrac12\|x - a_i\|^2
    \quad \text{s.t.} \quad \frac{1}{M}\sum_j \|x - b_j\|^2 - 1 \le 0.

Since :math:`\frac1M\sum_j\|x - b_j\|^2 = \|x - \bar b\|^2 + \text{spread}(b)`, the feasible set
is a disk around :math:`\bar b` and the answer is the projection of :math:`\bar a` onto it,
so we can check the solver against it.
"""

# %%
# Two functions on row indices
# ----------------------------
# Each receives the parameters ``x`` and an index array (or ``slice(None)`` for all rows).
# ``objective`` returns the mean value and the mean gradient of its rows; ``constraints``
# returns one row of constraint values and one Jacobian per index.
import matplotlib.pyplot as plt
import numpy as np

from sklearn_ialm.plotting import ConvergenceDisplay
from sklearn_ialm.solver import FunctionProblem, stoc_ialm

rng = np.random.default_rng(0)
a = rng.normal([2.0, 1.0], 0.5, size=(20_000, 2))  # objective rows
b = rng.normal([0.0, 0.0], 0.3, size=(10_000, 2))  # constraint rows


def objective(x, idx):
    r = x - a[idx]
    return 0.5 * np.mean(np.sum(r**2, axis=1)), r.mean(axis=0)


def constraints(x, idx):
    r = x - b[idx]  # (n, 2)
    values = (
        np.sum(r**2, axis=1) - 1.0
    )  # C(x; j), one constraint: shape (n, 1)
    jacobians = 2.0 * r  # dC/dx: shape (n, 1, 2)
    return values[:, None], jacobians[:, None, :]


problem = FunctionProblem(
    objective,
    constraints,
    n_params=2,
    n_objective_samples=len(a),
    n_constraint_samples=len(b),
    inequality=True,  # C <= 0; False for an equality
)

# %%
# Five seeds
# ----------
# The solver is stochastic: each seed draws other minibatches. Its minibatch loop checks
# the primal and dual residuals on all rows, after 50 steps and then at longer intervals.
# It stops when both are below ``tol`` or its share of the budget is spent. Then a
# deterministic finish on all rows (the default ``finish=True``) takes the point the rest
# of the way, and its check gives the verdict ``converged``. ``n_data_passes``
# counts every row touched: the finite-difference smoothness estimate (11 passes here), the
# minibatches, the checks and the finish.
results = [
    stoc_ialm(problem, random_state=seed, max_passes=300) for seed in range(5)
]
for seed, r in enumerate(results):
    x, c = np.round(r.x, 3), r.constraint_values[0]
    print(
        f"seed {seed}: converged {r.converged}, x = {x}, constraint {c:+.4f}, "
        f"{r.n_data_passes:.1f} data passes"
    )

# %%
# Every seed lands on the same point, but the cost varies from seed to seed. Give
# ``max_passes`` room for an unlucky run, or run several seeds in parallel.

# %%
# The exact answer, from the sample means and spread:
a_bar, b_bar = a.mean(axis=0), b.mean(axis=0)
radius = np.sqrt(1.0 - np.mean(np.sum((b - b_bar) ** 2, axis=1)))
x_star = b_bar + radius * (a_bar - b_bar) / np.linalg.norm(a_bar - b_bar)
print("exact:", np.round(x_star, 3))

# %%
# The picture
# -----------
# The objective's level sets, the feasible disk, the five solutions and the exact one.
fig, ax = plt.subplots(figsize=(4.6, 4.2), layout="constrained")
u, v = np.meshgrid(np.linspace(-1.5, 3.2, 200), np.linspace(-1.5, 2.5, 200))
ax.contour(
    u, v, (u - a_bar[0]) ** 2 + (v - a_bar[1]) ** 2, levels=8, colors="0.8"
)
ax.scatter(*a.T, s=3, color="C0", alpha=0.3, label="$a_i$ (objective)")
ax.scatter(*b.T, s=3, color="C1", alpha=0.3, label="$b_j$ (constraint)")
ax.add_patch(plt.Circle(b_bar, radius, fill=False, color="C1", lw=1.5))
ax.plot(
    *np.array([r.x for r in results]).T,
    "k+",
    ms=12,
    label="Stoc-iALM, 5 seeds",
)
ax.plot(*x_star, "o", mfc="none", mec="C3", ms=10, label="exact")
ax.set(aspect="equal", xlim=(-1.5, 3.2), ylim=(-1.5, 2.5))
ax.legend(loc="lower right", fontsize="small")
plt.show()

# %%
# Convergence over the seeds: the mean and the range of the five runs, and where each
# one ended (after its end a run holds its last values in the mean).
display = ConvergenceDisplay.from_results(results, name="Stoc-iALM")

# %%
# Check
# -----
for r in results:
    assert r.converged
    assert np.linalg.norm(r.x - x_star) < 0.02
    assert r.constraint_values[0] <= r.settings["tol"]
    assert r.n_setup_passes == 11  # the smoothness estimate (see "Five seeds")
