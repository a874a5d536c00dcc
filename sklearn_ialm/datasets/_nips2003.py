"""Madelon and gisette (NIPS 2003 feature selection challenge), train and valid pooled."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from ._base import RemoteDataset, check_shape_and_counts, fetch_files

__all__ = ["fetch_gisette", "fetch_madelon"]


def _challenge_files(prefix: str) -> dict[str, None]:
    # No checksums are published for the UCI copies, and none could be checked offline, so
    # shape and class counts are the checks.
    parts = ("train", "valid")
    return {f"{prefix}_{part}.{kind}": None for part in parts for kind in ("data", "labels")}


_MADELON = RemoteDataset(
    name="madelon",
    url="https://archive.ics.uci.edu/static/public/171/madelon.zip",
    files=_challenge_files("madelon"),
    subdirs=("madelon", "MADELON"),
    n_samples=2600,
    n_features=500,
    class_counts=(1300, 1300),
)

_GISETTE = RemoteDataset(
    name="gisette",
    url="https://archive.ics.uci.edu/static/public/170/gisette.zip",
    files=_challenge_files("gisette"),
    subdirs=("gisette", "GISETTE"),
    n_samples=7000,
    n_features=5000,
    class_counts=(3500, 3500),
)

_REFERENCES = """\
:License: CC BY 4.0 (UCI Machine Learning Repository).

.. rubric:: References

- I. Guyon, S. Gunn, A. Ben-Hur and G. Dror. Result analysis of the NIPS 2003 feature
  selection challenge. Advances in Neural Information Processing Systems 17, 2004.
- D. Dua and C. Graff. UCI Machine Learning Repository. University of California, Irvine,
  School of Information and Computer Sciences, 2019. http://archive.ics.uci.edu/ml
"""

_MADELON_DESCR = f"""\
.. _madelon_dataset:

Madelon (NIPS 2003 feature selection challenge)
-----------------------------------------------

An artificial two-class problem: points in 32 clusters on the vertices of a
five-dimensional hypercube, labelled at random. The 500 integer-valued features are the 5
informative ones, 15 linear combinations of them and 480 probes without predictive power.

The Stoc-iALM paper's Neyman-Pearson experiment pools the labelled parts: the 2000 training
rows (``madelon_train.*``, the first rows here) and the 600 validation rows
(``madelon_valid.*``), so n+ = n- = 1300 and d = 500. Labels +1 become 1 and -1 become 0.
No preprocessing is applied; see :func:`sklearn_ialm.datasets.neyman_pearson_preprocess`.

:Source: {_MADELON.url}
{_REFERENCES}"""

_GISETTE_DESCR = f"""\
.. _gisette_dataset:

Gisette (NIPS 2003 feature selection challenge)
-----------------------------------------------

Handwritten digit recognition: separate the confusable digits 4 and 9 (from MNIST). The
5000 integer-valued features are pixel-derived features, half of them probes without
predictive power.

The Stoc-iALM paper's Neyman-Pearson experiment uses n+ = n- = 3500, which is the 6000
training rows (``gisette_train.*``, the first rows here) pooled with the 1000 validation rows
(``gisette_valid.*``). Labels +1 become 1 and -1 become 0. No preprocessing is applied;
see :func:`sklearn_ialm.datasets.neyman_pearson_preprocess`.

**Unresolved:** the paper's text says d = 2000, which does not match gisette's 5000
features; it does not say how features were selected, if they were. All 5000 are kept.

:Source: {_GISETTE.url}
{_REFERENCES}"""


def _loadtxt(path: Path, dtype: type, ndmin: int) -> np.ndarray:
    try:
        return np.loadtxt(path, dtype=dtype, ndmin=ndmin)
    except ValueError as exc:
        raise ValueError(f"Cannot parse {str(path)!r}: {exc}") from exc


def _read_labels(path: Path) -> np.ndarray:
    labels = _loadtxt(path, np.int64, ndmin=1)
    bad = ~np.isin(labels, (-1, 1))
    if bad.any():
        raise ValueError(
            f"Labels in {str(path)!r} must be -1 or 1; line {int(np.argmax(bad)) + 1} holds "
            f"{labels[bad][0]}."
        )
    return (labels == 1).astype(np.int64)


def _fetch_challenge(
    spec: RemoteDataset,
    prefix: str,
    descr: str,
    data_home: str | os.PathLike | None,
    download_if_missing: bool,
    return_X_y: bool,
) -> Bunch | tuple[np.ndarray, np.ndarray]:
    paths = fetch_files(spec, data_home, download_if_missing)
    blocks, targets = [], []
    for part in ("train", "valid"):
        data_path, labels_path = paths[f"{prefix}_{part}.data"], paths[f"{prefix}_{part}.labels"]
        X = _loadtxt(data_path, np.float64, ndmin=2)
        y = _read_labels(labels_path)
        if X.shape[0] != y.shape[0]:
            raise ValueError(
                f"{str(data_path)!r} has {X.shape[0]} rows but {str(labels_path)!r} has "
                f"{y.shape[0]} labels."
            )
        blocks.append(X)
        targets.append(y)
    if blocks[0].shape[1] != blocks[1].shape[1]:
        raise ValueError(
            f"The {spec.name} train and valid data have {blocks[0].shape[1]} and "
            f"{blocks[1].shape[1]} features."
        )
    X, y = np.vstack(blocks), np.concatenate(targets)
    check_shape_and_counts(spec, X, y, f"{', '.join(map(str, paths.values()))}")
    if return_X_y:
        return X, y
    return Bunch(data=X, target=y, DESCR=descr)


def fetch_madelon(
    *,
    data_home: str | os.PathLike | None = None,
    download_if_missing: bool = True,
    return_X_y: bool = False,
) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Load madelon (NIPS 2003), training and validation rows pooled as in the paper.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder for the cached data; ``None`` means :func:`sklearn.datasets.get_data_home`.
        A local copy of ``madelon_{train,valid}.{data,labels}`` is read from ``data_home``,
        ``data_home/madelon`` or ``data_home/MADELON``, and so is the UCI archive
        ``madelon.zip``, so the fetcher works offline.
    download_if_missing : bool, default=True
        Download the UCI archive when no local copy exists; if False, raise an ``OSError``.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes

        data : ndarray of shape (2600, 500)
            The 2000 training rows followed by the 600 validation rows.
        target : ndarray of shape (2600,)
            1 for label +1, 0 for label -1 (1300 each).
        DESCR : str
            Description of the data set.

    (data, target) : tuple if ``return_X_y`` is True

    Raises
    ------
    OSError
        If the data are missing and ``download_if_missing=False``, or the download fails.
    ValueError
        If the files cannot be parsed or have unexpected shape or class counts.

    Examples
    --------
    >>> from sklearn_ialm.datasets import fetch_madelon
    >>> X, y = fetch_madelon(return_X_y=True)  # doctest: +SKIP
    >>> X.shape, int(y.sum())  # doctest: +SKIP
    ((2600, 500), 1300)
    """
    return _fetch_challenge(
        _MADELON, "madelon", _MADELON_DESCR, data_home, download_if_missing, return_X_y
    )


def fetch_gisette(
    *,
    data_home: str | os.PathLike | None = None,
    download_if_missing: bool = True,
    return_X_y: bool = False,
) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Load gisette (NIPS 2003), training and validation rows pooled as in the paper.

    The paper's text gives d = 2000, but gisette has 5000 features; all are kept (see
    ``DESCR``). The dense float64 result takes 280 MB.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder for the cached data; ``None`` means :func:`sklearn.datasets.get_data_home`.
        A local copy of ``gisette_{train,valid}.{data,labels}`` is read from ``data_home``,
        ``data_home/gisette`` or ``data_home/GISETTE``, and so is the UCI archive
        ``gisette.zip``, so the fetcher works offline.
    download_if_missing : bool, default=True
        Download the UCI archive when no local copy exists; if False, raise an ``OSError``.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes

        data : ndarray of shape (7000, 5000)
            The 6000 training rows followed by the 1000 validation rows.
        target : ndarray of shape (7000,)
            1 for label +1, 0 for label -1 (3500 each).
        DESCR : str
            Description of the data set.

    (data, target) : tuple if ``return_X_y`` is True

    Raises
    ------
    OSError
        If the data are missing and ``download_if_missing=False``, or the download fails.
    ValueError
        If the files cannot be parsed or have unexpected shape or class counts.

    Examples
    --------
    >>> from sklearn_ialm.datasets import fetch_gisette
    >>> X, y = fetch_gisette(return_X_y=True)  # doctest: +SKIP
    >>> X.shape, int(y.sum())  # doctest: +SKIP
    ((7000, 5000), 3500)
    """
    return _fetch_challenge(
        _GISETTE, "gisette", _GISETTE_DESCR, data_home, download_if_missing, return_X_y
    )
