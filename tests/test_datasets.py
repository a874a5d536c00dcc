"""Tests of sklearn_ialm.datasets. They never touch the network.

Fetchers are tested on tiny synthetic files in the original formats; the expected shapes,
class counts and checksums of the real data are swapped for those of the synthetic files by
replacing the module's ``RemoteDataset`` spec. Numbers about the real data come from the
provenance README of the shared data folder.
"""

import csv
import dataclasses
import doctest
import gzip
import hashlib
import io
import os
import urllib.request
import warnings
import zipfile
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from sklearn_ialm import datasets
from sklearn_ialm.datasets import (
    _bank,
    _bundled,
    _nips2003,
    fetch_bank_marketing,
    fetch_gisette,
    fetch_madelon,
    load_a9a,
    load_spambase,
    neyman_pearson_preprocess,
    preprocessing,
)

# sha256 of the original (uncompressed) files, from the shared data README.
README_SHA256 = {
    "a9a.gz": "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906",
    "a9a.t.gz": "1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9",
    "spambase.data.gz": "1855d678d9019f325b7bcd6f6a4c9baedac6f291aa9cad59e5f79a25f1988372",
}
BANK_COLUMNS = (
    "age", "job", "marital", "education", "default", "balance", "housing", "loan", "contact",
    "day", "month", "duration", "campaign", "pdays", "previous", "poutcome", "y",
)  # fmt: skip


def refuse_network(*args, **kwargs):
    # Not an OSError, so no download error handler can swallow it.
    raise AssertionError("a test tried to open a URL")


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", refuse_network)


@pytest.fixture(scope="module")
def a9a():
    return load_a9a()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def replace_spec(monkeypatch, module, name, **changes):
    monkeypatch.setattr(module, name, dataclasses.replace(getattr(module, name), **changes))


# --------------------------------------------------------------------------- bundled data


def test_fetch_a9a_is_the_bundled_copy():
    a, b = datasets.fetch_a9a(), datasets.load_a9a()
    assert (a.data != b.data).nnz == 0 and (a.groups_test == b.groups_test).all()


def test_public_names():
    assert sorted(datasets.__all__) == [
        "fetch_a9a",
        "fetch_bank_marketing",
        "fetch_gisette",
        "fetch_madelon",
        "load_a9a",
        "load_spambase",
        "neyman_pearson_preprocess",
    ]


@pytest.mark.parametrize("name", sorted(README_SHA256))
def test_bundled_file_is_byte_identical_to_original(name):
    with resources.files("sklearn_ialm.datasets").joinpath("data", name).open("rb") as f:
        assert sha256(gzip.decompress(f.read())) == README_SHA256[name]


def test_attribution_lists_the_bundled_checksums():
    text = resources.files("sklearn_ialm.datasets").joinpath("data", "ATTRIBUTION.md")
    text = text.read_text(encoding="utf-8")
    for digest in README_SHA256.values():
        assert digest in text
    assert "CC BY 4.0" in text


def test_load_a9a_shapes_counts_and_groups(a9a):
    assert sp.issparse(a9a.data) and a9a.data.format == "csr"
    assert a9a.data.shape == (32561, 123) and a9a.data.dtype == np.float64
    assert a9a.data_test.shape == (16281, 123)
    np.testing.assert_array_equal(np.bincount(a9a.target), [24720, 7841])
    np.testing.assert_array_equal(np.bincount(a9a.target_test), [12435, 3846])
    assert a9a.sensitive_feature_index == 70
    assert a9a.feature_names[70] == "f71" and len(a9a.feature_names) == 123
    assert int(a9a.groups.sum()) == 3124
    assert int(a9a.groups_test.sum()) == 1561
    for X, groups in [(a9a.data, a9a.groups), (a9a.data_test, a9a.groups_test)]:
        np.testing.assert_array_equal(groups, X[:, 70].toarray().ravel())


def test_load_a9a_return_X_y_is_the_training_set(a9a):
    X, y = load_a9a(return_X_y=True)
    assert abs(X - a9a.data).max() == 0
    np.testing.assert_array_equal(y, a9a.target)


def test_load_spambase():
    bunch = load_spambase()
    assert bunch.data.shape == (4601, 57) and bunch.data.dtype == np.float64
    np.testing.assert_array_equal(np.bincount(bunch.target), [2788, 1813])
    names = bunch.feature_names
    assert len(set(names)) == 57
    assert names[0] == "word_freq_make" and names[-1] == "capital_run_length_total"
    # The last three columns are capital-run statistics: integer longest/total runs, and
    # average <= longest <= total. A misaligned name list would break this.
    average, longest, total = (bunch.data[:, names.index(n)] for n in names[-3:])
    np.testing.assert_array_equal(longest, np.round(longest))
    assert np.all(average <= longest) and np.all(longest <= total)
    X, y = load_spambase(return_X_y=True)
    np.testing.assert_array_equal(X, bunch.data)
    np.testing.assert_array_equal(y, bunch.target)


def test_load_spambase_preprocess_matches_numpy():
    X_raw, _ = load_spambase(return_X_y=True)
    Z = (X_raw - X_raw.mean(axis=0)) / X_raw.std(axis=0)
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    X, y = load_spambase(return_X_y=True, preprocess=True)
    np.testing.assert_allclose(X, Z, atol=1e-12)
    assert int(y.sum()) == 1813


def test_load_spambase_rejects_non_bool_preprocess():
    with pytest.raises(TypeError, match="preprocess"):
        load_spambase(preprocess="yes")


# --------------------------------------------------------------------------- preprocessing


def test_preprocess_matches_numpy_and_has_unit_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(loc=[5.0, -3.0, 0.0, 100.0], scale=[1.0, 10.0, 0.01, 50.0], size=(50, 4))
    X_before = X.copy()
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    # Check the intermediate claim too: the standardised matrix has mean 0 / variance 1.
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z.var(axis=0), 1.0)
    expected = Z / np.linalg.norm(Z, axis=1, keepdims=True)

    out = neyman_pearson_preprocess(X)
    np.testing.assert_allclose(out, expected, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0)
    np.testing.assert_array_equal(X, X_before)  # input untouched


def test_preprocess_constant_column_and_zero_row():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, 3))
    # 0.1 is not representable: the naive std of this column is ~1e-17, not 0.
    with_constant = np.column_stack([X, np.full(7, 0.1)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = neyman_pearson_preprocess(with_constant)
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out[:, 3], 0.0)
    np.testing.assert_allclose(out[:, :3], neyman_pearson_preprocess(X), atol=1e-12)

    # The middle row equals the column means exactly, so it is 0 after centring.
    X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    out = neyman_pearson_preprocess(X)
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_allclose(np.linalg.norm(out[[0, 2]], axis=1), 1.0)

    np.testing.assert_array_equal(neyman_pearson_preprocess(np.ones((4, 2))), 0.0)


def test_preprocess_rejects_sparse_and_nan():
    with pytest.raises(TypeError, match="[Ss]parse"):
        neyman_pearson_preprocess(sp.csr_matrix(np.eye(3)))
    with pytest.raises(ValueError, match="NaN"):
        neyman_pearson_preprocess(np.array([[1.0, np.nan], [2.0, 3.0]]))


@pytest.mark.parametrize("module", [_bundled, preprocessing, _bank, _nips2003])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


# --------------------------------------------------------------------------- bank marketing


def write_fake_bank(path: Path, n_rows: int, seed: int = 0) -> bytes:
    """A small bank-full.csv in the original format: ';'-separated, strings quoted."""
    rng = np.random.default_rng(seed)
    choices = {
        "job": ["admin.", "blue-collar", "retired", "unknown"],
        "marital": ["married", "single", "divorced"],
        "education": ["primary", "tertiary", "unknown"],
        "default": ["no", "yes"],
        "housing": ["yes", "no"],
        "loan": ["no", "yes"],
        "contact": ["cellular", "unknown"],
        "month": ["may", "jun", "nov", "dec"],
        "poutcome": ["unknown", "failure", "success"],
        "y": ["no", "yes"],
    }
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=";", quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    writer.writerow(BANK_COLUMNS)
    for i in range(n_rows):
        row = {column: str(rng.choice(levels)) for column, levels in choices.items()}
        row.update(
            age=int(rng.integers(18, 96)),
            balance=int(rng.integers(-2000, 10000)),
            day=int(rng.integers(1, 32)),
            duration=int(rng.integers(0, 2000)),
            campaign=int(rng.integers(1, 10)),
            pdays=-1 if i % 3 else int(rng.integers(1, 400)),
            previous=int(rng.integers(0, 5)),
        )
        writer.writerow([row[column] for column in BANK_COLUMNS])
    content = buffer.getvalue().encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return content


def expected_bank_matrix(csv_path: Path, feature_names: list[str]) -> np.ndarray:
    """The encoding, recomputed independently with pandas."""
    df = pd.read_csv(csv_path, sep=";")
    columns = []
    for name in feature_names:
        if "=" in name:
            column, level = name.split("=", 1)
            columns.append((df[column].astype(str) == level).to_numpy(dtype=float))
        else:
            values = df[name].to_numpy(dtype=float)
            columns.append((values - values.mean()) / values.std())
    return np.column_stack(columns)


@pytest.fixture
def fake_bank(tmp_path, monkeypatch):
    """Write a fake bank-full.csv (in ``tmp_path/where``) and make the spec accept it."""

    def make(where: str = "", n_rows: int = 41, seed: int = 0) -> Path:
        path = tmp_path / where / "bank-full.csv"
        content = write_fake_bank(path, n_rows, seed)
        y = pd.read_csv(path, sep=";")["y"]
        replace_spec(
            monkeypatch,
            _bank,
            "_BANK",
            files={"bank-full.csv": sha256(content)},
            n_samples=n_rows,
            class_counts=(int((y == "no").sum()), int((y == "yes").sum())),
        )
        return path

    return make


@pytest.mark.parametrize("where", ["", "bank", "bank_marketing"])
def test_bank_local_copy_encoding_and_split(fake_bank, tmp_path, where):
    path = fake_bank(where)
    bank = fetch_bank_marketing(data_home=tmp_path, random_state=3)  # urlopen refuses

    n_half = 41 // 2
    assert bank.data.shape == bank.data_test.shape == (n_half, 81)
    prefixes = [name.split("=")[0] for name in bank.feature_names]
    counts = {p: prefixes.count(p) for p in dict.fromkeys(prefixes)}
    assert counts == {
        "age": 1, "job": 12, "marital": 3, "education": 4, "default": 2, "balance": 1,
        "housing": 2, "loan": 2, "contact": 3, "day": 31, "month": 12, "duration": 1,
        "campaign": 1, "pdays": 1, "previous": 1, "poutcome": 4,
    }  # fmt: skip

    df = pd.read_csv(path, sep=";")
    perm = np.random.default_rng(3).permutation(41)
    train, test = perm[:n_half], perm[n_half : 2 * n_half]
    expected = expected_bank_matrix(path, bank.feature_names)
    np.testing.assert_allclose(bank.data, expected[train], atol=1e-12)
    np.testing.assert_allclose(bank.data_test, expected[test], atol=1e-12)
    y = (df["y"] == "yes").to_numpy(dtype=int)
    old = (df["age"] >= 71).to_numpy(dtype=int)
    np.testing.assert_array_equal(bank.target, y[train])
    np.testing.assert_array_equal(bank.target_test, y[test])
    np.testing.assert_array_equal(bank.groups, old[train])
    np.testing.assert_array_equal(bank.groups_test, old[test])
    assert 0 < old.sum() < 41  # the fake data exercise both groups
    assert f"|S_min| = {old[test].sum()}." in bank.DESCR

    X, y_train = fetch_bank_marketing(data_home=tmp_path, random_state=3, return_X_y=True)
    np.testing.assert_array_equal(X, bank.data)
    np.testing.assert_array_equal(y_train, bank.target)
    other = fetch_bank_marketing(data_home=tmp_path, random_state=4)
    assert not np.array_equal(other.data, bank.data)


def test_bank_missing_without_download_names_the_data_set(tmp_path):
    with pytest.raises(OSError, match="bank marketing.*download_if_missing=False"):
        fetch_bank_marketing(data_home=tmp_path, download_if_missing=False)


def test_bank_checksum_mismatch_is_reported(tmp_path):
    # Real spec: the fake file is not the published bank-full.csv.
    write_fake_bank(tmp_path / "bank-full.csv", 10)
    with pytest.raises(OSError, match="Checksum mismatch for bank marketing file 'bank-full.csv'"):
        fetch_bank_marketing(data_home=tmp_path)


def test_bank_corrupted_copy_fails_checksum(fake_bank, tmp_path):
    path = fake_bank()
    fetch_bank_marketing(data_home=tmp_path)
    content = path.read_bytes()
    path.write_bytes(content.replace(b'"married"', b'"single"', 1))
    with pytest.raises(OSError, match=r"bank-full\.csv.*expected sha256"):
        fetch_bank_marketing(data_home=tmp_path)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"n_samples": 40}, r"shape \(41, 81\), expected \(40, 81\)"),
        ({"class_counts": (0, 41)}, "expected 0 and 41"),
    ],
)
def test_bank_unexpected_shape_or_counts(fake_bank, tmp_path, monkeypatch, changes, message):
    fake_bank()
    replace_spec(monkeypatch, _bank, "_BANK", **changes)
    with pytest.raises(ValueError, match=message):
        fetch_bank_marketing(data_home=tmp_path)


def test_bank_unknown_level_names_line_and_column(fake_bank, tmp_path, monkeypatch):
    path = fake_bank()
    lines = path.read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace(lines[3].split(";")[1], '"astronaut"', 1)
    path.write_text("".join(lines))
    replace_spec(monkeypatch, _bank, "_BANK", files={"bank-full.csv": None})
    with pytest.raises(ValueError, match="Line 4 .* unknown job value 'astronaut'"):
        fetch_bank_marketing(data_home=tmp_path)


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def test_bank_download_extracts_nested_zip_and_caches(fake_bank, tmp_path, monkeypatch):
    # The UCI layout: bank+marketing.zip holds bank.zip, which holds bank-full.csv.
    content = fake_bank("source").read_bytes()
    inner = zip_bytes({"bank.csv": b"decoy", "bank-full.csv": content, "bank-names.txt": b""})
    archive = zip_bytes({"bank-additional.zip": zip_bytes({"x": b""}), "bank.zip": inner})
    urls = []

    def fake_urlopen(url, timeout=None):
        urls.append(url)
        return io.BytesIO(archive)

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    home = tmp_path / "home"
    bank = fetch_bank_marketing(data_home=home)
    assert urls == [_bank._BANK.url]
    assert sorted(p.name for p in (home / "bank_marketing").iterdir()) == ["bank-full.csv"]
    assert (home / "bank_marketing" / "bank-full.csv").read_bytes() == content

    monkeypatch.setattr(urllib.request, "urlopen", refuse_network)  # the cache must suffice
    again = fetch_bank_marketing(data_home=home)
    np.testing.assert_array_equal(again.data, bank.data)


def test_bank_download_with_wrong_checksum_caches_nothing(tmp_path, monkeypatch):
    inner = zip_bytes({"bank-full.csv": b"not the data"})
    archive = zip_bytes({"bank.zip": inner})
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: io.BytesIO(archive))
    with pytest.raises(OSError, match="Checksum mismatch"):
        fetch_bank_marketing(data_home=tmp_path)
    assert list((tmp_path / "bank_marketing").iterdir()) == []


def test_bank_network_failure_says_how_to_work_offline(tmp_path, monkeypatch):
    def unreachable(url, timeout=None):
        raise OSError("Name or service not known")

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    with pytest.raises(OSError, match="Could not download the bank marketing data set"):
        fetch_bank_marketing(data_home=tmp_path)


def shared_data_dir() -> Path:
    env = os.environ.get("SKLEARN_IALM_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def test_bank_real_file():
    root = shared_data_dir()
    if not (root / "bank" / "bank-full.csv").is_file():
        pytest.skip(f"no bank/bank-full.csv in {root} (set SKLEARN_IALM_SHARED_DATA)")
    bank = fetch_bank_marketing(data_home=root, random_state=0)
    assert bank.data.shape == bank.data_test.shape == (22605, 81)
    assert len(bank.feature_names) == 81

    df = pd.read_csv(root / "bank" / "bank-full.csv", sep=";")
    perm = np.random.default_rng(0).permutation(len(df))
    train, test = perm[:22605], perm[22605:45210]
    np.testing.assert_array_equal(bank.target, (df["y"].to_numpy()[train] == "yes"))
    old = df["age"].to_numpy() >= 71
    assert old.sum() == 487
    np.testing.assert_array_equal(bank.groups_test, old[test])
    assert f"|S_min| = {old[test].sum()} (the paper: 233)" in bank.DESCR
    assert bank.target.sum() + bank.target_test.sum() + (df["y"].iloc[perm[-1]] == "yes") == 5289


# --------------------------------------------------------------------------- madelon, gisette

CHALLENGES = [(fetch_madelon, "madelon", "_MADELON"), (fetch_gisette, "gisette", "_GISETTE")]


def fake_challenge_files(prefix: str, seed: int = 0) -> tuple[dict[str, bytes], np.ndarray]:
    """Train (6 rows) and valid (4 rows) files in the original format, 5 features."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 1000, size=(10, 5))
    y = np.array([1, -1, 1, -1, -1, 1, 1, -1, 1, 1])
    files = {}
    for part, rows in [("train", slice(0, 6)), ("valid", slice(6, 10))]:
        # The originals end every data line with a space.
        files[f"{prefix}_{part}.data"] = "".join(
            " ".join(map(str, row)) + " \n" for row in X[rows]
        ).encode()
        files[f"{prefix}_{part}.labels"] = "".join(f"{v}\n" for v in y[rows]).encode()
    return files, np.column_stack([X, y])


def accept_fake_challenge(monkeypatch, spec_name):
    replace_spec(
        monkeypatch, _nips2003, spec_name, n_samples=10, n_features=5, class_counts=(4, 6)
    )


@pytest.mark.parametrize("fetch, prefix, spec_name", CHALLENGES)
@pytest.mark.parametrize("where", ["", "lower", "upper"])
def test_challenge_local_files(tmp_path, monkeypatch, fetch, prefix, spec_name, where):
    files, table = fake_challenge_files(prefix)
    folder = tmp_path / {"": "", "lower": prefix, "upper": prefix.upper()}[where]
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    accept_fake_challenge(monkeypatch, spec_name)

    bunch = fetch(data_home=tmp_path)
    np.testing.assert_array_equal(bunch.data, table[:, :5])
    np.testing.assert_array_equal(bunch.target, (table[:, 5] == 1).astype(int))
    assert bunch.data.dtype == np.float64
    assert prefix in bunch.DESCR.lower()
    X, y = fetch(data_home=tmp_path, return_X_y=True)
    np.testing.assert_array_equal(X, bunch.data)


@pytest.mark.parametrize("fetch, prefix, spec_name", CHALLENGES)
def test_challenge_archive_copied_by_hand(tmp_path, monkeypatch, fetch, prefix, spec_name):
    # A layout like UCI's: most files in a folder, the valid labels at the top level.
    files, table = fake_challenge_files(prefix, seed=1)
    members = {
        (name if name.endswith("valid.labels") else f"{prefix.upper()}/{name}"): data
        for name, data in files.items()
    }
    members[f"__MACOSX/{prefix.upper()}/._{prefix}_train.data"] = b"resource fork"
    archive = tmp_path / f"{prefix}.zip"
    archive.write_bytes(zip_bytes(members))
    accept_fake_challenge(monkeypatch, spec_name)

    bunch = fetch(data_home=tmp_path, download_if_missing=False)
    np.testing.assert_array_equal(bunch.data, table[:, :5])
    assert archive.is_file()  # a user's own archive is never deleted
    assert sorted(p.name for p in (tmp_path / prefix).iterdir()) == sorted(files)


@pytest.mark.parametrize("fetch, prefix, spec_name", CHALLENGES)
def test_challenge_missing_without_download(tmp_path, fetch, prefix, spec_name):
    with pytest.raises(OSError, match=f"The {prefix} data set was not found"):
        fetch(data_home=tmp_path, download_if_missing=False)


@pytest.mark.parametrize("fetch, prefix, spec_name", CHALLENGES)
def test_challenge_real_spec_rejects_fake_shape(tmp_path, fetch, prefix, spec_name):
    files, _ = fake_challenge_files(prefix)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    expected = getattr(_nips2003, spec_name)
    shape = rf"\({expected.n_samples}, {expected.n_features}\)"
    with pytest.raises(ValueError, match=rf"{prefix} data .* shape \(10, 5\), expected {shape}"):
        fetch(data_home=tmp_path)


def test_challenge_bad_labels(tmp_path, monkeypatch):
    files, _ = fake_challenge_files("madelon")
    files["madelon_valid.labels"] = b"1\n-1\n2\n1\n"
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    accept_fake_challenge(monkeypatch, "_MADELON")
    with pytest.raises(ValueError, match=r"madelon_valid\.labels.*-1 or 1; line 3 holds 2"):
        fetch_madelon(data_home=tmp_path)

    (tmp_path / "madelon_valid.labels").write_bytes(b"1\n-1\n")
    with pytest.raises(ValueError, match="has 4 rows but .* has 2 labels"):
        fetch_madelon(data_home=tmp_path)

    (tmp_path / "madelon_train.data").write_bytes(b"1 2 3 4 5 \n1 2 x 4 5 \n")
    with pytest.raises(ValueError, match=r"Cannot parse .*madelon_train\.data"):
        fetch_madelon(data_home=tmp_path)


def test_archive_without_the_files_is_reported(tmp_path):
    (tmp_path / "madelon.zip").write_bytes(zip_bytes({"README": b"nothing here"}))
    with pytest.raises(OSError, match="does not contain madelon_train.data"):
        fetch_madelon(data_home=tmp_path)
    (tmp_path / "madelon.zip").write_bytes(b"not a zip")
    with pytest.raises(OSError, match="not a valid zip file"):
        fetch_madelon(data_home=tmp_path)
