"""Readers of the datasets' on-disk formats, shared by ``paddle.dataset.*`` (1.x) and the 2.x
``paddle.vision.datasets`` / ``paddle.text`` classes.  Every malformed file raises
``DatasetFileError`` naming the file and what is wrong with it.

- gzipped IDX (MNIST, FashionMNIST): big-endian header, magic 2051 (images: count, rows, cols) or
  2049 (labels: count), then one unsigned byte per value.
- CIFAR python tarballs: pickled dicts (``b'data'`` uint8 (n, 3072), ``b'labels'`` or
  ``b'fine_labels'``) read through ``headrace.framework.safe_pickle`` (runs no code from the file).
- UCI housing text, and text members of tarballs (imikolov, IMDB).
"""
from __future__ import annotations

import contextlib
import gzip
import struct
import tarfile
import zlib

import numpy as np

from ..core.errors import CheckpointError
from .common import DatasetFileError

IDX_IMAGES_MAGIC = 2051
IDX_LABELS_MAGIC = 2049


def read_gzip(path) -> bytes:
    """The uncompressed bytes of a gzip file (a truncated or corrupt file is a ``DatasetFileError``)."""
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetFileError(f"{path}: not a valid gzip file, corrupt or truncated ({exc})") from None


def _idx_header(path, buf: bytes, magic: int, fields: int):
    size = 4 * (1 + fields)
    found = struct.unpack_from(">I", buf, 0)[0] if len(buf) >= 4 else None
    if found is not None and found != magic:
        raise DatasetFileError(f"{path}: IDX magic number {found}, expected {magic} "
                               f"({'images' if magic == IDX_IMAGES_MAGIC else 'labels'} file)")
    if len(buf) < size:
        raise DatasetFileError(f"{path}: too short for an IDX header ({len(buf)} bytes)")
    return struct.unpack_from(">" + "I" * fields, buf, 4), size


def read_idx_images(path) -> np.ndarray:
    """uint8 images (n, rows, cols) from a gzipped IDX3 file."""
    buf = read_gzip(path)
    (count, rows, cols), offset = _idx_header(path, buf, IDX_IMAGES_MAGIC, 3)
    if len(buf) - offset != count * rows * cols:
        raise DatasetFileError(f"{path}: header says {count} images of {rows}x{cols} "
                               f"({count * rows * cols} bytes), the file holds {len(buf) - offset} bytes")
    return np.frombuffer(buf, np.uint8, offset=offset).reshape(count, rows, cols)


def read_idx_labels(path) -> np.ndarray:
    """uint8 labels (n,) from a gzipped IDX1 file."""
    buf = read_gzip(path)
    (count,), offset = _idx_header(path, buf, IDX_LABELS_MAGIC, 1)
    if len(buf) - offset != count:
        raise DatasetFileError(f"{path}: header says {count} labels, the file holds {len(buf) - offset} bytes")
    return np.frombuffer(buf, np.uint8, offset=offset)


def read_mnist(image_path, label_path):
    """(images uint8 (n, rows, cols), labels uint8 (n,)) from a pair of gzipped IDX files."""
    images, labels = read_idx_images(image_path), read_idx_labels(label_path)
    if len(images) != len(labels):
        raise DatasetFileError(f"{image_path} holds {len(images)} images but {label_path} holds "
                               f"{len(labels)} labels")
    return images, labels


@contextlib.contextmanager
def open_tar(path):
    """A tarball opened for reading; a broken one is a ``DatasetFileError`` naming it."""
    try:
        tar = tarfile.open(path, "r")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise DatasetFileError(f"{path}: not a readable tar archive ({exc})") from None
    try:
        yield tar
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise DatasetFileError(f"{path}: corrupt or truncated tar archive ({exc})") from None
    finally:
        tar.close()


def _norm(name: str) -> str:
    return name[2:] if name.startswith("./") else name


def member_bytes(tar, path, name: str) -> bytes:
    """The bytes of member ``name`` (with or without a leading ``./``) of an open tarball."""
    for info in tar.getmembers():
        if info.isfile() and _norm(info.name) == _norm(name):
            try:
                return tar.extractfile(info).read()
            except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
                raise DatasetFileError(f"{path}: member {name!r} is corrupt or truncated ({exc})") from None
    raise DatasetFileError(f"{path}: the archive has no member {_norm(name)!r}")


def _bytes_keys(obj):
    """The batch dict with ``bytes`` keys, as the reference's ``encoding='bytes'`` load gives them
    (the restricted loader decodes Python 2 strings as latin-1 ``str``)."""
    return {k.encode("latin1") if isinstance(k, str) else k: v for k, v in obj.items()}


def _cifar_batch(path, name: str, data: bytes):
    from ..framework.safe_pickle import load_pickle

    where = f"{path}[{name}]"
    try:
        batch = load_pickle(data, where)
    except CheckpointError as exc:
        raise DatasetFileError(str(exc)) from None
    if not isinstance(batch, dict):
        raise DatasetFileError(f"{where}: expected a pickled dict, got {type(batch).__name__}")
    batch = _bytes_keys(batch)
    labels = batch.get(b"labels", batch.get(b"fine_labels"))
    images = batch.get(b"data")
    if labels is None or not isinstance(images, np.ndarray):
        raise DatasetFileError(f"{where}: expected keys b'data' (an array) and b'labels' or b'fine_labels'")
    images = np.asarray(images)
    if images.ndim != 2 or images.shape[1] != 3072 or len(images) != len(labels):
        raise DatasetFileError(f"{where}: data of shape {images.shape} for {len(labels)} labels; "
                               "expected (n, 3072) with n labels")
    return images.astype(np.uint8, copy=False), [int(v) for v in labels]


def read_cifar(path, flag: str, sort: bool):
    """The CIFAR batches whose member name contains ``flag`` (``data_batch``, ``test_batch``,
    ``train``, ``test``), in archive order or sorted by name: a list of (uint8 (n, 3072), labels)."""
    out = []
    with open_tar(path) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and flag in m.name]
        if sort:
            members.sort(key=lambda m: m.name)
        for info in members:
            out.append(_cifar_batch(path, info.name, member_bytes(tar, path, info.name)))
    if not out:
        raise DatasetFileError(f"{path}: no member whose name contains {flag!r} (not a CIFAR python archive?)")
    return out


def read_uci_housing(path, feature_num: int = 14, ratio: float = 0.8):
    """(train rows, test rows) of the UCI housing file, float64: the 13 features normalised as the
    reference ((x - mean) / (max - min) over the whole file), the price last, the first 80% training."""
    try:
        data = np.loadtxt(path, dtype=np.float64, ndmin=1).reshape(-1)
    except ValueError as exc:
        raise DatasetFileError(f"{path}: not whitespace-separated numbers ({exc})") from None
    if data.size == 0 or data.size % feature_num:
        raise DatasetFileError(f"{path}: {data.size} numbers, not a multiple of {feature_num} (13 features and a price)")
    data = data.reshape(-1, feature_num)
    maximums, minimums, avgs = data.max(axis=0), data.min(axis=0), data.sum(axis=0) / data.shape[0]
    for i in range(feature_num - 1):
        span = maximums[i] - minimums[i]
        data[:, i] = (data[:, i] - avgs[i]) / (span if span else 1.0)
    offset = int(data.shape[0] * ratio)
    return data[:offset], data[offset:]
