"""Layers that create parameters in the programs being built (static mode): data, fc, conv2d,
batch_norm, layer_norm, embedding, create_parameter.

A parameter lives in the main program's global block; its initializer op goes to the startup
program.  Names follow the reference system: ``fc_0.w_0``, ``fc_0.b_0``, outputs ``fc_0.tmp_k``.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core import context, names
from ..core.dtypes import convert_dtype
from ..core.errors import ArgTypeError, AttrError, ShapeError, fmt_shape, located
from ..core.variable import Variable
from ..eager.tensor import Tensor
from ..ops.apply import apply_op, apply_op_single
from .initializer import Constant, Normal, XavierInitializer
from .param_attr import ParamAttr
from .weight_norm import WeightNormParamAttr, create_weight_normalized


def _static_only(layer: str) -> None:
    if not context.in_static_mode():
        raise RuntimeError(f"{layer}() builds a static program; in dygraph mode use the nn.Layer classes")


def _check_variable(value, arg: str, layer: str) -> None:
    if not isinstance(value, Variable):
        raise located(ArgTypeError, f"{layer}(): `{arg}` must be a Variable, got {type(value).__name__}")


# --- data --------------------------------------------------------------------------------------
def data(name: str, shape, dtype=None, lod_level: int = 0) -> Variable:
    """A feed variable: ``None``/-1 dims are given at run time (``static.data``/``fluid.data``)."""
    _static_only("data")
    if not isinstance(name, str) or not name:
        raise located(ArgTypeError, f"data(): name must be a non-empty str, got {name!r}")
    if not isinstance(shape, (list, tuple)):
        raise located(ArgTypeError, f"data(): shape must be a list or tuple, got {type(shape).__name__}")
    dtype = convert_dtype(dtype if dtype is not None else "float32")
    block = context.default_main_program().global_block()
    if block.has_var(name):
        return _declared_again(block.var(name), shape, dtype, lod_level)
    return block.create_var(name=name, shape=shape, dtype=dtype, lod_level=lod_level, is_data=True,
                            need_check_feed=True, stop_gradient=True)


def _declared_again(var, shape, dtype, lod_level) -> Variable:
    """The reference returns the variable a program already has under this name when shape, dtype
    and lod_level match (a fluid script declaring its inputs twice), and refuses a mismatch."""
    want = tuple(-1 if d is None else int(d) for d in shape)
    if not var.is_data:
        raise located(AttrError, f"data(): the program already has a variable named {var.name!r} that is not "
                                 f"a data variable (declared with shape {fmt_shape(var.shape)})")
    for what, old, new in (("shape", fmt_shape(var.shape), fmt_shape(want)), ("dtype", str(var.dtype), str(dtype)),
                           ("lod_level", var.lod_level, lod_level)):
        if old != new:
            raise located(AttrError, f"data(): variable {var.name!r} has been declared before with {what} {old}; "
                                     f"declared again with {what} {new}: they do not match")
    return var


def legacy_data(name, shape, append_batch_size=True, dtype="float32", lod_level=0,
                type=None, stop_gradient=True) -> Variable:
    """``fluid.layers.data``: a batch dim -1 is prepended unless ``append_batch_size`` is False
    or the shape already has an unknown (-1/None) dim."""
    shape = list(shape)
    if any(d is None or d < 0 for d in shape):
        append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    var = data(name, shape, dtype, lod_level)
    var.stop_gradient = stop_gradient
    return var


# --- parameters ---------------------------------------------------------------------------------
def parameter_spec(shape, dtype, attr, is_bias, default_initializer, name_prefix):
    """``(attr, shape, dtype, name, initializer)`` of a new parameter, checked; shared by both modes."""
    attr = ParamAttr.to_attr(attr)
    if attr is False:
        raise located(AttrError, "create_parameter: attr=False means no parameter")
    shape = [int(d) for d in shape]
    if any(d <= 0 for d in shape):
        raise located(ShapeError, f"parameter shape must be all positive, got {fmt_shape(shape)}"
                         + (f" (layer {name_prefix})" if name_prefix else ""))
    dtype = convert_dtype(dtype)
    name = attr.name or names.generate(f"{name_prefix or 'param'}.{'b' if is_bias else 'w'}")
    initializer = attr.initializer or default_initializer or (Constant(0.0) if is_bias else XavierInitializer())
    return attr, shape, dtype, name, initializer


def create_parameter(shape, dtype, attr=None, is_bias=False, default_initializer=None,
                     name_prefix=None):
    """Create a parameter in the main program and its initializer in the startup program (a
    ``WeightNormParamAttr``: two parameters and the ops computing the weight, ``nn/weight_norm.py``)."""
    attr, shape, dtype, name, initializer = parameter_spec(shape, dtype, attr, is_bias, default_initializer,
                                                           name_prefix)
    if isinstance(attr, WeightNormParamAttr):
        def make(part_name, part_shape, part_attr, part_init):
            return _new_parameter(part_name, part_shape, dtype, part_attr, part_init or Constant(0.0))
        return create_weight_normalized(shape, dtype, attr, name, initializer, make)
    return _new_parameter(name, shape, dtype, attr, initializer)


def _new_parameter(name, shape, dtype, attr, initializer):
    main = context.default_main_program()
    startup = context.default_startup_program()
    param = main.global_block().create_parameter(
        name, shape, dtype, trainable=attr.trainable, optimize_attr={"learning_rate": attr.learning_rate},
        regularizer=attr.regularizer, do_model_average=attr.do_model_average, need_clip=attr.need_clip)
    sblock = startup.global_block()
    if not sblock.has_var(name):  # a shared parameter (same ParamAttr name) is initialized once
        svar = sblock.create_var(name=name, shape=shape, dtype=dtype, persistable=True)
        initializer(svar, sblock)
    return param


def padding_index(padding_idx, vocab: int) -> int:
    """An embedding's ``padding_idx`` as the op attribute: -1 for none, else a row in [0, vocab)."""
    if padding_idx is None:
        return -1
    padding = int(padding_idx)
    if not -vocab <= padding < vocab:
        raise located(AttrError, f"embedding(): padding_idx must be in [-{vocab}, {vocab}), got {padding_idx}")
    return padding if padding >= 0 else vocab + padding


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A variable of the main program filled with ``value`` by the startup program (e.g. a
    learning rate an optimizer reads).  It is always stored persistable: its value must survive
    from the startup run to the main runs (``persistable=False`` is accepted for compatibility)."""
    shape = [int(d) for d in shape]
    if any(d < 0 for d in shape):
        raise located(ShapeError, f"create_global_var: shape must be non-negative, got {fmt_shape(shape)}")
    dtype = convert_dtype(dtype)
    name = name or names.generate("global_var")
    if context.in_dynamic_mode():   # dygraph: a Tensor holding the value at once, as the reference
        tensor = Tensor(np.full(shape, value, dtype=dtype.numpy), name=name)
        tensor.persistable, tensor.stop_gradient = bool(persistable), True
        return tensor
    var = context.default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=dtype, persistable=True, stop_gradient=True)
    sblock = context.default_startup_program().global_block()
    svar = sblock.create_var(name=name, shape=shape, dtype=dtype, persistable=True)
    Constant(float(value))(svar, sblock)
    return var


# --- fc ------------------------------------------------------------------------------------------
def append_activation(x: Variable, act, name_key: str) -> Variable:
    if act is None:
        return x
    if not isinstance(act, str):
        raise located(ArgTypeError, f"act must be an activation name (str), got {type(act).__name__}")
    return apply_op_single(act, {"X": x}, name_key=name_key)


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None):
    """Fully connected: ``act(sum_i flatten(input_i) @ W_i + b)``; a list input gets one W each."""
    _static_only("fc")
    inputs = list(input) if isinstance(input, (list, tuple)) else [input]
    if not inputs:
        raise located(AttrError, "fc(): input is empty")
    if not isinstance(size, numbers.Integral) or size <= 0:
        raise located(AttrError, f"fc(): size must be a positive int, got {size!r}")
    helper = name or names.generate("fc")
    key = f"{helper}.tmp"
    attrs = param_attr if isinstance(param_attr, (list, tuple)) else [param_attr] * len(inputs)
    if len(attrs) != len(inputs):
        raise located(AttrError, f"fc(): {len(inputs)} inputs but {len(attrs)} param_attr entries")
    products = []
    for x, attr in zip(inputs, attrs):
        _check_variable(x, "input", "fc")
        if not 1 <= num_flatten_dims < len(x.shape):
            raise located(ShapeError, f"fc(): num_flatten_dims={num_flatten_dims} needs an input of rank > "
                             f"{num_flatten_dims}; {x.name!r} has shape {fmt_shape(x.shape)}")
        in_dims = x.shape[num_flatten_dims:]
        if any(d < 0 for d in in_dims):
            raise located(ShapeError, f"fc(): the feature dims of {x.name!r} must be known, got shape {fmt_shape(x.shape)}")
        in_size = 1
        for d in in_dims:
            in_size *= d
        w = create_parameter([in_size, size], x.dtype, attr, name_prefix=helper)
        products.append(apply_op_single("mul", {"X": x, "Y": w},
                                        {"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1}, name_key=key))
    pre_bias = products[0] if len(products) == 1 else apply_op_single("sum", {"X": products}, name_key=key)
    battr = ParamAttr.to_attr(bias_attr)
    if battr is not False:
        b = create_parameter([size], pre_bias.dtype, battr, is_bias=True, name_prefix=helper)
        pre_bias = apply_op_single("elementwise_add", {"X": pre_bias, "Y": b}, {"axis": num_flatten_dims},
                                   name_key=key)
    return append_activation(pre_bias, act, key)


# --- conv2d --------------------------------------------------------------------------------------
def _pair(value, what: str, layer: str = "conv2d()") -> list:
    """An int or a pair of ints, each >= 1 (sizes, strides and dilations)."""
    pair = [value, value] if isinstance(value, numbers.Integral) else \
        list(value) if isinstance(value, (list, tuple)) else None
    if pair is None or len(pair) != 2 or not all(isinstance(v, numbers.Integral) for v in pair):
        raise located(AttrError, f"{layer}: {what} must be an int or a pair of ints, got {value!r}")
    if min(pair) < 1:
        raise located(AttrError, f"{layer}: {what} must be >= 1, got {value!r}")
    return [int(v) for v in pair]


def _conv_padding(padding):
    if isinstance(padding, str):
        algo = padding.upper()
        if algo not in ("SAME", "VALID"):
            raise located(AttrError, f"conv2d(): padding string must be 'SAME' or 'VALID', got {padding!r}")
        return [0, 0], algo
    if isinstance(padding, numbers.Integral):
        return [int(padding)] * 2, "EXPLICIT"
    padding = [int(p) for p in padding]
    if len(padding) not in (2, 4):
        raise located(AttrError, f"conv2d(): padding must have 2 or 4 entries, got {padding}")
    return padding, "EXPLICIT"


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
           param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None, data_format="NCHW"):
    """2-D convolution (+ bias, + activation); ``groups == channels`` uses ``depthwise_conv2d``."""
    _static_only("conv2d")
    _check_variable(input, "input", "conv2d")
    if data_format not in ("NCHW", "NHWC"):
        raise located(AttrError, f"conv2d(): data_format must be 'NCHW' or 'NHWC', got {data_format!r}")
    if len(input.shape) != 4:
        raise located(ShapeError, f"conv2d(): input {input.name!r} must be 4-D, got shape {fmt_shape(input.shape)}")
    channels = input.shape[1] if data_format == "NCHW" else input.shape[3]
    if channels < 0:
        raise located(ShapeError, f"conv2d(): the channel dim of {input.name!r} must be known, got {fmt_shape(input.shape)}")
    if not isinstance(num_filters, numbers.Integral) or num_filters <= 0:
        raise located(AttrError, f"conv2d(): num_filters must be a positive int, got {num_filters!r}")
    groups = 1 if groups is None else int(groups)
    if groups <= 0 or channels % groups:
        raise located(AttrError, f"conv2d(): channels ({channels}) must be divisible by groups ({groups})")
    kh, kw = _pair(filter_size, "filter_size")
    paddings, algorithm = _conv_padding(padding)
    helper = name or names.generate("conv2d")
    key = f"{helper}.tmp"
    std = (2.0 / (kh * kw * channels)) ** 0.5
    w = create_parameter([num_filters, channels // groups, kh, kw], input.dtype, param_attr,
                         default_initializer=Normal(0.0, std), name_prefix=helper)
    op_type = "depthwise_conv2d" if groups > 1 and groups == channels and num_filters % channels == 0 else "conv2d"
    out = apply_op(op_type, {"Input": input, "Filter": w},
                   {"strides": _pair(stride, "stride"), "paddings": paddings, "padding_algorithm": algorithm,
                    "dilations": _pair(dilation, "dilation"), "groups": groups, "data_format": data_format},
                   outputs={"Output": [context.default_main_program().current_block().create_var(
                       name=names.generate_with_ignorable_key(key))]})["Output"][0]
    battr = ParamAttr.to_attr(bias_attr)
    if battr is not False:
        b = create_parameter([num_filters], input.dtype, battr, is_bias=True, name_prefix=helper)
        out = apply_op_single("elementwise_add", {"X": out, "Y": b},
                              {"axis": 1 if data_format == "NCHW" else 3}, name_key=key)
    return append_activation(out, act, key)


# --- normalization -------------------------------------------------------------------------------
def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
               bias_attr=None, data_layout="NCHW", in_place=False, name=None, moving_mean_name=None,
               moving_variance_name=None, do_model_average_for_mean_and_var=True, use_global_stats=False):
    """Batch normalization with learned scale/bias and running mean/variance parameters."""
    _static_only("batch_norm")
    _check_variable(input, "input", "batch_norm")
    if data_layout not in ("NCHW", "NHWC"):
        raise located(AttrError, f"batch_norm(): data_layout must be 'NCHW' or 'NHWC', got {data_layout!r}")
    if len(input.shape) < 2:
        raise located(ShapeError, f"batch_norm(): input must have rank >= 2, got {fmt_shape(input.shape)}")
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    if channels < 0:
        raise located(ShapeError, f"batch_norm(): the channel dim of {input.name!r} must be known")
    helper = name or names.generate("batch_norm")
    key = f"{helper}.tmp"
    dtype = "float32" if input.dtype == "float16" else input.dtype  # statistics of fp16 input are fp32
    scale = create_parameter([channels], dtype, param_attr, default_initializer=Constant(1.0), name_prefix=helper)
    bias = create_parameter([channels], dtype, bias_attr, is_bias=True, name_prefix=helper)
    mean = create_parameter([channels], dtype, ParamAttr(name=moving_mean_name, initializer=Constant(0.0),
                                                         trainable=False), name_prefix=helper)
    variance = create_parameter([channels], dtype, ParamAttr(name=moving_variance_name, initializer=Constant(1.0),
                                                             trainable=False), name_prefix=helper)
    block = context.default_main_program().current_block()
    saved = [block.create_var(name=names.generate_with_ignorable_key(key), stop_gradient=True) for _ in range(2)]
    outs = apply_op("batch_norm", {"X": input, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": variance},
                    {"momentum": float(momentum), "epsilon": float(epsilon), "is_test": bool(is_test),
                     "data_layout": data_layout, "use_global_stats": bool(use_global_stats)},
                    outputs={"MeanOut": mean, "VarianceOut": variance, "SavedMean": saved[0],
                             "SavedVariance": saved[1]}, name_key=key)
    return append_activation(outs["Y"][0], act, key)


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-05, param_attr=None,
               bias_attr=None, act=None, name=None):
    """Layer normalization over the dims from ``begin_norm_axis`` on."""
    _static_only("layer_norm")
    _check_variable(input, "input", "layer_norm")
    rank = len(input.shape)
    if not 0 < begin_norm_axis < rank:
        raise located(AttrError, f"layer_norm(): begin_norm_axis must be in [1, {rank}), got {begin_norm_axis}")
    norm_dims = input.shape[begin_norm_axis:]
    if any(d < 0 for d in norm_dims):
        raise located(ShapeError, f"layer_norm(): normalized dims must be known, got {fmt_shape(input.shape)}")
    size = 1
    for d in norm_dims:
        size *= d
    helper = name or names.generate("layer_norm")
    key = f"{helper}.tmp"
    ins = {"X": input}
    if scale:
        ins["Scale"] = create_parameter([size], input.dtype, param_attr, default_initializer=Constant(1.0),
                                        name_prefix=helper)
    if shift:
        ins["Bias"] = create_parameter([size], input.dtype, bias_attr, is_bias=True, name_prefix=helper)
    block = context.default_main_program().current_block()
    stats = [block.create_var(name=names.generate_with_ignorable_key(key), stop_gradient=True) for _ in range(2)]
    outs = apply_op("layer_norm", ins, {"begin_norm_axis": begin_norm_axis, "epsilon": float(epsilon)},
                    outputs={"Mean": stats[0], "Variance": stats[1]}, name_key=key)
    return append_activation(outs["Y"][0], act, key)


# --- embedding -----------------------------------------------------------------------------------
def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32", legacy=False):
    """Look up rows of a [vocab, dim] table. ``legacy`` (``fluid.layers.embedding``) takes ids of
    shape [..., 1] (op ``lookup_table``); otherwise any id shape (op ``lookup_table_v2``)."""
    _static_only("embedding")
    _check_variable(input, "input", "embedding")
    if len(size) != 2:
        raise located(AttrError, f"embedding(): size must be [vocab_size, embedding_dim], got {size}")
    padding = padding_index(padding_idx, int(size[0]))
    helper = names.generate("embedding")
    w = create_parameter(list(size), dtype, param_attr, name_prefix=helper)
    return apply_op_single("lookup_table" if legacy else "lookup_table_v2", {"W": w, "Ids": input},
                           {"padding_idx": padding, "is_sparse": bool(is_sparse),
                            "is_distributed": bool(is_distributed)}, name_key=f"{helper}.tmp")
