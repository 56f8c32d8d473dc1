"""``fluid.DataFeeder``: turn a minibatch (a list of sample tuples) into an Executor feed dict.

As the reference's ``DataFeeder``: field ``i`` of every sample goes to ``feed_list[i]``; the
fields are stacked with ``np.array(..., dtype=var.dtype)`` and, when the stacked array has a
different rank from the variable and the variable's shape has at most one unknown dim, reshaped
to the variable's shape (a flat 784-vector per sample fills ``[-1, 1, 28, 28]``); unlike the
reference, an unknown leading dim is the number of samples, so samples never spill across rows.  We check more
than the reference: a field count, a value NumPy cannot convert, a reshape that does not fit, or a
known dim that differs is an error naming the variable (the reference defers most of these to the
executor).  Sequences (``lod_level > 0``) are not supported: headrace has no LoD tensors.
"""
from __future__ import annotations

import os

import numpy as np

from ..core import context
from ..core.errors import FeedError, fmt_shape
from ..core.variable import Variable

__all__ = ["DataFeeder"]


class DataFeeder:
    """``DataFeeder(feed_list, place, program=None)``: ``feed_list`` holds Variables or their names
    (looked up in ``program``'s global block, default the default main program)."""

    def __init__(self, feed_list, place, program=None):
        program = program if program is not None else context.default_main_program()
        if not isinstance(feed_list, (list, tuple)):
            raise TypeError(f"DataFeeder: feed_list must be a list of Variables or names, "
                            f"got {type(feed_list).__name__}")
        self.feed_vars = []
        for var in feed_list:
            if isinstance(var, str):
                if not program.global_block().has_var(var):
                    raise ValueError(f"DataFeeder: the program has no variable named {var!r}")
                var = program.global_block().var(var)
            if not isinstance(var, Variable):
                raise TypeError("Feed list should contain a list of variable")
            if var.lod_level > 0:
                raise NotImplementedError(
                    f"DataFeeder: variable {var.name!r} has lod_level={var.lod_level}; sequence (LoD) "
                    "feeds are not supported by headrace yet: pad the sequences to a fixed length "
                    "and declare the variable with lod_level=0")
            self.feed_vars.append(var)
        self.feed_names = [v.name for v in self.feed_vars]
        self.feed_shapes = [list(v.shape) for v in self.feed_vars]
        self.feed_dtypes = [v.dtype for v in self.feed_vars]
        self.feed_lod_level = [v.lod_level for v in self.feed_vars]
        self.place = place

    def feed(self, iterable) -> dict:
        """``{variable name: ndarray}`` for a minibatch: an iterable of samples, each a sequence
        with one field per variable of ``feed_list``."""
        columns = [[] for _ in self.feed_vars]
        for index, sample in enumerate(iterable):
            if not isinstance(sample, (list, tuple)) or len(sample) != len(columns):
                got = len(sample) if isinstance(sample, (list, tuple)) else type(sample).__name__
                raise FeedError(
                    f"DataFeeder: sample {index} has {got} fields, but feed_list has {len(columns)} "
                    f"variables {self.feed_names}: the number of fields in data does not match len(feed_list)")
            for column, field in zip(columns, sample):
                column.append(field)
        if not columns or not columns[0]:
            raise FeedError("DataFeeder.feed(): the minibatch is empty")
        return {var.name: _to_array(var, column) for var, column in zip(self.feed_vars, columns)}

    def feed_parallel(self, iterable, num_places=None):
        """One feed dict per place from one minibatch each (the reference's generator of dicts)."""
        minibatches = list(iterable)
        if num_places is not None and len(minibatches) != int(num_places):
            raise ValueError(f"DataFeeder.feed_parallel(): got {len(minibatches)} minibatches for "
                             f"{int(num_places)} places; give one minibatch per place")
        for minibatch in minibatches:
            yield self.feed(minibatch)


    def decorate_reader(self, reader, multi_devices, num_places=None, drop_last=True):
        """A reader of feed dicts from a reader of minibatches; with ``multi_devices``, of lists of
        ``num_places`` feed dicts (default: the ``CPU_NUM`` environment variable, else 1), and a last
        group short of minibatches is dropped (``drop_last=False`` is an error, as the reference)."""
        def feed_reader():
            if not multi_devices:
                for minibatch in reader():
                    yield self.feed(minibatch)
                return
            count = int(num_places) if num_places is not None else int(os.environ.get("CPU_NUM", "1"))
            group = []
            for minibatch in reader():
                group.append(minibatch)
                if len(group) == count:
                    yield list(self.feed_parallel(group, count))
                    group = []
            if group and not drop_last:
                raise ValueError(f"DataFeeder.decorate_reader: the last {len(group)} minibatches do not fill "
                                 f"{count} places; only dropping them (drop_last=True) is implemented")

        return feed_reader


def _to_array(var, column) -> np.ndarray:
    try:
        arr = np.array(column, dtype=var.dtype.numpy)
    except (ValueError, TypeError) as exc:
        raise FeedError(f"DataFeeder: variable {var.name!r} (shape {fmt_shape(var.shape)}, dtype {var.dtype}): "
                        f"the sample fields cannot be stacked into one array: {exc}") from None
    shape = list(var.shape)
    if arr.ndim != len(shape) and sum(d < 0 for d in shape) <= 1:
        target = [len(column)] + shape[1:] if shape and shape[0] < 0 else shape
        try:
            arr = arr.reshape(target)
        except ValueError:
            raise FeedError(f"DataFeeder: variable {var.name!r}: reshape error, what is defined in the data layer "
                            f"is {fmt_shape(shape)}, but received {fmt_shape(arr.shape)}") from None
    if arr.ndim != len(shape) or any(d >= 0 and d != a for d, a in zip(shape, arr.shape)):
        raise FeedError(f"DataFeeder: variable {var.name!r}: shape not match, what is defined in the data layer "
                        f"is {fmt_shape(shape)}, but received {fmt_shape(arr.shape)}")
    return arr
