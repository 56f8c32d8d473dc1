"""Collective ops (``c_allreduce_sum``, ``c_reduce_sum``, ``c_broadcast``) and ``sync_batch_norm``.

A collective kernel talks to the other places through the *communicator* of the thread it runs
in: ``current_communicator()``.  The runtime installs one per place thread (``using(comm)``;
backends live in ``runtime/collective.py``: threads in one process now, processes later).  With
no communicator installed a program runs as a world of one place: every collective is the
identity, and ``sync_batch_norm`` equals ``batch_norm``.

``Communicator`` is the whole interface a backend implements.  Every method is called by every
rank of the group in the same order; results are identical on all ranks (sums run in rank order).
Methods never write into the arrays they are given; they return fresh arrays.

Gradients: the data-parallel pass inserts collectives after the backward, so they need none
(``NO_GRADIENT``).  ``sync_batch_norm_grad`` all-reduces the two per-channel sums the input
gradient needs; its ``Scale@GRAD``/``Bias@GRAD`` outputs are the *local* sums, which the
data-parallel pass all-reduces like any other parameter gradient.
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .norm import _BN_ATTRS, _bn_channel_axis, _bn_global_stats, _bn_infer, bn_grad_kernel
from .registry import many, register


class Communicator:
    """One rank's handle on a group of ``world_size`` ranks (the backend interface)."""

    rank = 0
    world_size = 1

    def all_reduce_sum(self, array: np.ndarray) -> np.ndarray:
        """The elementwise sum of every rank's ``array`` (same shape on all ranks)."""
        raise NotImplementedError

    def reduce_sum(self, array: np.ndarray, root: int) -> np.ndarray:
        """On ``root``: the sum of every rank's ``array``; elsewhere ``array`` unchanged."""
        raise NotImplementedError

    def broadcast(self, arrays: list, roots: list) -> list:
        """Array ``i`` of rank ``roots[i]`` on every rank (copies; an owner keeps its own)."""
        raise NotImplementedError

    def all_reduce_sum_many(self, arrays: list) -> list:
        """``all_reduce_sum`` of each array (one dtype) in one collective: by default the
        concatenation is all-reduced and cut up (each result owns its bytes)."""
        if not arrays:
            return []
        summed = self.all_reduce_sum(np.concatenate([np.asarray(a).reshape(-1) for a in arrays]))
        out, offset = [], 0
        for a in arrays:
            out.append(summed[offset:offset + a.size].reshape(a.shape).copy())
            offset += a.size
        return out

    def barrier(self) -> None:
        """Return once every rank has called it."""
        raise NotImplementedError

    def all_gather(self, array: np.ndarray) -> list:
        """Every rank's ``array`` (same shape and dtype on all ranks), in rank order."""
        raise NotImplementedError


class SoloCommunicator(Communicator):
    """A world of one place: every collective is the identity."""

    def all_reduce_sum(self, array):
        return array

    def reduce_sum(self, array, root):
        return array

    def broadcast(self, arrays, roots):
        return list(arrays)

    def all_reduce_sum_many(self, arrays):
        return list(arrays)

    def barrier(self):
        pass

    def all_gather(self, array):
        return [array]


_SOLO = SoloCommunicator()
_local = threading.local()
_process = [None]  # the process-wide communicator of a multi-process run (set_process_communicator)


def current_communicator() -> Communicator:
    """This thread's communicator (``using``), else the process's, else a world of one."""
    return getattr(_local, "comm", None) or _process[0] or _SOLO


def set_process_communicator(comm) -> None:
    """Make ``comm`` the communicator of every thread that installed none (``init_parallel_env``,
    ``fleet.init``: plain ``Executor.run`` and eager collectives then reach the other processes)."""
    _process[0] = comm


@contextlib.contextmanager
def using(comm: Communicator):
    """Install ``comm`` as this thread's communicator inside the block."""
    old = getattr(_local, "comm", None)
    _local.comm = comm
    try:
        yield comm
    finally:
        _local.comm = old


def _broadcast_infer(ctx):
    roots = ctx.attr("roots")
    if roots and len(roots) != ctx.count("X"):
        ctx.fail_attr("roots", f"one root per input ({ctx.count('X')})", roots)
    ctx.set_many("Out", list(zip(ctx.shapes("X"), ctx.dtypes("X"))))


_COMM_ATTRS = {"ring_id": 0, "use_calc_stream": True}

register(
    "c_allreduce_sum",
    inputs=["X"], outputs=["Out"], attrs=dict(_COMM_ATTRS),
    infer=lambda ctx: ctx.set("Out", ctx.shape("X"), ctx.dtype("X")),
    kernel=lambda ins, attrs, ctx: {"Out": current_communicator().all_reduce_sum(ins["X"])},
    grad=NO_GRADIENT, inplace={"Out": "X"}, views={"Out": "X"},
    doc="Out = the sum of X over every place of the group",
)

register(
    "c_reduce_sum",
    inputs=["X"], outputs=["Out"], attrs={**_COMM_ATTRS, "root_id": 0},
    infer=lambda ctx: ctx.set("Out", ctx.shape("X"), ctx.dtype("X")),
    kernel=lambda ins, attrs, ctx: {"Out": current_communicator().reduce_sum(ins["X"], attrs["root_id"])},
    grad=NO_GRADIENT, inplace={"Out": "X"}, views={"Out": "X"},
    doc="on place `root_id`: Out = the sum of X over every place; elsewhere Out = X",
)

register(
    "c_broadcast",
    inputs=[many("X")], outputs=[many("Out")], attrs={**_COMM_ATTRS, "root": 0, "roots": []},
    infer=_broadcast_infer,
    kernel=lambda ins, attrs, ctx: {"Out": current_communicator().broadcast(
        ins["X"], attrs["roots"] or [attrs["root"]] * len(ins["X"]))},
    grad=NO_GRADIENT, inplace={"Out": "X"}, views={"Out": "X"},
    doc="Out[i] = X[i] of place roots[i] (or of `root` when roots is empty) on every place: "
        "several tensors in one collective",
)


# --- sync_batch_norm ------------------------------------------------------------------------------
def _layout(x, attrs):
    axis = _bn_channel_axis(x.ndim, attrs["data_layout"])
    channels = x.shape[axis]
    view = (int(np.prod(x.shape[:axis], dtype=np.int64)), channels, -1)
    return channels, view


def _sync_bn_kernel(ins, attrs, ctx):
    """batch_norm whose batch statistics cover every place's slice: the mean from all-reduced
    per-channel sums and element counts, then the (biased) variance from all-reduced sums of
    squared deviations (two passes, as accurate as the one-place kernel)."""
    x, scale, bias, mean, var = ins["X"], ins["Scale"], ins["Bias"], ins["Mean"], ins["Variance"]
    channels, view = _layout(x, attrs)
    compute = np.result_type(x.dtype, mean.dtype)
    x3 = x.reshape(view).astype(compute, copy=False)
    eps, momentum = attrs["epsilon"], attrs["momentum"]
    comm = current_communicator()
    if _bn_global_stats(attrs):
        use_mean, use_var = mean.astype(compute), var.astype(compute)
        mean_out, var_out = mean.copy(), var.copy()
    else:
        packed = np.empty(channels + 1, dtype=np.float64)
        packed[:channels] = x3.sum(axis=(0, 2), dtype=np.float64)
        packed[channels] = x3.shape[0] * x3.shape[2]
        packed = comm.all_reduce_sum(packed)
        count = packed[channels]
        use_mean = (packed[:channels] / count).astype(compute)
        dev = np.square(x3 - use_mean.reshape(1, -1, 1)).sum(axis=(0, 2), dtype=np.float64)
        use_var = (comm.all_reduce_sum(dev) / count).astype(compute)
        mean_out = momentum * mean + (1.0 - momentum) * use_mean
        var_out = momentum * var + (1.0 - momentum) * use_var
    inv_std = 1.0 / np.sqrt(use_var + eps)
    y = (x3 - use_mean.reshape(1, -1, 1)) * (inv_std * scale).reshape(1, -1, 1) + bias.reshape(1, -1, 1)
    stat = mean.dtype
    return {"Y": y.reshape(x.shape).astype(x.dtype, copy=False),
            "MeanOut": np.asarray(mean_out, dtype=stat), "VarianceOut": np.asarray(var_out, dtype=stat),
            "SavedMean": np.array(use_mean, dtype=stat), "SavedVariance": np.asarray(inv_std, dtype=stat)}


def _global_batch_means(dscale, dbias, count):
    """sync_batch_norm's X@GRAD subtracts the means over the global batch: this place's sums of
    dY and dY * x_hat and its count are all-reduced (Scale@GRAD / Bias@GRAD stay this place's sums,
    combined later by the gradient all-reduce)."""
    channels = dscale.shape[0]
    packed = np.empty(2 * channels + 1, dtype=np.float64)
    packed[:channels], packed[channels:2 * channels] = dbias, dscale
    packed[2 * channels] = count
    packed = current_communicator().all_reduce_sum(packed)
    m = packed[2 * channels]
    return (packed[channels:2 * channels] / m).astype(dscale.dtype), (packed[:channels] / m).astype(dbias.dtype)


register(
    "sync_batch_norm",
    inputs=["X", "Scale", "Bias", "Mean", "Variance"],
    outputs=["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"],
    attrs=dict(_BN_ATTRS),
    infer=_bn_infer,
    kernel=_sync_bn_kernel,
    grad=Gradient(bn_grad_kernel(_global_batch_means), inputs=("X", "Scale"),
                  outputs=("SavedMean", "SavedVariance"), output_grads=("Y",),
                  input_grads=("X", "Scale", "Bias"),
                  like={grad_slot("X"): "X", grad_slot("Scale"): "Scale", grad_slot("Bias"): "Scale"}),
    inplace={"MeanOut": "Mean", "VarianceOut": "Variance"},
    doc="batch_norm with batch statistics over every place of the group (the global batch)",
)

