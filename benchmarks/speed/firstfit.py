"""The first fit in a fresh process, compile included: a cold and a warm numba cache.

Each measurement is a new ``python -c`` process that imports the package, builds the anchor
data (not timed) and times one ``FairLogisticClassifier(constraint="demographic_parity",
bound=0.02, random_state=0)`` fit (wall seconds, the user's wait; CPU seconds beside), then a
second fit in the same process (the steady state). ``NUMBA_CACHE_DIR`` points to a new empty
directory for the cold run; the warm runs reuse the cache the cold run left. The import time
of ``sklearn_ialm`` is reported separately.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from benchmarks.speed.common import ROOT

_CHILD = """
import json, time
w = time.perf_counter()
import sklearn_ialm
from sklearn_ialm import FairLogisticClassifier
t_import = time.perf_counter() - w
from threadpoolctl import threadpool_limits
from benchmarks.speed.common import make_anchor
X, y, A = make_anchor(0)[:3]
out = dict(import_s=t_import)
with threadpool_limits(1):
    for key in ("first", "second"):
        w, c = time.perf_counter(), time.process_time()
        FairLogisticClassifier(constraint="demographic_parity", bound=0.02, random_state=0).fit(
            X, y, sensitive_features=A)
        out[key + "_wall"], out[key + "_cpu"] = time.perf_counter() - w, time.process_time() - c
print(json.dumps(out))
"""


def run(log=print, warm_runs=2):
    """One cold and ``warm_runs`` warm fresh processes."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, OMP_NUM_THREADS="1")
        for i in range(1 + warm_runs):
            out = subprocess.run(
                [sys.executable, "-c", _CHILD],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            r["cache"] = "cold (empty)" if i == 0 else "warm"
            rows.append(r)
            log(
                f"  first fit, {r['cache']} cache: {r['first_wall']:.2f} s wall "
                f"(second fit {r['second_wall']:.2f} s; import {r['import_s']:.2f} s)"
            )
    return rows
