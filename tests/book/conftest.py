"""Shared pieces of the book chapter tests: tiny data, the chapters' ``args``, loss parsing."""
import importlib.util
import re
import types

import numpy as np
import pytest

import headrace


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """The chapters save their inference models under relative paths: run them in a temp dir."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def chapter_args(num_epochs, use_gpu=False, enable_ce=True):
    """What the chapters' ``parse_args()`` returns (``enable_ce`` makes them seed their programs and
    read the data unshuffled, the reference's own continuous-evaluation setting)."""
    return types.SimpleNamespace(enable_ce=enable_ce, use_gpu=use_gpu, num_epochs=num_epochs)


def costs(text, pattern):
    """The floats printed by the chapter after ``pattern`` (a regex with one group)."""
    return [float(v) for v in re.findall(pattern, text)]


@pytest.fixture
def book_data(tmp_path_factory, monkeypatch):
    """Tiny learnable data in the real formats (``bookdata.py``) under a temporary ``DATA_HOME``,
    read by ``paddle.dataset``'s 1.x readers.  Until the datasets helper's ``headrace.dataset`` and
    ``tests/datafiles.py`` are merged, in-memory readers of the same layout stand in (``fake_datasets``)."""
    if importlib.util.find_spec("headrace.dataset") is None:
        return fake_datasets(monkeypatch)
    import headrace.dataset.common as common
    from tests.book.bookdata import write_book_data

    root = write_book_data(tmp_path_factory.mktemp("data_home"))
    monkeypatch.setattr(common, "DATA_HOME", root)
    return root


def _reader(samples):
    return lambda: iter(samples)


def fake_datasets(monkeypatch, seed=0):
    """Until the datasets helper's ``paddle.dataset`` lands: in-memory readers yielding samples of
    the real readers' layout (same fields, dtypes and shapes), on tiny learnable data."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=13).astype("float32")

    def housing(n):
        x = rng.normal(size=(n, 13)).astype("float32")
        return [(x[i], np.array([22.0 + 2.0 * x[i] @ w], "float32")) for i in range(n)]

    bases = {}

    def digits(n, channels, side):
        labels = rng.integers(0, 10, size=n)
        size = channels * side * side
        base = bases.setdefault(size, rng.uniform(-1, 1, size=(10, size)).astype("float32"))
        imgs = base[labels] + 0.3 * rng.normal(size=(n, channels * side * side)).astype("float32")
        return [(imgs[i], int(labels[i])) for i in range(n)]

    words = {f"w{i}": i for i in range(1999)}
    words["<unk>"] = len(words)

    def ngrams(n):
        starts = rng.integers(0, 60, size=n)          # 5-grams of a learnable successor pattern
        return [tuple(int(s) * 5 + k for k in range(5)) for s in starts]

    housing_train, housing_test = housing(200), housing(20)
    mnist_train, mnist_test = digits(64, 1, 28), digits(16, 1, 28)
    cifar_train, cifar_test = digits(8, 3, 32), digits(4, 3, 32)
    gram_train, gram_test = ngrams(200), ngrams(50)
    fake = types.SimpleNamespace(
        uci_housing=types.SimpleNamespace(train=lambda: _reader(housing_train), test=lambda: _reader(housing_test)),
        mnist=types.SimpleNamespace(train=lambda: _reader(mnist_train), test=lambda: _reader(mnist_test)),
        cifar=types.SimpleNamespace(train10=lambda: _reader(cifar_train), test10=lambda: _reader(cifar_test)),
        imikolov=types.SimpleNamespace(build_dict=lambda min_word_freq=50: dict(words),
                                       train=lambda word_idx, n: _reader(gram_train),
                                       test=lambda word_idx, n: _reader(gram_test)))
    monkeypatch.setattr(headrace, "dataset", fake, raising=False)
    return fake
