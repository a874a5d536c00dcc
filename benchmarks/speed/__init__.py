"""Speed as users see it: our estimators against their peers, the pass counts, the first fit,
the scaling series and a profile (issue 13). Run ``python -m benchmarks.speed``; see
``__main__`` for the parts.

``make_anchor`` and ``load_a9a_task`` are re-exported for the other benchmarks.
"""

from benchmarks.speed.common import load_a9a_task, make_anchor

__all__ = ["load_a9a_task", "make_anchor"]
