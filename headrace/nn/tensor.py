"""Math and manipulation functions on Variables: ``paddle.add``, ``paddle.mean``, ``reshape`` ...
(and the helpers the fluid-era names map to)."""
from __future__ import annotations

import numbers

import numpy as np

from ..core import context, names
from ..core.dtypes import convert_dtype
from ..core.errors import ArgTypeError, located
from ..core.variable import Variable
from ..ops.apply import apply_op, apply_op_single


def _key(layer: str, name=None) -> str:
    """The unique-name key of a layer's outputs: ``<layer>_<n>.tmp`` (or ``<name>.tmp``).
    Eager outputs are not named, so dygraph mode consumes no unique-name counter here."""
    if not context.in_static_mode():
        return "eager.tmp"
    return f"{name or names.generate(layer)}.tmp"


# --- elementwise ---------------------------------------------------------------------------------
def _elementwise(op_type, x, y, axis=-1, name=None, act=None):
    out = apply_op_single(op_type, {"X": x, "Y": y}, {"axis": int(axis)}, name_key=_key(op_type, name))
    if act is not None:
        out = apply_op_single(act, {"X": out}, name_key=_key(op_type, name))
    return out


def add(x, y, name=None):
    return _elementwise("elementwise_add", x, y, name=name)


def subtract(x, y, name=None):
    return _elementwise("elementwise_sub", x, y, name=name)


def multiply(x, y, name=None):
    return _elementwise("elementwise_mul", x, y, name=name)


def divide(x, y, name=None):
    return _elementwise("elementwise_div", x, y, name=name)


def maximum(x, y, name=None):
    return _elementwise("elementwise_max", x, y, name=name)


def minimum(x, y, name=None):
    return _elementwise("elementwise_min", x, y, name=name)


def pow(x, y, name=None):  # noqa: A001
    if isinstance(y, numbers.Number):
        y = full([], y, x.dtype)
    return _elementwise("elementwise_pow", x, y, name=name)


def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    return apply_op_single("matmul_v2", {"X": x, "Y": y}, {"trans_x": bool(transpose_x), "trans_y": bool(transpose_y)},
                           name_key=_key("matmul_v2", name))


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    return apply_op_single("mul", {"X": x, "Y": y}, {"x_num_col_dims": x_num_col_dims,
                                                     "y_num_col_dims": y_num_col_dims}, name_key=_key("mul", name))


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    for arg, value in (("scale", scale), ("bias", bias)):
        try:
            float(value)
        except (TypeError, ValueError):
            raise located(ArgTypeError, f"scale(): {arg} must be a number, got {value!r}") from None
    out = apply_op_single("scale", {"X": x}, {"scale": float(scale), "bias": float(bias),
                                              "bias_after_scale": bool(bias_after_scale)},
                          name_key=_key("scale", name))
    return out if act is None else apply_op_single(act, {"X": out}, name_key=_key("scale", name))


def add_n(inputs, name=None):
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    return apply_op_single("sum", {"X": inputs}, name_key=_key("sum", name))


# --- reductions ----------------------------------------------------------------------------------
def _int_list(axis) -> list:
    """An axis argument as a list of ints: an int, a sequence of ints, or an eager Tensor of
    integers (0-D or 1-D: its values)."""
    if isinstance(axis, numbers.Integral):
        return [int(axis)]
    value = getattr(axis, "_value", None)
    if isinstance(value, np.ndarray):
        return [int(a) for a in value.reshape(-1)]
    return [int(a) for a in axis]


def _reduce(op_type, x, axis, keepdim, layer, name=None, rank1_result=False):
    if axis is None or (isinstance(axis, (list, tuple)) and len(axis) == 0):
        attrs = {"dim": [0], "keep_dim": bool(keepdim), "reduce_all": True}
    else:
        attrs = {"dim": _int_list(axis), "keep_dim": bool(keepdim), "reduce_all": False}
    if rank1_result:   # fluid 1.x: a single value has shape [1], not 0-D (reduce_* ops of ops/reduce.py)
        attrs["rank1_result"] = True
    return apply_op_single(op_type, {"X": x}, attrs, name_key=_key(layer, name))


def mean(x, axis=None, keepdim=False, name=None):
    """``paddle.mean``: op ``reduce_mean`` (output named ``mean_<n>.tmp_0``)."""
    return _reduce("reduce_mean", x, axis, keepdim, "mean", name)


def sum(x, axis=None, dtype=None, keepdim=False, name=None):  # noqa: A001
    if dtype is not None:
        x = cast(x, dtype)
    return _reduce("reduce_sum", x, axis, keepdim, "sum", name)


def max(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _reduce("reduce_max", x, axis, keepdim, "max", name)


def min(x, axis=None, keepdim=False, name=None):  # noqa: A001
    return _reduce("reduce_min", x, axis, keepdim, "min", name)


def reduce_mean(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_mean", input, dim, keep_dim, "reduce_mean", name, rank1_result=True)


def reduce_sum(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_sum", input, dim, keep_dim, "reduce_sum", name, rank1_result=True)


def reduce_max(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_max", input, dim, keep_dim, "reduce_max", name, rank1_result=True)


def reduce_min(input, dim=None, keep_dim=False, name=None):
    return _reduce("reduce_min", input, dim, keep_dim, "reduce_min", name, rank1_result=True)


def legacy_mean(x, name=None):
    """``fluid.layers.mean``: the ``mean`` op with a shape-[1] output, as fluid 1.x."""
    return apply_op_single("mean", {"X": x}, {"rank1_result": True}, name_key=_key("mean", name))


# --- creation ------------------------------------------------------------------------------------
def full(shape, fill_value, dtype=None, name=None):
    dtype = convert_dtype(dtype if dtype is not None else "float32")
    shape = [int(shape)] if isinstance(shape, numbers.Integral) else [int(d) for d in shape]
    return apply_op_single("fill_constant", attrs={"shape": shape, "dtype": str(dtype), "value": float(fill_value)},
                           name_key=_key("fill_constant", name))


def fill_constant(shape, dtype, value, force_cpu=False, out=None, name=None):
    if out is None:
        return full(shape, value, dtype, name)
    apply_op("fill_constant", attrs={"shape": list(shape), "dtype": str(convert_dtype(dtype)),
                                     "value": float(value)}, outputs={"Out": out})
    return out


def zeros(shape, dtype=None, name=None):
    return full(shape, 0.0, dtype, name)


def ones(shape, dtype=None, name=None):
    return full(shape, 1.0, dtype, name)


def assign(x, output=None):
    from ..eager.tensor import Tensor

    if isinstance(x, (Variable, Tensor)):
        outputs = {"Out": output} if output is not None else None
        return apply_op("assign", {"X": x}, outputs=outputs, name_key=_key("assign"))["Out"][0]
    value = np.asarray(x)
    outputs = {"Out": output} if output is not None else None
    return apply_op("assign_value", attrs={"shape": list(value.shape), "dtype": str(convert_dtype(value.dtype)),
                                           "values": value.ravel().tolist()},
                    outputs=outputs, name_key=_key("assign_value"))["Out"][0]


def cast(x, dtype):
    dtype = convert_dtype(dtype)
    return apply_op_single("cast", {"X": x}, {"in_dtype": str(x.dtype), "out_dtype": str(dtype)},
                           name_key=_key("cast"))


def _shape_list(shape) -> list:
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    return [int(d) for d in shape]


def uniform(shape, dtype="float32", min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002
    dtype = "float32" if dtype is None else dtype
    return apply_op_single("uniform_random", attrs={"shape": _shape_list(shape), "dtype": str(convert_dtype(dtype)),
                                                    "min": float(min), "max": float(max), "seed": int(seed)},
                           name_key=_key("uniform_random", name))


def gaussian(shape, mean=0.0, std=1.0, seed=0, dtype="float32", name=None):
    dtype = "float32" if dtype is None else dtype
    return apply_op_single("gaussian_random", attrs={"shape": _shape_list(shape), "dtype": str(convert_dtype(dtype)),
                                                     "mean": float(mean), "std": float(std), "seed": int(seed)},
                           name_key=_key("gaussian_random", name))


def rand(shape, dtype=None, name=None):
    """Uniform on [0, 1) (op ``uniform_random``), drawn from the global generator."""
    return uniform(shape, dtype, 0.0, 1.0, 0, name)


def randn(shape, dtype=None, name=None):
    """Standard normal (op ``gaussian_random``), drawn from the global generator."""
    return gaussian(shape, 0.0, 1.0, 0, dtype, name)


def normal(mean=0.0, std=1.0, shape=None, name=None):
    return gaussian(shape if shape is not None else [1], mean, std, 0, "float32", name)


def arange(start=0, end=None, step=1, dtype=None, name=None):
    """``[start, end)`` by ``step`` (a constant: op ``assign_value``); int64 unless a bound or
    ``dtype`` is floating."""
    if end is None:
        start, end = 0, start
    start, end, step = (_arange_bound(v, what) for v, what in ((start, "start"), (end, "end"), (step, "step")))
    if step == 0:
        raise ValueError("arange(): step must not be 0")
    if dtype is None:   # as Paddle: a float bound (Python, NumPy or a Tensor's) gives float32
        floating = any(isinstance(v, (float, np.floating)) for v in (start, end, step))
        dtype = "float32" if floating else "int64"
    return assign(np.arange(start, end, step).astype(convert_dtype(dtype).numpy))


def _arange_bound(value, what):
    """A bound of ``arange`` as a NumPy scalar (a Tensor or array of one element, e.g. a fetched
    shape-[1] value, included); other values are returned as given."""
    array = getattr(value, "_value", value)
    if isinstance(array, np.ndarray):
        if array.size != 1:
            raise ArgTypeError(f"arange(): `{what}` must be a number or hold one element, got shape "
                               f"{list(array.shape)}")
        return array.reshape(())[()]
    return value


def _default_dtype(array: np.ndarray, data) -> np.ndarray:
    """Python floats become float32 (Paddle's default dtype); NumPy arrays keep their dtype."""
    if not isinstance(data, np.ndarray) and array.dtype == np.float64:
        return array.astype(np.float32)
    return array


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """A Tensor holding a copy of ``data`` (dygraph); in static mode an ``assign_value`` op."""
    from ..eager.tensor import Tensor

    if isinstance(data, Tensor):
        array = data.numpy()
    else:
        array = np.array(data)
        if array.dtype == object:
            raise TypeError(f"to_tensor(): cannot convert {type(data).__name__} {data!r} to a Tensor")
        array = _default_dtype(array, data)
    if dtype is not None:
        array = array.astype(convert_dtype(dtype).numpy, copy=False)
    if context.in_static_mode():
        out = assign(array)
        out.stop_gradient = bool(stop_gradient)
        return out
    return Tensor(array, stop_gradient=stop_gradient)


def zeros_like(x, dtype=None, name=None):
    return full(x.shape, 0.0, dtype if dtype is not None else x.dtype, name)


def ones_like(x, dtype=None, name=None):
    return full(x.shape, 1.0, dtype if dtype is not None else x.dtype, name)


# --- manipulation --------------------------------------------------------------------------------
def reshape(x, shape, name=None):
    return apply_op("reshape2", {"X": x}, {"shape": [int(d) for d in shape]}, name_key=_key("reshape2", name))["Out"][0]


def transpose(x, perm, name=None):
    return apply_op("transpose2", {"X": x}, {"axis": [int(p) for p in perm]},
                    name_key=_key("transpose", name))["Out"][0]


def concat(x, axis=0, name=None):
    return apply_op_single("concat", {"X": list(x)}, {"axis": int(axis)}, name_key=_key("concat", name))


def split(x, num_or_sections, axis=0, name=None):
    key = _key("split", name)
    if isinstance(num_or_sections, numbers.Integral):
        count, attrs = int(num_or_sections), {"num": int(num_or_sections), "sections": [], "axis": int(axis)}
    else:
        sections = [int(s) for s in num_or_sections]
        count, attrs = len(sections), {"num": 0, "sections": sections, "axis": int(axis)}
    if not context.in_static_mode():  # eager outputs are made by the runner
        return apply_op("split", {"X": x}, attrs)["Out"]
    block = context.default_main_program().current_block()
    outs = [block.create_var(name=names.generate_with_ignorable_key(key)) for _ in range(count)]
    return apply_op("split", {"X": x}, attrs, outputs={"Out": outs})["Out"]


def squeeze(x, axis=None, name=None):
    axes = [] if axis is None else _int_list(axis)
    return apply_op("squeeze2", {"X": x}, {"axes": axes}, name_key=_key("squeeze", name))["Out"][0]


def unsqueeze(x, axis, name=None):
    axes = _int_list(axis)
    return apply_op("unsqueeze2", {"X": x}, {"axes": axes}, name_key=_key("unsqueeze", name))["Out"][0]


def slice(input, axes, starts, ends):  # noqa: A001
    return apply_op_single("slice", {"Input": input}, {"axes": list(axes), "starts": list(starts),
                                                       "ends": list(ends)}, name_key=_key("slice"))


def flatten(x, start_axis=0, stop_axis=-1, name=None):
    return apply_op("flatten_contiguous_range", {"X": x}, {"start_axis": int(start_axis), "stop_axis": int(stop_axis)},
                    name_key=_key("flatten", name))["Out"][0]
