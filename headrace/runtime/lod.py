"""``fluid.create_lod_tensor``: a LoDTensor carrying sequence lengths (level of detail).

headrace has no sequence (LoD) operators: a LoDTensor fed to a program gives its rows, and the
lengths stay with the Python object (``recursive_sequence_lengths()``).  That matches the reference
for the ops headrace has, which all ignore LoD (``embedding``, ``fc``, ...).  Fetched tensors carry
no LoD (the reference propagates it through such ops), so ``recursive_sequence_lengths()`` of a
fetched tensor is ``[]``.  Declaring a data variable with ``lod_level > 0`` for sequence ops is not
supported (``fluid.DataFeeder`` says so).
"""
from __future__ import annotations

import numpy as np

from .scope import LoDTensor

__all__ = ["create_lod_tensor", "valid_lengths"]


def valid_lengths(lengths, rows: int) -> bool:
    """Each level's lengths sum to the number of entries of the next level; the last to ``rows``."""
    for level, next_level in zip(lengths, lengths[1:]):
        if sum(level) != len(next_level):
            return False
    return not lengths or (all(n >= 0 for level in lengths for n in level) and sum(lengths[-1]) == rows)


def create_lod_tensor(data, recursive_seq_lens, place):
    """A LoDTensor of ``data`` (an ndarray, a LoDTensor, or a list of sequences of int ids, which
    becomes an int64 column) with the sequence lengths ``recursive_seq_lens`` (a list of levels)."""
    if isinstance(data, LoDTensor):
        return create_lod_tensor(np.array(data), recursive_seq_lens, place)
    if isinstance(data, list):
        lengths = [len(seq) for seq in data]
        if [lengths] != [list(level) for level in recursive_seq_lens]:
            raise ValueError(f"create_lod_tensor: data and recursive_seq_lens do not match: the sequences have "
                             f"lengths {lengths}, recursive_seq_lens is {recursive_seq_lens}")
        flat = np.concatenate([np.asarray(seq) for seq in data]).astype("int64").reshape(-1, 1)
        return create_lod_tensor(flat, recursive_seq_lens, place)
    if not isinstance(data, np.ndarray):
        raise TypeError(f"create_lod_tensor: data should be either a LoDTensor, a Numpy array or a list, "
                        f"got {type(data).__name__}")
    tensor = LoDTensor()
    tensor.set(data, place)
    tensor.set_recursive_sequence_lengths(recursive_seq_lens)
    if not tensor.has_valid_recursive_sequence_lengths():
        raise ValueError(f"create_lod_tensor: the provided lod info is invalid: recursive_seq_lens "
                         f"{recursive_seq_lens} for {data.shape[0]} rows")
    return tensor
