"""A recorded op on the tape (``OpNode``) and the plan its recording follows (``RecordPlan``).

A *record plan* is what recording an op needs beyond the arrays, the same for every call of one
signature (op, attributes, input shapes and dtypes) with the same inputs requiring grad and the
same differentiable outputs: the op's gradient rule run once over node-local names (``in:X:0``,
``out:Out:0``; outputs for inputs that need no gradient dropped), which forward arrays those
gradient ops read (or only their shape and dtype: ``no_need_buffer`` slots), and the gradient ops
compiled into a small *program* over numbered values: ``[saved arrays..., output gradients...,
gradient-op outputs...]``.  A node then keeps only its plan, its saved arrays (in the plan's
order; the plan keeps the ``Meta``s of shape-only inputs, the same for every call of its
signature), its edges, its outputs' shapes (an op of several outputs only: a missing gradient is
zero-filled) and the user's line (raw ``(file, line)``, formatted for messages only); ``apply``
runs the program.

The gradient kernels are looked up on their ``OpDef`` at each run (a kernel replaced at run time
is the one called).  Outside check mode, without the NaN/Inf check and for ops that draw no random
numbers the kernel is called directly; otherwise, and to wrap an error, the gradient op's ``Step``
for the node's line is used (one per prepared op, call site and NaN-check level).
"""
from __future__ import annotations

import operator
import sys

import numpy as np

from ..core import flags
from ..core.callsite import text
from ..core.errors import HeadraceError, is_wrapped, where
from ..core.names import EMPTY_VAR_NAME, grad_name
from ..ops.gradrule import GradMaker
from ..ops.kernel import KernelContext
from ..ops.registry import Meta, lookup, resolve_attrs
from ..ops.step import CHECK_KERNELS, Step
from . import tape


_next_seq = tape._seq.__next__
_new_meta = object.__new__


def meta_of(array) -> Meta:
    """``Meta(array.shape, array.dtype)`` without the conversions (they are a tuple and a dtype)."""
    meta = object.__new__(Meta)
    meta.shape, meta.dtype = array.shape, array.dtype
    return meta


class RecordPlan:
    """See the module docstring.  ``saved``: ``((value index, shape only?), ...)`` over the op's
    inputs then outputs; ``requiring``: indices of the inputs that get an edge; ``floating``:
    which outputs join the graph; ``grad_ops``: the prepared gradient ops (None: no rule)."""

    __slots__ = ("op_type", "grad_ops", "saved", "saved_names", "requiring", "floating", "program", "results",
                 "n_values", "node_cls", "saved_index", "arrays_only", "pad", "n_inputs", "metas", "pick")

    def __init__(self, op_type, grad_ops, saved, requiring, floating, in_grad_names, out_grad_names, n_inputs):
        self.op_type, self.grad_ops, self.saved = op_type, grad_ops, saved
        self.requiring, self.floating = requiring, floating
        self.node_cls = OpNode if grad_ops is not None else NoRuleNode
        self.program, self.results, self.n_values = _compile(grad_ops or (), [name for name, _, _ in saved],
                                                             out_grad_names, in_grad_names)
        self.saved = tuple((index, shape_only) for _, index, shape_only in saved)
        self.saved_index = tuple(index for index, _ in self.saved)
        self.arrays_only = not any(shape_only for _, shape_only in self.saved)   # no Meta to make
        self.saved_names = tuple(name for name, _, _ in saved)   # node-local names, for tests and errors
        self.pad = [None] * (self.n_values - len(saved) - len(out_grad_names))   # the gradient ops' values
        self.pick = operator.itemgetter(*self.results) if len(self.results) > 1 else None   # -> a tuple
        self.n_inputs = n_inputs
        self.metas = None   # per saved value: its Meta if a shape-only input, else None (``learn_metas``)

    def learn_metas(self, tensors) -> list:
        """The Metas of the shape-only saved inputs, from the first call recorded with this plan:
        a plan serves one signature (op, attributes, input shapes and dtypes), so every call has
        the same ones (Metas are never written).  An output's shape may depend on the values
        (``nonzero``): a shape-only output gets ``_EACH_CALL`` (its Meta made per call)."""
        self.metas = [None if not shape_only else meta_of(tensors[i]._value) if i < self.n_inputs else _EACH_CALL
                      for i, shape_only in self.saved]
        return self.metas


_EACH_CALL = object()


def _compile(grad_ops, saved_names, out_grad_names, in_grad_names):
    """``(program, result indices, number of values)``: each prepared gradient op with its inputs
    and outputs as indices into the values list (-1: an output nobody reads)."""
    index = {name: i for i, name in enumerate(saved_names)}
    for name in out_grad_names:
        index.setdefault(name, len(index))
    program = []
    for entry in grad_ops:
        opdef, _, ins, outs, attrs, ctx, _ = entry
        in_spec = tuple((slot, tuple(index[n] for n in names) if many else index[names[0]], many)
                        for slot, names, many in ins)
        out_spec = []
        for slot, names, many in outs:
            slots = tuple(-1 if n == EMPTY_VAR_NAME else index.setdefault(n, len(index)) for n in names)
            out_spec.append((slot, slots if many else slots[0], many))
        random_op = bool(opdef.random)
        program.append([opdef, attrs, ctx, in_spec, tuple(out_spec), random_op, entry, None])
    results = tuple(index.setdefault(name, len(index)) for name in in_grad_names)
    _plan_donations(program, range(len(saved_names), len(saved_names) + len(out_grad_names)), results)
    return tuple(tuple(step) for step in program), results, len(index)


def _plan_donations(program, out_grads, results):
    """Mark the steps that may write their output into an output gradient they read, as the
    static inplace pass hands Out@GRAD's buffer to X@GRAD: the op is registered ``buffers=True``
    with ``inplace`` naming that input, no other step reads the gradient and the node does not
    return it.  ``apply`` then donates the array if backward holds the only reference to it."""
    readers = {}
    for step in program:
        for _, at, many in step[3]:
            for i in at if many else (at,):
                readers[i] = readers.get(i, 0) + 1
    for step in program:
        opdef, in_spec, out_spec = step[0], step[3], step[4]
        if not opdef.buffers or not opdef.inplace:
            continue
        for out_slot, in_slot in opdef.inplace.items():
            at = next((at for slot, at, many in in_spec if slot == in_slot and not many), None)
            written = any(slot == out_slot and not many and i >= 0 for slot, i, many in out_spec)
            if at in out_grads and readers[at] == 1 and at not in results and written:
                step[7] = (out_slot, at)
                break


def make_plan(op_type, opdef, attrs, in_slots, out_slots, requires, floating, callsite) -> RecordPlan:
    """The plan for inputs ``in_slots`` ``[(slot, k), ...]`` (``requires[i]``: input i needs a
    gradient) and outputs ``out_slots`` ``[(slot, k), ...]`` (``floating[j]``: output j joins the
    graph)."""
    in_names, index = {}, {}
    for i, (slot, k) in enumerate(in_slots):
        name = f"in:{slot}:{k}"
        in_names.setdefault(slot, []).append(name)
        index[name] = i
    out_names = {}
    for i, (slot, k) in enumerate(out_slots):
        name = f"out:{slot}:{k}"
        out_names.setdefault(slot, []).append(name)
        index[name] = len(in_slots) + i
    requiring = [f"in:{slot}:{k}" for (slot, k), r in zip(in_slots, requires) if r]
    grad_ops = None     # no rule: reported by backward if a gradient reaches it
    if opdef.grad is not None:
        grad_ops = _rule_ops(op_type, opdef, attrs, in_names, out_names, {grad_name(n) for n in requiring})
    saved = {}
    for gop in grad_ops or ():
        shape_only = lookup(gop.type).no_need_buffer
        for slot, names in gop.inputs.items():
            for name in names:
                if name in index and (name not in saved or (saved[name] and slot not in shape_only)):
                    saved[name] = slot in shape_only
    return RecordPlan(op_type, None if grad_ops is None else prepare_grad_ops(grad_ops, callsite),
                      tuple((name, index[name], shape_only) for name, shape_only in saved.items()),
                      tuple(i for i, r in enumerate(requires) if r), tuple(floating),
                      [grad_name(name) for name in requiring],
                      [grad_name(f"out:{slot}:{k}") for slot, k in out_slots], len(in_slots))


def _rule_ops(op_type, opdef, attrs, in_names, out_names, wanted) -> list:
    """The rule's gradient ops, outputs for inputs that need no gradient dropped."""
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
    return grad_ops


def prepare_grad_ops(grad_ops, callsite) -> list:
    """A node's gradient ops (``GradOp`` descriptions) made ready to run:
    ``(opdef, type, ins, outs, resolved attrs, KernelContext, {(callsite, NaN check level): Step})``
    each, shareable between nodes (the Steps differ only in the line their errors name)."""
    prepared = []
    for gop in grad_ops:
        opdef = lookup(gop.type)
        attrs = resolve_attrs(opdef, gop.attrs, gop.type, callsite)
        step = Step.from_slots(opdef, gop.type, callsite, gop.inputs, gop.outputs, attrs)
        prepared.append((opdef, gop.type, step.ins, step.outs, attrs, step.ctx, {}))
    return prepared


def grad_step(entry, op_type, callsite):
    """The Step of a prepared gradient op for a node recorded at ``callsite``, made once."""
    opdef, gtype, ins, outs, attrs, ctx, steps = entry
    key = (callsite, flags.nan_inf_level())
    step = steps.get(key)
    if step is None:
        if len(steps) >= 256:   # many call sites (generated code): forget them all at once
            steps.clear()
        step = steps[key] = Step(opdef, gtype, callsite, ins, outs, attrs, note=f"the gradient of `{op_type}`",
                                 ctx=ctx)
    return step


def _donatable(values, at) -> bool:
    """Whether ``values[at]``, an output gradient in ``OpNode.apply``, owns its memory and is held
    by nothing but the backward pass: the node's ``out_grads`` list and its ``values`` list.  The
    array is never bound to a local name here or in the calibration (``_EXCLUSIVE``), so a tracer
    keeping a snapshot of frame locals cannot make the two counts differ; anything holding the
    array raises its count (no donation)."""
    return type(values[at]) is np.ndarray and values[at].size >= _DONATE_MIN and values[at].base is None \
        and values[at].flags.writeable and _refcount(values[at]) == _EXCLUSIVE


_DONATE_MIN = 1 << 12   # elements: below, a fresh array costs no more than the checks


def _exclusive_refcount() -> int:
    """``sys.getrefcount`` of an array held by two lists only, passed as ``_donatable`` passes it."""
    out_grads = [np.empty(1)]
    values = [] + out_grads
    return _refcount(values[0])


_refcount = sys.getrefcount
_EXCLUSIVE = _exclusive_refcount()


class OpNode(tape.Node):
    """One forward op: its plan, the arrays its gradient ops read, the user's line."""

    __slots__ = ("plan", "site", "saved", "packed")

    def __init__(self, plan, site, saved, edges, out_metas, packed):
        self.seq = _next_seq()   # Node.__init__, inlined: one node per recorded op
        self.edges = edges
        self.out_metas = out_metas
        self.freed = False
        self.plan = plan
        self.site = site         # the user's line, raw (``core/callsite.py``): formatted for messages only
        self.saved = saved
        self.packed = packed     # saved values went through a saved_tensors_hooks pack

    @property
    def op_type(self) -> str:
        return self.plan.op_type

    @property
    def grad_ops(self):
        return self.plan.grad_ops

    @property
    def callsite(self) -> str:
        """The user's line that ran the op, as text (``"file.py:42"``)."""
        return text(self.site)

    def label(self) -> str:
        return where(self.plan.op_type, self.site)

    def apply(self, out_grads):
        plan = self.plan
        saved = self.saved
        if self.packed:
            saved = [v.unpack(v.value) if type(v) is tape._Packed else v for v in saved]
        values = saved + out_grads      # [saved..., output gradients..., gradient-op values...]
        values += plan.pad
        at = len(saved)
        for grad in out_grads:
            if grad is None:            # no gradient reached this output: zeros of its shape
                meta = self.out_metas[at - len(saved)]
                values[at] = np.zeros(meta.shape, meta.dtype)
            at += 1
        grad = None                     # (a donation counts the references to a gradient)
        checked = flags._nan_inf is not None   # (its report reads the inputs after the kernel: no donations)
        direct = not CHECK_KERNELS and not checked
        for opdef, attrs, ctx, in_spec, out_spec, random_op, entry, donate in plan.program:
            buffers = None
            if donate is not None and not checked and _donatable(values, donate[1]):
                buffers = {donate[0]: values[donate[1]]}
            ins = {}
            for slot, at, many in in_spec:
                ins[slot] = [values[i] for i in at] if many else values[at]
            if direct and not random_op:
                try:
                    outs = opdef.kernel(ins, attrs, ctx if buffers is None else KernelContext(ctx.wanted, buffers))
                except Exception as exc:
                    if is_wrapped(exc):
                        raise
                    raise grad_step(entry, plan.op_type, self.site).error(exc, ins) from exc
            else:
                outs = grad_step(entry, plan.op_type, self.site).call(ins, buffers)
            for slot, at, many in out_spec:
                if many:
                    for i, value in zip(at, outs[slot]):
                        if i >= 0:
                            values[i] = value
                else:
                    values[at] = outs[slot]
        results = plan.results
        if len(results) == 1:
            return [values[results[0]]]
        return plan.pick(values) if results else []

    def release(self):
        self.freed = True
        self.saved = None


class NoRuleNode(OpNode):
    """An op without a gradient rule: an error only when a gradient has to flow through it."""

    __slots__ = ()

    def apply(self, out_grads):
        raise HeadraceError(f"{self.label()} has no gradient rule, but backward() needs the gradient "
                            "through it; detach() its inputs or run it under paddle.no_grad()")


def record(plan, tensors, outputs, callsite) -> None:
    """Record one op run on the tape: ``tensors`` its input Tensors and ``outputs`` its output
    Tensors, in the plan's order."""
    hooked = bool(tape._hooks)
    both = tensors + outputs
    if hooked:
        saved = []
        for i, shape_only in plan.saved:
            array = both[i]._value
            saved.append(meta_of(array) if shape_only else tape.pack_saved(array))
    elif plan.arrays_only:
        saved = [both[i]._value for i in plan.saved_index]
    else:
        saved = []
        for i, meta in zip(plan.saved_index, plan.metas or plan.learn_metas(both)):
            saved.append(both[i]._value if meta is None else meta_of(both[i]._value) if meta is _EACH_CALL else meta)
    edges = []
    for i in plan.requiring:
        t = tensors[i]
        node = t._node
        edges.append((node, t._out_index) if node is not None else t)
    if len(outputs) == 1:
        # backward runs a node once a gradient reached one of its outputs: with one output there is
        # never a missing gradient to fill with zeros, so its shape is not kept
        node = plan.node_cls(plan, callsite, saved, edges, _ONE_OUTPUT, hooked)
        if plan.floating[0]:
            outputs[0]._node, outputs[0]._out_index = node, 0
        return
    out_metas = []
    for t in outputs:   # meta_of, inlined
        meta = _new_meta(Meta)
        array = t._value
        meta.shape, meta.dtype = array.shape, array.dtype
        out_metas.append(meta)
    node = plan.node_cls(plan, callsite, saved, edges, out_metas, hooked)
    index = 0
    for t, floating in zip(outputs, plan.floating):
        if floating:
            t._node, t._out_index = node, index
        index += 1


_ONE_OUTPUT = (None,)   # the out_metas of a node of one output (see record)
