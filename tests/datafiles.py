"""Writers of tiny data files in the real on-disk formats of the reference's datasets, for tests.

Every writer takes a directory (created if missing) and small sample counts, writes deterministic
data (a NumPy generator seeded by ``seed``) under the file names the reference's cache holds, and
returns what it wrote (the arrays, texts and paths), so tests compare a reader's output with the
written values, never with another reader's output.

The reference's cache is ``DATA_HOME/<module>/<file>`` with ``DATA_HOME`` = ``~/.cache/paddle/dataset``
(``headrace.dataset.common.DATA_HOME``, read at call time so a test can monkeypatch it)::

    monkeypatch.setattr(headrace.dataset.common, "DATA_HOME", str(tmp_path))
    written = write_mnist(tmp_path / "mnist", train=12, test=5)

Formats:

- MNIST / FashionMNIST: gzipped IDX files (``train-images-idx3-ubyte.gz`` ... ``t10k-labels-idx1-ubyte.gz``):
  big-endian header (magic 2051, count, rows, cols for images; magic 2049, count for labels), then
  one unsigned byte per pixel / label.
- CIFAR-10 / CIFAR-100: ``cifar-10-python.tar.gz`` (``cifar-10-batches-py/data_batch_1..5``,
  ``test_batch``, ``batches.meta``) and ``cifar-100-python.tar.gz`` (``cifar-100-python/train``,
  ``test``, ``meta``): each batch a Python-2 style pickle (protocol 2, byte strings as ``BINSTRING``,
  as the official files were written) of a dict with ``b'data'`` (uint8 ``(n, 3072)``, the 1024 red,
  then green, then blue values of a 32x32 image, row-major) and ``b'labels'`` (CIFAR-10) or
  ``b'fine_labels'`` / ``b'coarse_labels'`` (CIFAR-100).
- UCI housing: ``housing.data``, 14 whitespace-separated numbers per line (13 features, then the price).
- imikolov: ``simple-examples.tgz`` holding ``./simple-examples/data/ptb.{train,valid,test}.txt``,
  one sentence per line, each line starting with a space as in the PTB files.
- IMDB: ``aclImdb_v1.tar.gz`` holding ``aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt``.
"""
from __future__ import annotations

import gzip
import io
import os
import pickle
import struct
import tarfile

import numpy as np

MNIST_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
CIFAR10_FILE = "cifar-10-python.tar.gz"
CIFAR100_FILE = "cifar-100-python.tar.gz"
UCI_HOUSING_FILE = "housing.data"
IMIKOLOV_FILE = "simple-examples.tgz"
IMDB_FILE = "aclImdb_v1.tar.gz"


def _dir(directory) -> str:
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    return directory


# --- MNIST / FashionMNIST: gzipped IDX ---------------------------------------------------------

def idx_images_bytes(images: np.ndarray) -> bytes:
    """The IDX3 encoding (uncompressed) of uint8 images of shape (n, rows, cols)."""
    n, rows, cols = images.shape
    return struct.pack(">IIII", 2051, n, rows, cols) + np.ascontiguousarray(images, np.uint8).tobytes()


def idx_labels_bytes(labels: np.ndarray) -> bytes:
    """The IDX1 encoding (uncompressed) of uint8 labels of shape (n,)."""
    return struct.pack(">II", 2049, len(labels)) + np.ascontiguousarray(labels, np.uint8).tobytes()


def write_gzip(path, data: bytes) -> str:
    """``data`` gzipped into ``path`` (a fixed mtime, so the bytes are deterministic)."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(data)
    return os.fspath(path)


def write_mnist(directory, train: int = 12, test: int = 5, seed: int = 0, classes: int = 10) -> dict:
    """MNIST-format files (also FashionMNIST's: same names and format) in ``directory``.

    Returns ``{"train": (images uint8 (n, 28, 28), labels uint8 (n,)), "test": (...),
    "paths": {"train": (image path, label path), "test": (...)}}``.
    """
    directory, rng = _dir(directory), np.random.default_rng(seed)
    out: dict = {"paths": {}}
    for mode, count in (("train", train), ("test", test)):
        images = rng.integers(0, 256, size=(count, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, classes, size=count, dtype=np.uint8)
        image_name, label_name = MNIST_FILES[mode]
        paths = (write_gzip(os.path.join(directory, image_name), idx_images_bytes(images)),
                 write_gzip(os.path.join(directory, label_name), idx_labels_bytes(labels)))
        out[mode], out["paths"][mode] = (images, labels), paths
    return out


# --- CIFAR: tarballs of Python-2 style pickles ---------------------------------------------------

class _Py2Pickler(pickle._Pickler):
    """Protocol-2 pickler writing ``bytes`` as Python 2 ``str`` (``SHORT_BINSTRING``/``BINSTRING``),
    as the official CIFAR batches (pickled by Python 2) hold them."""

    dispatch = pickle._Pickler.dispatch.copy()

    def _save_py2_str(self, obj):
        if len(obj) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(obj)]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(obj)) + obj)
        self.memoize(obj)

    dispatch[bytes] = _save_py2_str


def py2_pickle(obj) -> bytes:
    """``obj`` pickled as Python 2 would (protocol 2, byte strings as ``str``, NumPy's array
    rebuilder under its old module name ``numpy.core.multiarray``)."""
    buf = io.BytesIO()
    _Py2Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue().replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")


def write_tar(path, members: dict, mode: str = "w:gz") -> str:
    """A tarball at ``path`` holding ``{member name: bytes}`` (deterministic metadata)."""
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return os.fspath(path)


def _cifar_images(rng, count):
    return rng.integers(0, 256, size=(count, 3072), dtype=np.uint8)


def write_cifar10(directory, per_batch: int = 3, test: int = 4, batches: int = 5, seed: int = 0) -> dict:
    """``cifar-10-python.tar.gz`` in ``directory``: ``batches`` training batches of ``per_batch`` samples.

    Returns ``{"train": (data uint8 (n, 3072), labels int list), "test": (...), "path": tarball}``;
    the training samples are in batch order (data_batch_1 first).
    """
    directory, rng = _dir(directory), np.random.default_rng(seed)
    members, train_data, train_labels = {}, [], []
    for b in range(1, batches + 1):
        data = _cifar_images(rng, per_batch)
        labels = [int(v) for v in rng.integers(0, 10, size=per_batch)]
        members[f"cifar-10-batches-py/data_batch_{b}"] = py2_pickle(
            {b"batch_label": b"training batch %d of 5" % b, b"labels": labels, b"data": data,
             b"filenames": [b"img_%d.png" % i for i in range(per_batch)]})
        train_data.append(data)
        train_labels += labels
    test_data = _cifar_images(rng, test)
    test_labels = [int(v) for v in rng.integers(0, 10, size=test)]
    members["cifar-10-batches-py/test_batch"] = py2_pickle(
        {b"batch_label": b"testing batch 1 of 1", b"labels": test_labels, b"data": test_data})
    members["cifar-10-batches-py/batches.meta"] = py2_pickle(
        {b"label_names": [b"c%d" % i for i in range(10)], b"num_cases_per_batch": per_batch})
    path = write_tar(os.path.join(directory, CIFAR10_FILE), members)
    return {"train": (np.concatenate(train_data), train_labels), "test": (test_data, test_labels), "path": path}


def write_cifar100(directory, train: int = 6, test: int = 4, seed: int = 0) -> dict:
    """``cifar-100-python.tar.gz`` in ``directory`` (``train`` and ``test`` pickles with fine labels).

    Returns ``{"train": (data uint8 (n, 3072), fine labels list), "test": (...), "path": tarball}``.
    """
    directory, rng = _dir(directory), np.random.default_rng(seed)
    members, out = {}, {}
    for mode, count in (("train", train), ("test", test)):
        data = _cifar_images(rng, count)
        fine = [int(v) for v in rng.integers(0, 100, size=count)]
        members[f"cifar-100-python/{mode}"] = py2_pickle(
            {b"batch_label": mode.encode(), b"fine_labels": fine, b"coarse_labels": [v // 5 for v in fine],
             b"data": data})
        out[mode] = (data, fine)
    members["cifar-100-python/meta"] = py2_pickle({b"fine_label_names": [b"f%d" % i for i in range(100)]})
    out["path"] = write_tar(os.path.join(directory, CIFAR100_FILE), members)
    return out


# --- UCI housing: whitespace-separated text -----------------------------------------------------

def write_uci_housing(directory, rows: int = 20, seed: int = 0) -> dict:
    """``housing.data`` in ``directory``: ``rows`` lines of 13 features and a price.

    Returns ``{"data": float64 (rows, 14) exactly as written (values rounded to the 4 decimals the
    file holds), "path": file}``.
    """
    directory, rng = _dir(directory), np.random.default_rng(seed)
    scale = np.array([10, 100, 30, 1, 1, 9, 100, 12, 24, 700, 22, 400, 38, 50], dtype=np.float64)
    data = np.round(rng.random((rows, 14)) * scale, 4)
    data[:, 3] = np.round(data[:, 3])   # CHAS is 0/1
    path = os.path.join(directory, UCI_HOUSING_FILE)
    with open(path, "w") as f:
        for row in data:
            f.write(" " + " ".join(f"{v:.4f}" for v in row) + "\n")
    return {"data": data, "path": path}


# --- imikolov: PTB text in a tarball --------------------------------------------------------------

_PTB_WORDS = ["the", "n", "of", "to", "a", "in", "and", "<unk>", "for", "that", "is", "it", "said", "on",
              "market", "stock", "bank", "rates"]


def _zipf_lines(rng, count, min_len=3, max_len=9):
    p = 1.0 / np.arange(1, len(_PTB_WORDS) + 1)
    p /= p.sum()
    return [[_PTB_WORDS[i] for i in rng.choice(len(_PTB_WORDS), size=int(rng.integers(min_len, max_len + 1)), p=p)]
            for _ in range(count)]


def write_imikolov(directory, train: int = 40, valid: int = 12, test: int = 10, seed: int = 0,
                   name: str = IMIKOLOV_FILE) -> dict:
    """``simple-examples.tgz`` (or ``name``) in ``directory`` with PTB-style train/valid/test text.

    Words follow a Zipf-like frequency over a small vocabulary (with ``<unk>`` tokens as in PTB).
    Returns ``{"train": [[word, ...], ...], "valid": ..., "test": ..., "path": tarball}``.
    """
    directory, rng = _dir(directory), np.random.default_rng(seed)
    out, members = {}, {}
    for split, count in (("train", train), ("valid", valid), ("test", test)):
        lines = _zipf_lines(rng, count)
        members[f"./simple-examples/data/ptb.{split}.txt"] = "".join(
            " " + " ".join(words) + " \n" for words in lines).encode()
        out[split] = lines
    out["path"] = write_tar(os.path.join(directory, name), members)
    return out


# --- IMDB: review text files in a tarball -------------------------------------------------------

_REVIEW_WORDS = ["the", "movie", "film", "was", "great", "bad", "Plot", "acting", "I", "loved", "hated", "it"]


def write_imdb(directory, per_class: int = 3, words: int = 30, seed: int = 0, name: str = IMDB_FILE) -> dict:
    """``aclImdb_v1.tar.gz`` (or ``name``) in ``directory``: ``per_class`` reviews in each of
    train/test x pos/neg, each ``words`` words with punctuation, capitals and a trailing newline.

    Returns ``{"train": {"pos": [text, ...], "neg": [...]}, "test": {...}, "path": tarball}``;
    the texts are ``str`` as written (ASCII).
    """
    directory, rng = _dir(directory), np.random.default_rng(seed)
    out: dict = {}
    members = {}
    for split in ("train", "test"):
        out[split] = {}
        for label in ("pos", "neg"):
            texts = []
            for i in range(per_class):
                chosen = [_REVIEW_WORDS[j] for j in rng.integers(0, len(_REVIEW_WORDS), size=words)]
                text = " ".join(chosen[:words // 2]) + ", " + " ".join(chosen[words // 2:]) + "!<br />\n"
                members[f"aclImdb/{split}/{label}/{i}_{7 if label == 'pos' else 2}.txt"] = text.encode()
                texts.append(text)
            out[split][label] = texts
    out["path"] = write_tar(os.path.join(directory, name), members)
    return out


# --- everything at once, in the reference's cache layout --------------------------------------

def write_data_home(root, seed: int = 0) -> dict:
    """Every dataset above under ``root`` as the reference's cache lays them out
    (``root/mnist``, ``root/fashion-mnist``, ``root/cifar``, ``root/uci_housing``, ``root/imikolov``,
    ``root/imdb``), with the writers' default sizes.  Point ``headrace.dataset.common.DATA_HOME`` at
    ``root`` to use them.  Returns ``{module: what its writer returned}`` (CIFAR as ``cifar10``/``cifar100``)."""
    root = _dir(root)
    return {
        "mnist": write_mnist(os.path.join(root, "mnist"), seed=seed),
        "fashion-mnist": write_mnist(os.path.join(root, "fashion-mnist"), seed=seed + 1),
        "cifar10": write_cifar10(os.path.join(root, "cifar"), seed=seed),
        "cifar100": write_cifar100(os.path.join(root, "cifar"), seed=seed),
        "uci_housing": write_uci_housing(os.path.join(root, "uci_housing"), seed=seed),
        "imikolov": write_imikolov(os.path.join(root, "imikolov"), seed=seed),
        "imdb": write_imdb(os.path.join(root, "imdb"), seed=seed),
    }
