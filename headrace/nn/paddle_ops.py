"""The tensor functions of the top-level ``paddle`` namespace added with the tensor-op families,
gathered in one place: ``headrace/__init__.py`` exports ``__all__``, and ``bind()`` makes them
methods of Tensor and Variable (``x.sin()``, ``x.argmax(axis=1)``, ``x.add_(y)``), as
``nn/tensor_methods.py`` does for the basic ones.

In-place ``_`` variants are made from the out-of-place functions by ``tensor_index.make_inplace``
(eager: x becomes the result and its ``inplace_version`` goes up; static: the out-of-place result,
with a warning, as the reference).
"""
from __future__ import annotations

from ..core.variable import Variable
from ..eager.tensor import Tensor
from ..ops.apply import apply_op_single
from . import functional as F
from . import tensor as T
from . import (tensor_create, tensor_extra, tensor_index, tensor_manip, tensor_math, tensor_misc, tensor_more,
               tensor_reduce, tensor_search)

_MODULES = (tensor_math, tensor_search, tensor_manip, tensor_reduce, tensor_create, tensor_extra, tensor_misc,
            tensor_more)


def clip(x, min=None, max=None, name=None):  # noqa: A002
    """x limited to [min, max] (a missing bound is no bound); the gradient passes strictly inside.
    Integer tensors are clipped with elementwise max/min against integer constants."""
    def bound(v, default):
        if v is None:
            return default
        return float(v.item()) if isinstance(v, Tensor) else float(v)
    lo, hi = bound(min, float("-inf")), bound(max, float("inf"))
    if x.dtype.numpy.kind in "iu":
        out = x if min is None else T.maximum(x, T.full([], int(lo), x.dtype))
        return out if max is None else T.minimum(out, T.full([], int(hi), x.dtype))
    return apply_op_single("clip", {"X": x}, {"min": lo, "max": hi}, name_key=T._key("clip", name))


def clamp(x, min=None, max=None, name=None):  # noqa: A002
    return clip(x, min, max, name)


def cat(x, axis=0, name=None):
    return T.concat(x, axis, name)


def concatenate(x, axis=0, name=None):
    return T.concat(x, axis, name)


def fill_(x, value):
    """x filled with ``value`` (in place)."""
    return tensor_index.become(x, T.full(list(x.shape), value, x.dtype)) if isinstance(x, Tensor) else \
        T.full(list(x.shape), value, x.dtype)


def zero_(x):
    """x filled with zeros (in place)."""
    return fill_(x, 0)


def _refill(x, draw, name):
    """x (eager) refilled with ``draw`` of its shape and dtype; static: the draw, with a warning."""
    return tensor_index.make_inplace(lambda t: draw(list(t.shape), str(t.dtype)), name)(x)


def uniform_(x, min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002
    """x refilled with Uniform[min, max) draws (in place)."""
    return _refill(x, lambda shape, dtype: T.uniform(shape, dtype, min, max, seed), "uniform_")


def normal_(x, mean=0.0, std=1.0, name=None):
    """x refilled with Normal(mean, std) draws (in place)."""
    return _refill(x, lambda shape, dtype: T.gaussian(shape, mean, std, 0, dtype), "normal_")


def log_normal_(x, mean=1.0, std=2.0, name=None):
    """x refilled with exp(Normal(mean, std)) draws (in place)."""
    return _refill(x, lambda shape, dtype: F.exp(T.gaussian(shape, mean, std, 0, dtype)), "log_normal_")


def _functions() -> dict:
    funcs = {}
    for module in _MODULES:
        funcs.update({n: getattr(module, n) for n in module.__all__})
    funcs.update(clip=clip, clamp=clamp, cat=cat, concatenate=concatenate)
    funcs.update(swapdims=tensor_manip.swapaxes, view=tensor_manip.reshape)
    return funcs


FUNCTIONS = _functions()

# the reference's in-place names whose out-of-place function exists here
_INPLACE = ["abs_", "acos_", "addmm_", "atan_", "bitwise_and_", "bitwise_invert_", "bitwise_not_", "bitwise_or_",
            "bitwise_xor_", "cast_", "ceil_", "clip_", "copysign_", "cos_", "cumsum_", "digamma_", "div_", "divide_",
            "equal_", "erf_", "exp_", "expm1_", "flatten_", "floor_", "floor_divide_", "floor_mod_", "gammaln_",
            "gcd_", "greater_equal_", "greater_than_", "hypot_", "lcm_", "less_", "less_equal_", "less_than_",
            "lgamma_", "log10_", "log2_", "log_", "logical_and_", "logical_not_", "logical_or_", "logical_xor_",
            "masked_fill_", "mod_", "multiply_", "nan_to_num_", "neg_", "pow_", "reciprocal_", "remainder_",
            "reshape_", "round_", "rsqrt_", "scale_", "scatter_", "sigmoid_", "sin_", "sinh_", "sqrt_", "square_",
            "squeeze_", "sub_", "subtract_", "t_", "tan_", "tanh_", "transpose_", "tril_", "triu_", "trunc_",
            "unsqueeze_", "add_", "frac_", "cumprod_", "index_add_", "index_fill_", "bitwise_left_shift_",
            "bitwise_right_shift_", "lerp_", "put_along_axis_", "i0_", "sinc_", "ldexp_", "logit_", "erfinv_",
            "polygamma_", "renorm_", "index_put_", "baddbmm_", "masked_scatter_", "multigammaln_"]
_RESHAPING = {"reshape_", "flatten_", "squeeze_", "unsqueeze_", "t_", "transpose_"}


def _base(name):
    base = name[:-1]
    for source in (FUNCTIONS, vars(T), vars(F)):
        func = source.get(base)
        if callable(func):
            return func
    return None


def _inplace_functions() -> dict:
    out = {}
    for name in _INPLACE:
        base = _base(name)
        if base is not None:
            out[name] = tensor_index.make_inplace(base, name, reshape=name in _RESHAPING or name == "cast_")
    out.update(fill_=fill_, zero_=zero_, uniform_=uniform_, normal_=normal_, log_normal_=log_normal_)
    return out


INPLACE = _inplace_functions()

# Tensor/Variable methods (a method a class already defines is left alone)
_METHOD_EXCLUDE = {"e", "pi", "inf", "nan", "newaxis", "dtype", "finfo", "iinfo", "broadcast_shape",
                   "broadcast_shapes", "meshgrid", "linspace", "logspace", "eye", "randint", "randperm",
                   "standard_normal", "is_tensor", "concatenate", "cat", "stack", "hstack", "vstack",
                   "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors", "empty", "einsum", "scatter_nd",
                   "as_tensor", "asarray", "block_diag", "cartesian_prod", "column_stack", "dstack", "from_numpy",
                   "get_default_dtype", "log_normal", "manual_seed", "row_stack", "set_grad_enabled",
                   "set_printoptions", "tril_indices", "triu_indices", "where_", "shape", "rank"}


def bind() -> None:
    for cls in (Tensor, Variable):
        for name, func in {**FUNCTIONS, **INPLACE}.items():
            if name not in _METHOD_EXCLUDE and name not in cls.__dict__:
                setattr(cls, name, func)
        for name in ("reshape", "slice"):   # the versions that also take tensor shapes
            setattr(cls, name, FUNCTIONS[name])
    tensor_index.bind()


__all__ = sorted(set(FUNCTIONS) | set(INPLACE))
globals().update({n: f for n, f in {**FUNCTIONS, **INPLACE}.items() if n not in globals()})
