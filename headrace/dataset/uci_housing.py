"""``paddle.dataset.uci_housing`` (1.x): the UCI housing reader creators over ``DATA_HOME/uci_housing/housing.data``.

Each sample is ``(features, price)``: the 13 features normalised as the reference
(``(x - mean) / (max - min)`` over the whole file; a constant column becomes 0 rather than the
reference's NaN) as a float64 array of shape (13,), and the price as a float64 array of shape (1,)
(the reference's ``d[:-1], d[-1:]`` of the float64 table; ``DataFeeder`` casts to the feed's dtype).
The first 80% of the rows are the training set, the rest the test set.  The file is read each time
a creator is called (the reference caches the first file it read in module globals).
"""
from __future__ import annotations

from . import common
from ._files import read_uci_housing

__all__ = ["train", "test", "predict_reader", "fetch", "feature_names"]

URL = "http://paddlemodels.bj.bcebos.com/uci_housing/housing.data"
MD5 = "d4accdce7a25600298819f8e28e8d593"
feature_names = ["CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX", "PTRATIO", "B", "LSTAT"]


def _reader(rows):
    def reader():
        for d in rows:
            yield d[:-1], d[-1:]

    return reader


def train():
    """UCI housing training set creator: a reader of (float64 (13,) features, float64 (1,) price)."""
    return _reader(read_uci_housing(common.download(URL, "uci_housing", MD5))[0])


def test():
    """UCI housing test set creator: a reader of (float64 (13,) features, float64 (1,) price)."""
    return _reader(read_uci_housing(common.download(URL, "uci_housing", MD5))[1])


def predict_reader():
    """The first test sample's features, as a one-tuple (the reference's inference example)."""
    return (read_uci_housing(common.download(URL, "uci_housing", MD5))[1][0][:-1],)


def fetch():
    """Check that ``housing.data`` is in the cache (raises saying where to put it if not)."""
    common.download(URL, "uci_housing", MD5)
