"""The premises of ``benchmarks/finish_ab.py`` (issue 42's harness), on the code it runs on."""

import numpy as np
import pandas as pd

from benchmarks.families import binding_data
from benchmarks.finish_ab import pass_split, write
from sklearn_ialm import FairLogisticClassifier


def test_batch_size_of_all_rows_skips_the_stochastic_phase():
    # B of the harness is A with batch_size = the rows: its passes must split into no
    # minibatch at all, where A's default fit spends some, and no part may be negative.
    X, y, g, *_ = binding_data(1.5, n=3000)
    a = FairLogisticClassifier(bound=0.02, random_state=0).fit(X, y, sensitive_features=g)
    b = FairLogisticClassifier(bound=0.02, random_state=0, batch_size=len(y))
    b.fit(X, y, sensitive_features=g)
    split_a, split_b = pass_split(a), pass_split(b)
    assert split_a[0] > 0 and split_b[0] == 0
    assert min(split_a + split_b) >= 0
    assert np.isclose(sum(split_b), b.n_data_passes_)


def test_write_replaces_a_rerun_and_keeps_the_rest(tmp_path):
    out = tmp_path / "ab.md"
    row = dict(case="anchor", setting="DP 0.02", commit="x@1", machine="m", seeds=1, triples=1)
    write([dict(row, verdict="first"), dict(row, setting="NP", verdict="np")], out, "cmd")
    write([dict(row, verdict="again")], out, "cmd")
    write([dict(row, commit="x@2", verdict="other commit")], out, "cmd")
    table = pd.read_csv(out.with_suffix(".csv"))
    assert sorted(table["verdict"]) == ["again", "np", "other commit"]
    assert out.read_text().count("| anchor |") == 3
