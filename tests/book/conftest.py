"""Shared pieces of the book chapter tests: tiny data, the chapters' ``args``, loss parsing."""
import re
import types

import pytest


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
    read by ``paddle.dataset``'s 1.x readers."""
    import headrace.dataset.common as common
    from tests.book.bookdata import write_book_data

    root = write_book_data(tmp_path_factory.mktemp("data_home"))
    monkeypatch.setattr(common, "DATA_HOME", root)
    return root
