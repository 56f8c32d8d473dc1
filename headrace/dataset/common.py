"""``paddle.dataset.common``: where the datasets' files live, and the clear errors when they are not there.

The reference downloads each dataset file once into ``DATA_HOME/<module>/<file name from the URL>``
(``DATA_HOME`` = ``~/.cache/paddle/dataset``) and reads it from there.  headrace never downloads
(these machines have no network): ``download`` returns the cached file if it is there and otherwise
raises ``DatasetFileNotFoundError`` naming the exact file, the directory to put it in and the URL
the reference fetches it from.  ``DATA_HOME`` is read at call time, so a program (or a test) may
set ``headrace.dataset.common.DATA_HOME`` to another directory.

Integrity: the reference checks a file's MD5 only to decide whether to download it again.  We do
not check MD5 sums: a file the user supplies is their data (a subset or a re-packed archive is
fine), and a corrupt file is caught by its format instead (gzip CRC and length, IDX magic numbers
and sizes, tar structure, pickle structure), with ``DatasetFileError`` naming the file.
``md5file`` is there for users who want to compare a file with the reference's published sums.
"""
from __future__ import annotations

import hashlib
import os

from ..core.errors import HeadraceError

DATA_HOME = os.path.expanduser(os.path.join("~", ".cache", "paddle", "dataset"))

__all__ = ["DATA_HOME", "download", "md5file"]


class DatasetFileNotFoundError(HeadraceError, FileNotFoundError):
    """A dataset file is not on disk (headrace never downloads: the message says where to put it)."""


class DatasetFileError(HeadraceError, ValueError):
    """A dataset file is there but is not in the expected format (truncated, corrupt, wrong kind)."""


def md5file(fname) -> str:
    """The hex MD5 digest of a file's bytes (as the reference's ``md5file``)."""
    digest = hashlib.md5()
    with open(fname, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _names(url: str, save_name: str | None) -> list:
    """The file names the cache may hold: the reference saves ``url``'s last component (e.g.
    ``imikolov%2Fsimple-examples.tgz``); the original file name after an escaped ``/`` is accepted too."""
    first = save_name or url.split("/")[-1]
    names = [first]
    if save_name is None and "%2F" in first:
        names.append(first.split("%2F")[-1])
    return names


def download(url: str, module_name: str, md5sum: str | None = None, save_name: str | None = None) -> str:
    """The path of the cached file the reference would download from ``url`` into
    ``DATA_HOME/module_name`` (``md5sum`` is accepted for the reference's signature and not checked:
    see the module docstring).  Raises ``DatasetFileNotFoundError`` if the file is not there."""
    dirname = os.path.join(DATA_HOME, module_name)
    names = _names(url, save_name)
    for name in names:
        path = os.path.join(dirname, name)
        if os.path.isfile(path):
            return path
    also = f" (or as {names[1]!r})" if len(names) > 1 else ""
    raise DatasetFileNotFoundError(
        f"dataset file {names[0]!r}{also} not found in {dirname}: headrace does not download "
        f"(no network access); fetch it by hand from {url} and put it in {dirname}/, or pass its path "
        f"explicitly")


def _check_exists_and_download(path, url, md5, module_name, download_ok=True, what="data_file") -> str:
    """The file a 2.x dataset reads: ``path`` if given (it must exist), else the cached file
    (``download_ok`` False with no path is an error, as the reference's assertion)."""
    if path is not None:
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise DatasetFileNotFoundError(
                f"{what} {path!r} does not exist (headrace does not download; the reference's file is {url})")
        return path
    if not download_ok:
        raise ValueError(f"{what} is not set and downloading automatically is disabled (download=False)")
    return download(url, module_name, md5)
