"""``python -m sklearn_ialm`` reports what a user meets, both ways (issue 23)."""

import re
from pathlib import Path

import pytest

from sklearn_ialm.__main__ import main


@pytest.mark.filterwarnings("ignore")
def test_main_job_reports_wins_and_losses_at_three_bounds(capsys):
    assert main(["--splits", "2"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\s+(0\.05|0\.1|0\.2)\s+(\d+)/2\s+(\d+)/2\s+(\d+)\s", out, re.M)
    assert [r[0] for r in rows] == ["0.05", "0.1", "0.2"]
    for _, won, lost, tied in rows:
        assert int(won) + int(lost) + int(tied) == 2
    # The user guide's "Speed and scale" page runs the same comparison when it is built.
    page = Path(__file__).parents[1] / "doc" / "user_guide" / "performance.rst"
    assert "neyman_pearson_both_ways(seed=0, splits=10)" in page.read_text()
