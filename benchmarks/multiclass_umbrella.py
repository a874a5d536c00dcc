"""The multi-class Neyman-Pearson umbrella (issue 36): violation frequency and accuracy cost.

Usage (from the repository root)::

    python -m benchmarks.multiclass_umbrella simulation --fits 200 --delta 0.1
    python -m benchmarks.multiclass_umbrella digits --bounds 0:0.05,6:0.05 --size 0.6

``simulation``: 3 Gaussian classes on a line (bounded classes 0 and 1 either side of class
2, 4 apart, bounds 0.02), ``--rows`` rows a fit; each fit's class errors on 300 000 new rows
stand for the population's. Prints how often some certified class's error exceeds its bound
(the guarantee: at most ``delta``), the bound ``violation_bound_`` and the mean errors.

``digits``: scikit-learn's digits, a stratified 70/30 split, standardised; the fit without
hold-out (bounds on the training rows) against the umbrella fit: test accuracy and the
bounded classes' test errors.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from sklearn_ialm import NeymanPearsonClassifier

_LINE = np.array([[-4.0, 0.0], [4.0, 0.0], [0.0, 0.0]])


def _gaussians(n, rng):
    y = rng.integers(3, size=n)
    return _LINE[y] + rng.normal(size=(n, 2)), y


def simulation(fits: int, delta: float, rows: int) -> None:
    X_pop, y_pop = _gaussians(300_000, np.random.default_rng(12345))
    rng, bounds = np.random.default_rng(0), {0: 0.02, 1: 0.02}
    violations = uncertified = 0
    errors, vbounds = [], []
    for i in range(fits):
        X, y = _gaussians(rows, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = NeymanPearsonClassifier(
                max_class_error=bounds, calibration="umbrella", delta=delta, random_state=i,
                max_passes=100,
            ).fit(X, y)  # fmt: skip
        pred = clf.predict(X_pop)
        err = {k: float(np.mean(pred[y_pop == k] != k)) for k in bounds}
        errors.append(list(err.values()))
        vbounds.append(clf.violation_bound_)
        uncertified += not all(clf.class_certified_.values())
        violations += any(clf.class_certified_[k] and err[k] > a for k, a in bounds.items())
    print(
        f"{fits} fits of {rows} rows, bounds {bounds}, delta={delta}: some certified class "
        f"over its bound in {violations} ({violations / fits:.3f}); mean violation_bound_ "
        f"{np.mean(vbounds):.4f}; fits with an uncertified class {uncertified}; mean "
        f"population errors {np.round(np.mean(errors, axis=0), 4).tolist()}"
    )


def digits(bounds: dict, size: float, delta: float) -> None:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)

    def show(name, clf):
        pred = clf.predict(X_te)
        err = {k: round(float(np.mean(pred[y_te == k] != k)), 4) for k in bounds}
        print(f"{name}: test accuracy {np.mean(pred == y_te):.4f}, test class errors {err}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = NeymanPearsonClassifier(max_class_error=bounds, random_state=0).fit(X_tr, y_tr)
        show("without hold-out", plain)
        try:
            clf = NeymanPearsonClassifier(
                max_class_error=bounds, calibration="umbrella", calibration_size=size,
                delta=delta, random_state=0,
            ).fit(X_tr, y_tr)  # fmt: skip
        except ValueError as exc:
            print(f"umbrella refused: {exc}")
            return
    show(f"umbrella (calibration_size={size}, delta={delta})", clf)
    print(
        f"  certified {clf.class_certified_}, violation_bounds_ "
        f"{ {k: round(v, 4) for k, v in clf.violation_bounds_.items()} }, violation_bound_ "
        f"{clf.violation_bound_:.4f}, n_calibration_ {clf.n_calibration_}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["simulation", "digits"])
    parser.add_argument("--fits", type=int, default=200)
    parser.add_argument("--rows", type=int, default=1200)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--bounds", default="1:0.02,8:0.02")
    parser.add_argument("--size", type=float, default=0.5)
    args = parser.parse_args()
    if args.what == "simulation":
        simulation(args.fits, args.delta, args.rows)
    else:
        pairs = (item.split(":") for item in args.bounds.split(","))
        digits({int(k): float(a) for k, a in pairs}, args.size, args.delta)


if __name__ == "__main__":
    main()
