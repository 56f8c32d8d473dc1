"""``paddle.dataset.imdb`` (1.x): IMDB sentiment data of ``aclImdb_v1.tar.gz`` in ``DATA_HOME/imdb``
(the reference's cache name ``imdb%2FaclImdb_v1.tar.gz``, or ``aclImdb_v1.tar.gz``; nothing is
downloaded).

Reviews are tokenised as the reference: trailing newlines and ASCII punctuation removed,
lower-cased, split on whitespace (words are ``bytes``).  ``word_dict()`` numbers the words seen more
than 150 times in train and test, most frequent first, ``'<unk>'`` last.  ``train(word_idx)`` /
``test(word_idx)`` give (list of ids, label) samples: positive reviews first (label 0), then
negative ones (label 1), as the reference.
"""
from __future__ import annotations

import re

from . import common
from ._text import imdb_dict, imdb_samples, imdb_tokenize

__all__ = ["build_dict", "tokenize", "word_dict", "train", "test", "fetch"]

URL = "https://dataset.bj.bcebos.com/imdb%2FaclImdb_v1.tar.gz"
MD5 = "7c2ac02c03563afcf9b574c7e56c153a"


def _path():
    return common.download(URL, "imdb", MD5)


def tokenize(pattern):
    """Token lists of the reviews whose archive name matches the compiled ``pattern``."""
    return imdb_tokenize(_path(), pattern)


def build_dict(pattern, cutoff):
    """``{word: id}`` over the reviews matching ``pattern``: words seen more than ``cutoff`` times."""
    return imdb_dict(_path(), pattern, cutoff)


def _creator(split, word_idx):
    samples = imdb_samples(_path(), split, word_idx)

    def reader():
        yield from samples

    return reader


def train(word_idx):
    """Reader creator over ``aclImdb/train``: (ids, label) with label 0 positive, 1 negative."""
    return _creator("train", word_idx)


def test(word_idx):
    """Reader creator over ``aclImdb/test``: (ids, label) with label 0 positive, 1 negative."""
    return _creator("test", word_idx)


def word_dict():
    """The word dictionary of all reviews (train and test), cutoff 150 as the reference."""
    return build_dict(re.compile(r"aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$"), 150)


def fetch():
    """Check that the IMDB tarball is in the cache (raises saying where to put it if not)."""
    _path()
