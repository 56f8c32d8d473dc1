"""Normalization: ``batch_norm`` (per channel, with running statistics) and ``layer_norm``.

As in the reference, ``SavedVariance`` holds the *inverse* standard deviation ``1/sqrt(var + eps)``
and variances are biased (divided by the number of elements).  Statistics of float16 inputs are
float32; otherwise they share the input's dtype.  Kernels compute in the wider of the input's and
the statistics' dtype and return fresh arrays (``MeanOut``/``VarianceOut`` may later be handed the
buffers of ``Mean``/``Variance`` by the inplace pass).

Gradients flow through ``Y`` only (the statistics outputs are not differentiated, as in the
reference); the moving ``Mean``/``Variance`` inputs get none.  ``batch_norm_grad`` reads the
statistics the forward normalized with (``SavedMean``/``SavedVariance``), ``layer_norm_grad`` the
row ``Mean``/``Variance`` outputs.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float16, float32
from ..core.errors import DTypeError, fmt_shape
from .elementwise import check_float
from .infer_helpers import prod
from .gradrule import Gradient, grad_slot
from .parallel import chunked
from .rowblocks import block_count, combine, for_blocks, row_dots, row_sums
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


_BN_ATTRS = {"momentum": 0.9, "epsilon": 1e-5, "is_test": False, "data_layout": "NCHW",
             "use_global_stats": False, "trainable_statistics": False, "use_mkldnn": False}


def _bn_global_stats(attrs) -> bool:
    """Whether batch_norm normalizes with the moving Mean/Variance instead of batch statistics."""
    return bool((attrs["is_test"] and not attrs["trainable_statistics"]) or attrs["use_global_stats"])


def _bn_kernel(ins, attrs, ctx):
    """Over a [pre, C, post] view (no transposes for NCHW or NHWC), in one fresh array: y = x -
    mean, var = mean(y * y) per channel (the variance by einsum), then y *= Scale / sqrt(var + eps)
    and y += Bias in place.  The element-wise passes run on pieces of ``pre`` on threads (``chunked``);
    the per-channel sums stay whole, so results are bit-identical for any thread count."""
    x, scale, bias, mean, var = ins["X"], ins["Scale"], ins["Bias"], ins["Mean"], ins["Variance"]
    axis = _bn_channel_axis(x.ndim, attrs["data_layout"])
    x3 = x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), x.shape[axis], -1)
    compute = np.result_type(x.dtype, mean.dtype)
    count = compute.type(x3.shape[0] * x3.shape[2])
    eps, momentum = attrs["epsilon"], attrs["momentum"]
    if _bn_global_stats(attrs):
        use_mean, use_var = mean.astype(compute), var.astype(compute)
        mean_out, var_out = mean.copy(), var.copy()
        y = _centered(x3, use_mean, compute)
    else:
        use_mean = np.sum(x3, axis=(0, 2), dtype=compute) / count   # (einsum: ~100x less accurate on 4M values)
        y = _centered(x3, use_mean, compute)
        use_var = np.einsum("pcs,pcs->c", y, y) / count
        mean_out = momentum * mean + (1.0 - momentum) * use_mean
        var_out = momentum * var + (1.0 - momentum) * use_var
    inv_std = 1.0 / np.sqrt(use_var + eps)
    chunked(_scale_shift, y, (inv_std * scale).astype(compute, copy=False).reshape(1, -1, 1),
            bias.astype(compute, copy=False).reshape(1, -1, 1))
    stat = mean.dtype
    return {"Y": y.reshape(x.shape).astype(x.dtype, copy=False),
            "MeanOut": np.asarray(mean_out, dtype=stat), "VarianceOut": np.asarray(var_out, dtype=stat),
            "SavedMean": np.array(use_mean, dtype=stat), "SavedVariance": np.asarray(inv_std, dtype=stat)}


def local_batch_means(dscale, dbias, count):
    """The per-channel means of dY * x_hat and dY over this batch (``count`` values a channel)."""
    return dscale / count, dbias / count


def bn_grad_kernel(batch_means):
    """The batch_norm gradient kernel; ``batch_means(dscale, dbias, count)`` turns this batch's
    per-channel sums into the means X@GRAD subtracts (sync_batch_norm averages over every place)."""
    def kernel(ins, attrs, ctx):
        return _bn_grad(ins, attrs, ctx.wanted, batch_means)
    kernel.__doc__ = _bn_grad.__doc__
    return kernel


def _bn_grad(ins, attrs, wanted, batch_means):
    """Bias@GRAD = sum(dY); Scale@GRAD = sum(dY * x_hat) with x_hat = (X - SavedMean) * SavedVariance;
    X@GRAD = Scale * inv_std * (dY - mean(dY) - x_hat * mean(dY * x_hat)) with batch statistics,
    or Scale * inv_std * dY with the moving ones (then the statistics do not depend on X).

    In both modes the forward saved the statistics it normalized with (SavedMean and the inverse
    std in SavedVariance; from Mean/Variance in the moving-statistics mode), so they are read
    there.  Sums run over [pre, C, post] views: no transposes for NCHW or NHWC."""
    x, scale, dy = ins["X"], ins["Scale"], ins[grad_slot("Y")]
    mean, inv_std = ins["SavedMean"], ins["SavedVariance"]
    axis = _bn_channel_axis(x.ndim, attrs["data_layout"])
    channels = x.shape[axis]
    view = (int(np.prod(x.shape[:axis], dtype=np.int64)), channels, -1)
    compute = np.result_type(x.dtype, mean.dtype)
    dy3 = dy.reshape(view).astype(compute, copy=False)
    want_dx, global_stats = grad_slot("X") in wanted, _bn_global_stats(attrs)
    batch_dx = want_dx and not global_stats   # needs the sums below; moving statistics do not
    result = {}
    if grad_slot("Bias") in wanted or batch_dx:
        dbias = dy3.sum(axis=(0, 2))   # (not einsum: see the mean in _bn_kernel)
        if grad_slot("Bias") in wanted:
            result[grad_slot("Bias")] = dbias.astype(scale.dtype, copy=False)
    if grad_slot("Scale") in wanted or batch_dx:
        x_c = _centered(x.reshape(view), mean, compute)    # X - SavedMean in a fresh buffer
        dscale = np.einsum("pcs,pcs->c", dy3, x_c) * inv_std.astype(compute, copy=False)
        if grad_slot("Scale") in wanted:
            result[grad_slot("Scale")] = dscale.astype(scale.dtype, copy=False)
    if want_dx:
        factor = (scale * inv_std).astype(compute, copy=False).reshape(1, -1, 1)
        if global_stats:
            dx = dy3 * factor
        else:
            dscale_mean, dbias_mean = batch_means(dscale, dbias, x.size // channels)
            dx = bn_input_grad(dy3, x_c, dscale_mean * inv_std, dbias_mean, factor)
        result[grad_slot("X")] = dx.reshape(x.shape).astype(x.dtype, copy=False)
    return result


def bn_input_grad(dy3, x_c, x_c_factor, dbias_mean, factor):
    """Batch-statistics X@GRAD over [pre, C, post] views: ``factor * (dy - dbias_mean - x_c *
    x_c_factor)`` per channel (x_c = X - mean, x_c_factor = inv_std * mean(dY * x_hat): the
    x_hat term), built in ``x_c``'s buffer (pieces of ``pre`` on threads)."""
    def piece(dy, x_c_factor, dbias_mean, factor, out):   # out: the piece of x_c
        out *= x_c_factor
        out += dbias_mean
        np.subtract(dy, out, out=out)
        out *= factor
    return chunked(piece, x_c, dy3, x_c_factor.reshape(1, -1, 1), dbias_mean.reshape(1, -1, 1), factor)


def _centered(x3, mean, compute):
    """Fresh ``x3 - mean`` per channel of a [pre, C, post] view, in ``compute`` dtype, on pieces
    of ``pre`` on threads."""
    return chunked(lambda x, m, out: np.subtract(x, m, out=out), np.empty(x3.shape, compute), x3,
                   mean.reshape(1, -1, 1))


def _scale_shift(scale, shift, y):
    y *= scale
    y += shift


register(
    "batch_norm",
    inputs=["X", "Scale", "Bias", "Mean", "Variance"],
    outputs=["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"],
    attrs=dict(_BN_ATTRS),
    infer=_bn_infer,
    kernel=_bn_kernel,
    grad=Gradient(bn_grad_kernel(local_batch_means), inputs=("X", "Scale"),
                  outputs=("SavedMean", "SavedVariance"), output_grads=("Y",),
                  input_grads=("X", "Scale", "Bias"),
                  like={grad_slot("X"): "X", grad_slot("Scale"): "Scale", grad_slot("Bias"): "Scale"}),
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


def _ln_kernel(ins, attrs, ctx):
    """Per row: y = x - mean, var = mean(y * y), y *= 1 / sqrt(var + eps), then Scale and Bias, in
    one fresh array; rows in blocks on threads (``rowblocks``; one block when not split)."""
    x, scale, bias = ins["X"], ins.get("Scale"), ins.get("Bias")
    axis = attrs["begin_norm_axis"]
    stat = np.float32 if x.dtype == np.float16 else x.dtype.type
    rows = np.ascontiguousarray(x.reshape(prod(x.shape[:axis]), prod(x.shape[axis:])))
    y, mean, var = np.empty(rows.shape, stat), np.empty(rows.shape[0], stat), np.empty(rows.shape[0], stat)
    eps, width = stat(attrs["epsilon"]), stat(rows.shape[1])

    def normalize(index, start, stop):
        x, out, mu, sigma2 = rows[start:stop].astype(stat, copy=False), y[start:stop], mean[start:stop], var[start:stop]
        np.divide(row_sums(x, out=mu), width, out=mu)
        np.subtract(x, mu[:, None], out=out)
        np.divide(row_dots(out, out, out=sigma2), width, out=sigma2)
        out *= (1 / np.sqrt(sigma2 + eps))[:, None]
        if scale is not None:
            out *= scale
        if bias is not None:
            out += bias
    for_blocks(normalize, *rows.shape, rowwise=True)
    return {"Y": y.reshape(x.shape).astype(x.dtype, copy=False), "Mean": mean, "Variance": var}


_LN_BLOCKS = 16   # at most: the column sums' partials of wide rows take at most 32 rows' memory


def _ln_grad_kernel(ins, attrs, ctx):
    """Per row (the dims from begin_norm_axis on), with x_hat = (x - mean) * inv_std and
    g = dY * Scale: X@GRAD = inv_std * (g - mean(g) - x_hat * mean(g * x_hat));
    Scale@GRAD = column sums of dY * x_hat; Bias@GRAD = column sums of dY.  Block by block of
    rows (``rowblocks``), the column sums as per-block partials added in block order."""
    mean, compute, wanted = ins["Mean"], ins["Mean"].dtype, ctx.wanted
    rows = np.ascontiguousarray(ins["X"].reshape(mean.shape[0], prod(ins["X"].shape[attrs["begin_norm_axis"]:])))
    dy = np.ascontiguousarray(ins[grad_slot("Y")].reshape(rows.shape))
    inv_std = 1.0 / np.sqrt(ins["Variance"] + np.asarray(attrs["epsilon"], compute))
    dx = np.empty(rows.shape, compute) if grad_slot("X") in wanted else None
    sums = np.empty((block_count(*rows.shape, _LN_BLOCKS), 2, rows.shape[1]), compute)   # dY * x_hat, dY

    def block(index, start, stop):
        _ln_grad_rows(rows[start:stop], dy[start:stop].astype(compute, copy=False), mean[start:stop],
                      inv_std[start:stop], ins.get("Scale"), None if dx is None else dx[start:stop],
                      sums[index], wanted)
    for_blocks(block, *rows.shape, _LN_BLOCKS)
    result = {}
    for index, slot in enumerate(("Scale", "Bias")):
        if grad_slot(slot) in wanted:
            result[grad_slot(slot)] = combine(sums[:, index]).astype(ins[slot].dtype, copy=False)
    if dx is not None:
        result[grad_slot("X")] = dx.reshape(ins["X"].shape).astype(ins["X"].dtype, copy=False)
    return result


def _ln_grad_rows(x, dy, mean, inv_std, scale, dx, sums, wanted):
    """One block of rows of the layer_norm gradient, with xc = x - mean and dy_s = dY * inv_std
    (so dy_s * xc = dY * x_hat and h = dy_s * Scale = g * inv_std):
    Scale@GRAD partial = column sums of dy_s * xc; Bias@GRAD partial = column sums of dY;
    X@GRAD = h - mean(h) - xc * inv_std^2 * mean(h * xc)  (= inv_std * (g - mean(g) - x_hat * mean(g x_hat)))."""
    if grad_slot("Bias") in wanted:
        np.einsum("ij->j", dy, out=sums[1])
    if dx is None and grad_slot("Scale") not in wanted:
        return
    xc = np.subtract(x, mean[:, None], dtype=dy.dtype)
    dy_s = np.multiply(dy, inv_std[:, None], out=dx if dx is not None else None)
    if grad_slot("Scale") in wanted:
        np.einsum("ij,ij->j", dy_s, xc, out=sums[0])
    if dx is not None:
        h = np.multiply(dy_s, scale, out=dy_s) if scale is not None else dy_s    # in dx's memory
        width = dy.dtype.type(x.shape[1])
        xc *= (row_dots(h, xc) / width * inv_std * inv_std)[:, None]
        xc += (row_sums(h) / width)[:, None]
        h -= xc


register(
    "layer_norm",
    inputs=["X", optional("Scale"), optional("Bias")],
    outputs=["Y", "Mean", "Variance"],
    attrs={"begin_norm_axis": 1, "epsilon": 1e-5},
    infer=_ln_infer,
    kernel=_ln_kernel,
    grad=Gradient(_ln_grad_kernel, inputs=("X", "Scale", "Bias"), outputs=("Mean", "Variance"),
                  output_grads=("Y",), input_grads=("X", "Scale", "Bias"),
                  like={grad_slot("X"): "X", grad_slot("Scale"): "Scale", grad_slot("Bias"): "Bias"},
                  no_need_buffer=["Bias"]),
    doc="Y = (X - mean) / sqrt(var + eps) * Scale + Bias, statistics over dims [begin_norm_axis, rank)",
)

