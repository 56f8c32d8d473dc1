"""``paddle.static.InputSpec``: the shape, dtype and name of a model input (for ``to_static`` /
saving signatures and for declaring feed variables)."""
from __future__ import annotations

import numbers

import numpy as np

from ..core.dtypes import convert_dtype
from ..core.variable import Variable


def _verify(shape) -> tuple:
    if isinstance(shape, numbers.Integral):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"InputSpec: shape must be a list or tuple of ints, got {type(shape).__name__}")
    dims = []
    for d in shape:
        if d is None:
            dims.append(-1)
        elif isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= -1:
            dims.append(int(d))
        else:
            raise ValueError(f"InputSpec: every dim must be a non-negative int, -1 or None, got {d!r} in {list(shape)}")
    return tuple(dims)


class InputSpec:
    """``InputSpec(shape, dtype='float32', name=None, stop_gradient=False)``; ``None`` dims become -1."""

    def __init__(self, shape, dtype="float32", name=None, stop_gradient=False):
        self.shape = _verify(shape)
        self.dtype = convert_dtype(dtype)
        self.name = name
        self.stop_gradient = bool(stop_gradient)

    @classmethod
    def from_tensor(cls, tensor, name=None) -> "InputSpec":
        from ..eager.tensor import Tensor

        if not isinstance(tensor, (Variable, Tensor)):
            raise ValueError(f"InputSpec.from_tensor: expected a Tensor or Variable, got {type(tensor).__name__}")
        return cls(tensor.shape, tensor.dtype, name or tensor.name)

    @classmethod
    def from_numpy(cls, ndarray, name=None) -> "InputSpec":
        ndarray = np.asarray(ndarray)
        return cls(ndarray.shape, ndarray.dtype, name)

    def batch(self, batch_size) -> "InputSpec":
        """Prepend a batch dim (in place; returns self)."""
        if isinstance(batch_size, (list, tuple)):
            if len(batch_size) != 1:
                raise ValueError(f"InputSpec.batch: batch_size must be one int, got {list(batch_size)}")
            batch_size = batch_size[0]
        if not isinstance(batch_size, numbers.Integral) or isinstance(batch_size, bool):
            raise TypeError(f"InputSpec.batch: batch_size must be an int, got {type(batch_size).__name__}")
        self.shape = _verify([batch_size, *self.shape])
        return self

    def unbatch(self) -> "InputSpec":
        """Drop the first dim (in place; returns self)."""
        if not self.shape:
            raise ValueError("Not support to unbatch a InputSpec when len(shape) == 0.")
        self.shape = self.shape[1:]
        return self

    def _create_feed_layer(self):
        from ..nn.static_layers import data

        return data(self.name, list(self.shape), self.dtype)

    def __repr__(self):
        return (f"InputSpec(shape={self.shape}, dtype={self.dtype}, name={self.name}, "
                f"stop_gradient={self.stop_gradient})")

    def __eq__(self, other):
        return type(self) is type(other) and (self.shape, self.dtype, self.name, self.stop_gradient) == \
            (other.shape, other.dtype, other.name, other.stop_gradient)

    def __hash__(self):
        return hash((self.shape, str(self.dtype), self.stop_gradient))
