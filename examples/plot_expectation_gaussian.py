"""
Fitting from a sampler: Neyman-Pearson on two Gaussian classes
==============================================================

The paper's problem is an expectation: ``min E[G0(x; xi)]`` subject to ``E[C(x; xi)] <= 0``.
Here ``xi`` is a pair of rows, one from each of two Gaussian classes, and the solver never sees
a data set: it draws fresh samples whenever it needs them, and counts every one as an oracle
call. Because the classes are Gaussian, the true (population) soft error rates and their
gradients are one-dimensional integrals, so we can check the returned point against the truth
and against scipy's solution of the population problem.
"""

# %%
# The problem: minimise the soft false-negative rate subject to a soft false-positive rate of
# at most 15 %, with a small ridge term that keeps the optimum finite.
import matplotlib.pyplot as plt
import numpy as np

from sklearn_ialm.problems import GaussianNeymanPearson
from sklearn_ialm.solver import stoc_ialm

gnp = GaussianNeymanPearson(
    [1.0, 0.5], [-1.0, 0.0], [[1.0, 0.3], [0.3, 0.5]], max_fpr=0.15
)
x_star, lam_star = gnp.reference_solution()
print(
    f"scipy on the integrals: x* = {np.round(x_star, 3)}, lambda* = {lam_star:.3f}"
)

# %%
# Fit from the sampler, five seeds, ``tol = 1e-2``. The solver estimates its residuals on a
# fresh batch of 10,000 samples, with standard errors; we compute the true ones.
tol = 1e-2
problem = gnp.problem(evaluation_size=10_000)
fits = [stoc_ialm(problem, tol=tol, random_state=seed) for seed in range(5)]
print(
    "seed  soft FPR  pres (est +- se / true)    dres (est +- se / true)   multiplier"
)
truth = []
for seed, r in enumerate(fits):
    pres, dres = gnp.population_residuals(r.x, r.slack, r.multipliers)
    fpr = gnp.population_constraint(r.x) + gnp.max_fpr
    truth.append((pres, dres, fpr, r.multipliers[0]))
    print(
        f"{seed:4d}  {fpr:8.4f}  {r.primal_residual:.4f} +- {r.primal_residual_se:.4f} / "
        f"{pres:.4f}  {r.dual_residual:.4f} +- {r.dual_residual_se:.4f} / {dres:.4f}"
        f"  {r.multipliers[0]:.3f}  ({r.n_oracle_calls:,} oracle calls)"
    )
truth = np.array(truth)

# %%
# Left: samples of both classes, the boundaries ``z = 0`` of the five fits and of scipy's
# solution. Right: the residuals the solver estimated along one run, with their standard
# errors, and the true ones at the point it returned.
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.6))
S = gnp.sampler(np.random.default_rng(0), 300)
ax0.scatter(*S[:, 0].T, s=6, color="C0", alpha=0.5, label="positive")
ax0.scatter(*S[:, 1].T, s=6, color="C3", alpha=0.5, label="negative")
u = np.linspace(-4, 4, 2)
for r in fits:
    ax0.plot(u, -(r.x[0] * u + r.x[2]) / r.x[1], color="0.5", lw=0.8)
ax0.plot(
    u,
    -(x_star[0] * u + x_star[2]) / x_star[1],
    "k--",
    lw=1.5,
    label="scipy x*",
)
ax0.set(xlim=(-4, 4), ylim=(-3, 3), title="boundaries z = 0")
ax0.legend(fontsize=7, loc="lower right")

h = fits[0].history
for key, color in (("primal_residual", "C0"), ("dual_residual", "C1")):
    est, se = h[key], h[f"{key}_se"]
    ax1.plot(
        h["oracle_calls"],
        est,
        color=color,
        label=f"{key.split('_')[0]} (estimated)",
    )
    lower = np.maximum(est - 2 * se, 1e-4)
    ax1.fill_between(
        h["oracle_calls"], lower, est + 2 * se, color=color, alpha=0.2
    )
ax1.plot(
    h["oracle_calls"][-1], truth[0, 0], "o", color="C0", label="primal (true)"
)
ax1.plot(
    h["oracle_calls"][-1], truth[0, 1], "s", color="C1", label="dual (true)"
)
ax1.axhline(tol, color="k", lw=0.8, ls=":")
ax1.set(
    yscale="log",
    ylim=(1e-4, 1),
    xlabel="oracle calls",
    title="residuals +- 2 se, seed 0",
)
ax1.legend(fontsize=7)
fig.tight_layout()
plt.show()

# %%
# The bound holds in population up to ``tol``, the residuals are eps-KKT in expectation
# (mean squares below ``tol**2``, the paper's Definition 1), and the multiplier is scipy's.
assert np.all(truth[:, 2] <= gnp.max_fpr + tol)
assert (
    np.mean(truth[:, 0] ** 2) <= tol**2 and np.mean(truth[:, 1] ** 2) <= tol**2
)
assert abs(truth[:, 3].mean() - lam_star) <= 0.1 * lam_star
