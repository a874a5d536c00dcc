"""Where the time of one anchor fairness fit goes: cProfile, by own time and cumulative."""

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


def run(log=print, top=20):
    """The profile's two tables as text, and the fit's solve history in brief."""
    X, y, A = make_anchor(0)[:3]
    _warm_up(X, y, A)
    est = FairLogisticClassifier(constraint="demographic_parity", bound=BOUND, random_state=0)
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
    out["n_data_passes"] = float(est.n_data_passes_)
    out["solves"] = int(est.n_rounds_)
    log(f"  profiled fit: {est.n_data_passes_:.1f} passes")
    return out
