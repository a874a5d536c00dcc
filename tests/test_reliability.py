"""A fit that fails changes nothing; the compiled kernels survive an interrupted load; odd
values get a clear error or the model they stand for; the warnings agree with the attributes
(issue 34, items 1, 2, 7 and 8)."""

import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning, NotFittedError

import sklearn_ialm.estimators._certified as certified_fit
import sklearn_ialm.estimators._fair_report as fair_report
import sklearn_ialm.estimators._neyman_pearson_guarantee as neyman_pearson_guarantee
import sklearn_ialm.estimators._solve as solving
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier


def _data(n=600, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    groups = np.where(rng.random(n) < 0.4, "a", "b")
    y = (X[:, 0] + 0.8 * (groups == "a") + rng.standard_normal(n) > 0.3).astype(int)
    return X, y, groups


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _state(est):
    """Every attribute, as bytes: equal states are the same model, attribute by attribute."""
    return {k: pickle.dumps(v) for k, v in vars(est).items()}


# -- item 1: a fit that raises leaves the previous model whole ------------------------------------
def _fair(**kw):
    return FairLogisticClassifier(bound=0.1, random_state=0, **kw)


def _certified(**kw):
    # A loose bound: 600 rows certify nothing tighter.
    return FairLogisticClassifier(bound=0.35, calibration="clopper-pearson", random_state=0, **kw)


def _umbrella(**kw):
    return NeymanPearsonClassifier(max_fpr=0.1, calibration="umbrella", random_state=0, **kw)


def _few_negatives():
    X, y, g = _data(n=60, d=6, seed=1)
    return X, np.r_[np.ones(50, int), y[50:]], g


def _bad_refits():
    """``(name, make, failing fit)``: a refit on 6 features (the first fit has 4) that raises
    after the data were validated."""
    X6, y6, g6 = _data(n=600, d=6, seed=1)
    negative = np.ones(len(y6))
    negative[3] = -1.0
    tiny = np.r_[np.full(590, "a"), np.full(10, "b")]
    return [
        ("umbrella, too few negatives", _umbrella, lambda e: e.fit(*_few_negatives()[:2])),
        ("umbrella, negative weight", _umbrella, lambda e: e.fit(X6, y6, sample_weight=negative)),
        (
            "certified, too few calibration rows",
            _certified,
            lambda e: e.fit(X6, y6, sensitive_features=tiny),
        ),
        (
            "certified, absent protected group",
            lambda: _certified(protected_groups=["a"]),
            lambda e: e.fit(X6, y6, sensitive_features=np.where(g6 == "a", "c", g6)),
        ),
        (
            # (A 2-row group is left out of the constraints now, min_group_size: no error.)
            "certified, a continuous group column",
            _certified,
            lambda e: e.fit(X6, y6, sensitive_features=np.round(X6[:, 0], 6)),
        ),
        (
            "certified, negative weight",
            _certified,
            lambda e: e.fit(X6, y6, sensitive_features=g6, sample_weight=negative),
        ),
        (
            "plain, negative weight",
            _fair,
            lambda e: e.fit(X6, y6, sensitive_features=g6, sample_weight=negative),
        ),
    ]


@pytest.mark.parametrize("case", range(len(_bad_refits())), ids=[c[0] for c in _bad_refits()])
def test_a_refit_that_raises_leaves_the_previous_model_whole(case):
    name, make, bad_fit = _bad_refits()[case]
    X, y, g = _data()
    est = make()
    kw = {} if isinstance(est, NeymanPearsonClassifier) else {"sensitive_features": g}
    _quiet(est.fit, X, y, **kw)
    before, pred = _state(est), est.predict(X)
    with pytest.raises(ValueError):
        _quiet(bad_fit, est)
    assert _state(est) == before, name
    assert est.n_features_in_ == X.shape[1]
    assert_array_equal(est.predict(X), pred)
    # The first fit that raises leaves an unfitted estimator unfitted.
    fresh = make()
    with pytest.raises(ValueError):
        _quiet(bad_fit, fresh)
    assert not any(k.endswith("_") for k in vars(fresh)), sorted(vars(fresh))
    with pytest.raises(NotFittedError):
        fresh.predict(X)


class _Interrupt:
    """Raise KeyboardInterrupt on the ``k``-th call of ``fn`` (1-based), after a pickle of
    ``est`` is taken there, as another thread would take it during the fit."""

    def __init__(self, fn, k, est):
        self.fn, self.k, self.est, self.calls, self.pickles = fn, k, est, 0, []

    def __call__(self, *args, **kwargs):
        self.calls += 1
        self.pickles.append(pickle.dumps(self.est))
        if self.calls == self.k:
            raise KeyboardInterrupt
        return self.fn(*args, **kwargs)


_INTERRUPTS = [
    # (estimator, module, name of the function interrupted, its calls to let through)
    ("certified", solving, "_solve", 0),
    ("certified", solving, "_solve", 1),
    ("certified", certified_fit, "fairness_certificate", 0),
    ("umbrella", solving, "_solve", 0),
    ("umbrella", solving, "_solve", 1),
    ("umbrella", neyman_pearson_guarantee, "umbrella_threshold", 0),
    ("plain", solving, "_solve", 0),
    ("plain", fair_report, "metric_rows", 0),  # the report, after coef_ is set
    ("warm", solving, "_solve", 0),
]


@pytest.mark.parametrize("kind, module, name, through", _INTERRUPTS)
def test_an_interrupted_refit_leaves_the_previous_model_whole(
    monkeypatch, kind, module, name, through
):
    """Ctrl-C at any point of a refit (here: the k-th call of a step) leaves the previous
    model as it was, and a pickle taken during the refit is the previous model whole."""
    X, y, g = _data()
    X6, y6, g6 = _data(n=500, d=6, seed=2)
    make = {"certified": _certified, "umbrella": _umbrella, "plain": _fair}.get(kind)
    est = make() if make else _fair(warm_start=True)
    fair_kw = not isinstance(est, NeymanPearsonClassifier)
    _quiet(est.fit, X, y, **({"sensitive_features": g} if fair_kw else {}))
    before, pred = _state(est), est.predict(X)
    interrupt = _Interrupt(getattr(module, name), through + 1, est)
    monkeypatch.setattr(module, name, interrupt)
    # A warm start needs the same features; the other refits use 6 (the model has 4).
    Xr, yr, gr = (X[::-1], y[::-1], g[::-1]) if kind == "warm" else (X6, y6, g6)
    with pytest.raises(KeyboardInterrupt):
        _quiet(est.fit, Xr, yr, **({"sensitive_features": gr} if fair_kw else {}))
    assert interrupt.calls == through + 1
    assert _state(est) == before
    assert_array_equal(est.predict(X), pred)
    for taken in interrupt.pickles:
        assert _state(pickle.loads(taken)) == before


@pytest.mark.parametrize("make", [_certified, _umbrella], ids=["certified", "umbrella"])
def test_pickles_from_another_thread_are_the_old_model_or_the_new(make, monkeypatch):
    import threading

    X, y, g = _data()
    X6, y6, g6 = _data(n=500, d=6, seed=2)
    est = make()
    kw, kw6 = (
        ({}, {}) if make is _umbrella else ({"sensitive_features": g}, {"sensitive_features": g6})
    )
    _quiet(est.fit, X, y, **kw)
    before, taken, done = _state(est), [], threading.Event()
    # One pickle is taken inside the refit for certain (the thread's depend on timing: a
    # refit lasts about 6 ms), after the new problem is posed and before the solve.
    build = type(est)._build_problem

    def build_and_pickle(self, *args, **kwargs):
        mid_fit.append(pickle.dumps(est))
        return build(self, *args, **kwargs)

    mid_fit = []
    monkeypatch.setattr(type(est), "_build_problem", build_and_pickle)

    def pickle_until_done():
        while not done.is_set():
            taken.append(pickle.dumps(est))
            done.wait(0.002)

    reader = threading.Thread(target=pickle_until_done)
    reader.start()
    try:
        _quiet(est.fit, X6, y6, **kw6)
    finally:
        done.set()
        reader.join()
    after = _state(est)
    assert after != before and taken and mid_fit
    for state in map(pickle.loads, taken + mid_fit):
        assert _state(state) in (before, after)
    assert _state(pickle.loads(mid_fit[0])) == before


def test_a_refit_replaces_every_fitted_attribute():
    """No attribute of an earlier fit survives a refit that does not set it: the certificate
    of a certified fit, the seeds of a multi-seed fit."""
    X, y, g = _data()
    est = _quiet(_certified(n_seeds=2).fit, X, y, sensitive_features=g)
    assert hasattr(est, "certificate_") and hasattr(est, "seeds_")
    est.set_params(calibration=None, n_seeds=1)
    _quiet(est.fit, X, y, sensitive_features=g)
    assert not hasattr(est, "certificate_") and not hasattr(est, "seeds_")
    assert_array_equal(est.coef_, _quiet(clone(est).fit, X, y, sensitive_features=g).coef_)


@pytest.mark.parametrize("class_weight", [{0: 1, 1: 5}, "balanced"])
def test_a_certified_fit_weighs_its_training_rows_once(class_weight):
    """The certified fit is the plain fit of its training rows at its training bound: the
    class weights applied once (they were applied twice: 25 for a weight of 5, which moves
    the intercept by 1.6 here). Equal up to the solver's tolerance: the certified fit
    reaches its model warm-started from the candidate before (3.5e-5 apart here)."""
    X, y, g = _data()
    certified = _quiet(_certified(class_weight=class_weight).fit, X, y, sensitive_features=g)
    weight = np.ones(len(y))
    weight[certified.calibration_indices_] = 0.0
    plain = FairLogisticClassifier(
        bound=certified.training_bound_, class_weight=class_weight, random_state=0
    )
    _quiet(plain.fit, X, y, sensitive_features=g, sample_weight=weight)
    assert_allclose(certified.coef_, plain.coef_, atol=1e-3)
    assert_allclose(certified.intercept_, plain.intercept_, atol=1e-3)


def test_a_pickle_leaves_the_estimator_as_it_was():
    est = _quiet(NeymanPearsonClassifier(random_state=0).fit, *_data()[:2])
    keys = set(vars(est))
    pickle.dumps(est)
    assert set(vars(est)) == keys


# -- item 2: Ctrl-C while the compiled kernels load -------------------------------------------
_LOAD_CUT_SHORT = """
import importlib.abc
import sys

import numpy as np

from sklearn_ialm import FairLogisticClassifier


class CtrlC(importlib.abc.MetaPathFinder):
    # Ctrl-C as numba's decorators are about to load, mid-way through "import numba".
    armed = {armed}

    def find_spec(self, name, path, target=None):
        if self.armed and name == "numba.core.decorators":
            self.armed = False
            raise KeyboardInterrupt
        return None


assert "numba" not in sys.modules
sys.meta_path.insert(0, CtrlC())
rng = np.random.default_rng(0)
X = rng.standard_normal((500, 4))
g = rng.integers(0, 2, 500)
y = (X[:, 0] + 0.5 * g + rng.standard_normal(500) > 0).astype(int)
est = FairLogisticClassifier(bound=0.05, random_state=0)
try:
    est.fit(X, y, sensitive_features=g)
    print("fitted")
except KeyboardInterrupt:
    print("interrupted")
est.fit(X, y, sensitive_features=g)
from sklearn_ialm.problems import _kernels

print(_kernels.available(), est.coef_.tobytes().hex(), est.intercept_.tobytes().hex())
"""


def _run(code):
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split("\n")


def test_a_fit_works_after_ctrl_c_while_the_kernels_load():
    """The first fit of a process imports numba; Ctrl-C then leaves its submodules half set
    up, which made every later fit raise. The next fit loads numba again and gives the model
    of a process that was never interrupted, bit for bit."""
    pytest.importorskip("numba")
    cut = _run(textwrap.dedent(_LOAD_CUT_SHORT).format(armed=True))
    clean = _run(textwrap.dedent(_LOAD_CUT_SHORT).format(armed=False))
    assert cut[0] == "interrupted" and clean[0] == "fitted"
    assert cut[1].startswith("True ")  # the compiled path, loaded again
    assert cut[1] == clean[1]


# -- item 8: every warning agrees with the fitted attributes ----------------------------------
def _umbrella_fit(X, y, seed):
    clf = NeymanPearsonClassifier(max_fpr=0.05, calibration="umbrella", random_state=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y)
    return clf, caught


def _check_umbrella_story(clf, told, X, y):
    # The training rows' false-positive rate of predict, counted here.
    train = np.setdiff1d(np.arange(len(y)), clf.calibration_indices_)
    negatives = train[y[train] == 0]
    fpr = float(np.mean(clf.predict(X[negatives]) == 1))
    assert clf.hard_constraint_values_[0] == pytest.approx(fpr, abs=1e-12)
    # The verdict is the guarantee (issue 49 item 5); the training rows' rate is beside it.
    assert clf.bound_met_ == (clf.violation_bound_ <= clf.delta)
    texts = [str(w.message) for w in told if issubclass(w.category, ConvergenceWarning)]
    assert any("NOT met" in t for t in texts) == (not clf.bound_met_), texts
    assert bool(texts) == (not clf.converged_), texts
    for t in texts:
        assert f"on predictions [{round(fpr, 4)}]" in t
    one_class = len(np.unique(clf.predict(X[train]))) == 1
    assert any("same class for every row" in str(w.message) for w in told) == one_class


@pytest.mark.parametrize("seed", [0, 3])
def test_the_umbrella_fit_warns_about_the_model_with_its_threshold(seed):
    """The fit with calibration="umbrella" judged its training predictions at threshold 0,
    before the umbrella threshold was set: it said "NOT met" of a model whose training
    negatives meet the bound (seed 0: 0.047 <= 0.05), and nothing of one whose training
    negatives do not (seed 3: 0.056). Since issue 49 item 5 the verdict is the guarantee,
    which both meet: no "NOT met", converged."""
    X, y = make_classification(
        n_samples=3000, n_features=20, n_informative=8, flip_y=0.05, class_sep=0.8,
        random_state=seed,
    )  # fmt: skip
    clf, told = _umbrella_fit(X, y, seed)
    # Both sides of the training rows' reading are tested.
    assert (clf.hard_constraint_values_[0] <= 0.05) == (seed == 0)
    assert clf.bound_met_ and clf.converged_
    _check_umbrella_story(clf, told, X, y)


def test_the_umbrella_fit_on_spambase_tells_one_story():
    """The issue's case: spambase standardised, max_fpr=0.05 (the warning said "NOT met" with
    bound_met_ True and hard_constraint_values_ 0.033)."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from sklearn_ialm.datasets import load_spambase

    X, y = load_spambase(return_X_y=True)
    X_tr, _, y_tr, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=1)
    X_tr = StandardScaler().fit_transform(X_tr)
    clf, told = _umbrella_fit(X_tr, y_tr, 0)
    assert clf.bound_met_
    _check_umbrella_story(clf, told, X_tr, y_tr)


# -- item 7: odd values get an error naming the parameter, or the model they stand for -------
_MAKERS = {
    "np": lambda **kw: NeymanPearsonClassifier(random_state=0, **kw),
    "fair": lambda **kw: FairLogisticClassifier(bound=0.1, random_state=0, **kw),
    "umbrella": lambda **kw: _umbrella(**kw),
    "certified": lambda **kw: _certified(**kw),
}


def _fit_kind(kind, X, y, groups, **kw):
    est = _MAKERS[kind]()
    fit_kw = {} if kind in ("np", "umbrella") else {"sensitive_features": groups}
    return _quiet(est.fit, X, y, **fit_kw, **kw)


def _with_missing(y, how):
    import pandas as pd

    if how == "Int64":
        out = pd.Series(y, dtype="Int64")
        out[3] = pd.NA
        return out
    out = y.astype(object)
    out[3] = {"pd.NA": pd.NA, "None": None, "nan": float("nan")}[how]
    return out


@pytest.mark.parametrize("kind", list(_MAKERS))
@pytest.mark.parametrize("how", ["Int64", "pd.NA", "None", "nan"])
def test_a_missing_label_is_named(kind, how):
    pytest.importorskip("pandas")
    X, y, g = _data()
    with pytest.raises(ValueError, match=r"y has no label .* the first at position 3"):
        _fit_kind(kind, X, _with_missing(y, how), g)


@pytest.mark.parametrize("kind", ["np", "fair"])
def test_labels_mixing_strings_and_numbers_are_refused(kind):
    X, y, g = _data()
    mixed = np.array(["yes" if label else 0 for label in y], dtype=object)
    with pytest.raises(ValueError, match=r"y mixes strings with other labels \(int, str\)"):
        _fit_kind(kind, X, mixed, g)


@pytest.mark.parametrize("kind", ["np", "fair", "umbrella"])
def test_whole_number_labels_beyond_int64_are_labels(kind):
    """{0, 1e300} are two classes (type_of_target's cast to int64 called them continuous):
    the model of {0, 1}, with the user's labels."""
    X, y, g = _data()
    big = _fit_kind(kind, X, y * 1e300, g)
    small = _fit_kind(kind, X, y, g)
    assert_array_equal(big.classes_, [0.0, 1e300])
    assert_array_equal(big.coef_, small.coef_)
    assert_array_equal(big.predict(X), small.predict(X) * 1e300)


@pytest.mark.parametrize("kind", ["fair", "certified"])
def test_three_dimensional_groups_are_named(kind):
    X, y, g = _data()
    with pytest.raises(ValueError, match="sensitive_features must be 1-D or 2-D, got 3"):
        _fit_kind(kind, X, y, (g == "a").astype(int).reshape(-1, 1, 1))


@pytest.mark.parametrize("kind", ["np", "fair", "umbrella"])
@pytest.mark.parametrize("weight", [1e308, 5e-324, 1e-300, 3.0])
def test_equal_weights_of_any_size_are_C_times_that_size(kind, weight):
    """Weights of 1e308 overflowed their sums (LinAlgError), 5e-324 the penalty's strength,
    1e-300 the count of the effective negatives. As documented (the penalty is
    ``||w||^2 / (2 C sum(sample_weight))``, LogisticRegression's), equal weights ``k`` give
    the model of unit weights and ``C = k``: the fit with them is compared with that fit."""
    X, y, g = _data(n=400)
    weighted = _fit_kind(kind, X, y, g, sample_weight=np.full(len(y), weight))
    est = _MAKERS[kind](C=weight)
    kw = {"sensitive_features": g} if kind == "fair" else {}
    scaled = _quiet(est.fit, X, y, **kw)
    np.testing.assert_allclose(weighted.coef_, scaled.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(weighted.intercept_, scaled.intercept_, rtol=1e-9, atol=1e-12)
    assert_array_equal(weighted.predict(X), scaled.predict(X))
