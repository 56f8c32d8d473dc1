"""Batch assembly for ``paddle.io.DataLoader``: ``default_collate_fn`` and ``default_convert_fn``
(the reference's rules) and the walks over nested batches the loader uses.

``default_collate_fn(samples)`` goes down the structure of the first sample: NumPy arrays are
stacked along a new axis 0, Tensors too (giving a Tensor), Python numbers become one NumPy array,
strings/bytes stay a list, dicts collate per key and lists/tuples per position (every sample must
have the same number of fields). Arrays of different shapes are a ``ShapeError`` naming the
field, the sample's position in the batch and both shapes (the loader adds the dataset index).
"""
from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from ..core.errors import ShapeError, fmt_shape


class CollateShapeError(ShapeError):
    """Samples of one batch whose arrays differ in shape (``position``: the first odd sample's
    place in the batch; ``field``: where in the sample, e.g. ``[0]`` or ``['image']``)."""

    def __init__(self, message, position=None, field=""):
        super().__init__(message)
        self.position = position
        self.field = field


def _tensor_type():
    from ..eager.tensor import Tensor

    return Tensor


def _stack(arrays, field):
    first = np.shape(arrays[0])
    for position, arr in enumerate(arrays):
        if np.shape(arr) != first:
            where = f"field {field}" if field else "the samples"
            raise CollateShapeError(
                f"default_collate_fn: {where}: sample {position} of the batch has shape "
                f"{fmt_shape(np.shape(arr))}, but sample 0 has shape {fmt_shape(first)}; samples of a "
                "batch must agree in shape (pad them, or pass a collate_fn)", position, field)
    return np.stack(arrays, axis=0)


def _collate(batch, field):
    sample = batch[0]
    tensor = _tensor_type()
    if isinstance(sample, np.ndarray):
        return _stack(batch, field)
    if isinstance(sample, tensor):
        return tensor(_stack([t.numpy() for t in batch], field))
    if isinstance(sample, numbers.Number):
        return np.array(batch)
    if isinstance(sample, (str, bytes)):
        return batch
    if isinstance(sample, Mapping):
        return {key: _collate([s[key] for s in batch], f"{field}[{key!r}]") for key in sample}
    if isinstance(sample, Sequence):
        count = len(sample)
        for position, other in enumerate(batch):
            if len(other) != count:
                raise CollateShapeError(
                    f"default_collate_fn: {('field ' + field) if field else 'the samples'}: sample "
                    f"{position} of the batch has {len(other)} fields, but sample 0 has {count}",
                    position, field)
        return [_collate(list(column), f"{field}[{k}]") for k, column in enumerate(zip(*batch))]
    raise TypeError("default_collate_fn: a sample can only hold Tensors, numpy arrays, numbers, "
                    f"strings, dicts and lists/tuples of them, got {type(sample).__name__}"
                    + (f" at field {field}" if field else ""))


def default_collate_fn(batch):
    """Stack a list of samples into one batch (see the module docstring)."""
    if len(batch) == 0:
        raise ValueError("default_collate_fn: the batch is empty")
    return _collate(list(batch), "")


def default_convert_fn(batch):
    """The per-sample function when automatic batching is off (``batch_size=None``): arrays,
    Tensors, numbers and strings stay as they are; dicts and lists/tuples are walked (tuples
    become lists, as the reference)."""
    if isinstance(batch, (np.ndarray, _tensor_type(), str, bytes)):
        return batch
    if isinstance(batch, Mapping):
        return {key: default_convert_fn(batch[key]) for key in batch}
    if isinstance(batch, Sequence):
        return [default_convert_fn(d) for d in batch]
    return batch


def map_arrays(fn, batch):
    """``batch`` with every NumPy array and Tensor leaf replaced by ``fn(leaf)`` (tuples become
    lists; other leaves stay)."""
    if isinstance(batch, (np.ndarray, _tensor_type())):
        return fn(batch)
    if isinstance(batch, (str, bytes)):
        return batch
    if isinstance(batch, Mapping):
        return {key: map_arrays(fn, value) for key, value in batch.items()}
    if isinstance(batch, Sequence):
        return [map_arrays(fn, value) for value in batch]
    return batch


def to_numpy_leaves(batch):
    """Tensors become NumPy arrays (what crosses from a worker process)."""
    tensor = _tensor_type()
    return map_arrays(lambda x: x.numpy() if isinstance(x, tensor) else x, batch)


def flat_arrays(batch) -> list:
    """The array leaves of ``batch`` in order (depth first; dicts in their order)."""
    out = []
    map_arrays(out.append, batch)
    return out
