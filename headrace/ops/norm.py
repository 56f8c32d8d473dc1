"""Normalization: ``batch_norm`` (per channel, with running statistics) and ``layer_norm``.

As in the reference, ``SavedVariance`` holds the *inverse* standard deviation ``1/sqrt(var + eps)``
and variances are biased (divided by the number of elements).  Statistics of float16 inputs are
float32; otherwise they share the input's dtype.  Kernels compute in the wider of the input's and
the statistics' dtype and return fresh arrays (``MeanOut``/``VarianceOut`` may later be handed the
buffers of ``Mean``/``Variance`` by the inplace pass).
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float16, float32
from ..core.errors import DTypeError, fmt_shape
from .elementwise import check_float
from .infer_helpers import prod
from .registry import optional, register

_LAYOUTS = ("NCHW", "NHWC", "AnyLayout")


def _stat_dtype(x_dtype):
    return float32 if x_dtype == float16 else x_dtype


def _check_epsilon(ctx):
    eps = ctx.attr("epsilon")
    if not 0.0 <= eps <= 1e-3:
        ctx.fail_attr("epsilon", "a value in [0, 0.001]", eps)
    return eps


def _check_vector(ctx, slot, size, dtype, what):
    """``slot`` must be a 1-D tensor of ``size`` elements (when known) and of ``dtype``."""
    shape = ctx.check_rank(slot, 1)
    if size >= 0 and shape[0] >= 0 and shape[0] != size:
        ctx.fail(slot, f"shape [{size}] ({what})", fmt_shape(shape))
    if ctx.dtype(slot) != dtype:
        ctx.fail(slot, f"dtype {dtype}", str(ctx.dtype(slot)), error=DTypeError)


# --- batch_norm --------------------------------------------------------------------------------
def _bn_channel_axis(ndim, layout):
    return ndim - 1 if layout == "NHWC" else 1


def _bn_infer(ctx):
    x_shape = ctx.check_rank("X", (2, 3, 4, 5))
    dtype = check_float(ctx, "X")
    layout = ctx.attr("data_layout")
    if layout not in _LAYOUTS:
        ctx.fail_attr("data_layout", "one of " + ", ".join(repr(v) for v in _LAYOUTS), layout)
    _check_epsilon(ctx)
    channels = x_shape[_bn_channel_axis(len(x_shape), layout)]
    stat_dtype = _stat_dtype(dtype)
    what = f"the channels of X {fmt_shape(x_shape)}, data_layout={layout}"
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        _check_vector(ctx, slot, channels, stat_dtype, what)
    if channels < 0:
        channels = ctx.shape("Mean")[0]
    ctx.set("Y", x_shape, dtype)
    for slot in ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance"):
        ctx.set(slot, (channels,), stat_dtype)


def _bn_kernel(ins, attrs):
    x, scale, bias, mean, var = ins["X"], ins["Scale"], ins["Bias"], ins["Mean"], ins["Variance"]
    axis = _bn_channel_axis(x.ndim, attrs["data_layout"])
    reduce_axes = tuple(i for i in range(x.ndim) if i != axis)
    bshape = [1] * x.ndim
    bshape[axis] = -1
    compute = np.result_type(x.dtype, mean.dtype)
    xc = x.astype(compute, copy=False)
    eps, momentum = attrs["epsilon"], attrs["momentum"]
    global_stats = (attrs["is_test"] and not attrs["trainable_statistics"]) or attrs["use_global_stats"]
    if global_stats:
        use_mean, use_var = mean.astype(compute), var.astype(compute)
        mean_out, var_out = mean.copy(), var.copy()
    else:
        use_mean = xc.mean(axis=reduce_axes)
        use_var = np.square(xc - use_mean.reshape(bshape)).mean(axis=reduce_axes)
        mean_out = momentum * mean + (1.0 - momentum) * use_mean
        var_out = momentum * var + (1.0 - momentum) * use_var
    inv_std = 1.0 / np.sqrt(use_var + eps)
    y = (xc - use_mean.reshape(bshape)) * (inv_std * scale).reshape(bshape) + bias.reshape(bshape)
    stat = mean.dtype
    return {"Y": y.astype(x.dtype, copy=False),
            "MeanOut": np.asarray(mean_out, dtype=stat), "VarianceOut": np.asarray(var_out, dtype=stat),
            "SavedMean": np.array(use_mean, dtype=stat), "SavedVariance": np.asarray(inv_std, dtype=stat)}


register(
    "batch_norm",
    inputs=["X", "Scale", "Bias", "Mean", "Variance"],
    outputs=["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"],
    attrs={"momentum": 0.9, "epsilon": 1e-5, "is_test": False, "data_layout": "NCHW",
           "use_global_stats": False, "trainable_statistics": False, "use_mkldnn": False},
    infer=_bn_infer,
    kernel=_bn_kernel,
    inplace={"MeanOut": "Mean", "VarianceOut": "Variance"},
    doc="Y = (X - mean) / sqrt(var + eps) * Scale + Bias per channel; batch statistics in training "
        "(running Mean/Variance updated with momentum), Mean/Variance in test mode",
)


# --- layer_norm --------------------------------------------------------------------------------
def _ln_infer(ctx):
    x_shape = ctx.shape("X")
    dtype = check_float(ctx, "X")
    axis = ctx.attr("begin_norm_axis")
    if not 0 < axis < len(x_shape):
        ctx.fail_attr("begin_norm_axis", f"an axis in [1, {len(x_shape) - 1}] for X {fmt_shape(x_shape)}", axis)
    _check_epsilon(ctx)
    left, right = prod(x_shape[:axis]), prod(x_shape[axis:])
    stat_dtype = _stat_dtype(dtype)
    what = f"the size of X {fmt_shape(x_shape)} from begin_norm_axis={axis} on"
    for slot in ("Scale", "Bias"):
        if ctx.has(slot):
            _check_vector(ctx, slot, right, stat_dtype, what)
    ctx.set("Y", x_shape, dtype)
    ctx.set("Mean", (left,), stat_dtype)
    ctx.set("Variance", (left,), stat_dtype)


def _ln_kernel(ins, attrs):
    x = ins["X"]
    axis = attrs["begin_norm_axis"]
    stat = np.float32 if x.dtype == np.float16 else x.dtype
    rows = x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1).astype(stat, copy=False)
    mean = rows.mean(axis=1)
    var = np.square(rows - mean[:, None]).mean(axis=1)
    y = (rows - mean[:, None]) / np.sqrt(var + attrs["epsilon"])[:, None]
    if ins.get("Scale") is not None:
        y = y * ins["Scale"]
    if ins.get("Bias") is not None:
        y = y + ins["Bias"]
    return {"Y": y.reshape(x.shape).astype(x.dtype, copy=False),
            "Mean": np.asarray(mean, dtype=stat), "Variance": np.asarray(var, dtype=stat)}


register(
    "layer_norm",
    inputs=["X", optional("Scale"), optional("Bias")],
    outputs=["Y", "Mean", "Variance"],
    attrs={"begin_norm_axis": 1, "epsilon": 1e-5},
    infer=_ln_infer,
    kernel=_ln_kernel,
    doc="Y = (X - mean) / sqrt(var + eps) * Scale + Bias, statistics over dims [begin_norm_axis, rank)",
)
