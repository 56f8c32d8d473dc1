"""``static.WeightNormParamAttr``: a layer weight reparameterised as w = g * v / ||v||.

As the reference's static layers: a parameter created with this attribute is two parameters,
``<name>_v`` (the direction, shape of w, initialised by the attribute's initializer) and
``<name>_g`` (the magnitude: shape [w.shape[dim]], or [1] for ``dim=None``, initialised in the
startup program to ||v|| so the initial w equals the initial v); the layer reads w, computed in
the main program by ops (the norm over every axis except ``dim``), so gradients reach g and v.
Static mode only (dygraph layers refuse it with a clear error).
"""
from __future__ import annotations

from ..core import context
from ..core.errors import AttrError, located
from ..ops.apply import apply_op, apply_op_single
from .param_attr import ParamAttr


class WeightNormParamAttr(ParamAttr):
    """A ParamAttr whose parameter is weight-normalised over every axis except ``dim``."""

    def __init__(self, dim=None, name=None, initializer=None, learning_rate=1.0, regularizer=None, trainable=True,
                 do_model_average=False, need_clip=True):
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int)):
            raise located(AttrError, f"WeightNormParamAttr: dim must be an int or None, got {dim!r}")
        super().__init__(name, initializer, learning_rate, regularizer, trainable, do_model_average, need_clip)
        self.dim = dim


def _norm_except(x, shape, dim):
    """sqrt(sum of x**2 over every axis but ``dim``): shape [shape[dim]], or [1] for dim None."""
    squared = apply_op_single("square", {"X": x})
    if dim is None:
        total = apply_op_single("reduce_sum", {"X": squared}, {"dim": [0], "reduce_all": True, "rank1_result": True})
    else:
        total = apply_op_single("reduce_sum", {"X": squared},
                                {"dim": [a for a in range(len(shape)) if a != dim], "reduce_all": False})
    return apply_op_single("sqrt", {"X": total})


def create_weight_normalized(shape, dtype, attr, name, initializer, make_parameter):
    """w for a layer; ``make_parameter(name, shape, attr, initializer)`` creates each parameter."""
    if context.in_dynamic_mode():
        raise RuntimeError("WeightNormParamAttr is for static programs (dygraph layers do not support it; "
                           "build the program in static mode)")
    dim = attr.dim
    if dim is not None:
        if not -len(shape) <= dim < len(shape):
            raise located(AttrError, f"WeightNormParamAttr: dim must be in [-{len(shape)}, {len(shape)}) for a "
                                     f"weight of shape {list(shape)}, got {dim}")
        dim = dim % len(shape)
    g_shape = [1] if dim is None else [shape[dim]]
    v = make_parameter(f"{name}_v", list(shape), attr, initializer)
    g = make_parameter(f"{name}_g", g_shape, attr, None)
    startup = context.default_startup_program()
    with context.program_guard(startup, startup):   # g starts at ||v||: the initial w is the initial v
        sv, sg = startup.global_block().var(v.name), startup.global_block().var(g.name)
        apply_op("assign", {"X": _norm_except(sv, shape, dim)}, outputs={"Out": sg})
    scale = apply_op_single("elementwise_div", {"X": g, "Y": _norm_except(v, shape, dim)})
    return apply_op_single("elementwise_mul", {"X": v, "Y": scale}, {"axis": -1 if dim is None else dim})
