"""``paddle.nn.functional``: channel dropout (``dropout2d``/``dropout3d``), ``alpha_dropout`` and
``feature_alpha_dropout``, ``pixel_shuffle``/``pixel_unshuffle``, ``channel_shuffle`` and
``bilinear`` — compositions of existing ops (so gradients come from their rules), both modes.

Channel dropout draws one keep/drop decision per (sample, channel): the ``dropout`` op runs on
ones shaped like the first spatial element of every channel ([N, C, 1, 1]), and the input is
multiplied by that broadcast mask.  Alpha dropout keeps SELU's mean and variance: dropped values
become ``-scale * alpha`` and the result is ``a * y + b`` with the reference's ``a`` and ``b``.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core.errors import AttrError, ShapeError, fmt_shape, located
from ..ops.apply import apply_op, apply_op_single
from .tensor import _key, assign, reshape, transpose, unsqueeze

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _probability(p, func):
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise located(AttrError, f"{func}(): p must be a number in [0, 1], got {p!r}")
    return float(p)


def _keep_mask(x, p, per_channel, channels_last, key, implementation="upscale_in_train"):
    """0/1 (or 0 and 1/(1-p)) mask from the dropout op: per element, or per (sample, channel)."""
    like = x
    if per_channel:
        rank = len(x.shape)
        spatial = list(range(1, rank - 1)) if channels_last else list(range(2, rank))
        like = apply_op_single("slice", {"Input": x}, {"axes": spatial, "starts": [0] * len(spatial),
                                                       "ends": [1] * len(spatial)}, name_key=key)
    ones = apply_op_single("fill_any_like", {"X": like}, {"value": 1.0}, name_key=key)
    return apply_op("dropout", {"X": ones}, {"dropout_prob": p, "is_test": False,
                                             "dropout_implementation": implementation}, name_key=key)["Out"][0]


def _channel_dropout(x, p, training, data_format, rank, formats, func, name):
    p = _probability(p, func)
    if data_format not in formats:
        raise located(AttrError, f"{func}(): data_format must be one of {list(formats)}, got {data_format!r}")
    if len(x.shape) != rank:
        raise located(ShapeError, f"{func}(): the input must be {rank}-D, got {fmt_shape(x.shape)}")
    if not training or p == 0:
        return x
    key = _key(func, name)
    mask = _keep_mask(x, p, True, data_format == formats[1], key)
    return apply_op_single("elementwise_mul", {"X": x, "Y": mask}, name_key=key)


def dropout2d(x, p=0.5, training=True, data_format="NCHW", name=None):
    """Zero whole channels of [N, C, H, W] with probability ``p`` (kept ones scaled by 1/(1-p))."""
    return _channel_dropout(x, p, training, data_format, 4, ("NCHW", "NHWC"), "dropout2d", name)


def dropout3d(x, p=0.5, training=True, data_format="NCDHW", name=None):
    """Zero whole channels of [N, C, D, H, W] with probability ``p``."""
    return _channel_dropout(x, p, training, data_format, 5, ("NCDHW", "NDHWC"), "dropout3d", name)


def _alpha_dropout(x, p, training, per_channel, func, name):
    p = _probability(p, func)
    if not training or p == 0:
        return x
    key = _key(func, name)
    if p == 1:
        return apply_op_single("scale", {"X": x}, {"scale": 0.0}, name_key=key)
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    mask = _keep_mask(x, p, per_channel, False, key, "downgrade_in_infer")      # 0 or 1
    kept = apply_op_single("elementwise_mul", {"X": x, "Y": mask}, name_key=key)
    # a * (x * m + alpha_p * (1 - m)) + b = a * x m - a alpha_p m + (a alpha_p + b)
    shift = apply_op_single("scale", {"X": mask}, {"scale": -a * alpha_p, "bias": a * alpha_p + b}, name_key=key)
    scaled = apply_op_single("scale", {"X": kept}, {"scale": a}, name_key=key)
    return apply_op_single("elementwise_add", {"X": scaled, "Y": shift}, name_key=key)


def alpha_dropout(x, p=0.5, training=True, name=None):
    """Dropout for SELU networks: dropped values become the SELU saturation value, then an affine
    map restores zero mean and unit variance."""
    return _alpha_dropout(x, p, training, False, "alpha_dropout", name)


def feature_alpha_dropout(x, p=0.5, training=True, name=None):
    """Alpha dropout of whole channels (of [N, C, ...])."""
    if len(x.shape) < 2:
        raise located(ShapeError, f"feature_alpha_dropout(): the input must be at least 2-D, got {fmt_shape(x.shape)}")
    return _alpha_dropout(x, p, training, len(x.shape) > 2, "feature_alpha_dropout", name)


def _factor(value, what, func):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise located(AttrError, f"{func}(): {what} must be a positive int, got {value!r}")
    return int(value)


def _image(x, data_format, func):
    if data_format not in ("NCHW", "NHWC"):
        raise located(AttrError, f"{func}(): data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if len(x.shape) != 4:
        raise located(ShapeError, f"{func}(): the input must be 4-D, got {fmt_shape(x.shape)}")
    n, c, h, w = (x.shape[0], x.shape[3], x.shape[1], x.shape[2]) if data_format == "NHWC" else x.shape
    if min(c, h, w) < 0:
        raise located(ShapeError, f"{func}(): channels, height and width must be known, got {fmt_shape(x.shape)}")
    return c, h, w


def pixel_shuffle(x, upscale_factor, data_format="NCHW", name=None):
    """[N, C * r * r, H, W] -> [N, C, H * r, W * r] (``r = upscale_factor``)."""
    r = _factor(upscale_factor, "upscale_factor", "pixel_shuffle")
    c, h, w = _image(x, data_format, "pixel_shuffle")
    if c % (r * r):
        raise located(ShapeError, f"pixel_shuffle(): the channels ({c}) must be divisible by upscale_factor**2 ({r * r})")
    if data_format == "NCHW":
        y = transpose(reshape(x, [-1, c // (r * r), r, r, h, w]), [0, 1, 4, 2, 5, 3])
        return reshape(y, [-1, c // (r * r), h * r, w * r], name)
    y = transpose(reshape(x, [-1, h, w, c // (r * r), r, r]), [0, 1, 4, 2, 5, 3])
    return reshape(y, [-1, h * r, w * r, c // (r * r)], name)


def pixel_unshuffle(x, downscale_factor, data_format="NCHW", name=None):
    """[N, C, H * r, W * r] -> [N, C * r * r, H, W] (the inverse of ``pixel_shuffle``)."""
    r = _factor(downscale_factor, "downscale_factor", "pixel_unshuffle")
    c, h, w = _image(x, data_format, "pixel_unshuffle")
    if h % r or w % r:
        raise located(ShapeError, f"pixel_unshuffle(): height ({h}) and width ({w}) must be divisible by {r}")
    if data_format == "NCHW":
        y = transpose(reshape(x, [-1, c, h // r, r, w // r, r]), [0, 1, 3, 5, 2, 4])
        return reshape(y, [-1, c * r * r, h // r, w // r], name)
    y = transpose(reshape(x, [-1, h // r, r, w // r, r, c]), [0, 1, 3, 5, 2, 4])
    return reshape(y, [-1, h // r, w // r, c * r * r], name)


def channel_shuffle(x, groups, data_format="NCHW", name=None):
    """Interleave ``groups`` groups of channels: channel ``g * (C / groups) + i`` moves to ``i * groups + g``."""
    groups = _factor(groups, "groups", "channel_shuffle")
    c, h, w = _image(x, data_format, "channel_shuffle")
    if c % groups:
        raise located(ShapeError, f"channel_shuffle(): the channels ({c}) must be divisible by groups ({groups})")
    if data_format == "NCHW":
        y = transpose(reshape(x, [-1, groups, c // groups, h, w]), [0, 2, 1, 3, 4])
        return reshape(y, [-1, c, h, w], name)
    y = transpose(reshape(x, [-1, h, w, groups, c // groups]), [0, 1, 2, 4, 3])
    return reshape(y, [-1, h, w, c], name)


def bilinear(x1, x2, weight, bias=None, name=None):
    """``out[n, o] = x1[n] @ weight[o] @ x2[n] (+ bias[0, o])`` with weight [out, in1, in2]."""
    if len(x1.shape) != 2 or len(x2.shape) != 2 or len(weight.shape) != 3:
        raise located(ShapeError, f"bilinear(): x1 and x2 must be 2-D and weight 3-D, got {fmt_shape(x1.shape)}, "
                         f"{fmt_shape(x2.shape)}, {fmt_shape(weight.shape)}")
    out_f, in1, in2 = weight.shape
    key = _key("bilinear", name)
    w = reshape(transpose(weight, [1, 0, 2]), [in1, out_f * in2])
    t = reshape(apply_op_single("matmul_v2", {"X": x1, "Y": w}, name_key=key), [-1, out_f, in2])
    x2b = apply_op("unsqueeze2", {"X": x2}, {"axes": [1]}, name_key=key)["Out"][0]
    prod = apply_op_single("elementwise_mul", {"X": t, "Y": x2b}, name_key=key)
    out = apply_op_single("reduce_sum", {"X": prod}, {"dim": [2], "keep_dim": False}, name_key=key)
    if bias is not None:
        out = apply_op_single("elementwise_add", {"X": out, "Y": bias}, name_key=key)
    return out


def dropout1d(x, p=0.5, training=True, data_format="NCL", name=None):
    """Zero whole channels of [N, C, L] (or [C, L]) with probability ``p``."""
    if len(x.shape) == 2:
        return reshape(_channel_dropout(unsqueeze(x, [0]), p, training, data_format, 3, ("NCL", "NLC"),
                                        "dropout1d", name), [int(d) for d in x.shape])
    return _channel_dropout(x, p, training, data_format, 3, ("NCL", "NLC"), "dropout1d", name)


def _pairs(value, what, func, four=False):
    """[a, b] from an int or a pair; with ``four``, [top, left, bottom, right] as [top, bottom, left, right]."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = [int(value)] * 2
    value = [int(v) for v in value]
    if four and len(value) == 4:
        return [value[0], value[2], value[1], value[3]]
    if len(value) != 2:
        raise located(AttrError, f"{func}(): {what} must be an int or 2 ints{' or 4 ints' if four else ''}, got {value}")
    return [value[0], value[0], value[1], value[1]] if four else value


def _one_hot_filters(channels, kh, kw, dtype, key):
    """[C * kh * kw, 1, kh, kw]: filter c * kh * kw + i * kw + j picks cell (i, j)."""
    eye = np.tile(np.eye(kh * kw).reshape(kh * kw, 1, kh, kw), (channels, 1, 1, 1))
    return assign(eye.astype(str(dtype)))


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """Sliding blocks of [N, C, H, W] as columns: [N, C * kh * kw, L] (im2col); ``paddings`` is an
    int, [ph, pw] or [top, left, bottom, right] (the reference's order)."""
    if len(x.shape) != 4 or x.shape[1] < 0:
        raise located(ShapeError, f"unfold(): the input must be 4-D with known channels, got {fmt_shape(x.shape)}")
    kh, kw = _pairs(kernel_sizes, "kernel_sizes", "unfold")
    key = _key("unfold", name)
    channels = int(x.shape[1])
    filters = _one_hot_filters(channels, kh, kw, x.dtype, key)
    cols = apply_op_single("depthwise_conv2d", {"Input": x, "Filter": filters},
                           {"strides": _pairs(strides, "strides", "unfold"),
                            "paddings": _pairs(paddings, "paddings", "unfold", four=True),
                            "dilations": _pairs(dilations, "dilations", "unfold"), "groups": channels},
                           out_slot="Output", name_key=key)
    return reshape(cols, [0, 0, -1], name)


def fold(x, output_sizes, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """The inverse arrangement of ``unfold`` (col2im): [N, C * kh * kw, L] -> [N, C, H, W], values
    of overlapping blocks summed."""
    if len(x.shape) != 3 or x.shape[1] < 0:
        raise located(ShapeError, f"fold(): the input must be 3-D [N, C * kh * kw, L], got {fmt_shape(x.shape)}")
    kh, kw = _pairs(kernel_sizes, "kernel_sizes", "fold")
    height, width = _pairs(output_sizes, "output_sizes", "fold")
    sh, sw = _pairs(strides, "strides", "fold")
    dh, dw = _pairs(dilations, "dilations", "fold")
    pads = _pairs(paddings, "paddings", "fold", four=True)
    if x.shape[1] % (kh * kw):
        raise located(ShapeError, f"fold(): dim 1 ({x.shape[1]}) must be divisible by kh * kw = {kh * kw}")
    blocks_h = (height + pads[0] + pads[1] - dh * (kh - 1) - 1) // sh + 1
    blocks_w = (width + pads[2] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    if blocks_h <= 0 or blocks_w <= 0 or (x.shape[2] >= 0 and x.shape[2] != blocks_h * blocks_w):
        raise located(ShapeError, f"fold(): {x.shape[2]} blocks given, the geometry makes {blocks_h} x {blocks_w}")
    key = _key("fold", name)
    channels = int(x.shape[1]) // (kh * kw)
    grid = reshape(x, [0, int(x.shape[1]), blocks_h, blocks_w])
    return apply_op_single("conv2d_transpose", {"Input": grid, "Filter": _one_hot_filters(channels, kh, kw, x.dtype,
                                                                                          key)},
                           {"strides": [sh, sw], "paddings": pads, "dilations": [dh, dw], "groups": channels,
                            "output_size": [height, width]}, out_slot="Output", name_key=key)


def temporal_shift(x, seg_num, shift_ratio=0.25, name=None, data_format="NCHW"):
    """Shift channels along time: x [N * seg_num, C, H, W]; channel c < C * r takes time step
    t - 1, C * r <= c < 2 C * r takes t + 1 (zeros past either end), the others stay."""
    if data_format not in ("NCHW", "NHWC"):
        raise located(AttrError, f"temporal_shift(): data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if isinstance(seg_num, bool) or not isinstance(seg_num, numbers.Integral) or seg_num <= 0:
        raise located(AttrError, f"temporal_shift(): seg_num must be a positive int, got {seg_num!r}")
    if not 0 < shift_ratio <= 0.5:
        raise located(AttrError, f"temporal_shift(): shift_ratio must be in (0, 0.5], got {shift_ratio!r}")
    c, h, w = _image(x, data_format, "temporal_shift")
    key = _key("temporal_shift", name)
    xc = transpose(x, [0, 3, 1, 2]) if data_format == "NHWC" else x
    steps = int(seg_num)
    grid = reshape(xc, [-1, steps, c, h, w])
    edge = apply_op_single("fill_any_like", {"X": apply_op_single(
        "slice", {"Input": grid}, {"axes": [1], "starts": [0], "ends": [1]}, name_key=key)}, {"value": 0.0},
        name_key=key)
    padded = apply_op_single("concat", {"X": [edge, grid, edge]}, {"axis": 1}, name_key=key)
    c1, c2 = int(c * shift_ratio), int(c * 2 * shift_ratio)
    pieces = [apply_op_single("slice", {"Input": padded}, {"axes": [1, 2], "starts": [t0, lo], "ends": [t0 + steps, hi]},
                              name_key=key)
              for t0, lo, hi in ((0, 0, c1), (2, c1, c2), (1, c2, c)) if hi > lo]
    out = reshape(apply_op_single("concat", {"X": pieces}, {"axis": 2}, name_key=key), [-1, c, h, w])
    return transpose(out, [0, 2, 3, 1]) if data_format == "NHWC" else out
