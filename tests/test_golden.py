"""The solver's results against the record of ``tests/_golden.py``.

A restructure moves no value; a change meant to move them records them again
(``python -m tests._golden``) in the same commit and says why. On the machine the record was
made on (same CPU, BLAS kernels and numba target, see ``_golden.machine_fingerprint``) the
fits must agree bit for bit; on any other machine with the same package versions, within
``_golden.RTOL`` (another CPU moves the last bits, never a digit). On another numeric stack
(e.g. CI's run on the declared minimum versions) the test is skipped.
"""

from __future__ import annotations

import json

import _golden
import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def record():
    if not _golden.PATH.exists():
        pytest.skip("no record")
    data = np.load(_golden.PATH)
    if json.loads(str(data["__versions__"])) != _golden.stack_versions():
        pytest.skip("the record was made on another numeric stack")
    return data


@pytest.fixture(scope="module")
def exact(record):
    """Bit for bit only on the recording machine."""
    return json.loads(str(record["__machine__"])) == _golden.machine_fingerprint()


@pytest.fixture(scope="module")
def solver_cases(record):
    return _golden._paper_problem_cases()


def _check(got, record, name, exact):
    rtol = _golden.FOREIGN_RTOL.get(name, _golden.RTOL)
    for key, value in got.items():
        assert _golden.agrees(value, record[f"{name}::{key}"], exact=exact, rtol=rtol), (
            name,
            key,
            exact,
        )


@pytest.mark.parametrize("name", [n for n in _golden.case_names() if not n.startswith("solver")])
def test_fit_matches_record(record, exact, name):
    factory, layout = _golden._cases()[name]
    _check(_golden._fit_case(name, factory, layout), record, name, exact)


@pytest.mark.parametrize("name", [n for n in _golden.case_names() if n.startswith("solver")])
def test_solver_matches_record(record, exact, solver_cases, name):
    _check(solver_cases[name], record, name, exact)


def _float_arrays(record):
    arrays = [record[k] for k in record.files if not k.startswith("__")]
    return [a for a in arrays if a.dtype.kind == "f" and a.size > 1]


def test_comparison_catches_a_change_of_1e_6_and_not_the_last_bits(record):
    """The record's comparison on a foreign machine: a few units in the last place, what
    another CPU moves, pass; a change of 1e-6, the smallest a change of the code is asked
    to show, fails. On the recording machine the last bits fail too."""
    arrays = _float_arrays(record)
    assert arrays
    for a in arrays:
        ulps = a + 4 * np.spacing(a)
        assert _golden.agrees(ulps, a, exact=False)
        assert not _golden.agrees(ulps, a, exact=True)
        changed = a.copy()
        changed.flat[np.argmax(np.abs(a))] += 1e-6
        assert not _golden.agrees(changed, a, exact=False)
        assert not _golden.agrees(changed, a, exact=True)


def test_fingerprint_names_the_cpu_and_the_blas():
    fp = _golden.machine_fingerprint()
    assert fp["machine"] and fp["cpu_flags"]
    assert fp["blas"], "threadpoolctl found no BLAS: the fingerprint would not see a kernel"
