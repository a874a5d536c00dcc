"""Dask input is checked as memory input is, from one lazy pass over the labels, groups and
weights (or the first pass over X), before any solve (issue 34)."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _data(n=2000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    groups = (X[:, 1] > 0).astype(float)
    return X, y, groups


def _fair():
    return FairLogisticClassifier(constraint="demographic_parity", bound=0.05, random_state=0)


def _both_refuse(X, y, groups, match, max_passes=300.0, **kwargs):
    """The in-memory fit and the dask fit (``max_passes <= 3``: the streamed one) refuse the
    input with the same message."""
    with pytest.raises(ValueError, match=match):
        _fair().fit(X, y, sensitive_features=groups, **kwargs)
    chunks = len(y) // 4
    dask_kwargs = {k: da.from_array(v, chunks=chunks) for k, v in kwargs.items()}
    with pytest.raises(ValueError, match=match):
        _fair().set_params(max_passes=max_passes).fit(
            da.from_array(X, chunks=(chunks, -1)),
            da.from_array(y, chunks=chunks),
            sensitive_features=da.from_array(groups, chunks=chunks),
            **dask_kwargs,
        )


@pytest.mark.parametrize("max_passes", [300.0, 2.0])
def test_continuous_groups_are_refused_on_dask_as_in_memory(max_passes):
    # (The streamed fit, max_passes=2, took them as 1e3 groups: issue 49, DS8.)
    X, y, _ = _data()
    _both_refuse(
        X, y, np.round(X[:, 2], 6), "sensitive_features has .* distinct values", max_passes
    )


@pytest.mark.parametrize("max_passes", [2.0, 20.0])
def test_a_rounded_measurement_is_refused_as_continuous(max_passes):
    """A measurement rounded to 3 decimals (issue 49, DS8: 4438 values in 20000 rows, fewer
    than half the rows) is no group column, in memory and streamed from dask alike."""
    X, y, _ = _data(n=8000)
    values = np.round(X[:, 2], 3)
    assert 2 * len(np.unique(values)) < len(values)  # (not caught by the one-per-row rule)
    _both_refuse(X, y, values, "it looks continuous", max_passes)


@pytest.mark.parametrize("max_passes", [300.0, 2.0])
def test_a_group_of_two_rows_is_left_out_on_dask_as_in_memory(max_passes):
    """The policy of min_group_size on every path: the streamed dask fit (max_passes=2)
    constrained a group of two rows, which the other paths refused (issue 49, DS7)."""
    from fairlearn.metrics import demographic_parity_difference

    X, y, groups = _data()
    groups[:2] = 7.0
    chunks = len(y) // 4
    fits = []
    for dask_input in (False, True):
        clf = _fair().set_params(max_passes=max_passes)
        data = (X, y, groups)
        if dask_input:
            data = (da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=chunks),
                    da.from_array(groups, chunks=chunks))  # fmt: skip
        with pytest.warns(UserWarning, match=r"min_group_size=5 rows \(\{7\.0: 2\} rows\)"):
            clf.fit(data[0], data[1], sensitive_features=data[2])
        assert clf.excluded_groups_.tolist() == [7.0]
        assert 7.0 not in clf.protected_groups_.tolist()
        fits.append(clf)
    # The reported metric is fairlearn's on the rows of the groups constrained.
    kept = groups != 7.0
    for clf in fits:
        gap = demographic_parity_difference(
            y[kept], clf.predict(X[kept]), sensitive_features=groups[kept]
        )
        assert clf.hard_constraint_values_[0] == pytest.approx(gap, abs=1e-9)


@pytest.mark.parametrize("max_passes", [300.0, 2.0])
def test_one_group_left_on_dask_fits_the_unconstrained_model_with_a_warning(max_passes):
    X, y, _ = _data()
    groups = np.zeros(len(y), int)
    groups[:3] = 1
    clf = _fair().set_params(max_passes=max_passes)
    with pytest.warns(UserWarning, match="min_group_size=5 rows.*void"):
        clf.fit(
            da.from_array(X, chunks=(500, -1)),
            da.from_array(y, chunks=500),
            sensitive_features=da.from_array(groups, chunks=500),
        )
    assert clf.excluded_groups_.tolist() == [1]
    assert clf.protected_groups_.tolist() == []
    assert clf.hard_constraint_values_.tolist() == []


def test_nan_groups_are_refused_on_dask_as_in_memory():
    X, y, groups = _data()
    groups[5] = np.nan
    _both_refuse(X, y, groups, "sensitive_features contains NaN")


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nan_or_inf_in_X_is_refused_on_dask_naming_X(value):
    X, y, groups = _data()
    X[17, 2] = value
    with pytest.raises(ValueError, match=r"X contains NaN or infinity \(columns \[2\]\)"):
        NeymanPearsonClassifier(max_fpr=0.1).fit(
            da.from_array(X, chunks=(500, -1)), da.from_array(y, chunks=500)
        )


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nan_or_inf_weights_are_refused_on_dask_naming_sample_weight(value):
    X, y, groups = _data()
    w = np.ones(len(y))
    w[3] = value
    with pytest.raises(ValueError, match="sample_weight contains NaN or infinity"):
        _fair().fit(
            da.from_array(X, chunks=(500, -1)),
            da.from_array(y, chunks=500),
            sensitive_features=da.from_array(groups, chunks=500),
            sample_weight=da.from_array(w, chunks=500),
        )


def test_y_one_row_short_is_refused_naming_y():
    X, y, _ = _data()
    with pytest.raises(ValueError, match=r"y must have shape \(2000,\)"):
        NeymanPearsonClassifier(max_fpr=0.1).fit(
            da.from_array(X, chunks=(500, -1)), da.from_array(y[:-1], chunks=500)
        )


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ["y", "sample_weight", "sensitive_features"])
def test_an_in_memory_input_one_row_short_is_refused_naming_it(name, n_classes):
    """With X on dask and the other inputs in memory, one row short: dask's "Chunks do not
    add up to shape" named nothing; the message names the input and both lengths."""
    X, y, groups = _data()
    y = y + (X[:, 2] > 1) * (n_classes - 2)  # a third class where asked
    kw = {"sample_weight": np.ones(len(y)), "sensitive_features": groups, "y": y}
    kw[name] = kw[name][:-1]
    Xd = da.from_array(X, chunks=(500, -1))
    match = rf"^{name} must have shape \(2000,\) \(one value per row of X\), got \(1999,\)"
    with pytest.raises(ValueError, match=match):
        _fair().fit(Xd, **kw)


@pytest.mark.filterwarnings("ignore:max_fpr=0.2 holds on the 144 training negatives")
def test_partitions_of_one_row_are_joined_and_the_fit_is_the_one_on_joined_rows():
    """300 partitions of one row: the fit rechunks them (verbose says so) and its model is
    the fit's on the same rows in one partition."""
    X, y, _ = _data(300)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tiny = NeymanPearsonClassifier(max_fpr=0.2, random_state=0, verbose=1).fit(
            da.from_array(X, chunks=(1, -1)), da.from_array(y, chunks=1)
        )
    assert "300 partitions hold 1 rows each: rechunked" in out.getvalue()
    one = NeymanPearsonClassifier(max_fpr=0.2, random_state=0).fit(
        da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300)
    )
    np.testing.assert_array_equal(tiny.coef_, one.coef_)
