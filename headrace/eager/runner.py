"""The eager runner: ``apply_op`` in dygraph mode runs the op's registered kernel at once.

Per op: look the op up, gather the input arrays, resolve attributes (defaults, unknown names
rejected) and run ``infer`` on the input arrays, so a bad input is the same clear error as at
static build time (naming the op, the slot and the user's line); pick the generator of a random
op and run the kernel through the one step runner (``ops/step.py``: the same generator choice,
output checks in check mode and error wrapping as the executor); wrap the outputs in Tensors (or
write them into the Tensors the caller passed as ``outputs``); and, when gradients are enabled
and an input requires grad, record the op on the tape (``tape.py``).
"""
from __future__ import annotations

import numpy as np

from ..core import flags
from ..core.callsite import user_callsite
from ..core.errors import HeadraceError, SlotError, where
from ..core.names import EMPTY_VAR_NAME, grad_name
from ..ops.gradrule import NO_GRADIENT, GradMaker
from ..ops.registry import InferContext, Meta, lookup, resolve_attrs
from ..ops.kernel import KernelContext
from ..ops.step import CHECK_KERNELS, Step
from . import tape
from .tensor import Tensor


def _as_items(value):
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return value
    return (value,)


def _gather(op_type, opdef, inputs):
    """``(arrays for the kernel, arrays per slot for infer, [(slot, k, Tensor)])``."""
    kernel_ins, infer_ins, tensors = {}, {}, []
    for slot, value in inputs.items():
        items = _as_items(value)
        if not items:
            continue
        spec = opdef.input_slot(slot)
        if spec is None:
            known = ", ".join(s.name for s in opdef.inputs)
            raise SlotError(f"{where(op_type, user_callsite())}: unknown input slot `{slot}` (slots: {known})")
        arrays = []
        for k, item in enumerate(items):
            if not isinstance(item, Tensor):
                raise TypeError(f"{where(op_type, user_callsite())}, input `{slot}`: expected a Tensor "
                                f"in dygraph mode, got {type(item).__name__} (wrap data with paddle.to_tensor)")
            arrays.append(item._value)
            tensors.append((slot, k, item))
        if len(arrays) > 1 and not spec.many:
            raise SlotError(f"{where(op_type, user_callsite())}, input `{slot}`: expected exactly one "
                            f"Tensor, got {len(arrays)}")
        kernel_ins[slot] = arrays if spec.many else arrays[0]
        infer_ins[slot] = arrays
    for spec in opdef.inputs:
        if not spec.optional and spec.name not in infer_ins:
            raise SlotError(f"{where(op_type, user_callsite())}: input `{spec.name}` is required")
    return kernel_ins, infer_ins, tensors


def _infer(op_type, opdef, infer_ins, attrs):
    try:
        ctx = InferContext(op_type, None, infer_ins, attrs)
        opdef.infer(ctx)
    except HeadraceError:
        # the same check again, now naming the user's line (kept off the fast path)
        ctx = InferContext(op_type, user_callsite(), infer_ins, attrs)
        opdef.infer(ctx)
        raise
    return ctx.outs


def run_op(op_type, inputs=None, attrs=None, outputs=None) -> dict:
    """Run one op eagerly; return ``{slot: [Tensor, ...]}`` like ``apply_op`` in static mode."""
    opdef = lookup(op_type)
    kernel_ins, infer_ins, in_tensors = _gather(op_type, opdef, inputs or {})
    try:
        attrs = resolve_attrs(opdef, attrs or {}, op_type, None)
    except HeadraceError:
        resolve_attrs(opdef, attrs or {}, op_type, user_callsite())
        raise
    inferred = _infer(op_type, opdef, infer_ins, attrs)
    given = {slot: list(_as_items(v)) for slot, v in (outputs or {}).items()}
    wanted = [s.name for s in opdef.outputs if s.name in given or not s.optional]
    step, expect = _step(op_type, opdef, attrs, inputs or {}, given, wanted, inferred)
    outs = step.call(kernel_ins, None, expect, attrs)
    requires = (tape.grad_enabled and opdef.grad is not NO_GRADIENT
                and any(not t.stop_gradient for _, _, t in in_tensors))
    result, out_arrays = {}, []
    for slot in wanted:
        many = opdef.output_slot(slot).many
        values = outs[slot] if many else (outs[slot],)
        targets = given.get(slot)
        if targets is not None and len(targets) != len(values):
            raise SlotError(f"{where(op_type, user_callsite())}, output `{slot}`: the kernel gave "
                            f"{len(values)} value(s), {len(targets)} Tensor(s) were passed")
        tensors = []
        for k, value in enumerate(values):
            value = np.asarray(value)
            # outputs the caller passed (running statistics, update targets) never join the graph
            floating = value.dtype.kind == "f" and targets is None
            if targets is not None:
                t = targets[k]
                if not tape.recomputing:   # a recomputation must not update running statistics twice
                    t._value = value
            else:
                t = Tensor._wrap(value, stop_gradient=not (requires and floating))
            tensors.append(t)
            out_arrays.append((slot, k, t, floating))
        result[slot] = tensors
    if requires and tape.recording:
        _record(op_type, opdef, attrs, in_tensors, out_arrays)
    return result


_STEPS: dict = {}   # (op type, wanted slots) -> a Step without names, attributes or generator


def _step(op_type, opdef, attrs, inputs, given, wanted, inferred):
    """The op as a ``Step``, and what check mode expects of its outputs.  Outside check mode the
    step carries no names (errors describe inputs by slot); in check mode names identify Tensors
    (a Tensor passed as an output that is also an input keeps one name, as a static variable
    would) and ``expect`` gives each output's ``(shape, dtype)`` from ``infer``."""
    if not CHECK_KERNELS and not opdef.random:   # the attributes are passed to each call
        key = (op_type, tuple(wanted), flags.nan_inf_level())
        step = _STEPS.get(key)
        if step is None:
            step = _STEPS[key] = Step(opdef, op_type, user_callsite, None, None, None,
                                      ctx=KernelContext(frozenset(wanted)))
        return step, None
    ctx = KernelContext(frozenset(wanted))
    if not CHECK_KERNELS:
        return Step(opdef, op_type, user_callsite, None, None, attrs, ctx=ctx), None
    ins = []
    for slot, value in inputs.items():
        items = _as_items(value)
        if items:
            ins.append((slot, tuple(id(t) for t in items), opdef.input_slot(slot).many))
    outs, expected = [], {}
    for slot in wanted:
        targets = given.get(slot)
        metas = inferred.get(slot, ())
        names = tuple(id(t) for t in targets) if targets is not None else \
            tuple(f"{slot}:{k}" for k in range(len(metas)))
        outs.append((slot, names, opdef.output_slot(slot).many))
        expected.update((name, (shape, dtype.numpy)) for name, (shape, dtype) in zip(names, metas))
    return Step(opdef, op_type, user_callsite, tuple(ins), tuple(outs), attrs, ctx=ctx), expected.get


# --- recording ------------------------------------------------------------------------------------
def _record(op_type, opdef, attrs, in_tensors, out_arrays) -> None:
    callsite = user_callsite()
    in_names, values, requires = {}, {}, []
    for slot, k, t in in_tensors:
        name = f"in:{slot}:{k}"
        in_names.setdefault(slot, []).append(name)
        values[name] = t._value
        if not t.stop_gradient:
            requires.append((name, t))
    out_names, out_grad_names, out_metas = {}, [], []
    for slot, k, t, _ in out_arrays:
        name = f"out:{slot}:{k}"
        out_names.setdefault(slot, []).append(name)
        values[name] = t._value
        out_grad_names.append(grad_name(name))
        out_metas.append(Meta(t._value.shape, t._value.dtype))
    rule = opdef.grad
    wanted = {grad_name(name) for name, _ in requires}
    if rule is None:
        grad_ops = None     # reported by backward if a gradient reaches it
    else:
        all_in_grads = {grad_name(n) for names in in_names.values() for n in names}
        grad_ops = []
        for gop in rule(GradMaker(op_type, in_names, out_names, attrs)):
            outs = {}
            gdef = lookup(gop.type)
            for slot, names in gop.outputs.items():
                kept = [n if n not in all_in_grads or n in wanted else EMPTY_VAR_NAME for n in names]
                if any(n != EMPTY_VAR_NAME for n in kept):
                    outs[slot] = kept if gdef.output_slot(slot).many else [n for n in kept if n != EMPTY_VAR_NAME]
            if outs:
                gop.outputs = outs
                grad_ops.append(gop)
    saved = {}
    for gop in grad_ops or ():
        shape_only = lookup(gop.type).no_need_buffer
        for slot, names in gop.inputs.items():
            for name in names:
                value = values.get(name)
                if value is None:
                    continue
                if slot in shape_only:
                    if name not in saved:
                        saved[name] = Meta(value.shape, value.dtype)
                elif name not in saved or type(saved[name]) is Meta:
                    saved[name] = value
    saved = {name: tape.pack_saved(value) for name, value in saved.items()}
    node_cls = tape.OpNode if grad_ops is not None else _NoRuleNode
    node = node_cls(op_type, callsite, grad_ops, saved, [tape._edge_of(t) for _, t in requires],
                    [grad_name(name) for name, _ in requires], out_grad_names, out_metas)
    for index, (_, _, t, floating) in enumerate(out_arrays):
        if floating:
            t._node, t._out_index = node, index


class _NoRuleNode(tape.OpNode):
    """An op without a gradient rule: an error only when a gradient has to flow through it."""

    __slots__ = ()

    def apply(self, out_grads):
        raise HeadraceError(f"{self.label()} has no gradient rule, but backward() needs the gradient "
                            "through it; detach() its inputs or run it under paddle.no_grad()")
