"""The support matrix: compat code for the oldest supported releases, and the floors script.

CI runs the whole suite a second time with every floor of pyproject.toml pinned
(``.ci/min_requirements.py``); the tests here check the code paths that differ between the
oldest and the newest scikit-learn, and that every declared requirement has a floor to pin.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification
from sklearn.utils.class_weight import compute_class_weight

from sklearn_ialm import FairLogisticClassifier

ROOT = Path(__file__).resolve().parents[1]


def _load_floors_script():
    path = ROOT / ".ci" / "min_requirements.py"
    spec = importlib.util.spec_from_file_location("min_requirements", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


floors = _load_floors_script()


@pytest.fixture(scope="module")
def weighted_data():
    X, y = make_classification(n_samples=300, n_features=5, weights=[0.7], random_state=0)
    groups = np.where(X[:, 2] < -0.5, "b", "a")
    sample_weight = np.random.default_rng(0).uniform(0.2, 3.0, size=300)
    return X, y, groups, sample_weight


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_balanced_class_weight_uses_the_weighted_class_totals(weighted_data):
    # "balanced" is sum(w) / (2 * weighted total of the class), whatever the scikit-learn
    # release (compute_class_weight takes sample_weight only from 1.7): the same model as
    # the explicit row weights.
    X, y, groups, sw = weighted_data
    kw = dict(constraint="positive_share", max_passes=20, random_state=0)
    totals = np.array([sw[y == 0].sum(), sw[y == 1].sum()])
    expected = sw.sum() / (2 * totals)
    assert not np.allclose(expected, len(y) / (2 * np.bincount(y)))  # weights matter here
    balanced = FairLogisticClassifier(class_weight="balanced", **kw)
    balanced.fit(X, y, sensitive_features=groups, sample_weight=sw)
    explicit = FairLogisticClassifier(**kw)
    explicit.fit(X, y, sensitive_features=groups, sample_weight=sw * expected[y])
    assert_allclose(balanced.coef_, explicit.coef_, rtol=1e-10)
    assert_allclose(balanced.constraint_values_, explicit.constraint_values_, rtol=1e-10)
    if "sample_weight" in inspect.signature(compute_class_weight).parameters:
        classes = np.array([0, 1])
        reference = compute_class_weight("balanced", classes=classes, y=y, sample_weight=sw)
        assert_allclose(expected, reference, rtol=1e-12)


@pytest.mark.parametrize(
    ("requirement", "pin"),
    [
        ("numpy>=1.24", "numpy==1.24"),
        ("scikit-learn >= 1.6, <2", "scikit-learn==1.6"),
        ("ruff==0.17.6", "ruff==0.17.6"),
        ("dask[distributed]>=2024.1", "dask==2024.1"),
        ("pandas~=2.1", "pandas==2.1"),
        ('tomli>=2; python_version < "3.11"', 'tomli==2; python_version < "3.11"'),
    ],
)
def test_floor_pin(requirement, pin):
    assert floors.floor_pin(requirement) == pin


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        ("fairlearn", "'fairlearn' has no minimum version"),
        ("numpy<3", "'numpy<3' has no minimum version"),
        ("numpy>=1.24,!=1.25 x", "cannot read the version specifier '!=1.25 x'"),
        ("[numpy]>=1", "cannot read the requirement"),
    ],
)
def test_floor_pin_rejects_a_requirement_without_a_readable_floor(requirement, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        floors.floor_pin(requirement)


@pytest.mark.parametrize("extra", ["test", "plot", "bench", "doc"])
def test_every_declared_requirement_has_a_floor(extra):
    # CI pins the runtime and test floors; a requirement added without one fails here first,
    # with its name, instead of in the minimum-versions run.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    pins = floors.min_constraints(pyproject, [extra])  # raises on a missing floor
    requirements = project["dependencies"] + project["optional-dependencies"][extra]
    assert set(pins) == {floors.floor_pin(r) for r in requirements}
    assert {"numpy", "scipy", "scikit-learn", "joblib"} <= {p.split("==")[0] for p in pins}


def test_two_floors_for_one_package_are_an_error():
    pyproject = {
        "project": {
            "dependencies": ["numpy>=1.24"],
            "optional-dependencies": {"test": ["NumPy>=1.26"]},
        }
    }
    assert floors.min_constraints(pyproject, []) == ["numpy==1.24"]
    with pytest.raises(ValueError, match="two floors for numpy"):
        floors.min_constraints(pyproject, ["test"])
    with pytest.raises(ValueError, match="extra 'docs' is not in pyproject.toml"):
        floors.min_constraints(pyproject, ["docs"])
