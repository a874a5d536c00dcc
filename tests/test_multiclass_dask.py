"""Multi-class fits and predictions on dask input (issue 36): X stays on the workers, each
read of all rows is one compute, and the model is the in-memory fit's on the same rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fairlearn.metrics import MetricFrame, selection_rate
from sklearn.datasets import make_classification

import sklearn_ialm.problems.multinomial as multinomial
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier
from sklearn_ialm.problems.multinomial import MultinomialProblem, Rate, cell_codes

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _data(n=3000, d=8, seed=0):
    X, y = make_classification(
        n, d, n_informative=5, n_classes=3, n_clusters_per_class=1, random_state=seed
    )
    groups = (X[:, 0] + np.random.default_rng(seed).normal(size=n) > 0.2).astype(int)
    return X, y, groups


def _cases():
    return [
        (FairLogisticClassifier(constraint="demographic_parity", bound=0.04), True),
        (FairLogisticClassifier(constraint="equalized_odds", bound=0.08), True),
        (NeymanPearsonClassifier(max_class_error={0: 0.08, 1: 0.15}), False),
    ]


def _per_class_gap(y_pred, groups, classes):
    """fairlearn's selection-rate gap between the groups, one-vs-rest for each class."""
    return np.array([
        MetricFrame(
            metrics=selection_rate, y_true=np.ones(len(y_pred)), y_pred=(y_pred == c),
            sensitive_features=groups,
        ).difference()
        for c in classes
    ])  # fmt: skip


@pytest.mark.parametrize("clf,with_groups", _cases())
def test_dask_fit_is_the_in_memory_fit(clf, with_groups):
    X, y, groups = _data()
    kw = {"sensitive_features": groups} if with_groups else {}
    memory = clf.fit(X, y, **kw)
    coef, intercept, pred = memory.coef_.copy(), memory.intercept_.copy(), memory.predict(X)
    dkw = {k: da.from_array(v, chunks=700) for k, v in kw.items()}
    on_dask = clf.fit(da.from_array(X, chunks=(700, -1)), da.from_array(y, chunks=700), **dkw)
    np.testing.assert_allclose(on_dask.coef_, coef, atol=1e-6, rtol=0)
    np.testing.assert_allclose(on_dask.intercept_, intercept, atol=1e-6, rtol=0)
    np.testing.assert_array_equal(on_dask.predict(X), pred)
    assert on_dask.converged_ and on_dask.bound_met_
    # The bound on the training predictions, counted independently.
    if isinstance(clf, NeymanPearsonClassifier):
        for k, alpha in clf.max_class_error.items():
            assert np.mean(pred[y == k] != k) <= alpha
    elif clf.constraint == "demographic_parity":
        assert np.all(_per_class_gap(pred, groups, clf.classes_) <= clf.bound + 1e-12)


def test_same_seed_and_chunks_give_the_same_model():
    X, y, groups = _data(2000)
    Xd, yd, gd = (da.from_array(a, chunks=500) for a in (X, y, groups))
    fits = [
        FairLogisticClassifier(bound=0.05, random_state=3).fit(Xd, yd, sensitive_features=gd)
        for _ in range(2)
    ]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    np.testing.assert_array_equal(fits[0].intercept_, fits[1].intercept_)


def test_in_memory_labels_groups_and_weights_with_dask_X():
    X, y, groups = _data(2000)
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    clf = FairLogisticClassifier(bound=0.05, random_state=0)
    memory = clf.fit(X, y, sensitive_features=groups, sample_weight=w)
    coef = memory.coef_.copy()
    on_dask = clf.fit(
        da.from_array(X, chunks=(500, -1)), y, sensitive_features=groups, sample_weight=w
    )
    np.testing.assert_allclose(on_dask.coef_, coef, atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    "method", ["decision_function", "predict_proba", "predict_log_proba", "predict"]
)
def test_predictions_on_dask_are_the_in_memory_ones(method):
    X, y, groups = _data(2000)
    labels = np.array(["ant", "bee", "cat"])[y]
    clf = FairLogisticClassifier(bound=0.05, random_state=0).fit(
        X, labels, sensitive_features=groups
    )
    out = getattr(clf, method)(da.from_array(X, chunks=(300, -1)))
    assert isinstance(out, da.Array)
    expected = getattr(clf, method)(X)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.compute(), expected)


def test_nan_is_refused_as_for_two_classes():
    X, y, groups = _data(2000)
    Xd = da.from_array(X, chunks=(500, -1))
    bad = X.copy()
    bad[7, 2] = np.nan
    with pytest.raises(ValueError, match=r"X contains NaN or infinity \(columns \[2\]\)"):
        FairLogisticClassifier(bound=0.05).fit(
            da.from_array(bad, chunks=(500, -1)), da.from_array(y, chunks=500),
            sensitive_features=groups,
        )  # fmt: skip
    g = groups.astype(float)
    g[3] = np.nan
    with pytest.raises(ValueError, match="sensitive_features contains NaN"):
        FairLogisticClassifier(bound=0.05).fit(
            Xd, da.from_array(y, chunks=500), sensitive_features=da.from_array(g, chunks=500)
        )
    w = np.ones(len(y))
    w[5] = np.inf
    with pytest.raises(ValueError, match="sample_weight contains NaN or infinity"):
        NeymanPearsonClassifier(max_class_error={0: 0.1}).fit(
            Xd, da.from_array(y, chunks=500), sample_weight=da.from_array(w, chunks=500)
        )


def test_refusals_name_the_parameter_as_in_memory():
    """A class of zero total weight (it raised "Weights sum to zero"), max_fpr and pos_label
    on three classes (dropped, ignored): refused on dask with the in-memory messages."""
    X, y, _ = _data(1000)
    Xd, yd = da.from_array(X, chunks=(250, -1)), da.from_array(y, chunks=250)
    w = da.from_array((y != 1).astype(float), chunks=250)
    with pytest.raises(ValueError, match=r"^sample_weight is 0 on every row of class 1 \(int\)"):
        NeymanPearsonClassifier(max_class_error={0: 0.1}).fit(Xd, yd, sample_weight=w)
    with pytest.raises(ValueError, match=r"^sample_weight is 0 on every row of class 1 \(int\)"):
        NeymanPearsonClassifier().fit(Xd, yd, sample_weight=w)
    with pytest.raises(ValueError, match=r"^max_fpr=0.1 bounds the false-positive rate"):
        NeymanPearsonClassifier(max_fpr=0.1).fit(Xd, yd)
    with pytest.raises(ValueError, match=r"^pos_label=2 names the positive class"):
        NeymanPearsonClassifier(max_class_error={0: 0.1}, pos_label=2).fit(Xd, yd)


def test_minibatch_presets_are_refused_on_dask():
    X, y, _ = _data(1000)
    clf = NeymanPearsonClassifier(max_class_error={0: 0.1}, preset="paper")
    with pytest.raises(ValueError, match="preset='paper' is not available for more than two"):
        clf.fit(da.from_array(X, chunks=(500, -1)), da.from_array(y, chunks=500))
    assert not hasattr(clf, "coef_")


def test_a_fit_on_dask_counts_its_computes():
    """Every read of all rows is one compute: the fit sends a few per solver evaluation, not
    one per block."""
    X, y, _ = _data(2000)
    n_blocks = 4
    sent = []
    original = dask.compute

    def counting(*args, **kwargs):
        sent.append(1)
        return original(*args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dask.compute = counting
        try:
            clf = NeymanPearsonClassifier(max_class_error={0: 0.1}).fit(
                da.from_array(X, chunks=(len(y) // n_blocks, -1)), da.from_array(y, chunks=500)
            )
        finally:
            dask.compute = original
    # n_data_passes_ counts the reads of all rows; the set-up adds a handful of computes.
    assert len(sent) <= clf.n_data_passes_ + 12


@pytest.mark.parametrize("matrix", [True, False])
def test_second_order_evaluation_on_dask_is_the_in_memory_one(matrix, monkeypatch):
    """The finish's Newton oracle on dask rows: the in-memory values, Jacobian and Hessian
    (a matrix from one compute, or products with it, a compute each)."""
    from sklearn_ialm.problems._dask_multinomial import DaskMultinomialProblem
    from sklearn_ialm.problems._dask_rows import DaskRows

    if not matrix:
        monkeypatch.setattr(multinomial, "_HESSIAN_MAX_PARAMS", 0)
    X, y, groups = _data(900)
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    cells = cell_codes(groups, y, 3)
    group_cells = [list(range(3 * g, 3 * g + 3)) for g in (0, 1)]
    cons = [
        ([(1.0, Rate(c, group_cells[a])), (-1.0, Rate(c, group_cells[1 - a]))], -0.05)
        for c in range(3)
        for a in (0, 1)
    ]
    kw = dict(C=1.0, scale=np.full(8, 1.3), center=np.linspace(-0.1, 0.1, 8), n_cells=6)
    memory = MultinomialProblem(X, y, 3, w, cells, cons, **kw)
    rows = DaskRows(
        da.from_array(X, chunks=(300, -1)), da.from_array(cells, chunks=300),
        da.from_array(w, chunks=300),
    )  # fmt: skip
    on_dask = DaskMultinomialProblem(rows, y, 3, w, cells, cons, **kw)
    rng = np.random.default_rng(0)
    x = rng.normal(scale=0.5, size=memory.n_params)
    mu = rng.uniform(0.0, 3.0, size=len(cons))
    ours, theirs = on_dask.second_order_evaluation(x), memory.second_order_evaluation(x)
    for a, b in zip(ours[:4], theirs[:4], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    before = rows.n_computes
    H, ref = ours[4](mu), theirs[4](mu)
    E = np.eye(memory.n_params)
    if matrix:
        assert rows.n_computes == before + 1
    else:
        H, ref = (np.column_stack([op @ e for e in E]) for op in (H, ref))
        assert rows.n_computes == before + memory.n_params
    np.testing.assert_allclose(H, ref, rtol=1e-10, atol=1e-13)
    assert on_dask.curvature_passes == memory.curvature_passes == (1.0 if matrix else 0.0)
