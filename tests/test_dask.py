"""The user guide's Dask script runs as written on a two-worker LocalCluster, and gives the
same models as joblib's default (loky) backend."""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import joblib
import numpy as np
import pytest

pytest.importorskip("distributed", reason="the 'test' extra installs dask[distributed]")

SCRIPT = Path(__file__).resolve().parents[1] / "doc" / "user_guide" / "dask_cluster.py"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")
def test_dask_script_runs_as_written_and_matches_loky():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # As `python dask_cluster.py` runs it: the __main__ block starts the cluster.
        ran = runpy.run_path(str(SCRIPT), run_name="__main__")
    assert "seeds run: 4" in out.getvalue()
    clf, search = ran["clf"], ran["search"]
    assert len(search.cv_results_["params"]) == 2

    X, y, groups = ran["make_data"]()
    with joblib.parallel_config(backend="loky", n_jobs=2):
        loky_clf, loky_search = ran["fit_models"](X, y, groups)
    # The seeds depend on random_state only, never on where the runs executed.
    assert [s["seed"] for s in clf.seeds_] == [s["seed"] for s in loky_clf.seeds_]
    np.testing.assert_array_equal(clf.coef_, loky_clf.coef_)
    np.testing.assert_array_equal(clf.intercept_, loky_clf.intercept_)
    np.testing.assert_array_equal(
        search.cv_results_["mean_test_score"], loky_search.cv_results_["mean_test_score"]
    )
    assert search.best_params_ == loky_search.best_params_
    np.testing.assert_array_equal(search.best_estimator_.coef_, loky_search.best_estimator_.coef_)
