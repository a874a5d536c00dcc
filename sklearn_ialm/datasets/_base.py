"""Shared machinery of the fetchers: find a local copy, or download, extract and verify.

A fetcher describes its data set with a :class:`RemoteDataset` and calls :func:`fetch_files`,
which returns the paths of verified files. Only :func:`_download` touches the network.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import urllib.request
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sklearn.datasets import get_data_home

__all__ = ["RemoteDataset", "check_shape_and_counts", "fetch_files", "sha256sum"]


@dataclass(frozen=True)
class RemoteDataset:
    """What a fetcher needs to know about one public data set.

    Parameters
    ----------
    name : str
        Human-readable name, used in error messages.
    url : str
        Address of the public zip archive.
    files : mapping of str to str or None
        Base names of the files needed from the archive, each with the sha256 of its
        content, or None when no checksum is known (the shape and class counts are then
        the only checks).
    subdirs : tuple of str
        Folders of ``data_home`` that may hold a local copy, besides ``data_home`` itself.
        Downloads are cached in the first one.
    n_samples, n_features : int
        Expected shape of the returned data.
    class_counts : tuple of int
        Expected number of samples of class 0 and of class 1.
    """

    name: str
    url: str
    files: Mapping[str, str | None]
    subdirs: tuple[str, ...]
    n_samples: int
    n_features: int
    class_counts: tuple[int, int]

    @property
    def archive(self) -> str:
        return PurePosixPath(self.url).name


def sha256sum(path: str | os.PathLike) -> str:
    """Hex sha256 digest of a file, read in chunks so large files need little memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verify(spec: RemoteDataset, name: str, path: Path) -> None:
    expected = spec.files[name]
    if expected is None:
        return
    actual = sha256sum(path)
    if actual != expected:
        raise OSError(
            f"Checksum mismatch for {spec.name} file {name!r} ({str(path)!r}): expected sha256 "
            f"{expected}, got {actual}. The file is corrupted or not the original; delete it "
            f"and fetch again, or replace it with a copy from {spec.url}."
        )


def _find_local(spec: RemoteDataset, root: Path) -> dict[str, Path] | None:
    # All files must come from one folder: mixing copies from two places could pair the
    # training data of one release with the labels of another.
    for folder in (root, *(root / sub for sub in spec.subdirs)):
        paths = {name: folder / name for name in spec.files}
        if all(p.is_file() for p in paths.values()):
            return paths
    return None


def _download(url: str, dest: Path) -> None:
    """Download ``url`` to ``dest`` (via a temporary file, so a broken transfer leaves none)."""
    part = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(part, "wb") as f:
            shutil.copyfileobj(response, f)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, dest)


def _extract(archive: zipfile.ZipFile, wanted: set[str], dest: Path) -> None:
    """Copy the members whose base name is in ``wanted`` to ``dest``, searching nested zips.

    The internal layout of the public archives (folder names, zips inside zips) has changed
    over the years, so members are matched by base name only. Found names leave ``wanted``.
    """
    for info in archive.infolist():
        if not wanted:
            return
        path = PurePosixPath(info.filename)
        if info.is_dir() or "__MACOSX" in path.parts:
            continue
        if path.name in wanted:
            with archive.open(info) as src, open(dest / (path.name + ".part"), "wb") as dst:
                shutil.copyfileobj(src, dst)
            wanted.discard(path.name)
        elif path.suffix.lower() == ".zip":
            with zipfile.ZipFile(io.BytesIO(archive.read(info))) as inner:
                _extract(inner, wanted, dest)


def fetch_files(
    spec: RemoteDataset, data_home: str | os.PathLike | None, download_if_missing: bool
) -> dict[str, Path]:
    """Paths of the verified files of ``spec``: a local copy if any, else a fresh download.

    Looked up, in order: the files in ``data_home`` or one of ``spec.subdirs``; the archive
    ``spec.archive`` in those folders (e.g. copied by hand to an offline machine); a download
    of ``spec.url``, when ``download_if_missing``. Extracted files are cached in
    ``data_home/spec.subdirs[0]``.
    """
    root = Path(get_data_home(data_home))
    paths = _find_local(spec, root)
    if paths is not None:
        for name, path in paths.items():
            _verify(spec, name, path)
        return paths

    cache = root / spec.subdirs[0]
    archive = next(
        (
            folder / spec.archive
            for folder in (root, *(root / sub for sub in spec.subdirs))
            if (folder / spec.archive).is_file()
        ),
        None,
    )
    downloaded = archive is None
    if downloaded and not download_if_missing:
        raise OSError(
            f"The {spec.name} data set was not found in {str(root)!r} (looked for "
            f"{', '.join(spec.files)} or {spec.archive} there and in its subfolders "
            f"{', '.join(spec.subdirs)}) and download_if_missing=False. Put the files or "
            f"the archive (from {spec.url}) there, or allow the download."
        )
    cache.mkdir(parents=True, exist_ok=True)
    if downloaded:
        archive = cache / spec.archive
        try:
            _download(spec.url, archive)
        except OSError as exc:
            raise OSError(
                f"Could not download the {spec.name} data set from {spec.url}: {exc}. "
                f"Without network access, put {', '.join(spec.files)} or {spec.archive} "
                f"in {str(root)!r}."
            ) from exc

    wanted = set(spec.files)
    try:
        try:
            with zipfile.ZipFile(archive) as zf:
                _extract(zf, wanted, cache)
        except zipfile.BadZipFile as exc:
            raise OSError(
                f"The {spec.name} archive {str(archive)!r} is not a valid zip file ({exc})."
            ) from exc
        if wanted:
            raise OSError(
                f"The {spec.name} archive {str(archive)!r} does not contain "
                f"{', '.join(sorted(wanted))} (searched all folders and nested zip files)."
            )
        # Verify every file before any is moved into place, so a failed check caches nothing.
        for name in spec.files:
            _verify(spec, name, cache / (name + ".part"))
        paths = {name: cache / name for name in spec.files}
        for name, path in paths.items():
            os.replace(cache / (name + ".part"), path)
    finally:
        for name in spec.files:
            (cache / (name + ".part")).unlink(missing_ok=True)
        if downloaded:
            archive.unlink(missing_ok=True)
    return paths


def check_shape_and_counts(spec: RemoteDataset, X, y, source: str) -> None:
    """Raise a ValueError unless ``X`` and the 0/1 labels ``y`` match ``spec``."""
    expected = (spec.n_samples, spec.n_features)
    if X.shape != expected:
        raise ValueError(
            f"The {spec.name} data read from {source} have shape {X.shape}, expected "
            f"{expected}. The files are truncated or not the original release."
        )
    counts = (int((y == 0).sum()), int((y == 1).sum()))
    if counts != tuple(spec.class_counts):
        raise ValueError(
            f"The {spec.name} data read from {source} have {counts[0]} negative and "
            f"{counts[1]} positive samples, expected {spec.class_counts[0]} and "
            f"{spec.class_counts[1]}. The labels are truncated or not the original release."
        )
