"""The eager runner: ``apply_op`` in dygraph mode runs the op's registered kernel at once.

Per op: look the op up, gather the input arrays, resolve attributes (defaults, unknown names
rejected) and run ``infer`` on the input arrays, so a bad input is the same clear error as at
static build time (naming the op, the slot and the user's line) -- once per signature (op,
attributes as given, input shapes and dtypes): a call like one that passed reuses its result; pick the generator of a random
op and run the kernel through the one step runner (``ops/step.py``: the same generator choice,
output checks in check mode and error wrapping as the executor); wrap the outputs in Tensors (or
write them into the Tensors the caller passed as ``outputs``); and, when gradients are enabled
and an input requires grad, record the op on the tape (``tape.py``).
"""
from __future__ import annotations

import math

import numpy as np

from ..core import flags
from ..core.callsite import user_callsite
from ..core.errors import HeadraceError, SlotError, is_wrapped, where
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
    """``(arrays for the kernel, arrays per slot for infer, [(slot, k, Tensor)], shapes)``, with
    ``shapes`` = ``((slot, ((shape, dtype), ...)), ...)``: what ``infer`` reads of the inputs."""
    kernel_ins, infer_ins, tensors, shapes = {}, {}, [], []
    single = opdef.__dict__.get("_single_slots") or _single_slots(opdef)
    for slot, value in inputs.items():
        if slot in single and isinstance(value, Tensor):   # the common case, fast
            array = value._value
            kernel_ins[slot] = array
            infer_ins[slot] = (array,)
            tensors.append((slot, 0, value))
            shapes.append((slot, array.shape, array.dtype))
            continue
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
        shapes.append((slot, tuple([(a.shape, a.dtype) for a in arrays])))
    if not _has_required(opdef, infer_ins):
        for spec in opdef.inputs:
            if not spec.optional and spec.name not in infer_ins:
                raise SlotError(f"{where(op_type, user_callsite())}: input `{spec.name}` is required")
    return kernel_ins, infer_ins, tensors, tuple(shapes)


def _single_slots(opdef) -> dict:
    """``{slot: True}`` for the op's single-Tensor input slots (cached on the OpDef)."""
    single = opdef.__dict__.get("_single_slots")
    if single is None:   # slots are fixed at registration
        single = opdef.__dict__["_single_slots"] = {s.name: True for s in opdef.inputs if not s.many}
    return single


def _has_required(opdef, infer_ins):
    required = opdef.__dict__.get("_required_names")
    if required is None:   # slots are fixed at registration: list them on first use
        required = opdef.__dict__["_required_names"] = tuple(s.name for s in opdef.inputs if not s.optional)
    for name in required:
        if name not in infer_ins:
            return False
    return True


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


_CHECKED: dict = {}     # signature of a call that passed its checks -> (resolved attrs, inferred, plans)
_CHECKED_MAX = 4096     # forgotten all at once when full (varying shapes must not grow it forever)


def _freeze(value):
    """A hashable, type-exact form of an attribute value (True and 1 differ, and so do 0.0 and
    -0.0, which compare equal)."""
    if type(value) in (list, tuple):
        return (list, tuple(_freeze(v) for v in value))
    if isinstance(value, (float, np.floating)):
        return (type(value), value, math.copysign(1.0, value))
    return (type(value), value)


def _check(op_type, opdef, given, infer_ins, shapes):
    """``(resolved attrs, inferred outputs, plans)``: cached per signature (the op, the attributes
    as given, and every input's shape and dtype: infer reads nothing else), so a repeated call
    skips resolution and shape inference; a failing call is never cached and raises every time.
    ``plans`` is the signature's dict of record plans (None when an attribute is unhashable)."""
    key = (op_type, tuple([(name, _freeze(value)) for name, value in given.items()]) if given else (), shapes)
    try:
        checked = _CHECKED.get(key)
    except TypeError:
        key = checked = None
    if checked is not None:
        return checked
    try:
        attrs = resolve_attrs(opdef, given, op_type, None)
    except HeadraceError:
        resolve_attrs(opdef, given, op_type, user_callsite())
        raise
    checked = (attrs, _infer(op_type, opdef, infer_ins, attrs), None if key is None else {})
    if key is not None:
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[key] = checked
    return checked


def run_op(op_type, inputs=None, attrs=None, outputs=None) -> dict:
    """Run one op eagerly; return ``{slot: [Tensor, ...]}`` like ``apply_op`` in static mode."""
    opdef = lookup(op_type)
    kernel_ins, infer_ins, in_tensors, shapes = _gather(op_type, opdef, inputs or {})
    attrs, inferred, plans = _check(op_type, opdef, attrs or {}, infer_ins, shapes)
    given = {slot: list(_as_items(v)) for slot, v in outputs.items()} if outputs else {}
    wanted = _wanted(op_type, opdef, given)
    step, expect = _step(op_type, opdef, attrs, inputs or {}, given, wanted, inferred)
    if step.plain:   # what Step.call does for it, without the call
        try:
            outs = step.kernel(kernel_ins, attrs, step.ctx)
        except Exception as exc:
            if is_wrapped(exc):
                raise
            raise step.error(exc, kernel_ins) from exc
    else:
        outs = step.call(kernel_ins, None, expect, attrs)
    requires = False
    if tape.grad_enabled and opdef.grad is not NO_GRADIENT:
        for _, _, t in in_tensors:
            if not t.stop_gradient:
                requires = True
                break
    result, out_arrays = {}, []
    for slot, many in wanted:
        values = outs[slot] if many else (outs[slot],)
        targets = given.get(slot) if given else None
        if targets is not None and len(targets) != len(values):
            raise SlotError(f"{where(op_type, user_callsite())}, output `{slot}`: the kernel gave "
                            f"{len(values)} value(s), {len(targets)} Tensor(s) were passed")
        tensors = []
        for k, value in enumerate(values):
            if type(value) is not np.ndarray:
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
        _record(op_type, opdef, attrs, in_tensors, out_arrays, plans)
    elif requires:
        for _, _, t, floating in out_arrays:
            if floating:
                tape.note_tracked(t)
    return result


_WANTED: dict = {}   # (op type, output slots given) -> ((slot, many), ...) the kernel computes


def _wanted(op_type, opdef, given):
    key = (op_type, tuple(given)) if given else op_type
    wanted = _WANTED.get(key)
    if wanted is None:
        wanted = _WANTED[key] = tuple((s.name, s.many) for s in opdef.outputs
                                      if s.name in given or not s.optional)
    return wanted


_STEPS: dict = {}   # (op type, wanted slots) -> a Step without names, attributes or generator


def _step(op_type, opdef, attrs, inputs, given, wanted, inferred):
    """The op as a ``Step``, and what check mode expects of its outputs.  Outside check mode the
    step carries no names (errors describe inputs by slot); in check mode names identify Tensors
    (a Tensor passed as an output that is also an input keeps one name, as a static variable
    would) and ``expect`` gives each output's ``(shape, dtype)`` from ``infer``."""
    if not CHECK_KERNELS and not opdef.random:   # the attributes are passed to each call
        key = (op_type, wanted, flags.nan_inf_level())
        step = _STEPS.get(key)
        if step is None:
            step = _STEPS[key] = Step(opdef, op_type, user_callsite, None, None, None,
                                      ctx=KernelContext(frozenset(slot for slot, _ in wanted)))
        return step, None
    ctx = KernelContext(frozenset(slot for slot, _ in wanted))
    if not CHECK_KERNELS:
        return Step(opdef, op_type, user_callsite, None, None, attrs, ctx=ctx), None
    ins = []
    for slot, value in inputs.items():
        items = _as_items(value)
        if items:
            ins.append((slot, tuple(id(t) for t in items), opdef.input_slot(slot).many))
    outs, expected = [], {}
    for slot, _ in wanted:
        targets = given.get(slot)
        metas = inferred.get(slot, ())
        names = tuple(id(t) for t in targets) if targets is not None else \
            tuple(f"{slot}:{k}" for k in range(len(metas)))
        outs.append((slot, names, opdef.output_slot(slot).many))
        expected.update((name, (shape, dtype.numpy)) for name, (shape, dtype) in zip(names, metas))
    return Step(opdef, op_type, user_callsite, tuple(ins), tuple(outs), attrs, ctx=ctx), expected.get


# --- recording ------------------------------------------------------------------------------------
class _RecordPlan:
    """What recording an op needs beyond the arrays, the same for every call of one signature
    with the same inputs requiring grad: the prepared gradient ops (None: the op has no rule),
    which arrays to save (name, index into inputs + outputs, shape only?) and the local names."""

    __slots__ = ("grad_ops", "saved", "in_grad_names", "out_grad_names")

    def __init__(self, grad_ops, saved, in_grad_names, out_grad_names):
        self.grad_ops, self.saved = grad_ops, saved
        self.in_grad_names, self.out_grad_names = in_grad_names, out_grad_names


def _meta(array) -> Meta:
    """``Meta(array.shape, array.dtype)`` without the conversions (they are a tuple and a dtype)."""
    meta = object.__new__(Meta)
    meta.shape, meta.dtype = array.shape, array.dtype
    return meta


def _record(op_type, opdef, attrs, in_tensors, out_arrays, plans) -> None:
    """Record the op on the tape; ``plans``: the signature's record plans (None: not cached)."""
    callsite = user_callsite()
    requires = tuple([not t.stop_gradient for _, _, t in in_tensors])
    key = (requires, tuple([(slot, k, floating) for slot, k, _, floating in out_arrays]))
    plan = plans.get(key) if plans is not None else None
    if plan is None:
        plan = _plan(op_type, opdef, attrs, in_tensors, out_arrays, requires, callsite)
        if plans is not None:
            plans[key] = plan
    n_in, saved = len(in_tensors), {}
    for name, i, shape_only in plan.saved:
        array = in_tensors[i][2]._value if i < n_in else out_arrays[i - n_in][2]._value
        saved[name] = _meta(array) if shape_only else tape.pack_saved(array) if tape.hooked() else array
    edges = []
    for (_, _, t), r in zip(in_tensors, requires):
        if r:
            edges.append((t._node, t._out_index) if t._node is not None else t)
    node_cls = tape.OpNode if plan.grad_ops is not None else _NoRuleNode
    node = node_cls(op_type, callsite, plan.grad_ops, saved, edges, plan.in_grad_names, plan.out_grad_names,
                    [_meta(t._value) for _, _, t, _ in out_arrays])
    for index, (_, _, t, floating) in enumerate(out_arrays):
        if floating:
            t._node, t._out_index = node, index


def _plan(op_type, opdef, attrs, in_tensors, out_arrays, requires, callsite) -> _RecordPlan:
    """The gradient rule run over node-local names (``in:X:0``, ``out:Out:0``), outputs for
    inputs that need no gradient dropped, and what the gradient ops read."""
    in_names, index = {}, {}
    for i, (slot, k, _) in enumerate(in_tensors):
        name = f"in:{slot}:{k}"
        in_names.setdefault(slot, []).append(name)
        index[name] = i
    out_names = {}
    for i, (slot, k, _, _) in enumerate(out_arrays):
        name = f"out:{slot}:{k}"
        out_names.setdefault(slot, []).append(name)
        index[name] = len(in_tensors) + i
    requiring = [f"in:{slot}:{k}" for (slot, k, _), r in zip(in_tensors, requires) if r]
    wanted = {grad_name(name) for name in requiring}
    grad_ops = None     # no rule: reported by backward if a gradient reaches it
    if opdef.grad is not None:
        all_in_grads = {grad_name(n) for names in in_names.values() for n in names}
        grad_ops = []
        for gop in opdef.grad(GradMaker(op_type, in_names, out_names, attrs)):
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
                if name in index and (name not in saved or (saved[name] and slot not in shape_only)):
                    saved[name] = slot in shape_only
    return _RecordPlan(None if grad_ops is None else tape.prepare_grad_ops(grad_ops, callsite),
                       tuple((name, index[name], shape_only) for name, shape_only in saved.items()),
                       [grad_name(name) for name in requiring],
                       [grad_name(f"out:{slot}:{k}") for slot, k, _, _ in out_arrays])


class _NoRuleNode(tape.OpNode):
    """An op without a gradient rule: an error only when a gradient has to flow through it."""

    __slots__ = ()

    def apply(self, out_grads):
        raise HeadraceError(f"{self.label()} has no gradient rule, but backward() needs the gradient "
                            "through it; detach() its inputs or run it under paddle.no_grad()")
