"""``paddle.text.Imikolov``: the PTB language-model data of ``simple-examples.tgz`` (``data_file`` or
the cache ``DATA_HOME/imikolov``; nothing is downloaded).  The dictionary is built from
``ptb.train.txt`` and ``ptb.valid.txt`` (words seen more than ``min_word_freq`` times); ``mode``
'train' reads ``ptb.train.txt`` and 'test' ``ptb.test.txt``, as the reference's 2.x class.
'NGRAM' samples are tuples of ``window_size`` 0-d int arrays; 'SEQ' samples (src, trg) int arrays."""
from __future__ import annotations

import numpy as np

from ...dataset import imikolov as _v1
from ...dataset._text import imikolov_dict, imikolov_samples
from ...dataset.common import _check_exists_and_download
from ...io.dataset import Dataset

__all__ = ["Imikolov"]


class Imikolov(Dataset):
    """imikolov / PTB n-gram or sequence samples."""

    def __init__(self, data_file=None, data_type="NGRAM", window_size=-1, mode="train", min_word_freq=50,
                 download=True):
        if not isinstance(data_type, str) or data_type.upper() not in ("NGRAM", "SEQ"):
            raise ValueError(f"data type should be 'NGRAM', 'SEQ', but got {data_type}")
        if not isinstance(mode, str) or mode.lower() not in ("train", "test"):
            raise ValueError(f"mode should be 'train', 'test', but got {mode}")
        self.data_type, self.mode = data_type.upper(), mode.lower()
        self.window_size, self.min_word_freq = window_size, min_word_freq
        self.data_file = _check_exists_and_download(data_file, _v1.URL, _v1.MD5, "imikolov", download)
        self.word_idx = imikolov_dict(self.data_file, min_word_freq)
        self.data = imikolov_samples(self.data_file, self.mode, self.word_idx, window_size, self.data_type)

    def __getitem__(self, idx):
        return tuple(np.array(d) for d in self.data[idx])

    def __len__(self):
        return len(self.data)
