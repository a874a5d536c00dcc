"""Where the time of one anchor fairness fit goes: cProfile, by own time and cumulative.

One fit with the defaults (the compiled PStorm block runs the iterations, ridge included).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import re
import warnings

from threadpoolctl import threadpool_limits

from benchmarks.speed.anchor import _warm_up
from benchmarks.speed.common import BOUND, ROOT, make_anchor
from sklearn_ialm import FairLogisticClassifier


def _profile(est, X, y, A, top):
    pr = cProfile.Profile()
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        pr.enable()
        est.fit(X, y, sensitive_features=A)
        pr.disable()
    out = {}
    for order in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats(order).print_stats(top)
        text = s.getvalue().replace(str(ROOT) + "/", "")
        text = re.sub(r"/\S*/(site|dist)-packages/", "", text)
        head = text.strip().splitlines()[0].strip()
        text = text[text.find("ncalls") :] if "ncalls" in text else text
        out[order] = head + "\n\n" + text.rstrip()
    # Own time of the parts the note names: the full-data passes (stop tests, final scores),
    # the compiled PStorm blocks, the set-up's Gram sweep; and the inner solver's cumulative.
    stats = pstats.Stats(pr).stats
    out["total_s"] = sum(v[2] for v in stats.values())
    parts = {}
    for (_, _, func), (_, nc, tt, ct, _) in stats.items():
        if func in ("_full_pass", "_block", "_gram_sums"):
            t, n = parts.get(func, (0.0, 0))
            parts[func] = (t + tt, n + nc)
        elif func == "pstorm":
            t, n = parts.get(func, (0.0, 0))
            parts[func] = (t + ct, n + nc)
    out["parts"] = parts
    out["n_data_passes"] = float(est.n_data_passes_)
    out["solves"] = int(est.n_rounds_)
    out["n_iter"] = int(est.n_iter_)
    return out


def run(log=print, top=20):
    """The profile's tables as text, with the fit's passes, solves and iterations."""
    X, y, A = make_anchor(0)[:3]
    _warm_up(X, y, A)
    est = FairLogisticClassifier(constraint="demographic_parity", bound=BOUND, random_state=0)
    rows = {"defaults": _profile(est, X, y, A, top)}
    log(f"  profiled fit: {est.n_data_passes_:.1f} passes")
    return rows
