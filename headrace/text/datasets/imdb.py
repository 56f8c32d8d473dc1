"""``paddle.text.Imdb``: IMDB movie reviews of ``aclImdb_v1.tar.gz`` (``data_file`` or the cache
``DATA_HOME/imdb``; nothing is downloaded).  The dictionary counts all train and test reviews
(words seen more than ``cutoff`` times); samples are (int ids array, int label array (1,)) with
positive reviews first (label 0), then negative (label 1)."""
from __future__ import annotations

import re

import numpy as np

from ...dataset import imdb as _v1
from ...dataset._text import imdb_dict, imdb_samples
from ...dataset.common import _check_exists_and_download
from ...io.dataset import Dataset

__all__ = ["Imdb"]


class Imdb(Dataset):
    """IMDB sentiment reviews (``mode`` 'train' or 'test')."""

    def __init__(self, data_file=None, mode="train", cutoff=150, download=True):
        if not isinstance(mode, str) or mode.lower() not in ("train", "test"):
            raise ValueError(f"mode should be 'train', 'test', but got {mode}")
        self.mode = mode.lower()
        self.data_file = _check_exists_and_download(data_file, _v1.URL, _v1.MD5, "imdb", download)
        self.word_idx = imdb_dict(self.data_file, re.compile(r"aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$"),
                                  cutoff)
        samples = imdb_samples(self.data_file, self.mode, self.word_idx)
        self.docs = [ids for ids, _ in samples]
        self.labels = [label for _, label in samples]

    def __getitem__(self, idx):
        return np.array(self.docs[idx]), np.array([self.labels[idx]])

    def __len__(self):
        return len(self.docs)
