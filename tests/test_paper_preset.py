"""preset="paper" runs the paper's Section 5 as written; each departure of the default is a
switch that changes behaviour and that the paper preset leaves off."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from sklearn_ialm.datasets import load_spambase
from sklearn_ialm.problems import fairness_problem, neyman_pearson_problem
from sklearn_ialm.solver import PRESETS, stoc_ialm


def _unit_rows(n=800, d=6, seed=0):
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=4, n_redundant=0, random_state=seed
    )
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    # The paper's preprocessing: rows of unit norm, where its constants hold.
    return X / np.linalg.norm(X, axis=1, keepdims=True), y


def _np_problem(max_fpr=0.2, **kw):
    X, y = _unit_rows()
    return neyman_pearson_problem(X, y, max_fpr=max_fpr, **kw)


def _fair_problem():
    X, y = _unit_rows(seed=1)
    groups = (X[:, 1] > 0.3).astype(int)
    return fairness_problem(X, y, X[::2], groups[::2], bound=0.2, protected=[1])


def _per_outer(h, key):
    """Differences of a history column between consecutive tests of one outer iteration."""
    same = np.diff(h["outer_iter"]) == 0
    return np.diff(h[key])[same]


def test_paper_models_carry_section_5_values():
    np_pb, fair_pb = _np_problem(), _fair_problem()
    assert np_pb.paper_settings["smoothness"] == (0.5, 0.5)  # (beta + 1) / 2
    assert np_pb.paper_settings["sigma"] == 2.0
    assert fair_pb.paper_settings["smoothness"] == (10.0, 1.0)  # 10 + beta
    assert fair_pb.paper_settings["sigma"] == 2.5
    # Other models are not the paper's: nothing to take from it.
    X, y = _unit_rows()
    other = fairness_problem(X, y, X, (X[:, 1] > 0).astype(int), bound=0.05,
                             constraint="demographic_parity")  # fmt: skip
    assert other.paper_settings is None


@pytest.mark.parametrize("make", [_np_problem, _fair_problem])
def test_paper_preset_alone_uses_the_problems_values(make):
    pb = make()
    paper = pb.paper_settings
    r = stoc_ialm(pb, preset="paper", random_state=0, max_passes=20)
    assert r.settings["sigma"] == paper["sigma"]
    assert r.settings["batch_size"] == paper["batch_size"]
    assert r.settings["smoothness"] == paper["smoothness"]
    assert r.settings["smoothness_source"] == "paper"
    # beta_k = sigma^k and the step 1/(L0 + LJ beta_k), as Section 5 sets them.
    h = r.history
    np.testing.assert_allclose(h["beta"], paper["sigma"] ** h["outer_iter"])
    # The default preset uses the problem's own bound; an explicit argument wins.
    d = stoc_ialm(pb, random_state=0, max_passes=20)
    assert d.settings["smoothness"] == tuple(pb.smoothness) != paper["smoothness"]
    assert d.settings["sigma"] == 2.5 and d.settings["batch_size"] == 30
    e = stoc_ialm(pb, preset="paper", sigma=3.0, batch_size=7, random_state=0, max_passes=5)
    assert (e.settings["sigma"], e.settings["batch_size"]) == (3.0, 7)


@pytest.mark.parametrize("make", [_np_problem, _fair_problem])
def test_paper_count_advances_as_the_papers_tables(make):
    pb = make()
    r = stoc_ialm(pb, preset="paper", random_state=0, max_passes=30)
    b, scale = pb.paper_settings["batch_size"], pb.paper_settings["count_scale"]
    # Each test comes 50 iterations after the previous one; the paper counts b samples of D
    # and b of S per iteration (not the second independent batch), not the tests.
    step = scale * 50 * (b / pb.n_objective_samples + b / pb.n_constraint_samples)
    full = _per_outer(r.history, "inner_iter") == 50  # not a last test cut short by the budget
    steps = _per_outer(r.history, "paper_passes")[full]
    assert len(steps) >= 2
    np.testing.assert_allclose(steps, step)
    # The strict count of the same interval: both points of STORM, three batches, the test.
    strict = _per_outer(r.history, "data_passes")[full]
    np.testing.assert_allclose(strict, (50 * 2 * 3 * b + pb.n_samples) / pb.n_samples)
    # At the end: the draws, set by set, the second batch left out, no set-up.
    no, nc = r.n_draws
    assert nc == 2 * no  # independent estimator, no other constraint draws in this preset
    expected = scale * (no / pb.n_objective_samples + (nc / 2) / pb.n_constraint_samples)
    assert r.n_paper_passes == pytest.approx(expected)
    # The strict count keeps the set-up (the bound, taken when first read, with it).
    assert r.n_setup_passes * pb.n_samples == pb.setup_evaluations + pb.smoothness_evaluations


def test_spambase_paper_preset_reaches_the_papers_range():
    d = load_spambase(preprocess=True)
    runs = [
        stoc_ialm(
            neyman_pearson_problem(d.data, d.target, max_fpr=0.2), preset="paper", random_state=s
        )  # fmt: skip
        for s in range(10)
    ]
    assert all(r.converged for r in runs)
    median = np.median([r.n_paper_passes for r in runs])
    assert 11.0 <= median <= 39.2  # the paper's Table 2 range on spambase


def _implied_projection(r):
    """The slack the exact projection would give at the returned point."""
    beta = r.history["beta"][-1]
    c = r.constraint_values
    y = r.multipliers - beta * (c + r.slack)
    return np.maximum(-(c + y / beta), 0.0)


def test_slack_projection_switch():
    assert PRESETS["paper"]["slack_projection"] is False
    assert PRESETS["default"]["slack_projection"] is True
    pb = _fair_problem()
    off = stoc_ialm(pb, preset="paper", random_state=0, max_passes=30)
    on = stoc_ialm(pb, preset="paper", slack_projection=True, random_state=0, max_passes=30)
    # On: the returned slack is the minimiser of the AL given x (closed form).
    np.testing.assert_allclose(on.slack, _implied_projection(on), atol=1e-12)
    # Off: the iterate's own slack, which tracks minibatch estimates of c.
    assert not np.allclose(off.slack, _implied_projection(off), atol=1e-8)


def _inner_loop_tests(h):
    """Tests made every 50 iterations within an outer iteration (not a final test of a run
    stopped by the budget mid-interval). An outer iteration starts at the last test of the
    previous one."""
    inner, outer = h["inner_iter"], h["outer_iter"]
    starts = {outer[0]: 0}
    for i in range(1, len(outer)):
        if outer[i] != outer[i - 1]:
            starts[outer[i]] = inner[i - 1]
    return sum(
        int((it - starts[k]) % 50 == 0 and it > starts[k])
        for it, k in zip(inner, outer, strict=True)
    )


def test_postprocess_switch():
    assert PRESETS["paper"]["postprocess"] is None
    pb = _np_problem()
    m1 = 200
    base = stoc_ialm(pb, preset="paper", random_state=0, max_passes=20)
    post = stoc_ialm(pb, preset="paper", postprocess=m1, random_state=0, max_passes=20)
    assert not np.allclose(base.x, post.x)
    b = pb.paper_settings["batch_size"]
    for r, extra in ((base, 0), (post, m1)):
        n_tests = _inner_loop_tests(r.history)
        # Objective draws: the momentum's initial batch at every outer iteration, b per
        # inner iteration, and m1 per test when post-processing.
        assert r.n_draws[0] == b * (r.n_iter + r.n_outer_iter) + extra * n_tests
    with pytest.raises(ValueError, match="postprocess"):
        stoc_ialm(pb, preset="paper", postprocess=0, random_state=0)


def test_momentum_switch():
    assert PRESETS["paper"]["momentum"] == "restart"
    pb = _np_problem()
    b = pb.paper_settings["batch_size"]
    for momentum in ("restart", "warm"):
        r = stoc_ialm(pb, preset="paper", momentum=momentum, random_state=0, max_passes=40)
        assert r.n_outer_iter >= 2
        starts = r.n_outer_iter if momentum == "restart" else 1
        # Restart draws a fresh initial batch of objective rows at each outer iteration; warm
        # keeps the estimate (its correction needs constraint rows only).
        assert r.n_draws[0] == b * (r.n_iter + starts)


def test_estimator_switch():
    assert PRESETS["paper"]["estimator"] == "independent"
    pb = _np_problem()
    ind = stoc_ialm(pb, preset="paper", random_state=0, max_passes=20)
    ust = stoc_ialm(pb, preset="paper", estimator="ustat", random_state=0, max_passes=20)
    # Two constraint batches per draw (Lemma 4) against one.
    assert ind.n_draws[1] == 2 * ind.n_draws[0]
    assert ust.n_draws[1] == ust.n_draws[0]


def test_stop_test_schedule_switch():
    assert PRESETS["paper"]["eval_every"] == 50
    assert PRESETS["default"]["eval_every"] == "auto"
    # Many rows: a test costs far more than 50 iterations, so "auto" spaces them out.
    X, y = _unit_rows(n=20000, d=4)
    pb = neyman_pearson_problem(X, y, max_fpr=0.2)
    paper = stoc_ialm(pb, preset="paper", random_state=0, max_passes=15)
    auto = stoc_ialm(pb, preset="paper", eval_every="auto", random_state=0, max_passes=15)
    assert set(_per_outer(paper.history, "inner_iter")) == {50}
    assert max(_per_outer(auto.history, "inner_iter")) > 50


def test_ustat_refuses_batches_of_one():
    pb = _np_problem()
    consts = dict(sigma_g=0.1, sigma_c=0.1, gap=1.0)
    with pytest.raises(ValueError, match="estimator='ustat'"):
        stoc_ialm(pb, preset="theory", estimator="ustat", theory_constants=consts)


def test_m0_switch():
    assert PRESETS["paper"]["m0"] is None and PRESETS["default"]["m0"] == 300
    pb = _np_problem()
    b = pb.paper_settings["batch_size"]
    for m0, first in ((None, b), (300, 300)):
        r = stoc_ialm(pb, preset="paper", m0=m0, random_state=0, max_passes=20)
        assert r.settings["m0"] == first
        # Each (re)start of the momentum draws m0 objective rows, each iteration b.
        assert r.n_draws[0] == b * r.n_iter + first * r.n_outer_iter


def test_batch_growth_switch():
    assert PRESETS["paper"]["batch_growth"] == 1.0
    pb = _np_problem()
    # A tolerance below the estimator's noise floor: the residual stalls at every test.
    kw = dict(tol=1e-5, growth_patience=1, noise_ratio=1e-6, random_state=0, max_passes=30)
    fixed = stoc_ialm(pb, preset="paper", **kw)
    grown = stoc_ialm(pb, preset="paper", batch_growth=2.0, **kw)
    b = pb.paper_settings["batch_size"]
    assert set(fixed.history["batch_size"]) == {b}
    assert grown.history["batch_size"].max() >= 2 * b


@pytest.mark.parametrize(
    "key, value", [("slack_step", "exact"), ("delta", 0.02), ("step_scale", 0.5)]
)
def test_step_switches_change_the_run(key, value):
    if key != "step_scale":
        assert PRESETS["paper"][key] != PRESETS["default"][key] == value
    # Neyman-Pearson: the paper's step 2 / (beta + 1) exceeds the slack's exact step 1 / beta
    # for beta > 1 (with the fairness constant 1 / (10 + beta) it never does); a loose bound
    # keeps the slack positive, where its step matters.
    pb = _np_problem(max_fpr=0.6)
    kw = dict(preset="paper", beta0=2.0, random_state=0, max_passes=20)
    base = stoc_ialm(pb, **kw)
    other = stoc_ialm(pb, **kw, **{key: value})
    # Same draws (same seed), different updates.
    assert not np.allclose(base.x, other.x)
    assert base.settings[key] == PRESETS["paper"][key] and other.settings[key] == value


def test_estimator_draw_refuses_one_sample_pairs():
    from sklearn_ialm.solver.pstorm import AugmentedLagrangianEstimator, Counter

    est = AugmentedLagrangianEstimator(_np_problem(), "ustat")
    with pytest.raises(ValueError, match="batch of 1"):
        est.draw(np.random.default_rng(0), 1, Counter())
    ind = AugmentedLagrangianEstimator(_np_problem(), "independent")
    bo, bc, bc2 = ind.draw(np.random.default_rng(0), 1, Counter())
    assert len(bo) == len(bc) == len(bc2) == 1


def test_paper_constants_switch():
    assert PRESETS["paper"]["paper_constants"] and not PRESETS["default"]["paper_constants"]
    pb = _np_problem()
    own = stoc_ialm(pb, preset="paper", paper_constants=False, random_state=0, max_passes=5)
    assert own.settings["smoothness"] == tuple(pb.smoothness)
    assert own.settings["smoothness_source"] == "problem"
    assert (own.settings["sigma"], own.settings["batch_size"]) == (2.5, 30)
    # The problem's set-up is what sets L here, so the paper's count includes it.
    assert own.n_paper_passes >= own.n_setup_passes > 0
    theirs = stoc_ialm(pb, paper_constants=True, random_state=0, max_passes=5)
    assert theirs.settings["smoothness"] == pb.paper_settings["smoothness"]
