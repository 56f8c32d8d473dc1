"""Fused ops produced by the BuildStrategy fusion passes (each followed by its gradient op).

``fused_elemwise_add_activation`` (``functor_list`` as the reference: the first functor is the
outer one):
  ``[act, "elementwise_add"]``: ``Out = act(X + Y)``;
  ``["elementwise_add", act]``: ``Out = X + act(Y)``, ``IntermediateOut = act(Y)`` (kept: the
  gradient and other readers need it).
``act`` is ``relu`` or ``tanh``; ``axis`` is elementwise_add's broadcasting rule.  The arithmetic
is exactly that of the unfused ops (same NumPy calls in the same order), so results are
bit-identical; the gain is one fewer intermediate buffer and one fewer pass over memory.

``fused_relu_depthwise_conv2d``: ``Output = depthwise_conv2d(relu(Input), Filter)``; the gradient
recomputes ``relu(Input)`` instead of keeping it (the reference's memory-saving fusion).

Buffers: the ``fused_elemwise_add_activation`` kernels accept ``out={slot: buffer}`` (handed out
by the inplace / memory-reuse passes); a buffer is used only if its shape and dtype fit.
"""
from __future__ import annotations

import numpy as np

from .elementwise import infer_broadcast, unbroadcast
from .gradrule import Gradient, grad_slot
from .infer_helpers import aligned_shapes
from .registry import REQUIRED, lookup, optional, register

ADD = "elementwise_add"


def _relu(s, out):
    return np.maximum(s, s.dtype.type(0), out=out)


def _relu_grad(out, dout, buf):
    return np.multiply(dout, out > 0, out=buf)


def _tanh(s, out):
    return np.tanh(s, out=out)


def _tanh_grad(out, dout, buf):
    # ``buf`` may be ``dout``'s own buffer (inplace X@GRAD <- Out@GRAD): read dout in the last step only
    t = np.multiply(out, out)
    np.subtract(t.dtype.type(1), t, out=t)
    return np.multiply(dout, t, out=buf)


ACTIVATIONS = {"relu": (_relu, _relu_grad), "tanh": (_tanh, _tanh_grad)}


def _act_outer(functors) -> bool:
    return functors[1] == ADD


def _act_name(functors) -> str:
    return functors[0] if _act_outer(functors) else functors[1]


def _fused_infer(ctx):
    functors = ctx.attr("functor_list")
    if (not isinstance(functors, list) or len(functors) != 2 or ADD not in functors
            or (functors[0] if functors[1] == ADD else functors[1]) not in ACTIVATIONS):
        ctx.fail_attr("functor_list", f"[act, '{ADD}'] or ['{ADD}', act] with act in "
                      f"{sorted(ACTIVATIONS)}", functors)
    shape, dtype = infer_broadcast(ctx)
    ctx.set("Out", shape, dtype)
    ctx.set("IntermediateOut", shape if _act_outer(functors) else ctx.shape("Y"), dtype)


def _aligned(x, y, axis):
    xs, ys = aligned_shapes(x.shape, y.shape, axis)
    return x.reshape(xs), y.reshape(ys)


def _fused_kernel(ins, attrs, ctx):
    functors, axis = attrs["functor_list"], attrs["axis"]
    act, _ = ACTIVATIONS[_act_name(functors)]
    x, y = ins["X"], ins["Y"]
    if _act_outer(functors):
        xa, ya = (x, y) if axis == -1 or x.ndim == y.ndim else _aligned(x, y, axis)
        shape = np.broadcast_shapes(xa.shape, ya.shape)
        buf = ctx.buffer("Out", shape, np.result_type(x, y))
        s = np.asarray(np.add(xa, ya, out=buf))
        return {"Out": act(s, s)}
    inter = np.asarray(act(y, None))
    xa, ia = (x, inter) if axis == -1 or x.ndim == y.ndim else _aligned(x, inter, axis)
    buf = ctx.buffer("Out", np.broadcast_shapes(xa.shape, ia.shape), np.result_type(x, y))
    return {"Out": np.asarray(np.add(xa, ia, out=buf)), "IntermediateOut": inter}




def _fused_grad_kernel(ins, attrs, ctx):
    functors, axis = attrs["functor_list"], attrs["axis"]
    _, act_grad = ACTIVATIONS[_act_name(functors)]
    x_in, y_in, dout = ins["X"], ins["Y"], ins[grad_slot("Out")]
    xs, ys = aligned_shapes(x_in.shape, y_in.shape, axis)
    dx_slot, dy_slot = grad_slot("X"), grad_slot("Y")
    result = {}
    if _act_outer(functors):
        o = ins["Out"]
        d = np.asarray(act_grad(o, dout, ctx.buffer(dx_slot, dout.shape, dout.dtype)))
        if dx_slot in ctx.wanted:
            result[dx_slot] = np.asarray(unbroadcast(d, xs, x_in.shape))
        if dy_slot in ctx.wanted:
            result[dy_slot] = np.asarray(unbroadcast(d, ys, y_in.shape))
        return result
    if dx_slot in ctx.wanted:
        result[dx_slot] = np.asarray(unbroadcast(dout, xs, x_in.shape))
    if dy_slot in ctx.wanted:
        inter = ins.get("IntermediateOut")
        if inter is None:
            raise ValueError("fused_elemwise_add_activation_grad with functor_list [elementwise_add, act] "
                             "reads IntermediateOut = act(Y): give the forward op that output")
        dinter = np.asarray(unbroadcast(dout, ys, y_in.shape))
        result[dy_slot] = np.asarray(act_grad(inter, dinter, None))
    return result


register(
    "fused_elemwise_add_activation",
    inputs=["X", "Y"],
    outputs=["Out", optional("IntermediateOut")],
    attrs={"functor_list": REQUIRED, "axis": -1, "save_intermediate_out": False},
    infer=_fused_infer,
    kernel=_fused_kernel,
    buffers=True,
    grad=Gradient(_fused_grad_kernel, inputs=("X", "Y"), outputs=("Out", "IntermediateOut"),
                  input_grads=("X", "Y"),
                  optional=("Out",), no_need_buffer=("X", "Y"), inplace={grad_slot("X"): grad_slot("Out")},
                  views={grad_slot("X"): grad_slot("Out"), grad_slot("Y"): grad_slot("Out")}, buffers=True),
    inplace={"Out": "X"},
    doc="act(X + Y) or X + act(Y) in one op (see the module docstring)",
)




# --- relu + depthwise_conv2d ----------------------------------------------------------------------
_DW = "depthwise_conv2d"


def _fused_dw_kernel(ins, attrs, ctx):
    x = ins["Input"]
    return lookup(_DW).kernel({"Input": np.maximum(x, x.dtype.type(0)), "Filter": ins["Filter"]}, attrs, ctx)


def _fused_dw_grad_kernel(ins, attrs, ctx):
    x = ins["Input"]
    r = np.maximum(x, x.dtype.type(0))
    grads = lookup(f"{_DW}_grad").kernel({"Input": r, "Filter": ins["Filter"],
                                          grad_slot("Output"): ins[grad_slot("Output")]}, attrs, ctx)
    if grad_slot("Input") in grads:
        grads[grad_slot("Input")] = np.asarray(grads[grad_slot("Input")] * (r > 0))
    return grads


register(
    "fused_relu_depthwise_conv2d",
    inputs=["Input", "Filter"],
    outputs=["Output"],
    attrs=dict(lookup(_DW).attrs),
    infer=lookup(_DW).infer,
    kernel=_fused_dw_kernel,
    grad=Gradient(_fused_dw_grad_kernel, inputs=("Input", "Filter"), output_grads=("Output",),
                  input_grads=("Input", "Filter")),
    doc="Output = depthwise_conv2d(relu(Input), Filter); the relu output is never stored",
)

