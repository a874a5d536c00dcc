"""Where the data passes of a fit go: set-up, stop tests, minibatches, counted from outside.

Usage (from the repository root)::

    python -m benchmarks.counting spambase a9a bank anchor --seeds 3
    python -m benchmarks.counting synthetic --n 10000 100000 1000000 --seeds 1
    python -m benchmarks.counting spambase --seeds 3 --set eval_every=50
    python -m benchmarks.counting spambase a9a --seeds 8 --smoothness-factor 1.1

The data matrices are wrapped before the problem is built, so every count is taken where the
work happens, whatever the solver reports: a forward product of a whole matrix with ``k``
vectors scores every row at ``k`` points, a block of rows sliced out of it (the one-pass
set-up) reads those rows, and the minibatch oracles count rows times points. The unit is the
solver's (one per-sample evaluation; the backward products at a scored point belong to the
same evaluation, so the products counted one by one are about twice these figures). Work
done while the problem is built is set-up; full-matrix products during the fit are stop
tests. Passes divide by the number of objective plus constraint rows.

The problems: Neyman-Pearson on spambase (batch 10, sigma 2) and fairness on a9a and bank
(batch 30, sigma 2.5) as in ``benchmarks/paper.py``; the anchor task (30000 x 100 dense,
demographic parity within 0.02, logistic loss, as in ``benchmarks/speed.py``); ``synthetic``:
dense Neyman-Pearson with d = 20 at each ``--n``. The same script runs on an older checkout
(``PYTHONPATH=<checkout> python -m benchmarks.counting ...``) for a before/after comparison.
"""

from __future__ import annotations

import argparse
import ast

import numpy as np
import scipy.sparse as sp

from sklearn_ialm.problems import fairness_problem, neyman_pearson_problem
from sklearn_ialm.solver import stoc_ialm


class Tally:
    def __init__(self):
        self.scored = 0  # rows times points of forward products of a whole matrix
        self.read = 0  # rows sliced out of a matrix


def _points(A, other):
    return A.shape[0] * (1 if np.ndim(other) == 1 else other.shape[1])


class CountedArray(np.ndarray):
    """A dense matrix that counts its forward products and the row blocks sliced from it.

    Arrays derived from it (row blocks, transposes, minibatches) carry no tally: their own
    products are not counted twice. Also used by tests/test_counting.py.
    """

    def __array_finalize__(self, obj):
        self.tally = None

    def __matmul__(self, other):
        if self.tally is not None:
            self.tally.scored += _points(self, other)
        return np.asarray(self) @ other

    def __getitem__(self, key):
        if self.tally is not None and isinstance(key, slice):
            self.tally.read += len(range(*key.indices(self.shape[0])))
        return np.asarray(self)[key]


class CountedCSR(sp.csr_matrix):
    """The same for CSR (minibatches read its arrays directly and are counted elsewhere)."""

    tally = None

    def __matmul__(self, other):
        if self.tally is not None:
            self.tally.scored += _points(self, other)
        return sp.csr_matrix(self) @ other

    def __getitem__(self, key):
        if self.tally is not None and isinstance(key, slice):
            self.tally.read += len(range(*key.indices(self.shape[0])))
        return sp.csr_matrix(self)[key]


def wrap(X, tally):
    A = CountedCSR(X) if sp.issparse(X) else np.ascontiguousarray(X).view(CountedArray)
    A.tally = tally
    return A


def count_minibatches(problem):
    seen = {"rows": 0}
    names = [("objective", 1), ("constraints", 1)]
    if hasattr(problem, "objective_pair"):
        names += [("objective_pair", 2), ("constraints_pair", 2)]
    for name, points in names:
        inner = getattr(problem, name)

        def call(*args, inner=inner, points=points):
            if not isinstance(args[points], slice):
                seen["rows"] += len(args[points]) * points
            return inner(*args)

        setattr(problem, name, call)
    return seen


def build(name, tally, n=None):
    """``(problem, solver keywords)`` with the data wrapped."""
    from benchmarks.paper import build as paper_build

    if name in ("spambase", "a9a", "bank"):
        task = "np" if name == "spambase" else "fairness"
        import benchmarks.paper as paper

        # Wrap the matrices the paper's builder reads, then build as it does.
        loaders = {"spambase": "load_spambase", "a9a": "load_a9a", "bank": "fetch_bank_marketing"}
        original = getattr(paper, loaders[name])

        def loader(*args, **kw):
            d = original(*args, **kw)
            d.data = wrap(d.data, tally)
            if getattr(d, "data_test", None) is not None:
                d.data_test = wrap(d.data_test, tally)
            return d

        setattr(paper, loaders[name], loader)
        try:
            make, settings, _ = paper_build(task, name)
            problem = make()
        finally:
            setattr(paper, loaders[name], original)
        return problem, dict(sigma=settings["sigma"], batch_size=settings["batch_size"])
    if name == "anchor":
        from benchmarks.speed import make_anchor

        X, y, A, *_ = make_anchor(0)
        Xw = wrap(X, tally)  # one matrix for both roles, as the estimator passes it
        problem = fairness_problem(
            Xw, y, Xw, A, bound=0.02, constraint="demographic_parity",
            loss="logistic", fit_intercept=True,
        )  # fmt: skip
        return problem, {}
    if name == "synthetic":
        rng = np.random.default_rng(0)
        X = rng.standard_normal((n, 20))
        y = (X[:, :3].sum(axis=1) + rng.standard_normal(n) > 0).astype(int)
        return neyman_pearson_problem(wrap(X, tally), y, max_fpr=0.1, fit_intercept=True), {}
    raise SystemExit(f"unknown data set {name!r}")


def parse(overrides: str) -> dict:
    call = ast.parse(f"f({overrides})", mode="eval").body
    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.counting", description=__doc__)
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n", type=int, nargs="*", default=[10_000])
    ap.add_argument("--max-passes", type=float, default=400.0)
    ap.add_argument("--set", default="", help="keyword overrides for stoc_ialm")
    ap.add_argument(
        "--smoothness-factor", type=float, default=1.0,
        help="multiply the problem's (L0, LJ) (e.g. 1.1: the old power iterations' margin)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    print(
        f"{'data':>16s} seed  setup  checks  minibatch  total  check share  #tests  "
        "conv  outer  reported"
    )
    for name in args.datasets:
        for n in args.n if name == "synthetic" else [None]:
            tally = Tally()
            problem, kw = build(name, tally, n)
            problem.smoothness = tuple(args.smoothness_factor * s for s in problem.smoothness)
            setup = tally.read + tally.scored
            minibatch = count_minibatches(problem)
            rows = problem.n_samples
            label = f"{name}" + (f" n={n:.0e}" if n else "")
            for seed in range(args.seeds):
                before, minibatch["rows"] = tally.scored, 0
                r = stoc_ialm(
                    problem, random_state=seed, max_passes=args.max_passes,
                    **{**kw, **parse(args.set)},
                )  # fmt: skip
                checks = (tally.scored - before) / rows
                mb = minibatch["rows"] / rows
                total = setup / rows + checks + mb
                print(
                    f"{label:>16s} {seed:4d} {setup / rows:6.2f} {checks:7.2f} {mb:10.2f} "
                    f"{total:6.2f} {checks / total:12.0%} {len(r.history['dual_residual']):7d} "
                    f"{bool(r.converged)!s:>5s} {r.n_outer_iter:6d} {r.n_data_passes:9.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
