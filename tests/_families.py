"""Randomised data families for the invariants of ``tests/test_invariants.py`` (issue 49).

A :class:`Family` is a population: the label's score, the groups and how they tie to the
label, the columns' units and sparsity, all fixed by its fields; :meth:`Family.sample` draws
rows from it (``rows_seed=0`` the training rows, another seed fresh rows of the same
population). The families were written for the invariants, not taken from the package's own
tests or benchmarks, and no setting of the package was tuned to them. They vary:

* the groups: 2 to 8, some of them small (8 to 40 training rows, a share of the rows that
  fresh samples keep);
* how the group ties to the label: ``"independent"``, ``"score"`` (the rank of the label's
  score plus normal noise of sd ``noise_sd``, 0.5 to 3), ``"feature"`` (the rank of a column
  of ``X`` plus that noise) or ``"hidden"`` (of a column the label leans on that ``X`` does
  not hold), and whether the group's indicators are columns of ``X``;
* the label: 10 to 50 % positives with two classes, or 3 to 4 classes;
* the units: standard-normal columns, or raw ones (means far from 0, scales 0.1 to 10);
* the storage: dense, or CSR with mostly zeros (5 to 30 % of the entries kept).

Use without hypothesis (the benchmarks, issue 52)::

    from tests._families import Family
    family = Family(n_rows=2000, group_shares=(0.5, 0.49, 0.01), tie="score", noise_sd=1.0)
    X, y, groups = family.sample()                 # the training rows
    X_new, y_new, g_new = family.sample(50_000, rows_seed=1)   # fresh rows

With hypothesis, :func:`families` is the strategy of the invariants; its shrinking reports a
falsifying case as the ``Family(...)`` that reproduces it.

Profiles (settings of every ``@given`` of the invariants, chosen by ``HYPOTHESIS_PROFILE``):

* ``ci`` (the default): few examples, no deadline, derandomised (the same examples on every
  run, so that CI is deterministic); the whole file runs in well under a minute on 2 cores.
* ``explain``: CI's examples, shrunk: the minimal falsifying example of a CI failure (or of
  an ``xfail``, run with ``--runxfail``).
* ``long``: 200 examples per invariant (``HYPOTHESIS_MAX_EXAMPLES`` says another number),
  random (a new search each run), shrunk::

      HYPOTHESIS_PROFILE=long OMP_NUM_THREADS=1 python -m pytest tests/test_invariants.py

  ``python -m benchmarks.invariants`` runs it from a fixed seed and writes the outcome of
  each invariant, with any falsifying example, to ``benchmarks/results/invariants.md``.

``python -m tests._families`` prints a few families and the rows they draw.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

__all__ = ["Family", "families", "load_profile", "TIES"]

#: How the group of a row is drawn: at random, from the label's score, from a column of X,
#: from a column the label leans on that X does not hold.
TIES = ("independent", "score", "feature", "hidden")

#: Rows drawn to fix a population's label threshold (its positive share), once per family.
_REFERENCE_ROWS = 100_000

settings.register_profile(
    "ci",
    max_examples=5,
    deadline=None,
    derandomize=True,
    # No shrinking: CI needs the verdict only (an xfail would shrink at every run); the
    # minimal examples of the markers come from the "explain" profile.
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "explain",
    parent=settings.get_profile("ci"),
    phases=tuple(Phase),
    print_blob=True,
)
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "200")),
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def load_profile() -> str:
    """Load the profile named by ``HYPOTHESIS_PROFILE`` (``"ci"`` when unset); its name."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    settings.load_profile(name)
    return name


@dataclass(frozen=True)
class Family:
    """A population of rows with a label and a group (see the module docstring).

    Parameters
    ----------
    n_rows : int
        Training rows (``sample()`` without ``n``).
    group_shares : tuple of float
        Each group's share of the rows (they add up to 1); group ``i`` is labelled ``"g{i}"``.
        Groups are cut from the ranks of the tie's variable, in a random order of the groups.
    tie : {"independent", "score", "feature", "hidden"}
        What the group's variable is: noise, the label's score, column ``0`` of ``X`` (a
        column the label leans on less than on others), or the hidden column (the label
        leans on one standard-normal column that ``X`` does not hold, as much as on an
        average column of ``X``), each plus ``noise_sd`` normal noise.
    noise_sd : float
        The noise on the tie's variable (in units of its standard deviation).
    groups_in_x : bool
        Whether the group's indicators (one column per group but the first) are columns of X.
    positive_share : float
        With two classes, the population's share of positives.
    n_classes : int
        2, or more for a multinomial label (the arg-max of one score per class plus Gumbel
        noise).
    raw : bool
        Raw columns: column ``j`` is ``mean_j + scale_j * z`` with ``scale_j`` in [0.1, 10]
        (log-uniform) and ``|mean_j|`` 2 to 50 times ``scale_j``. Ignored when ``sparse``
        (the scales apply, the means would fill the zeros).
    sparse : float
        ``0``: dense. Otherwise the share of nonzero entries of the features (CSR).
    n_features : int
        Columns of ``X`` besides the group's indicators (the hidden column is not one).
    seed : int
        Seeds the population: the label's weights, the columns' units, the groups' order.
    """

    n_rows: int = 1000
    group_shares: tuple = (0.5, 0.5)
    tie: str = "score"
    noise_sd: float = 1.0
    groups_in_x: bool = False
    positive_share: float = 0.4
    n_classes: int = 2
    raw: bool = False
    sparse: float = 0.0
    n_features: int = 4
    seed: int = 0

    def _population(self):
        """The fixed parts: label weights, column units, group order, label threshold."""
        rng = np.random.default_rng([self.seed, 49])
        d, k = self.n_features, self.n_classes
        # Weights of norm about 2 (LogisticRegression's accuracy about 0.8 with two classes),
        # the least on column 0, the tie's column of tie="feature"; the last row is the
        # hidden column's, as large as an average one of X's.
        visible = rng.normal(size=(d, 1 if k == 2 else k)) * np.linspace(0.4, 1.4, d)[:, None]
        hidden = np.sqrt(np.mean(visible**2, axis=0, keepdims=True))
        weights = np.vstack([visible, hidden * rng.choice([-1.0, 1.0], hidden.shape)])
        weights *= 2.0 / np.linalg.norm(weights, axis=0)
        scale = np.exp(rng.uniform(np.log(0.1), np.log(10.0), d)) if self.raw else np.ones(d)
        mean = rng.choice([-1.0, 1.0], d) * rng.uniform(2.0, 50.0, d) * scale
        if not self.raw or self.sparse:
            mean = np.zeros(d)
        order = rng.permutation(len(self.group_shares))
        threshold = 0.0
        if k == 2:
            z = self._columns(_REFERENCE_ROWS, rng)
            latent = z @ weights[:, 0] + rng.logistic(size=_REFERENCE_ROWS)
            threshold = float(np.quantile(latent, 1.0 - self.positive_share))
        return weights, scale, mean, order, threshold

    def _columns(self, n, rng):
        """X's columns in standard units (mostly zeros if ``sparse``), then the hidden one."""
        z = rng.standard_normal((n, self.n_features))
        if self.sparse:
            z = z * (rng.random(z.shape) < self.sparse)
        return np.column_stack([z, rng.standard_normal(n)])

    def sample(self, n: int | None = None, rows_seed: int = 0):
        """Rows of the family: ``X`` (ndarray or CSR), ``y`` (int), ``groups`` (str).

        Parameters
        ----------
        n : int, default=None
            Rows; ``None`` means ``n_rows``.
        rows_seed : int, default=0
            Seeds the rows (0: the training rows; another value: fresh rows).

        Returns
        -------
        X, y, groups
        """
        n = self.n_rows if n is None else int(n)
        weights, scale, mean, order, threshold = self._population()
        rng = np.random.default_rng([self.seed, 49, rows_seed + 1])
        z = self._columns(n, rng)
        scores = z @ weights
        if self.n_classes == 2:
            y = (scores[:, 0] + rng.logistic(size=n) > threshold).astype(int)
        else:
            y = np.argmax(scores + rng.gumbel(size=scores.shape), axis=1)
        groups = self._groups(z, scores[:, 0], order, rng)
        X = z[:, :-1] * scale + mean
        if self.groups_in_x:
            names = np.array([f"g{i}" for i in range(len(self.group_shares))])
            X = _with_columns(X, (groups[:, None] == names[None, 1:]).astype(float))
        if self.sparse:
            X = sp.csr_matrix(X)
        return X, y, groups

    def _groups(self, z, score, order, rng):
        """Groups cut from the ranks of the tie's variable: the group at rank ``r`` is the
        one whose cumulative share covers ``r / n``, in the population's order of groups."""
        n = len(score)
        if self.tie == "independent":
            variable = rng.standard_normal(n)
        else:
            base = {"score": score, "feature": z[:, 0], "hidden": z[:, -1]}[self.tie]
            variable = base / (np.std(base) or 1.0) + self.noise_sd * rng.standard_normal(n)
        shares = np.asarray(self.group_shares, dtype=float)[order]
        # Block sizes by largest remainder, so that the training sizes are exact.
        sizes = np.floor(shares * n).astype(int)
        sizes[np.argsort(shares * n - sizes)[::-1][: n - sizes.sum()]] += 1
        labels = np.repeat(np.array([f"g{i}" for i in order]), sizes)
        out = np.empty(n, dtype=object)
        out[np.argsort(variable, kind="stable")] = labels
        return out.astype(str)


def _with_columns(X, columns):
    return np.hstack([X, columns])


@st.composite
def group_shares(draw, n_rows: int, max_groups: int = 8, small: str = "any"):
    """2 to ``max_groups`` groups, of which up to all but one are small (8 to 40 rows):
    any number of them (``small="any"``), none (``"none"``) or at least one (``"some"``)."""
    n_groups = draw(st.integers(2, max_groups))
    low, high = {"any": (0, n_groups - 1), "none": (0, 0), "some": (1, n_groups - 1)}[small]
    n_small = draw(st.integers(low, high))
    small = [draw(st.integers(8, 40)) for _ in range(n_small)]
    rest = n_rows - sum(small)
    weights = [draw(st.integers(1, 4)) for _ in range(n_groups - n_small)]
    large = [rest * w / sum(weights) for w in weights]
    return tuple(round(s / n_rows, 6) for s in small + large)


@st.composite
def families(
    draw,
    n_classes: tuple = (2,),
    n_rows: tuple = (300, 3000),
    max_groups: int = 8,
    small: str = "any",
    sparse: bool = True,
    raw: bool = True,
):
    """The strategy of a :class:`Family`.

    Parameters
    ----------
    n_classes : tuple of int
        The class counts to draw from.
    n_rows : (int, int)
        The range of training rows.
    max_groups : int
        The largest number of groups.
    small : {"any", "none", "some"}
        How many groups are small (8 to 40 training rows): any number but all, none, or at
        least one.
    sparse, raw : bool
        Whether CSR storage, raw units are drawn (else never).
    """
    rows = draw(st.integers(*n_rows))
    return Family(
        n_rows=rows,
        group_shares=draw(group_shares(rows, max_groups, small)),
        tie=draw(st.sampled_from(TIES)),
        noise_sd=draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])),
        groups_in_x=draw(st.booleans()),
        positive_share=draw(st.sampled_from([0.1, 0.2, 0.3, 0.5])),
        n_classes=draw(st.sampled_from(n_classes)),
        raw=draw(st.booleans()) if raw else False,
        sparse=draw(st.sampled_from([0.0, 0.0, 0.05, 0.3])) if sparse else 0.0,
        n_features=draw(st.integers(2, 6)),
        seed=draw(st.integers(0, 2**16)),
    )


if __name__ == "__main__":
    for family in [
        Family(),
        Family(group_shares=(0.6, 0.38, 0.02), tie="feature", raw=True, positive_share=0.1),
        Family(n_classes=3, sparse=0.1, groups_in_x=True, group_shares=(0.3, 0.3, 0.4)),
    ]:
        X, y, g = family.sample()
        labels, counts = np.unique(g, return_counts=True)
        print(family)
        print(
            f"  X {X.shape} {'CSR' if sp.issparse(X) else 'dense'}, classes "
            f"{np.bincount(y).tolist()}, groups {dict(zip(labels, counts.tolist(), strict=True))}"
        )


#: The weights of the guide's stream (:func:`guide_stream`).
GUIDE_W = np.array([1.5, -1.0, 0.8, 0.5, 0.0])


def guide_stream(n_batches, size, seed):
    """The user guide's stream, in batches of ``size`` rows of 5 features: the group leans on
    the feature the label leans on most, so a demographic-parity bound binds
    (LogisticRegression's gap is about 0.35)."""
    rng = np.random.default_rng(seed)
    for _ in range(n_batches):
        X = rng.standard_normal((size, 5))
        g = (X[:, 0] + rng.normal(size=size) > 0.5).astype(int)
        y = (X @ GUIDE_W + rng.logistic(size=size) > 0).astype(int)
        yield X, y, g
