"""Functional layers — activations, dropout, losses, pooling, and the computations of the nn
layers (linear, embedding, conv2d, batch_norm, layer_norm) with their parameters passed in.

Each function emits ops through ``apply_op`` only, so the same code serves static Variables and
eager Tensors.
Output names follow the reference: ``<layer>_<n>.tmp_<k>``.
"""
from __future__ import annotations

import numbers

from ..core.context import in_dynamic_mode
from ..core.errors import ArgTypeError, AttrError, ShapeError, fmt_shape, located
from ..ops.apply import apply_op, apply_op_single
from .static_layers import padding_index
from .metric_ops import accuracy_counts
from .tensor import _key, cast
from ..eager.tensor import Parameter, Tensor


def _unary(op_type: str, x, name=None, **attrs):
    return apply_op_single(op_type, {"X": x}, attrs or None, name_key=_key(op_type, name))


# --- activations ---------------------------------------------------------------------------------
def relu(x, name=None):
    return _unary("relu", x, name)


def sigmoid(x, name=None):
    return _unary("sigmoid", x, name)


def tanh(x, name=None):
    return _unary("tanh", x, name)


def gelu(x, approximate=False, name=None):
    return _unary("gelu", x, name, approximate=bool(approximate))


def leaky_relu(x, negative_slope=0.01, name=None):
    if not isinstance(negative_slope, numbers.Real):
        raise located(ArgTypeError, f"leaky_relu(): negative_slope must be a number, got {negative_slope!r}")
    return _unary("leaky_relu", x, name, alpha=float(negative_slope))


def softmax(x, axis=-1, dtype=None, name=None):
    if dtype is not None:
        x = cast(x, dtype)
    return _unary("softmax", x, name, axis=int(axis))


def log(x, name=None):
    return _unary("log", x, name)


def exp(x, name=None):
    return _unary("exp", x, name)


def sqrt(x, name=None):
    return _unary("sqrt", x, name)


def square(x, name=None):
    return _unary("square", x, name)


def abs(x, name=None):  # noqa: A001  (Paddle's name)
    return _unary("abs", x, name)


# --- dropout -------------------------------------------------------------------------------------
def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None, seed=None):
    """Zero each element with probability ``p``. ``mode`` is 'upscale_in_train' (scale kept values
    by 1/(1-p) in training) or 'downscale_in_infer' (scale by 1-p at inference)."""
    if axis is not None:
        raise located(AttrError, "dropout(): the axis argument (structured dropout) is not supported; use axis=None")
    if not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise located(AttrError, f"dropout(): p must be a number in [0, 1], got {p!r}")
    implementation = {"upscale_in_train": "upscale_in_train", "downscale_in_infer": "downgrade_in_infer",
                      "downgrade_in_infer": "downgrade_in_infer"}.get(mode)
    if implementation is None:
        raise located(AttrError, f"dropout(): mode must be 'upscale_in_train' or 'downscale_in_infer', got {mode!r}")
    attrs = {"dropout_prob": float(p), "is_test": not training, "dropout_implementation": implementation,
             "fix_seed": seed is not None, "seed": int(seed or 0)}
    return apply_op("dropout", {"X": x}, attrs, name_key=_key("dropout", name))["Out"][0]


# --- losses --------------------------------------------------------------------------------------
def cross_entropy_probs(input, label, soft_label=False, ignore_index=-100):
    """The 1.x ``cross_entropy``: ``input`` holds probabilities; returns per-row loss [..., 1]."""
    return apply_op_single("cross_entropy", {"X": input, "Label": label},
                           {"soft_label": bool(soft_label), "ignore_index": int(ignore_index)},
                           out_slot="Y", name_key=_key("cross_entropy"))


def accuracy(input, label, k=1, correct=None, total=None):
    """Fraction of rows whose label is among the top-``k`` scores (a 0-D float32); the counts go
    to ``correct``/``total`` (0-D or shape [1]) when given."""
    return accuracy_counts(input, label, k, correct, total)


# --- pooling -------------------------------------------------------------------------------------
def _pool_pair(value, what):
    if isinstance(value, numbers.Integral):
        return [int(value)] * 2
    value = [int(v) for v in value]
    if len(value) != 2:
        raise located(AttrError, f"pool2d(): {what} must be an int or a pair, got {value}")
    return value


def pool2d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
           use_cudnn=True, ceil_mode=False, name=None, exclusive=True, data_format="NCHW"):
    """``fluid.layers.pool2d``: max or average pooling over H and W."""
    if pool_type not in ("max", "avg"):
        raise located(AttrError, f"pool2d(): pool_type must be 'max' or 'avg', got {pool_type!r}")
    if len(input.shape) != 4:
        raise located(ShapeError, f"pool2d(): input must be 4-D, got {fmt_shape(input.shape)}")
    if not global_pooling and pool_size == -1:
        raise located(AttrError, "pool2d(): give pool_size, or set global_pooling=True")
    ksize = [1, 1] if global_pooling else _pool_pair(pool_size, "pool_size")
    if isinstance(pool_padding, str):
        paddings, algorithm = [0, 0], pool_padding.upper()
    else:
        paddings = [int(pool_padding)] * 2 if isinstance(pool_padding, numbers.Integral) else list(pool_padding)
        algorithm = "EXPLICIT"
    return apply_op_single("pool2d", {"X": input},
                           {"pooling_type": pool_type, "ksize": ksize, "strides": _pool_pair(pool_stride, "stride"),
                            "paddings": paddings, "padding_algorithm": algorithm, "global_pooling": global_pooling,
                            "ceil_mode": ceil_mode, "exclusive": exclusive, "data_format": data_format},
                           name_key=_key("pool2d", name))


# --- layers' computations (both modes; parameters are passed in) ---------------------------------
def linear(x, weight, bias=None, name=None):
    """``x @ weight (+ bias)``; weight is [in, out].  A Program gets ops ``matmul_v2`` and
    ``elementwise_add`` (the reference's); eager mode runs the two as one ``fused_gemm_epilogue``
    op (same arithmetic, one op's overhead, no intermediate product) when x has rank >= 2."""
    key = _key("linear", name)
    if bias is not None and in_dynamic_mode() and _fusable_linear(x, weight, bias):
        return apply_op_single("fused_gemm_epilogue", {"X": x, "Y": weight, "Bias": bias}, name_key=key)
    out = apply_op_single("matmul_v2", {"X": x, "Y": weight}, name_key=key)
    if bias is not None:
        out = apply_op_single("elementwise_add", {"X": out, "Y": bias}, {"axis": -1}, name_key=key)
    return out


_TENSORS = (Tensor, Parameter)


def _fusable_linear(x, weight, bias) -> bool:
    """Whether eager ``linear`` may run as one ``fused_gemm_epilogue``: Tensors (anything else
    gets the ops' own type errors), x of rank >= 2, a 2-D weight and a bias of exactly [out]
    (a broadcasting bias such as [1] keeps elementwise_add's rules), and not a bias-only
    gradient (frozen x and weight: the two ops then keep neither alive for backward).  (Checked
    on every call of every Linear layer: kept to a few attribute reads.)"""
    if not (type(x) in _TENSORS and type(weight) in _TENSORS and type(bias) in _TENSORS):
        return False
    w_shape = weight.shape
    if len(x.shape) < 2 or len(w_shape) != 2 or tuple(bias.shape) != (w_shape[1],):
        return False
    return not (x.stop_gradient and weight.stop_gradient and not bias.stop_gradient)


def _fusable_conv_bias(x, weight, bias) -> bool:
    """Whether eager ``conv2d`` may run as one ``fused_conv2d_add_act``: as ``_fusable_linear``,
    with a 4-D weight, a bias of exactly [out_channels] and of x's dtype."""
    if not (type(x) in _TENSORS and type(weight) in _TENSORS and type(bias) in _TENSORS):
        return False
    w_shape = weight.shape
    if len(w_shape) != 4 or tuple(bias.shape) != (w_shape[0],) or bias.dtype != x.dtype:
        return False
    return not (x.stop_gradient and weight.stop_gradient and not bias.stop_gradient)


def embedding(x, weight, padding_idx=None, sparse=False, name=None):
    """Rows of ``weight`` ([vocab, dim]) picked by the integer ids ``x`` (op ``lookup_table_v2``)."""
    padding = padding_index(padding_idx, weight.shape[0])
    return apply_op_single("lookup_table_v2", {"W": weight, "Ids": x},
                           {"padding_idx": padding, "is_sparse": bool(sparse)}, name_key=_key("embedding", name))


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", name=None):
    """2-D convolution with a [out_channels, in_channels / groups, kh, kw] ``weight`` (+ bias).
    A Program gets ops ``conv2d`` (or ``depthwise_conv2d``) and ``elementwise_add`` (the
    reference's); eager mode runs conv2d and its bias as one ``fused_conv2d_add_act`` op (same
    arithmetic: the bias is added while each block of the output is in cache)."""
    from .static_layers import _conv_padding, _pair

    if data_format not in ("NCHW", "NHWC"):
        raise located(AttrError, f"conv2d(): data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if len(x.shape) != 4:
        raise located(ShapeError, f"conv2d(): input must be 4-D, got {fmt_shape(x.shape)}")
    channels = x.shape[1] if data_format == "NCHW" else x.shape[3]
    groups = int(groups)
    paddings, algorithm = _conv_padding(padding)
    filters = weight.shape[0]
    depthwise = groups > 1 and groups == channels and filters % channels == 0
    key = _key("conv2d", name)
    attrs = {"strides": _pair(stride, "stride"), "paddings": paddings, "padding_algorithm": algorithm,
             "dilations": _pair(dilation, "dilation"), "groups": groups, "data_format": data_format}
    if bias is not None and not depthwise and in_dynamic_mode() and _fusable_conv_bias(x, weight, bias):
        return apply_op_single("fused_conv2d_add_act", {"Input": x, "Filter": weight, "Bias": bias}, attrs,
                               out_slot="Output", name_key=key)
    out = apply_op_single("depthwise_conv2d" if depthwise else "conv2d", {"Input": x, "Filter": weight}, attrs,
                          out_slot="Output", name_key=key)
    if bias is not None:
        out = apply_op_single("elementwise_add", {"X": out, "Y": bias},
                              {"axis": 1 if data_format == "NCHW" else 3}, name_key=key)
    return out


def batch_norm(x, running_mean, running_var, weight, bias, training=False, momentum=0.9, epsilon=1e-05,
               data_format="NCHW", use_global_stats=None, name=None):
    """Batch normalization; in training the running statistics are updated in place."""
    layout = {"NC": "NCHW", "NCL": "NCHW", "NCHW": "NCHW", "NCDHW": "NCHW", "NHWC": "NHWC",
              "NLC": "NHWC", "NDHWC": "NHWC"}.get(data_format)
    if layout is None:
        raise located(AttrError, f"batch_norm(): unsupported data_format {data_format!r}")
    global_stats = bool(use_global_stats) if use_global_stats is not None else False
    outs = apply_op("batch_norm", {"X": x, "Scale": weight, "Bias": bias, "Mean": running_mean,
                                   "Variance": running_var},
                    {"momentum": float(momentum), "epsilon": float(epsilon), "is_test": not training,
                     "data_layout": layout, "use_global_stats": global_stats},
                    outputs={"MeanOut": running_mean, "VarianceOut": running_var},
                    name_key=_key("batch_norm", name))
    return outs["Y"][0]


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05, name=None):
    """Normalize over the trailing dims ``normalized_shape`` (op ``layer_norm``)."""
    shape = [int(normalized_shape)] if isinstance(normalized_shape, numbers.Integral) else list(normalized_shape)
    rank = len(x.shape)
    if not 0 < len(shape) < rank + 1 or list(x.shape[rank - len(shape):]) != shape:
        raise located(ShapeError, f"layer_norm(): normalized_shape {shape} must be the trailing dims of the input "
                         f"{fmt_shape(x.shape)}")
    ins = {"X": x}
    if weight is not None:
        ins["Scale"] = weight
    if bias is not None:
        ins["Bias"] = bias
    return apply_op("layer_norm", ins, {"begin_norm_axis": rank - len(shape), "epsilon": float(epsilon)},
                    name_key=_key("layer_norm", name))["Y"][0]


from .tensor_manip import one_hot  # noqa: E402,F401  (paddle.nn.functional.one_hot; issue 16)
# --- issue 16, nn layers: more activations, pooling, convolutions, norms, dropouts, shuffles ------
from .functional_activation import (celu, elu, glu, hardshrink, hardsigmoid, hardswish, hardtanh,  # noqa: E402,F401
                                    log_sigmoid, log_softmax, logsigmoid, maxout, mish, prelu, relu6, rrelu,
                                    selu, silu, softmax2d, softplus, softshrink, softsign, swish, tanhshrink,
                                    thresholded_relu)
from .functional_attention import scaled_dot_product_attention, sequence_mask, swiglu  # noqa: E402,F401
from .functional_3d import (adaptive_avg_pool3d, adaptive_max_pool3d, avg_pool3d, conv3d,  # noqa: E402,F401
                            conv3d_transpose, max_pool3d, max_unpool3d)
from .functional_conv import conv1d, conv1d_transpose, conv2d_transpose  # noqa: E402,F401
from .functional_inplace import (elu_, hardtanh_, leaky_relu_, relu_, softmax_, tanh_,  # noqa: E402,F401
                                 thresholded_relu_)
from .functional_misc import (alpha_dropout, bilinear, channel_shuffle, dropout1d, dropout2d,  # noqa: E402,F401
                              dropout3d, feature_alpha_dropout, fold, pixel_shuffle, pixel_unshuffle,
                              temporal_shift, unfold)
from .functional_norm import group_norm, instance_norm, local_response_norm  # noqa: E402,F401
from .functional_pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,  # noqa: E402,F401
                                 adaptive_max_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d,
                                 lp_pool1d, lp_pool2d, max_unpool1d, max_unpool2d)
# --- losses and similarity (nn/loss.py, nn/cross_entropy.py) and padding / resizing (nn/resize.py) -----
from .cross_entropy import cross_entropy, softmax_with_cross_entropy  # noqa: E402,F401
from .loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss,  # noqa: E402,F401
                   cosine_similarity, dice_loss, gaussian_nll_loss, hinge_embedding_loss, kl_div, l1_loss,
                   label_smooth, log_loss, margin_ranking_loss, mse_loss, multi_label_soft_margin_loss,
                   multi_label_margin_loss, multi_margin_loss, nll_loss, normalize, npair_loss, pairwise_distance, poisson_nll_loss,
                   sigmoid_cross_entropy_with_logits, triplet_margin_with_distance_loss,
                   sigmoid_focal_loss, smooth_l1_loss, soft_margin_loss, square_error_cost,
                   triplet_margin_loss)
from .resize import interpolate, pad, upsample, zeropad2d  # noqa: E402,F401
