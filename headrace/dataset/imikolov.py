"""``paddle.dataset.imikolov`` (1.x): the PTB language-model data of ``simple-examples.tgz`` in
``DATA_HOME/imikolov`` (the reference's cache name ``imikolov%2Fsimple-examples.tgz``, or
``simple-examples.tgz``; nothing is downloaded).

``build_dict(min_word_freq=50)`` counts ``ptb.train.txt`` and ``ptb.valid.txt`` (plus one ``'<s>'``
and ``'<e>'`` per line) and numbers the words seen more than ``min_word_freq`` times, most frequent
first, ``'<unk>'`` last.  ``train(word_idx, n, data_type)`` reads ``ptb.train.txt``, ``test(...)``
``ptb.valid.txt`` (as the reference): ``DataType.NGRAM`` samples are tuples of ``n`` consecutive ids
of ``<s> line <e>``; ``DataType.SEQ`` samples are (``<s>`` + ids, ids + ``<e>``) lists, lines longer
than ``n`` skipped when ``n > 0``.  Words are ``bytes`` keys, as the reference reads them.
"""
from __future__ import annotations

from . import common
from ._text import imikolov_dict, imikolov_samples

__all__ = ["DataType", "build_dict", "train", "test", "fetch"]

URL = "https://dataset.bj.bcebos.com/imikolov%2Fsimple-examples.tgz"
MD5 = "30177ea32e27c525793142b6bf2c8e2d"


class DataType:
    """Sample kinds: ``NGRAM`` (n-gram tuples) or ``SEQ`` (source/target sequences)."""

    NGRAM = 1
    SEQ = 2


def _path():
    return common.download(URL, "imikolov", MD5)


def build_dict(min_word_freq=50):
    """``{word: id}`` of the words seen more than ``min_word_freq`` times, ``'<unk>'`` last."""
    return imikolov_dict(_path(), min_word_freq)


def _creator(split, word_idx, n, data_type):
    kinds = {DataType.NGRAM: "NGRAM", DataType.SEQ: "SEQ"}
    if data_type not in kinds:
        raise ValueError(f"data_type should be DataType.NGRAM or DataType.SEQ, got {data_type!r}")
    path = _path()

    def reader():
        yield from imikolov_samples(path, split, word_idx, n, kinds[data_type])

    return reader


def train(word_idx, n, data_type=DataType.NGRAM):
    """Reader creator over ``ptb.train.txt`` (n-gram tuples, or (src, trg) lists for ``DataType.SEQ``)."""
    return _creator("train", word_idx, n, data_type)


def test(word_idx, n, data_type=DataType.NGRAM):
    """Reader creator over ``ptb.valid.txt`` (the reference's 1.x test split)."""
    return _creator("valid", word_idx, n, data_type)


def fetch():
    """Check that the imikolov tarball is in the cache (raises saying where to put it if not)."""
    _path()
