"""``paddle.text.UCIHousing``: the UCI housing table (``housing.data``) from ``data_file`` or the
reference's cache (``DATA_HOME/uci_housing``; nothing is downloaded).  Samples are (13 normalised
features, price (1,)) as arrays of the default dtype (float32); the first 80% of rows are 'train'."""
from __future__ import annotations

import numpy as np

from ...dataset import uci_housing as _v1
from ...dataset.common import _check_exists_and_download
from ...dataset._files import read_uci_housing
from ...io.dataset import Dataset

__all__ = ["UCIHousing"]


class UCIHousing(Dataset):
    """UCI housing prices (``mode`` 'train' or 'test')."""

    def __init__(self, data_file=None, mode="train", download=True):
        if not isinstance(mode, str) or mode.lower() not in ("train", "test"):
            raise ValueError(f"mode should be 'train' or 'test', but got {mode}")
        self.mode = mode.lower()
        self.data_file = _check_exists_and_download(data_file, _v1.URL, _v1.MD5, "uci_housing", download)
        train, test = read_uci_housing(self.data_file)
        self.data = train if self.mode == "train" else test
        from ...nn.tensor_misc import get_default_dtype

        self.dtype = get_default_dtype()

    def __getitem__(self, idx):
        row = self.data[idx]
        return np.array(row[:-1]).astype(self.dtype), np.array(row[-1:]).astype(self.dtype)

    def __len__(self):
        return len(self.data)
