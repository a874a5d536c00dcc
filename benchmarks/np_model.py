"""Which Neyman-Pearson training model ranks best at the operating point (issue 11, item 3).

Usage (from the repository root; one core). Runs add up in a cache of one JSON file per task,
repetition and ``--tag``; the page is written from the whole cache. The committed page::

    M=("paper" "paper, warm" "balanced+L2" "balanced+L2, warm" "logistic+L2, warm, tau=0.3")
    export OMP_NUM_THREADS=1
    python -m benchmarks.np_model --tasks spambase breast_cancer \
        --methods logistic "logistic+L2" "logistic+L2, warm" "logistic+L2, warm, tau=0.1" "${M[@]}"
    python -m benchmarks.np_model --tasks a9a --methods "logistic+L2" "logistic+L2, warm" "${M[@]}"
    python -m benchmarks.np_model --tasks anchor --methods "${M[@]}"
    python -m benchmarks.np_model --tasks spambase --tag _tol \
        --methods "paper, tol=1e-3" "logistic+L2, tol=1e-3"
    python -m benchmarks.np_model --tag _wlr --methods "weighted LR, FPR-matched"
    python -m benchmarks.np_model --tag _matched --methods "matched+L2, warm, tau=0.3"

(8 stratified 70/30 splits of spambase, breast cancer and a9a, 10 anchor seeds by default;
``python -m benchmarks.np_model`` alone runs every model everywhere, about an hour on a quiet
core; ``--report-only`` rewrites the page from the cache.)

Every fitted score is judged after the same threshold rule, so only its *ranking* near the
operating point matters:

``shift``
    Train on all training rows; the threshold is the score of a training negative such that
    the hard training FPR is the largest one ``<= max_fpr`` (what every NP fit will end with).
``umbrella``
    Hold out half of the training negatives (a draw from the repetition's seed, the same for
    every model), train on the rest and all positives, and threshold by the NP umbrella rule
    (``delta = 0.05``) on the held-out scores; ``LogisticRegression`` this way is nproc's recipe.

The reference is ``LogisticRegression(C=1)`` (lbfgs) on the same rows. Each candidate is a
:class:`~sklearn_ialm.problems.LinearProblem` solved by ``stoc_ialm`` with the estimator's
settings (intercept, ``feature_scale="auto"``, default preset, ``tol=1e-2``,
``max_passes=100``, ``random_state`` = the repetition):

``paper``
    sigmoid loss on the positives, ``mean_neg sigmoid(s) <= max_fpr`` (the current estimator).
``paper, warm``
    the same from the unconstrained ``LogisticRegression`` fit.
``logistic``
    logistic loss on the positives, the same constraint.
``logistic+L2``
    plus ``||coef||^2 / (2 C n)`` with ``C = 1`` and ``n`` the training rows, as
    ``LogisticRegression``'s penalty per row (a prox step, the intercept left free).
``logistic+L2, warm``
    the same from the ``LogisticRegression`` fit.
``balanced+L2`` / ``balanced+L2, warm``
    logistic loss on all rows, each class's mean weighted equally, plus the penalty and the
    constraint; from zero / from the ``LogisticRegression`` fit.
``logistic+L2, warm, tau=T``
    ``logistic+L2, warm`` with the constraint on the sharper ``sigmoid(s / T)``.
``paper, tol=1e-3`` / ``logistic+L2, tol=1e-3``
    ``paper`` / ``logistic+L2`` solved further (``tol=1e-3``, 300 passes): is a cold start
    only under-trained?
``weighted LR, FPR-matched``
    not a constrained fit: ``LogisticRegression(C=1)`` with row weights, the negatives' weight
    found by bisection so that the model's own hard training FPR at 0 is the largest
    ``<= max_fpr`` (14 fits). It is the Lagrangian of ``min mean_pos logistic(s) + penalty
    s.t. mean_neg logistic(-s) <= r`` at the multiplier whose ``r`` puts the boundary at the
    target rate.
``matched+L2, warm, tau=0.3``
    the constrained fit ``logistic+L2, warm, tau=0.3`` with that model's row weights on the
    logistic loss of all rows, started from that model.

Per task, ``max_fpr`` and threshold rule the table gives mean test FPR and FNR, the paired
FNR difference to ``LogisticRegression`` (mean and its standard error, and wins/ties/losses:
lower FNR is a win), the hard training FPR of the raw score at 0 ("budget used", before the
shift), the share of runs at ``tol`` and the mean fit time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from benchmarks.np_guarantee import make_np_data
from sklearn_ialm.datasets import load_a9a, load_spambase
from sklearn_ialm.estimators._umbrella import umbrella_threshold
from sklearn_ialm.problems import LinearProblem
from sklearn_ialm.problems.losses import Logistic, SigmoidLoss
from sklearn_ialm.solver import Prox, stoc_ialm

RESULTS = Path(__file__).parent / "results"
ALPHAS = (0.05, 0.1)
DELTA = 0.05
C = 1.0
TASKS = ("spambase", "breast_cancer", "a9a", "anchor")
SOLVER = dict(tol=1e-2, max_passes=100.0)


# -- pieces the package does not have ---------------------------------------------------------
class L2(Prox):
    """``h(x) = strength / 2 * sum_i mask_i x_i^2``; its prox is a shrinkage."""

    def __init__(self, strength: float, mask: np.ndarray):
        self.strength = float(strength)
        self.mask = np.asarray(mask, dtype=float)

    def value(self, x):
        return 0.5 * self.strength * float(np.sum(self.mask * x * x))

    def prox(self, x, eta):
        return x / (1.0 + eta * self.strength * self.mask)

    def dist_subdiff(self, x, g):
        return np.abs(g + self.strength * self.mask * x)


class ScaledLogistic:
    """``log(1 + exp(-tau m))``: the logistic loss of the score ``tau * s``.

    With it the problem's own score is ``s / tau`` and its constraint ``sigmoid(s / tau)``,
    a sharper surrogate of the hard rate, while the objective stays the logistic loss of ``s``.
    """

    def __init__(self, tau: float):
        self.tau = float(tau)
        self.curvature = 0.25 * self.tau**2

    def value(self, m):
        return np.logaddexp(0.0, -self.tau * m)

    def derivative(self, m):
        return -self.tau * expit(-self.tau * m)


# -- data -------------------------------------------------------------------------------------
def task_data(task: str, rep: int):
    """``X_tr, y_tr, X_te, y_te`` of repetition ``rep`` (labels 0/1, 1 positive)."""
    if task == "anchor":
        return make_np_data(rep)
    if task == "spambase":  # the paper's preprocessing: standardise, rows to unit norm
        X, y = load_spambase(return_X_y=True, preprocess=True)
    elif task == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif task == "a9a":  # binary features, used as given (sparse)
        X, y = load_a9a(return_X_y=True)
    else:
        raise SystemExit(f"unknown task {task!r}")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=rep)
    if task == "breast_cancer":
        scaler = StandardScaler().fit(X_tr)
        X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
    return X_tr, y_tr, X_te, y_te


# -- models -----------------------------------------------------------------------------------
def fit_logistic(X, y, sample_weight=None):
    """``LogisticRegression(C=1)``: (coef, intercept) and fit time."""
    t0 = time.perf_counter()
    lr = LogisticRegression(C=C, max_iter=1000).fit(X, y, sample_weight=sample_weight)
    return lr.coef_[0].copy(), float(lr.intercept_[0]), time.perf_counter() - t0


def fit_weighted_logistic(X, y, alpha):
    """``LogisticRegression`` with the negatives' weight set so that its own hard training FPR
    at 0 is the largest ``<= alpha`` (bisection on the log of the weight): the cost-sensitive
    model an exact multiplier of a logistic FPR surrogate would give. Returns what
    :func:`fit_logistic` does (the time counts every fit of the search) and the row weights.
    """
    t0 = time.perf_counter()
    neg = y == 0
    lo, hi = -3.0, 6.0  # log10 of the negatives' weight relative to the positives'
    best = None
    for _ in range(14):  # 9 decades / 2**14: the weight to 0.13 %
        mid = 0.5 * (lo + hi)
        w = np.where(neg, 10.0**mid, 1.0)
        w *= len(w) / w.sum()  # keep the penalty's weight relative to the loss
        coef, intercept, _ = fit_logistic(X, y, sample_weight=w)
        fpr = np.mean(scores(X[neg], coef, intercept) > 0)
        if fpr <= alpha:
            best, hi = (coef, intercept, w), mid
        else:
            lo = mid
    if best is None:
        best = (coef, intercept, w)
    return best[0], best[1], time.perf_counter() - t0, best[2]


def build_problem(X, y, alpha, *, loss, balanced=False, l2=False, tau=1.0, weights=None):
    """The NP problem of one candidate (rows of ``X`` with ``y`` in {0, 1}).

    ``balanced``: the loss on every row, each class's mean weighted equally, or with the row
    ``weights`` when given; otherwise the loss on the positives only.
    """
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if balanced:
        margins = np.where(y == 1, 1.0, -1.0)
        if weights is None:
            weights = np.where(y == 1, 0.5 / len(pos), 0.5 / len(neg))
        rows_obj = None
    else:
        margins, weights, rows_obj = np.ones(len(pos)), None, pos
    problem = LinearProblem(
        X,
        margins,
        loss,
        X,
        np.ones((len(neg), 1)),
        np.array([-alpha]),
        objective_weights=weights,
        inequality=True,
        fit_intercept=True,
        feature_scale="auto",
        rows_objective=rows_obj,
        rows_constraint=neg,
    )
    if l2:
        # ||coef||^2 / (2 C n) on the real score's coef; the solver's x is coef * scale / tau.
        n = X.shape[0]
        strength = (tau / problem.feature_scale) ** 2 / (C * n)
        mask = np.r_[np.ones(problem.n_features), 0.0]
        problem.h = L2(strength, mask)
    return problem


CANDIDATES = {
    # name: (loss factory, balanced, l2, warm, tau[, solver settings other than SOLVER])
    "paper": (SigmoidLoss, False, False, False, 1.0),
    "paper, warm": (SigmoidLoss, False, False, True, 1.0),
    "logistic": (Logistic, False, False, False, 1.0),
    "logistic+L2": (Logistic, False, True, False, 1.0),
    "logistic+L2, warm": (Logistic, False, True, True, 1.0),
    "balanced+L2": (Logistic, True, True, False, 1.0),
    "balanced+L2, warm": (Logistic, True, True, True, 1.0),
    "logistic+L2, warm, tau=0.3": (Logistic, False, True, True, 0.3),
    "logistic+L2, warm, tau=0.1": (Logistic, False, True, True, 0.1),
    # The FPR-matched weighted logistic model (below) as objective weights and start.
    "matched+L2, warm, tau=0.3": (Logistic, "matched", True, True, 0.3),
    # Is a cold start only under-trained at tol=1e-2? The same problems solved further.
    "paper, tol=1e-3": (SigmoidLoss, False, False, False, 1.0, dict(tol=1e-3, max_passes=300)),
    "logistic+L2, tol=1e-3": (Logistic, False, True, False, 1.0, dict(tol=1e-3, max_passes=300)),
}


WEIGHTED = "weighted LR, FPR-matched"


def fit_candidate(name, X, y, alpha, seed, lr_fit):
    """Fit one candidate: (coef, intercept) of the real score, converged, fit time.

    The time includes the warm start's ``LogisticRegression`` fit when there is one.
    """
    loss_cls, balanced, l2, warm, tau, *settings = CANDIDATES[name]
    solver = {**SOLVER, **(settings[0] if settings else {})}
    loss = ScaledLogistic(tau) if tau != 1.0 else loss_cls()
    t0 = time.perf_counter()
    weights = None
    if balanced == "matched":
        *lr_fit, weights = fit_weighted_logistic(X, y, alpha)
    problem = build_problem(
        X, y, alpha, loss=loss, balanced=bool(balanced), l2=l2, tau=tau, weights=weights
    )
    x0 = None
    extra = 0.0
    if warm:
        coef, intercept, extra = lr_fit
        x0 = np.r_[coef * problem.feature_scale, intercept] / tau
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = stoc_ialm(problem, x0=x0, random_state=seed, **solver)
    elapsed = time.perf_counter() - t0 + extra
    coef, intercept = problem.coef(res.x)
    return coef * tau, intercept * tau, bool(res.converged), elapsed


# -- thresholds and rates -----------------------------------------------------------------------
def shift_threshold(neg_scores, alpha):
    """A threshold with the largest hard FPR ``<= alpha`` on these negatives (``score > t``)."""
    s = np.sort(neg_scores)
    k = int(np.floor(alpha * len(s) + 1e-9))  # negatives allowed above the threshold
    return s[len(s) - k - 1]


def scores(X, coef, intercept):
    return np.asarray(X @ coef).ravel() + intercept


def rates(y, positive):
    neg = y == 0
    return float(np.mean(positive[neg])), float(np.mean(~positive[~neg]))


def run_rep(task, rep, names):
    """All candidates and both threshold rules on one repetition: a list of records."""
    X_tr, y_tr, X_te, y_te = task_data(task, rep)
    neg = np.flatnonzero(y_tr == 0)
    held = np.sort(np.random.default_rng(rep).choice(neg, size=-(-len(neg) // 2), replace=False))
    train_u = np.setdiff1d(np.arange(len(y_tr)), held)
    records = []
    for rule in ("shift", "umbrella"):
        rows = np.arange(len(y_tr)) if rule == "shift" else train_u
        Xf, yf = X_tr[rows], y_tr[rows]
        lr_fit = fit_logistic(Xf, yf)
        for alpha in ALPHAS:
            for name in ("LogisticRegression", *names):
                if name == "LogisticRegression":
                    coef, intercept, elapsed = lr_fit
                    converged = True
                elif name == WEIGHTED:
                    coef, intercept, elapsed, _ = fit_weighted_logistic(Xf, yf, alpha)
                    converged = True
                else:
                    coef, intercept, converged, elapsed = fit_candidate(
                        name, Xf, yf, alpha, rep, lr_fit
                    )
                s_fit = scores(Xf, coef, intercept)
                budget = float(np.mean(s_fit[yf == 0] > 0))
                if rule == "shift":
                    t = shift_threshold(s_fit[yf == 0], alpha)
                else:
                    t = umbrella_threshold(scores(X_tr[held], coef, intercept), alpha, DELTA)
                    t = t.threshold
                fpr, fnr = rates(y_te, scores(X_te, coef, intercept) > t)
                records.append(
                    dict(
                        task=task, rep=rep, rule=rule, alpha=alpha, method=name,
                        test_fpr=fpr, test_fnr=fnr, train_fpr0=budget,
                        converged=converged, time=elapsed,
                    )
                )  # fmt: skip
                print(
                    f"{task} rep={rep} {rule} a={alpha} {name:28s} fpr={fpr:.3f} "
                    f"fnr={fnr:.3f} fpr0={budget:.3f} conv={converged} t={elapsed:.2f}s",
                    flush=True,
                )
    return records


# -- report -------------------------------------------------------------------------------------
def table(records):
    lines = []
    keys = sorted({(r["task"], r["alpha"], r["rule"]) for r in records}, key=str)
    for task, alpha, rule in keys:
        sub = [r for r in records if (r["task"], r["alpha"], r["rule"]) == (task, alpha, rule)]
        reps = sorted({r["rep"] for r in sub})
        ref = {r["rep"]: r["test_fnr"] for r in sub if r["method"] == "LogisticRegression"}
        lines += [
            f"\n### {task}, max_fpr={alpha}, {rule} ({len(reps)} repetitions)\n",
            "| model | test FPR | test FNR | FNR - LR (se) | W/T/L vs LR | train FPR at 0 "
            "| at tol | fit s |",
            "|---|---|---|---|---|---|---|---|",
        ]
        methods = list(dict.fromkeys(r["method"] for r in sub))
        for m in methods:
            rs = sorted((r for r in sub if r["method"] == m), key=lambda r: r["rep"])
            fnr = np.array([r["test_fnr"] for r in rs])
            d = fnr - np.array([ref[r["rep"]] for r in rs])
            se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
            w, t, lo = int(np.sum(d < 0)), int(np.sum(d == 0)), int(np.sum(d > 0))
            lines.append(
                f"| {m} | {np.mean([r['test_fpr'] for r in rs]):.4f} | {fnr.mean():.4f} | "
                f"{d.mean():+.4f} ({se:.4f}) | {w}/{t}/{lo} | "
                f"{np.mean([r['train_fpr0'] for r in rs]):.4f} | "
                f"{np.mean([r['converged'] for r in rs]):.2f} | "
                f"{np.mean([r['time'] for r in rs]):.2f} |"
            )
    return "\n".join(lines)


READING = """
## Reading of the committed run

- The paper's model (sigmoid loss, cold start) ranks worse than `LogisticRegression` on the
  real data: after the same threshold its test FNR is higher in 13 of 16 blocks by more than
  two standard errors (spambase +0.018 to +0.029, a9a +0.046 to +0.053, breast cancer up to
  +0.083). It spends 0.066 of a 0.1 budget on the spambase training rows. Solving it further
  (`tol=1e-3`, 300 passes) closes only part of the gap on spambase; a warm start from the
  logistic fit closes more but still loses on a9a and spambase at 0.05.
- A logistic loss on the positives under the soft constraint is no better from zero; with the
  warm start, L2 and the sharper constraint `sigmoid(s/0.3)` it ties `LogisticRegression`
  (mean -0.0006, worst block +0.0019) and spends its budget (training FPR at 0 near max_fpr):
  it stays next to the logistic ranking and shifts the intercept.
- What wins is where the logistic loss puts its boundary: weighting the negatives so that the
  model's own training FPR at 0 is max_fpr (`weighted LR, FPR-matched`) gains 0.9 to 5.6
  points of FNR on the anchor task (10/0/0 in three of four blocks), where the plain logistic
  fit has its boundary at training FPR 0.18 to 0.29, far from the target, and is within 0.3
  points of `LogisticRegression` on the real data, where that boundary is already near the
  target (spambase 0.044, a9a 0.073, breast cancer 0.023). Refining it by Stoc-iALM under the
  sharp constraint (`matched+L2, warm, tau=0.3`) ranks the same (no block differs by more
  than 0.0012 from it) and is never worse than `LogisticRegression` by more than 0.0018.
"""


def summary(records):
    """One row per model: its paired FNR difference to LR in every (task, max_fpr, rule) block."""
    by_block = {}
    for r in records:
        by_block.setdefault((r["task"], r["alpha"], r["rule"]), []).append(r)
    rows = {}
    for sub in by_block.values():
        ref = {r["rep"]: r["test_fnr"] for r in sub if r["method"] == "LogisticRegression"}
        for m in dict.fromkeys(r["method"] for r in sub):
            d = np.array([r["test_fnr"] - ref[r["rep"]] for r in sub if r["method"] == m])
            se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
            rows.setdefault(m, []).append((d.mean(), se))
    lines = [
        "| model | blocks | mean FNR - LR | worst block | blocks worse by > 2 se | "
        "blocks better by > 2 se |",
        "|---|---|---|---|---|---|",
    ]
    for m, v in rows.items():
        mean = np.array([x for x, _ in v])
        se = np.array([x for _, x in v])
        lines.append(
            f"| {m} | {len(v)} | {mean.mean():+.4f} | {mean.max():+.4f} | "
            f"{int(np.sum(mean > 2 * se + 1e-12))} | {int(np.sum(mean < -2 * se - 1e-12))} |"
        )
    return "\n".join(lines)


def write_report(cache: Path):
    records = []
    seen = set()
    for f in sorted(cache.glob("*.json")):
        for r in json.loads(f.read_text()):
            key = (r["task"], r["rep"], r["rule"], r["alpha"], r["method"])
            if key not in seen:  # LogisticRegression is in every run's records
                seen.add(key)
                records.append(r)
    head = (
        "# Neyman-Pearson training models, judged after the threshold\n\n"
        "Made by `OMP_NUM_THREADS=1 python -m benchmarks.np_model` (see its docstring for the "
        "models and the two threshold rules). FNR - LR: paired mean difference of the test "
        "false-negative rate to `LogisticRegression(C=1)` thresholded the same way (negative "
        "is better); W/T/L: repetitions where the model's test FNR is lower / equal / higher. "
        "'train FPR at 0': hard training FPR of the raw score at 0, before any threshold "
        "(the budget the model itself spends). Fit times: one core of a machine shared with "
        "other jobs (load 4-12 on 2 cores), so compare them within a block only.\n"
    )
    RESULTS.mkdir(exist_ok=True)
    body = (
        READING
        + "\n## Summary over the blocks (task x max_fpr x rule)\n\n"
        + summary(records)
        + "\n\n## Per block\n"
        + table(records)
    )
    (RESULTS / "np_model.md").write_text(head + body + "\n")
    print(body)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--reps", type=int, default=None, help="8 splits, 10 anchor seeds")
    parser.add_argument("--first-rep", type=int, default=0)
    parser.add_argument("--methods", nargs="+", default=[*CANDIDATES, WEIGHTED])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/np_model_cache"))
    parser.add_argument(
        "--tag", default="", help="suffix of the cache files: runs of other methods add up"
    )
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        for task in args.tasks:
            n_reps = args.reps or (10 if task == "anchor" else 8)
            for rep in range(args.first_rep, n_reps):
                out = args.cache / f"{task}_{rep}{args.tag}.json"
                out.write_text(json.dumps(run_rep(task, rep, args.methods)))
    write_report(args.cache)


if __name__ == "__main__":
    sys.exit(main())
