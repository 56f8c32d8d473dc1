"""The eager runner: ``apply_op`` in dygraph mode runs the op's registered kernel at once.

Per op: look the op up, gather the input arrays, resolve attributes (defaults, unknown names
rejected) and run ``infer`` on the input arrays, so a bad input is the same clear error as at
static build time (naming the op, the slot and the user's line) -- once per signature (op,
attributes as given, input shapes and dtypes): a call like one that passed reuses its result; pick the generator of a random
op and run the kernel through the one step runner (``ops/step.py``: the same generator choice,
output checks in check mode and error wrapping as the executor); wrap the outputs in Tensors (or
write them into the Tensors the caller passed as ``outputs``); and, when gradients are enabled
and an input requires grad, record the op on the tape (``opnode.py``, ``tape.py``).  A call that
qualifies for the fast path (``fast.py``) and repeats a signature that passed skips all but the
kernel, the wrapping and the recording.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import flags
from ..core.callsite import user_callsite, user_site
from ..core.errors import HeadraceError, SlotError, is_wrapped, where
from ..ops.gradrule import NO_GRADIENT
from ..ops.registry import InferContext, lookup, resolve_attrs
from ..ops.kernel import KernelContext
from ..ops.step import CHECK_KERNELS, Step
from . import tape
from .fast import FAST, fast_key, learn
from .opnode import make_plan, record
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
    """Run one op eagerly; return ``{slot: [Tensor, ...]}`` like ``apply_op`` in static mode.
    A call like one that passed before takes the fast path (``fast.py``)."""
    key = None
    if inputs and not CHECK_KERNELS:
        key = fast_key(op_type, inputs, attrs, outputs)
        if key is not None:
            op = FAST.get(key)
            if op is not None and flags._nan_inf is None:
                if outputs is None:
                    return op.run(inputs)
                result = op.run_into(inputs, outputs)
                if result is not None:
                    return result
    return _run_full(op_type, inputs, attrs, outputs, key)


def run_update(op_type, inputs, attrs, outputs):
    """``run_op`` for a call passing its output Tensors (an optimizer's update), and the
    ``FastOp`` that serves its signature from now on (None when it does not qualify), for the
    optimizer's memo of its updates (``optimizer/eager_memo.py``)."""
    result = run_op(op_type, inputs, attrs, outputs)   # (learning steps only: the key twice is fine)
    key = fast_key(op_type, inputs, attrs, outputs) if inputs and not CHECK_KERNELS else None
    return result, (FAST.get(key) if key is not None else None)


def _run_full(op_type, inputs, attrs, outputs, key) -> dict:
    """``run_op`` with every check; stores the call's ``FastOp`` under ``key`` when it passes."""
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
    if key is not None and step.plain:
        learn(key, op_type, opdef, attrs, step, inputs, wanted, opdef.grad is not NO_GRADIENT, plans, out_arrays)
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
def _record(op_type, opdef, attrs, in_tensors, out_arrays, plans) -> None:
    """Record the op on the tape; ``plans``: the signature's record plans (None: not cached)."""
    callsite = user_site()
    requires = tuple([not t.stop_gradient for _, _, t in in_tensors])
    floating = tuple([f for _, _, _, f in out_arrays])
    key = (requires, tuple([(slot, k, f) for slot, k, _, f in out_arrays]))
    plan = plans.get(key) if plans is not None else None
    if plan is None:
        plan = make_plan(op_type, opdef, attrs, [(slot, k) for slot, k, _ in in_tensors],
                         [(slot, k) for slot, k, _, _ in out_arrays], requires, floating, callsite)
        if plans is not None:
            plans[key] = plan
    record(plan, [t for _, _, t in in_tensors], [t for _, _, t, _ in out_arrays], callsite)
