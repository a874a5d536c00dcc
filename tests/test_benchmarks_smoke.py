"""The premises of ``benchmarks/finish_ab.py`` (issue 42's harness), on the code it runs on."""

import numpy as np
import pandas as pd
import pytest

from benchmarks.families import binding_data
from benchmarks.finish_ab import B_BATCH, pass_split, write
from sklearn_ialm import FairLogisticClassifier


def test_b_skips_the_stochastic_phase():
    # B of the harness is A with batch_size=B_BATCH: its passes must split into no
    # minibatch at all, and no part may be negative. Five groups of unequal sizes: the
    # constraint rows outnumber X's (as on Adult), where batch_size = X's rows would leave
    # a stochastic phase. (The default fit A runs that phase on a sample of the rows only,
    # from solver/_ialm_search.py's _SAMPLE_MIN_ROWS; its passes are counted in the finish's part.)
    X, y, _, *_ = binding_data(1.5, n=12000)
    g = np.digitize(np.random.default_rng(0).random(len(y)), [0.8, 0.85, 0.9, 0.95])
    a = FairLogisticClassifier(bound=0.05, random_state=0).fit(X, y, sensitive_features=g)
    b = FairLogisticClassifier(bound=0.05, random_state=0, batch_size=B_BATCH)
    with pytest.warns(UserWarning, match="batch_size"):
        b.fit(X, y, sensitive_features=g)
    split_a, split_b = pass_split(a), pass_split(b)
    assert split_b[0] == 0
    assert min(split_a + split_b) >= 0
    assert np.isclose(sum(split_a), a.n_data_passes_)
    assert np.isclose(sum(split_b), b.n_data_passes_)


def test_write_replaces_a_rerun_and_keeps_the_rest(tmp_path):
    out = tmp_path / "ab.md"
    row = dict(case="anchor", setting="DP 0.02", commit="x@1", machine="m", seeds=1, triples=1)
    write([dict(row, verdict="first"), dict(row, setting="NP", verdict="np")], out, "cmd")
    write([dict(row, verdict="again")], out, "cmd")
    table = pd.read_csv(out.with_suffix(".csv"))
    assert list(table["verdict"]) == ["again", "np"]  # in the place of the row it replaced
    # A re-run at another commit replaces the row too: the file holds today's figure.
    write([dict(row, commit="x@2", verdict="other commit")], out, "cmd")
    table = pd.read_csv(out.with_suffix(".csv"))
    assert sorted(table["verdict"]) == ["np", "other commit"]
    assert out.read_text().count("| anchor |") == 2


def test_memory_measures_the_fit_beyond_x():
    # benchmarks/memory.py's measurement on small rows, in this process (the full run puts
    # each in a fresh one): a peak, X's size and the largest sites alive at the peak.
    from benchmarks.memory import measure_one

    row = measure_one("csr", "FairLogisticClassifier", 3000, top=3)
    assert row["peak"] > 0 and row["x_bytes"] > 3000 * 30 * 8
    assert 1 <= len(row["sites"]) <= 3
