"""What the benchmarks share: where results go, the paper's data sets as tasks, metrics,
timing, the peers' wrappers and the machine's facts.

Every benchmark writes its results with :func:`write` under :data:`RESULTS`:
``benchmarks/results/`` of this checkout, or the folder that ``BENCHMARKS_RESULTS`` names
(``python -m benchmarks all --quick --out DIR`` sets it, so that a check run leaves the
committed files alone)."""

from __future__ import annotations

import contextlib
import csv
import gc
import io
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_wine, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sklearn_ialm.datasets import fetch_bank_marketing, load_a9a, load_spambase
from sklearn_ialm.estimators._umbrella import umbrella_threshold

ROOT = Path(__file__).resolve().parents[1]
#: The folder every benchmark writes its results files to.
RESULTS = Path(os.environ.get("BENCHMARKS_RESULTS") or ROOT / "benchmarks" / "results")
#: The local copies of the data sets that are not downloaded here (bank).
SHARED = Path(os.environ.get("SKLEARN_IALM_SHARED_DATA") or ROOT.parent / "shared" / "data")
BOUND = 0.02  # demographic-parity bound of every fairness method (the target)
MAX_FPR = 0.2  # NeymanPearsonClassifier's default; nproc's alpha
DELTA = 0.05  # nproc's violation probability


# -- data ---------------------------------------------------------------------------------------
def make_anchor(seed=0, n_train=30_000, n_test=10_000, n_features=100):
    """The anchor task (the recipe of ``shared/anchor_task.py``'s ``make_fair_data``).

    Returns ``X_tr, y_tr, A_tr, X_te, y_te, A_te``; X standardised on the training rows, A
    (0/1, minority A == 1, correlated with y) is also X's last column before standardising.
    """
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    X, y = make_classification(
        n_samples=n,
        n_features=n_features - 1,
        n_informative=20 if n_features == 100 else 10,
        n_redundant=10 if n_features == 100 else 4,
        class_sep=1.0,
        flip_y=0.05,
        weights=[0.5, 0.5],
        random_state=seed,
    )
    logit = -1.3 - 0.6 * (y == 1) + 0.4 * (y == 0) + 0.3 * rng.standard_normal(n)
    A = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    X[:, :3] -= 0.5 * A[:, None]
    X = np.column_stack([X, A.astype(float)])
    X_tr, X_te = X[:n_train], X[n_train:]
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
    return X_tr, y[:n_train], A[:n_train], X_te, y[n_train:], A[n_train:]


def _int32_csr(M):
    """CSR with int32 indices: ``load_a9a`` returns int64 ones, which SGDClassifier rejects."""
    M = M.tocsr()
    return sp.csr_matrix(
        (M.data, M.indices.astype(np.int32), M.indptr.astype(np.int32)), shape=M.shape
    )


def load_a9a_task():
    """a9a as ``X_tr, y_tr, A_tr, X_te, y_te, A_te`` (CSR, int32 indices; A = race Black)."""
    d = load_a9a()
    return (
        _int32_csr(d.data),
        d.target,
        d.groups,
        _int32_csr(d.data_test),
        d.target_test,
        d.groups_test,
    )


def load_spambase_task():
    """spambase (the paper's preprocessing), stratified 70/30 split with ``random_state=0``."""
    X, y = load_spambase(return_X_y=True, preprocess=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    return X_tr, y_tr, X_te, y_te


def load_bank(download_if_missing=False):
    """Bank marketing from the local copy under :data:`SHARED` (``OSError`` without one,
    unless ``download_if_missing``)."""
    return fetch_bank_marketing(data_home=SHARED, download_if_missing=download_if_missing)


def logistic_umbrella(X, y, max_fpr, delta, seed):
    """The logistic umbrella baseline (nproc's recipe): LogisticRegression on the positives
    and half the negatives, thresholded at the umbrella order statistic (Tong, Feng & Li
    2018) of the other half's scores; returns its ``predict``."""
    negatives = np.random.default_rng(seed).permutation(np.flatnonzero(y == 0))
    held, kept = np.array_split(negatives, 2)
    train = np.concatenate([np.flatnonzero(y == 1), kept])
    lr = LogisticRegression(max_iter=1000).fit(X[train], y[train])
    t = umbrella_threshold(lr.decision_function(X[held]), max_fpr, delta).threshold
    return lambda Z: (lr.decision_function(Z) > t).astype(int)


# -- metrics ------------------------------------------------------------------------------------
def fpr_fnr(y, pred):
    """False-positive and false-negative rates of hard predictions."""
    pred = np.asarray(pred)
    return float(np.mean(pred[y == 0] == 1)), float(np.mean(pred[y == 1] == 0))


def dp_gap(y, pred, A):
    """fairlearn's ``demographic_parity_difference`` of hard predictions."""
    from fairlearn.metrics import demographic_parity_difference

    return float(demographic_parity_difference(y, pred, sensitive_features=A))


def dp_gap_per_class(y, pred, sensitive_features):
    """The largest over the classes ``c`` of fairlearn's demographic-parity difference of
    ``pred == c`` (its selection rate per group)."""
    from fairlearn.metrics import demographic_parity_difference

    return max(
        demographic_parity_difference(y == c, pred == c, sensitive_features=sensitive_features)
        for c in np.unique(y)
    )


def md_table(rows, keys=None):
    """The lines of a Markdown pipe table of ``rows`` (dicts): columns ``keys`` or the first
    row's."""
    keys = keys or list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    return lines + ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]


def write_csv(path, rows, fields=None):
    """Rows (dicts) as a CSV file, the columns ``fields`` or the first row's keys."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields or list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


# -- timing -------------------------------------------------------------------------------------
def warm_up(multiclass=False):
    """Load the compiled kernels (dense and CSR; multi-class too) before any timed fit: the
    first fit of a process paid their loading (the anchor task's demographic parity: 53.7 x
    LogisticRegression's CPU, the same fit later in the process about 2 x)."""
    from benchmarks.families import binding_csr, binding_data
    from sklearn_ialm import FairLogisticClassifier, NeymanPearsonClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (2000, 20_000):
            for X, y, g, *_ in (binding_data(1.0, n=n), binding_csr(1.5, n=n, d=200)):
                FairLogisticClassifier(bound=BOUND, max_passes=5).fit(X, y, sensitive_features=g)
                NeymanPearsonClassifier(max_fpr=0.05, max_passes=5).fit(X, y)
        if multiclass:
            X, y = load_wine(return_X_y=True)
            FairLogisticClassifier(bound=0.1, max_passes=3).fit(
                StandardScaler().fit_transform(X), y, sensitive_features=np.arange(len(y)) % 2
            )


def measure(fit, repeats):
    """Run ``fit()`` ``repeats`` times: the last model and the median CPU and wall seconds.

    CPU time (``time.process_time``) is what the ratios use: the machine is shared, and wall
    time counts the waits for a core.
    """
    cpu, wall, model = [], [], None
    for _ in range(repeats):
        model = None
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        model = fit()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return model, float(np.median(cpu)), float(np.median(wall))


class NprocLogistic:
    """nproc's ``npc(method="logistic")`` as installed (``pip install --no-deps nproc``)."""

    def __init__(self, alpha=MAX_FPR, delta=DELTA):
        self.alpha, self.delta = alpha, delta

    def fit(self, X, y):
        from nproc import npc

        self._npc = npc()
        with contextlib.redirect_stdout(io.StringIO()):
            res = self._npc.npc(
                X, y, "logistic", alpha=self.alpha, delta=self.delta, split=1, n_cores=1,
                rand_seed=0,
            )  # fmt: skip
        self.fit_ = res[0][0]
        return self

    def predict(self, X):
        # nproc's own predict sets label[1] (not label[i]) for split=1: use its core function.
        return np.asarray(self._npc.pred_npc_core(self.fit_, X)[0])


def machine_facts():
    """Versions, CPU and load average, for the report's header."""
    import fairlearn
    import numba
    import scipy
    import sklearn

    try:
        from importlib.metadata import version

        nproc_version = version("nproc")
    except Exception:  # noqa: BLE001
        nproc_version = "not installed"
    cpu = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return dict(
        cpus=os.cpu_count(),
        cpu=cpu,
        platform=f"{platform.system()} {platform.release()}",
        python=platform.python_version(),
        numpy=np.__version__,
        scipy=scipy.__version__,
        sklearn=sklearn.__version__,
        fairlearn=fairlearn.__version__,
        numba=numba.__version__,
        nproc=nproc_version,
        load=os.getloadavg()[0],
    )


#: The line above a results file's notes: what was measured once and is not rerun (why a row
#: misses its target, what was tried and not kept), written by hand and kept by every run.
NOTES = "<!-- notes: written by hand, kept by benchmarks.common.write -->"


def write(name: str, text: str) -> Path:
    """Write the results file ``name`` under :data:`RESULTS`, followed by the notes of the file
    it replaces (or, written elsewhere, of the committed one); return its path."""
    path = RESULTS / name
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = [p for p in (path, ROOT / "benchmarks" / "results" / name) if p.is_file()]
    notes = kept[0].read_text().partition(NOTES)[1:] if kept else ()
    path.write_text(text + "".join(notes))
    print(f"wrote {path}", flush=True)
    return path
