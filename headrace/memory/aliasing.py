"""Which buffer each kernel output lives in: the rules the memory estimate follows.

The executor counts live bytes by owning NumPy allocation (``runtime/memory.py``): a view keeps
its base counted once.  To predict that count from shapes alone, the estimate must know, for
every output, whether the kernel returns a fresh array, one of its inputs itself, a view of an
input, or the buffer the buffer plan handed it.  Check mode (``ops/step.py``) guarantees the
rest: a fresh output owns exactly its bytes, and only outputs declared in ``OpDef.views`` share an
input's buffer.  This module says *when* a declared view really is one.

Layouts are tracked with *layout proxies*: arrays made by ``as_strided`` over a one-element
buffer, with a value's real shape and strides.  Only operations that never read data are applied
to them (transpose, basic slicing, ``np.reshape(..., copy=False)``), so NumPy itself decides
whether a reshape is a view, exactly as it will at run time.

Contract: ``output_sources(op_type, attrs, ins, outs)`` takes the input values (``Value`` or None
per position) and the inferred output metas, and returns, per output slot, a list of sources,
one per output position: ``("input", slot, k)`` (the output is, or views, input ``slot[k]``),
``("fresh", key)`` (a new array; outputs with the same key share one), or ``("buffer",)`` /
``("buffer", slot, key)`` (the buffer handed for the output's own slot, or for ``slot``, if it
fits exactly — what ``ctx.buffer`` returns — else a fresh array shared by outputs of that key).
An output slot a rule does not mention is ``("buffer",)``.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..core.names import grad_name
from ..ops.gradrule import NO_GRADIENT
from ..ops.registry import lookup

DOUT = grad_name("Out")


def proxy(shape, dtype, strides=None):
    """A layout proxy: an array of this shape/dtype/strides whose data must never be read."""
    dtype = np.dtype(dtype)
    base = np.zeros(1, dtype=dtype)
    if strides is None:
        strides, step = [], dtype.itemsize
        for d in reversed(shape):
            strides.append(step)
            step *= max(int(d), 1)
        strides = tuple(reversed(strides))
    return as_strided(base, shape=tuple(shape), strides=tuple(strides), writeable=False)


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


# --- rules for ops that declare views -----------------------------------------------------------
def _reshape_like(in_slot, out_slot):
    """Out is ``np.reshape(In, out_shape)``: a view when NumPy can reshape without copying."""
    def rule(attrs, ins, outs):
        value = ins[in_slot][0]
        shape = outs[out_slot][0][0]
        try:
            layout = np.reshape(value.layout, shape, copy=False)
        except ValueError:
            return {out_slot: [("fresh", 0)]}, {}
        return {out_slot: [("input", in_slot, 0)]}, {(out_slot, 0): layout}
    return rule


def _pass_through_if_same_size(pairs):
    """Elementwise gradients at the output's shape, summed down to each operand: a slot in
    ``pairs`` is ``Out@GRAD`` itself when nothing is summed away (same size); another slot is
    computed into its handed buffer (or fresh) when nothing is summed away; anything summed is
    fresh."""
    def rule(attrs, ins, outs):
        full = _size(ins[DOUT][0].shape)
        result = {}
        for slot in outs:
            if _size(outs[slot][0][0]) != full:
                result[slot] = [("fresh", slot)]
            else:
                result[slot] = [("input", DOUT, 0)] if slot in pairs else [("buffer",)]
        return result, {}
    return rule


def _reduce_grad(attrs, ins, outs):
    slot = grad_name("X")
    same = _size(outs[slot][0][0]) == _size(ins[DOUT][0].shape)
    return {slot: [("input", DOUT, 0) if same else ("fresh", 0)]}, {}


def _dropout_grad(attrs, ins, outs):
    slot = grad_name("X")
    through = attrs["is_test"] and attrs["dropout_implementation"] == "upscale_in_train"
    return {slot: [("input", DOUT, 0) if through else ("fresh", 0)]}, {}


def _fused_add_act_grad(attrs, ins, outs):
    """``[act, elementwise_add]``: d = act'(Out) * dOut (into the buffer handed for ``X@GRAD`` or
    fresh), and each operand's gradient is d itself when nothing is summed away; ``[elementwise_add,
    act]``: dX is dOut itself when nothing is summed away, dY fresh."""
    dx = grad_name("X")
    outer = attrs["functor_list"][0] != "elementwise_add"
    full = _size(ins[DOUT][0].shape)
    result = {}
    for slot in outs:
        same = _size(outs[slot][0][0]) == full
        if outer:
            result[slot] = [("buffer", dx, "d") if same else ("fresh", slot)]
        elif slot == dx:
            result[slot] = [("input", DOUT, 0) if same else ("fresh", slot)]
        else:
            result[slot] = [("fresh", slot)]
    return result, {}


# Ops whose kernels only rearrange views (transpose, basic slicing, split) and never read data:
# the estimate runs their real kernels on layout proxies, which gives every output's layout and
# the input it views exactly.  An op belongs here only if that stays true of its kernel for the
# inputs listed (value-carrying inputs such as slice's StartsTensor exclude it).
PURE_VIEW_KERNELS = {"transpose2": (), "transpose2_grad": (), "slice": ("StartsTensor", "EndsTensor",
                     "StartsTensorList", "EndsTensorList"), "split": ("AxisTensor", "SectionsTensorList"),
                     "concat_grad": (), "sum_grad": ()}

_RESHAPES = ("reshape2", "squeeze2", "unsqueeze2", "flatten_contiguous_range")
RULES = {
    **{t: _reshape_like("X", "Out") for t in _RESHAPES},
    **{f"{t}_grad": _reshape_like(DOUT, grad_name("X")) for t in _RESHAPES},
    "elementwise_add_grad": _pass_through_if_same_size({grad_name("X"), grad_name("Y")}),
    "elementwise_sub_grad": _pass_through_if_same_size({grad_name("X")}),
    "reduce_sum_grad": _reduce_grad,
    "reduce_mean_grad": _reduce_grad,
    "reduce_max_grad": lambda attrs, ins, outs: ({grad_name("X"): [("fresh", 0)]}, {}),
    "reduce_min_grad": lambda attrs, ins, outs: ({grad_name("X"): [("fresh", 0)]}, {}),
    "dropout_grad": _dropout_grad,
    "fused_elemwise_add_activation_grad": _fused_add_act_grad,
    "reshape_tensor": _reshape_like("X", "Out"),                       # issue 16 (ops/dynamic_shape.py)
    "reshape_tensor_grad": _reshape_like(DOUT, grad_name("X")),
}


def _same_as_input(pairs):
    """Kernels that write into an input and return it (collectives on a gradient)."""
    def rule(attrs, ins, outs):
        return {out: [("input", inp, k) for k in range(len(outs[out]))] for out, inp in pairs.items() if out in outs}, {}
    return rule


for _t in ("c_allreduce_sum", "c_broadcast", "c_reduce_sum"):
    RULES[_t] = _same_as_input({"Out": "X"})


def _coalesce(attrs, ins, outs):
    """``coalesce_tensor`` (ops/coalesce.py) in its steady state: persistable state already lives
    in the flat buffer (the first run copies it in once); gradients are concatenated afresh."""
    if attrs["output_views"]:
        count = len(outs.get("Output", ()))
        return {"FusedOutput": [("input", "Input", 0)],
                "Output": [("input", "Input", k) for k in range(count)]}, {}
    return {"FusedOutput": [("fresh", 0)]}, {}


RULES["coalesce_tensor"] = _coalesce


def writes_inputs_in_place(opdef) -> bool:
    """Update ops: every output overwrites the input ``inplace`` names and the kernel returns that
    input (``ParamOut`` is ``Param``'s own array), with no buffer plan involved."""
    return (bool(opdef.inplace) and not opdef.buffers and not opdef.views
            and all(slot.name in opdef.inplace for slot in opdef.outputs)
            and opdef.grad is NO_GRADIENT)


def check_rules_cover(opdefs) -> list:
    """Op types that declare views but have no rule here (the estimate refuses them)."""
    return sorted(d.type for d in opdefs if d.views and d.type not in RULES and d.type not in PURE_VIEW_KERNELS)


def has_rule(op_type) -> bool:
    return op_type in RULES or op_type in PURE_VIEW_KERNELS or not lookup(op_type).views
