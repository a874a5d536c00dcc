"""The fits that pin the solver's results across a restructure.

``python -m tests._golden`` records every case's fitted values to
``tests/data/golden_fits.npz`` with the versions of the numeric stack it ran on and the
fingerprint of the machine (:func:`machine_fingerprint`). ``tests/test_golden.py`` refits each
case and compares bit for bit where the fingerprint matches the recording one, and at the
solver's precision (:data:`RTOL`) elsewhere: another CPU, BLAS kernel or numba target moves
the last bits of the same computation (measured between an Intel and an AMD machine with the
same versions: at most 5e-12 relative), never a digit a change of the code would move. A
change that is meant to move results (a new default) records them again in the same commit
and says so.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_classification

PATH = Path(__file__).parent / "data" / "golden_fits.npz"
STACK = ("numpy", "scipy", "scikit-learn", "numba", "dask")
#: Agreement asked of a machine that is not the recording one, relative to each recorded
#: array's largest entry: 1e-9 is a thousand times the measured drift between CPUs (5e-12)
#: and a thousandth of the smallest deliberate change the record must catch (1e-6).
RTOL = 1e-9


def stack_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in STACK:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def machine_fingerprint() -> dict:
    """What decides the last bits of a fit beside the package versions: the CPU (model and
    instruction-set flags), the BLAS builds and the kernels they picked for it, the target
    numba compiles for, and the variables that override OpenBLAS's choice."""
    import hashlib
    import os
    import platform

    import scipy.linalg  # noqa: F401  (loads scipy's BLAS, so that threadpoolctl sees it)
    from threadpoolctl import threadpool_info

    model, flags = platform.processor(), ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info = f.read()
        model = re.search(r"^model name\s*:\s*(.*)$", info, re.M).group(1)
        flags = re.search(r"^(?:flags|Features)\s*:\s*(.*)$", info, re.M).group(1)
    except (OSError, AttributeError):
        pass
    blas = sorted(
        f"{lib.get('internal_api')} {lib.get('version')} {lib.get('architecture')}"
        for lib in threadpool_info()
        if lib.get("user_api") == "blas"
    )
    try:
        import llvmlite.binding as llvm

        numba_target = llvm.get_host_cpu_name()
    except ImportError:
        numba_target = None
    return {
        "machine": platform.machine(),
        "cpu": model,
        "cpu_flags": hashlib.sha256(" ".join(sorted(flags.split())).encode()).hexdigest()[:16],
        "blas": blas,
        "numba_target": numba_target,
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
    }


def agrees(got, recorded, *, exact: bool, rtol: float = RTOL) -> bool:
    """Whether a refitted array agrees with its record: bit for bit, or within ``rtol`` of
    the record's largest entry (counts and flags exactly either way)."""
    got, recorded = np.asarray(got), np.asarray(recorded)
    if exact or got.dtype.kind not in "fc" or got.shape != recorded.shape:
        return bool(np.array_equal(got, recorded))
    scale = max(float(np.max(np.abs(recorded), initial=0.0)), 1.0)
    return bool(np.all(np.abs(got - recorded) <= rtol * scale))


def _data(n=1500, d=8, seed=0, n_classes=2):
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=5, n_redundant=1, random_state=seed,
        n_classes=n_classes,
    )  # fmt: skip
    rng = np.random.default_rng(seed)
    groups = (X[:, 0] + rng.normal(size=n) > 0.2).astype(int)
    return X, y, groups


def _layout(X, layout):
    if layout == "csr":
        Xs = np.where(np.abs(X) > 0.7, X, 0.0)
        return sp.csr_matrix(Xs)
    if layout == "dask":
        import dask.array as da

        return da.from_array(X, chunks=500)
    return X


def _dask_vec(v, layout):
    if layout != "dask":
        return v
    import dask.array as da

    return da.from_array(v, chunks=500)


_FAIR_KINDS = (
    ("positive_share", None, 0.2),
    ("disparate_impact", None, 0.8),
    ("demographic_parity", None, 0.05),
    ("demographic_parity", "ratio", 0.8),
    ("true_positive_rate_parity", None, 0.05),
    ("false_positive_rate_parity", None, 0.05),
    ("equalized_odds", None, 0.05),
    ("error_rate_parity", None, 0.05),
)


def _cases():
    """name -> (estimator factory, layout, fit seed)."""
    from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

    cases = {}
    for kind, form, bound in _FAIR_KINDS:
        for seed in (0, 1):
            name = f"fair-{kind}-{form}-dense-default-s{seed}"
            cases[name] = (
                lambda kind=kind, form=form, bound=bound, seed=seed: FairLogisticClassifier(
                    constraint=kind, form=form, bound=bound, random_state=seed,
                    protected_groups=[1] if kind == "positive_share" else None,
                ),
                "dense",
            )  # fmt: skip
    for layout in ("csr", "dask"):
        for seed in (0, 1):
            cases[f"fair-dp-{layout}-default-s{seed}"] = (
                lambda seed=seed: FairLogisticClassifier(
                    constraint="demographic_parity", bound=0.05, random_state=seed
                ),
                layout,
            )
            cases[f"np-{layout}-default-s{seed}"] = (
                lambda seed=seed: NeymanPearsonClassifier(max_fpr=0.1, random_state=seed),
                layout,
            )
    for preset in ("default", "paper"):
        passes = 300.0
        for seed in (0, 1):
            cases[f"np-dense-{preset}-s{seed}"] = (
                lambda preset=preset, seed=seed, passes=passes: NeymanPearsonClassifier(
                    max_fpr=0.1, preset=preset, random_state=seed, max_passes=passes
                ),
                "dense",
            )
            cases[f"fair-dp-dense-{preset}-s{seed}"] = (
                lambda preset=preset, seed=seed, passes=passes: FairLogisticClassifier(
                    constraint="demographic_parity", bound=0.05, preset=preset,
                    random_state=seed, max_passes=passes,
                ),
                "dense",
            )  # fmt: skip
    for seed in (0, 1):
        cases[f"np-dense-umbrella-s{seed}"] = (
            lambda seed=seed: NeymanPearsonClassifier(
                max_fpr=0.1, calibration="umbrella", random_state=seed
            ),
            "dense",
        )
        cases[f"fair-dp-dense-certified-s{seed}"] = (
            lambda seed=seed: FairLogisticClassifier(
                constraint="demographic_parity", bound=0.15, calibration="clopper-pearson",
                random_state=seed,
            ),
            "dense",
        )  # fmt: skip
    cases.update(_other_paths())
    return cases


def _other_paths():
    """The fit's other paths: three classes (in memory, on dask, with the umbrella), dask
    input streamed (``max_passes`` <= 3) and ``partial_fit`` on three batches."""
    from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

    fair = lambda **kw: FairLogisticClassifier(bound=0.05, random_state=0, **kw)  # noqa: E731
    np_multi = {0: 0.1}
    return {
        "fair-dp-dense-multiclass-s0": (fair, "dense"),
        "fair-dp-dask-multiclass-s0": (fair, "dask"),
        "np-dense-multiclass-s0": (
            lambda: NeymanPearsonClassifier(max_class_error=np_multi, random_state=0),
            "dense",
        ),
        "np-dense-multiclass-umbrella-s0": (
            lambda: NeymanPearsonClassifier(
                max_class_error=np_multi, calibration="umbrella", random_state=0
            ),
            "dense",
        ),
        "fair-dp-dask-stream-s0": (lambda: fair(max_passes=3), "dask"),
        "np-dask-stream-s0": (
            lambda: NeymanPearsonClassifier(max_fpr=0.1, max_passes=3, random_state=0),
            "dask",
        ),
        "fair-dp-partial-fit-s0": (fair, "batches"),
        "np-partial-fit-s0": (
            lambda: NeymanPearsonClassifier(max_fpr=0.1, random_state=0),
            "batches",
        ),
    }


def _fit_case(name, factory, layout):
    n = 3000 if ("umbrella" in name or "certified" in name) else 1500
    X, y, groups = _data(n=n, n_classes=3 if "multiclass" in name else 2)
    clf = factory()
    kwargs = {}
    if name.startswith("fair"):
        kwargs["sensitive_features"] = _dask_vec(groups, layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if layout == "batches":
            for rows in np.array_split(np.arange(n), 3):
                part = {k: v[rows] for k, v in kwargs.items()}
                more = {"groups": [0, 1]} if part else {}
                clf.partial_fit(X[rows], y[rows], classes=[0, 1], **part, **more)
        else:
            clf.fit(_layout(X, layout), _dask_vec(y, layout), **kwargs)
    return {
        "coef": np.asarray(clf.coef_),
        "intercept": np.asarray(clf.intercept_),
        # (A stream counts no passes and claims no convergence: it has seen each row once.)
        "passes": np.asarray(getattr(clf, "n_data_passes_", -1.0)),
        "converged": np.asarray(getattr(clf, "converged_", False)),
    }


#: The default preset's finish stops at the caller's tol: where it stops within it follows
#: the path, and another BLAS kernel moved it by up to 9e-7 (OPENBLAS_CORETYPE=Haswell or
#: Sandybridge here), more than RTOL. At the estimators' precision the finish ends where
#: Newton's steps have converged, on any machine.
_PRECISE = {"finish_tol": 1e-3}
#: Cases whose end is set by the budget, not by convergence, so that another machine's last
#: bits move it further than RTOL: the paper's nonconvex Neyman-Pearson model, 20 passes, the
#: default preset (another BLAS kernel moved x and the multipliers by up to 8.6e-7 relative).
#: Elsewhere than on the recording machine they are held to the solver's own precision.
FOREIGN_RTOL = {f"solver-np-default-s{seed}": 1e-4 for seed in (0, 1)}
_THEORY = {"theory_constants": {"sigma_g": 0.5, "sigma_c": 0.5, "gap": 1.0}, "tol": 8.0}


def _paper_problem_cases():
    """``stoc_ialm``'s ``x`` on the paper's two problems, with the paper's preset."""
    from sklearn_ialm.problems import fairness_problem, neyman_pearson_problem
    from sklearn_ialm.solver import stoc_ialm

    X, y = make_classification(n_samples=800, n_features=6, n_informative=4, n_redundant=0,
                               random_state=0)  # fmt: skip
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    groups = (X[:, 1] > 0.3).astype(int)
    problems = {
        "np": lambda: neyman_pearson_problem(X, y, max_fpr=0.2),
        "fair": lambda: fairness_problem(X, y, X[::2], groups[::2], bound=0.2, protected=[1]),
    }
    out = {}
    for pname, make in problems.items():
        for preset in ("paper", "default", "theory")[: 3 if pname == "np" else 2]:
            for seed in (0, 1):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = stoc_ialm(
                        make(),
                        preset=preset,
                        random_state=seed,
                        max_passes=20,
                        **_THEORY if preset == "theory" else {},
                        **_PRECISE if preset == "default" else {},
                    )
                out[f"solver-{pname}-{preset}-s{seed}"] = {
                    "x": r.x, "passes": np.asarray(r.n_data_passes),
                    "multipliers": r.multipliers,
                }  # fmt: skip
    return out


def compute_all(names=None) -> dict:
    out = {}
    for name, (factory, layout) in _cases().items():
        if names is None or name in names:
            out[name] = _fit_case(name, factory, layout)
    if names is None or any(n.startswith("solver-") for n in names):
        for name, vals in _paper_problem_cases().items():
            if names is None or name in names:
                out[name] = vals
    return out


def case_names() -> list[str]:
    solver = [f"solver-{p}-{pr}-s{s}" for p in ("np", "fair")
              for pr in ("paper", "default", "theory") for s in (0, 1)]  # fmt: skip
    return [*_cases(), *(n for n in solver if not n.startswith("solver-fair-theory"))]


def record() -> None:
    results = compute_all()
    flat = {f"{case}::{key}": val for case, vals in results.items() for key, val in vals.items()}
    flat["__versions__"] = np.asarray(json.dumps(stack_versions()))
    flat["__machine__"] = np.asarray(json.dumps(machine_fingerprint()))
    PATH.parent.mkdir(exist_ok=True)
    np.savez_compressed(PATH, **flat)
    print(f"recorded {len(results)} cases to {PATH}")


if __name__ == "__main__":
    record()
