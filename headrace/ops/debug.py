"""Ops that reach outside the graph: ``print`` (``static.Print``) and ``py_func``.

``print``: ``Out`` is ``In`` unchanged (a view); when run it writes the tensor to stdout in the
reference's layout (name, message, shape, dtype, the first ``summarize`` values).  ``first_n``
limits how many times one op prints (-1: always); ``print_phase`` chooses forward, backward (its
gradient op prints the gradient) or both.  The gradient passes ``Out@GRAD`` through.

``py_func``: calls a registered Python function (``func_id``) on the input arrays; its return
values (arrays, numbers, or objects NumPy converts) become ``Out``, checked against the inferred
dtype and cast to it.  ``backward_id`` (-1: none) names the function computing the input
gradients from (inputs, outputs, output gradients), minus the inputs/outputs listed in
``skip_vars``; without one, no gradient flows through the op.  Functions live in a process-wide
table (``register_function``), so a program that uses py_func cannot be run in another process.
"""
from __future__ import annotations

import itertools
import sys

import numpy as np

from .gradrule import Gradient, grad_slot
from .registry import many, register

_printed: dict = {}           # print op uid -> number of times it printed
_uids = itertools.count(1)


def new_print_uid() -> int:
    return next(_uids)


def format_tensor(value, attrs, name, phase) -> str:
    lines = [f"Variable: {name}" + (" (gradient)" if phase == "backward" else "")]
    if attrs["message"]:
        lines.append(f"  - message: {attrs['message']}")
    if attrs["print_tensor_lod"]:
        lines.append("  - lod: {}")
    lines.append("  - place: Place(cpu)")
    if attrs["print_tensor_shape"]:
        lines.append(f"  - shape: {list(value.shape)}")
    if attrs["print_tensor_type"]:
        lines.append(f"  - dtype: {value.dtype}")
    flat = value.reshape(-1)
    count = flat.size if attrs["summarize"] < 0 else min(flat.size, attrs["summarize"])
    lines.append("  - data: [" + " ".join(str(v) for v in flat[:count].tolist()) + "]")
    return "\n".join(lines)


def _print_once(value, attrs, phase) -> None:
    uid = attrs["print_uid"]
    count = _printed.get((uid, phase), 0)
    if attrs["first_n"] >= 0 and count >= attrs["first_n"]:
        return
    _printed[(uid, phase)] = count + 1
    name = attrs["tensor_name"] if attrs["print_tensor_name"] else ""
    sys.stdout.write(format_tensor(value, attrs, name, phase) + "\n")


def _print_kernel(ins, attrs, ctx):
    if attrs["print_phase"] in ("forward", "both"):
        _print_once(ins["In"], attrs, "forward")
    return {"Out": ins["In"]}


def _print_grad_kernel(ins, attrs, ctx):
    dout = ins[grad_slot("Out")]
    if attrs["print_phase"] in ("backward", "both"):
        _print_once(dout, attrs, "backward")
    return {grad_slot("In"): dout}


def _print_infer(ctx):
    if ctx.attr("print_phase") not in ("forward", "backward", "both"):
        ctx.fail_attr("print_phase", "'forward', 'backward' or 'both'", ctx.attr("print_phase"))
    ctx.set("Out", ctx.shape("In"), ctx.dtype("In"))


register(
    "print",
    inputs=["In"],
    outputs=["Out"],
    attrs={"first_n": -1, "summarize": 20, "message": "", "print_tensor_name": True, "print_tensor_type": True,
           "print_tensor_shape": True, "print_tensor_lod": True, "print_phase": "both", "tensor_name": "",
           "print_uid": 0},
    infer=_print_infer,
    kernel=_print_kernel,
    grad=Gradient(_print_grad_kernel, inputs=(), output_grads=("Out",), input_grads=("In",),
                  like={grad_slot("In"): grad_slot("Out")}, views={grad_slot("In"): grad_slot("Out")}),
    views={"Out": "In"},
    doc="Out = In; prints In (and with print_phase backward/both its gradient) to stdout",
)


# --- py_func ---------------------------------------------------------------------------------------
_functions: dict = {}


def register_function(func) -> int:
    """An id for ``func`` in the process-wide table py_func ops refer to."""
    if not callable(func):
        raise TypeError(f"py_func: expected a callable, got {type(func).__name__}")
    fid = len(_functions)
    _functions[fid] = func
    return fid


def _call(fid, arrays, what):
    result = _functions[fid](*arrays)
    if result is None:
        return []
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _as_outputs(values, like, what):
    if len(values) != len(like):
        raise ValueError(f"py_func: {what} returned {len(values)} value(s), expected {len(like)}")
    outs = []
    for i, (value, (shape, dtype)) in enumerate(zip(values, like)):
        arr = np.array(value, dtype=dtype)
        if len(arr.shape) != len(shape) or any(d != -1 and d != a for d, a in zip(shape, arr.shape)):
            raise ValueError(f"py_func: {what} value {i} has shape {list(arr.shape)}, expected {list(shape)}")
        outs.append(arr)
    return outs


def _py_func_kernel(ins, attrs, ctx):
    values = _call(attrs["func_id"], list(ins.get("X", [])), "forward")
    return {"Out": _as_outputs(values, attrs["out_metas"], "the function")}


def _py_func_infer(ctx):
    if ctx.attr("func_id") not in _functions:
        ctx.fail_attr("func_id", "the id of a function registered in this process", ctx.attr("func_id"))
    ctx.set_many("Out", [(tuple(s), d) for s, d in ctx.attr("out_metas")])


def _py_func_grad_kernel(ins, attrs, ctx):
    skip = set(attrs["skip_vars"])
    xs, outs, douts = ins.get("X", []), ins.get("Out", []), ins.get(grad_slot("Out"), [])
    args = [v for v, n in zip(xs, attrs["x_names"]) if n not in skip]
    args += [v for v, n in zip(outs, attrs["out_names"]) if n not in skip]
    values = _call(attrs["backward_id"], args + list(douts), "backward")
    like = [(x.shape, x.dtype) for x in xs]
    return {grad_slot("X"): _as_outputs(values, like, "backward_func")}


_PY_FUNC = register(
    "py_func",
    inputs=[many("X", optional=True)],
    outputs=[many("Out", optional=True)],
    attrs={"func_id": -1, "backward_id": -1, "skip_vars": [], "out_metas": [], "x_names": [], "out_names": []},
    infer=_py_func_infer,
    kernel=_py_func_kernel,
    grad=Gradient(_py_func_grad_kernel, inputs=("X",), outputs=("Out",), output_grads=("Out",), input_grads=("X",)),
    doc="Out = func(*X) for a registered Python function; gradient by a registered backward function",
)



def _py_func_rule(rule):
    """No gradient op without a backward function (the reference makes none either)."""
    def checked(g):
        return [] if g.attrs["backward_id"] < 0 else rule(g)
    return checked


_PY_FUNC.grad = _py_func_rule(_PY_FUNC.grad)
