"""verbose says which solve runs and why, and never stays silent for long (issue 23)."""

import re

import numpy as np
import pytest
from sklearn.datasets import make_classification

import sklearn_ialm.solver._ialm_setup as ialm_setup
from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier


def _solver_lines(out):
    return [line for line in out.splitlines() if line.startswith("[stoc_ialm] k=")]


def test_each_further_solve_says_which_and_why(capsys):
    X, y = make_classification(n_samples=2000, n_features=10, random_state=0)
    clf = NeymanPearsonClassifier(max_fpr=0.05, random_state=0, verbose=1)
    with pytest.warns(UserWarning, match="umbrella"):
        clf.fit(X, y)
    out = capsys.readouterr().out
    steering = re.findall(r"\[steering\] solve (\d+): (.*)", out)
    # One announcement per solve, numbered in order, each further one with its reason.
    assert [int(n) for n, _ in steering] == list(range(1, clf.n_rounds_ + 1))
    assert clf.n_rounds_ >= 2
    for _, why in steering[1:]:
        rate = float(re.search(r"flags ([0-9.]+) of the negatives", why).group(1))
        assert abs(np.log(rate / 0.05)) > np.log(1.25)  # the reason given is true
        assert "weighting the negatives" in why
    # The solver's lines restart at k=0 once per solve, each after its announcement.
    starts = [line for line in out.splitlines() if line.startswith(("[steering]", "[stoc"))]
    for i, line in enumerate(starts):
        if line.startswith("[stoc_ialm] k= 0"):
            assert any(s.startswith("[steering]") for s in starts[:i])


def test_fairness_steering_names_the_constraint_values(capsys):
    X, y = make_classification(
        n_samples=2000, n_features=10, n_informative=5, shuffle=False, random_state=0
    )
    groups = (X[:, 0] + np.random.default_rng(0).normal(scale=0.5, size=len(X)) > 0.5).astype(int)
    clf = FairLogisticClassifier(
        constraint="demographic_parity", bound=0.05, random_state=0, verbose=1
    ).fit(X, y, sensitive_features=groups)
    out = capsys.readouterr().out
    assert clf.n_rounds_ >= 2
    assert out.count("[steering] solve ") == clf.n_rounds_
    assert re.search(r"solve 2: on predictions the constraints are \[.*\].*moving", out)


def test_multiclass_steering_says_which_solve_and_why(capsys):
    """On three classes each solve is announced as on two: the first, then each further
    one with the constraint values on predictions that call for it."""
    X, y = make_classification(
        n_samples=1500, n_features=6, n_informative=4, n_redundant=0, n_classes=3,
        random_state=0,
    )  # fmt: skip
    clf = NeymanPearsonClassifier(max_class_error={0: 0.05}, random_state=0, verbose=1)
    clf.fit(X, y)
    out = capsys.readouterr().out
    steering = re.findall(r"\[steering\] solve (\d+): (.*)", out)
    assert [int(n) for n, _ in steering] == list(range(1, clf.n_rounds_ + 1))
    assert clf.n_rounds_ == 2
    # The second solve is called for by a miss of the bound on the first's predictions.
    (values,) = re.findall(r"on predictions the constraints are \[(.*?)\]", steering[1][1])
    assert float(values) > 0


def test_stop_tests_print_progress_when_time_passes(capsys, monkeypatch):
    """Time-based: with the interval at 0 every stop test prints, so a long outer iteration
    is never one silent line (no timing assertion: the clock threshold is patched)."""
    X, y = make_classification(n_samples=600, n_features=5, random_state=0)
    kw = dict(max_fpr=0.2, random_state=0, verbose=1, loss="sigmoid", rate="soft")
    monkeypatch.setattr(ialm_setup, "_PROGRESS_SECONDS", 0.0)
    clf = NeymanPearsonClassifier(**kw).fit(X, y)
    out = capsys.readouterr().out
    progress = [line for line in out.splitlines() if "stop test:" in line]
    # Every stop test of the history is shown, the outer-iteration ones by their own line.
    assert len(progress) + len(_solver_lines(out)) >= len(clf.history_["data_passes"])
    assert len(progress) > 0
