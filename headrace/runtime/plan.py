"""Plan: a Program (+ feed and fetch names) turned into a list of ready-to-run steps.

Each step is the one step runner's ``Step`` (``ops/step.py``: kernel, where its inputs come from,
resolved attrs, where its outputs go, the generator a random op draws from) plus what the
executor does around it: the names whose data can be released after it (from the shared
liveness analysis), the names stripped to a shape placeholder, and the buffers the program's
buffer plan hands it (``donors``).  Building a plan also checks that every variable the program
reads is fed, persistable (read from the scope) or produced by an earlier op.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.errors import FeedError, FetchError, fmt_shape, where
from ..ops.kernel import KernelContext
from ..ops.registry import Meta, lookup
from ..ops.step import CHECK_KERNELS, Step
from ..passes import liveness
from ..passes.memory_reuse import executor_buffer_plan
from ..passes.schedule import alias_classes, execution_order
from . import interrupt


class PlannedStep(Step):
    """A Step of a plan: also what to free and strip after it and the buffers handed to it."""

    __slots__ = ("op", "frees", "strips", "donors", "expect", "out_names", "single")

    def __init__(self, opdef, op, program, frees, strips, donors):
        ins = tuple((slot, tuple(names), opdef.input_slot(slot).many)
                    for slot, names in op.inputs.items() if names)
        outs = tuple((slot, tuple(names), opdef.output_slot(slot).many)
                     for slot, names in op.outputs.items() if names)
        super().__init__(opdef, op.type, op.callsite, ins, outs, op.attrs, program)
        self.op = op
        self.frees = frees
        self.strips = strips
        self.donors = donors   # ((out slot, donor name, keep a shape placeholder), ...)
        self.expect = _expected_meta(op.block) if CHECK_KERNELS else None
        self.out_names = tuple(name for _, names, _ in outs for name in names)   # in storing order
        # the one output slot of a step with one output (not a list), else None: the ledger's fast path
        self.single = outs[0][0] if len(outs) == 1 and not outs[0][2] and len(outs[0][1]) == 1 else None

    def flat_outputs(self, outs):
        """The kernel's outputs ``outs`` as arrays, in ``out_names`` order (a wrong count is an
        error): what the executor's loop (``executor._store_outputs``) and the ledger's replay store."""
        single = self.single
        if single is not None:   # one output: most steps
            value = outs[single]
            return (value if type(value) is np.ndarray else np.asarray(value),)
        flat = []
        for slot, names, many in self.outs:
            if not many:
                flat.append(outs[slot])
                continue
            values = outs[slot]
            if len(values) != len(names):
                raise ValueError(f"kernel returned {len(values)} value(s) for output `{slot}`, "
                                 f"expected {len(names)}")
            flat.extend(values)
        for k, value in enumerate(flat):
            if type(value) is not np.ndarray:
                flat[k] = np.asarray(value)
        return flat

    def describe_input(self, name, value) -> str:
        """``name[declared shape]``, and the shape it had if that differs."""
        var = self.op.block._find_var_recursive(name)
        declared = fmt_shape(var.shape) if var is not None else ""
        got = fmt_shape(value.shape) if hasattr(value, "shape") else None
        return f"{name}{declared}" + (f" (got {got})" if got is not None and got != declared else "")


class FirstUpdateStep(PlannedStep):
    """The plan's first step writing a persistable variable: from here on a Ctrl-C is held until
    the run ends (``runtime/interrupt.py``), so the step's updates are applied all or none."""

    __slots__ = ()

    def __init__(self, *args):
        super().__init__(*args)
        self.plain = False   # the executor goes through ``call``

    def call(self, ins, buffers=None, expect=None, attrs=None):
        interrupt.begin()
        return Step.call(self, ins, buffers, expect, attrs)


def run_kernel(step, ins, given):
    """A step's kernel on ``ins`` with the buffers ``given`` (or None): ``Step.call`` for a step
    that checks, wraps or draws random numbers, else the kernel directly (what ``Step.call``
    does for a plain step, without the call).  The executor's loop and the ledger's replay."""
    if not step.plain:
        return step.call(ins, given, step.expect)
    if given is None:
        return step.kernel(ins, step.attrs, step.ctx)
    return step.kernel(ins, step.attrs, KernelContext(step.ctx.wanted, given))


def take_donors(donors, env, given) -> None:
    """Move the buffers the buffer plan hands a step into ``given`` (``{out slot: array}``); each
    donor leaves ``env`` (a shape placeholder stays when later ops read its shape)."""
    for slot, name, meta_after in donors:
        value = given[slot] = env.pop(name)
        if meta_after:
            env[name] = Meta(value.shape, value.dtype)


def _expected_meta(block):
    """Check mode: an output's inferred ``(shape, dtype)`` (dims may be -1)."""
    def expect(name):
        var = block._find_var_recursive(name)
        if var is None or var.shape is None or var.dtype is None:
            return None
        return var.shape, var.dtype.numpy
    return expect


@dataclass
class Plan:
    steps: list
    persist_reads: tuple      # persistable names read before written: loaded from the scope
    persistables: frozenset   # every persistable name the program touches
    fetch_names: tuple
    feed_names: tuple
    updates: bool = False     # some step writes a persistable (Ctrl-C is held from the first one on)
    # persistable read from the scope -> (shape, NumPy dtype) its value must have (declared
    # without -1 dims); a value set by hand that differs is an error, not a broadcast
    persist_expect: dict = field(default_factory=dict)
    # feed signature -> Ledger (or None: that signature's runs are not ledger-counted), see ledger.py
    ledgers: dict = field(default_factory=dict)
    # feed signature -> how many replays of its ledgers stopped matching (``ledger.MAX_MISSES``)
    ledger_misses: dict = field(default_factory=dict)


def build_plan(program, feed_names, fetch_names) -> Plan:
    ops = execution_order(program)
    persistables = frozenset(v.name for v in program.list_vars() if v.persistable)
    persist_reads = _check_reads(program, ops, set(feed_names), persistables, fetch_names)
    live = liveness.analyze(ops, lambda op: lookup(op.type).no_need_buffer,
                            keep=frozenset(fetch_names), never_free=persistables)
    donors = _buffer_donors(ops, live, frozenset(fetch_names), 
                            executor_buffer_plan(program, frozenset(fetch_names)))
    first = next((i for i, op in enumerate(ops) if persistables.intersection(op.output_arg_names)), None)
    steps = [(FirstUpdateStep if i == first else PlannedStep)(
                 lookup(op.type), op, program, tuple(live.free_after[i]), tuple(live.strip_after[i]), donors[i])
             for i, op in enumerate(ops)]
    return Plan(steps, tuple(persist_reads), persistables, tuple(fetch_names), tuple(feed_names), first is not None,
                _persist_expect(program, persist_reads))


def _persist_expect(program, names) -> dict:
    expect = {}
    for name in names:
        var = program.global_block()._find_var_recursive(name)
        if var is not None and var.shape is not None and var.dtype is not None and -1 not in var.shape:
            expect[name] = (tuple(var.shape), var.dtype.numpy)
    return expect


def _check_reads(program, ops, fed, persistables, fetch_names) -> list:
    """Every read is fed, persistable or produced earlier; returns the persistables read first."""
    block = program.global_block()
    for op in ops:
        for name in op.output_arg_names:
            if name in fed:
                raise FeedError(f"cannot feed {name!r}: it is computed by {where(op.type, op.callsite)}, "
                                "which would overwrite the fed value")
    produced, persist_reads = set(), []
    for op in ops:
        for slot, names in op.inputs.items():
            for name in names:
                if name in produced or name in fed:
                    continue
                if name in persistables:
                    if name not in persist_reads:
                        persist_reads.append(name)
                    continue
                var = block._find_var_recursive(name)
                kind = "data variable" if var is not None and var.is_data else "variable"
                raise FeedError(f"{where(op.type, op.callsite)}, input `{slot}`: {kind} {name!r} is "
                                "read but was neither fed nor computed by an earlier op "
                                f"(fed: {sorted(fed) or 'nothing'})")
        produced.update(op.output_arg_names)
    for name in fetch_names:
        if name not in produced and name not in fed and name not in persistables:
            raise FetchError(f"cannot fetch {name!r}: no op of this program computes it and it is "
                             "neither fed nor persistable")
    return persist_reads


def _buffer_donors(ops, live, fetch_names, entries) -> list:
    """Per op, the ``(out slot, donor, keep a placeholder)`` triples of the buffer plan ``entries``
    (op id -> entries: the ops' ``buffer_reuse`` attributes set by the inplace and memory-reuse
    passes, or the executor's default plan).  A donor is
    handed to its receiving op instead of being freed, so its own free/strip point is removed
    here.  The plan may be stale (made for other fetches, or the program is a test clone or was
    edited), so an entry is used only when it is safe here: its output is the op's output in that
    slot; the donor is not fetched and shares no buffer with a fetched name (``views``); its data
    is read last at this op (only as the op's declared ``inplace`` input) or earlier, and no other
    name sharing its buffer is read at or after this op; and it has not been handed out already."""
    per_op = [() for _ in ops]
    if not entries:
        return per_op
    classes = alias_classes(ops)
    members = {}
    for name, root in classes.items():
        members.setdefault(root, set()).add(name)
    fetched = {classes.get(n, n) for n in fetch_names}
    handed = set()
    for i, op in enumerate(ops):
        inplace = lookup(op.type).inplace
        pairs = []
        for slot, out_name, donor in entries.get(op.id, ()):
            root = classes.get(donor, donor)
            if out_name not in op.outputs.get(slot, ()) or donor in handed or donor in fetch_names \
                    or root in fetched:
                continue
            found = _interval_before(live, donor, i)
            if found is None:
                continue
            data_end, meta_end = found
            if data_end == i and donor not in op.inputs.get(inplace.get(slot), ()):
                continue
            if any(_read_from(live, m, i) for m in members.get(root, ()) if m != donor):
                continue   # another view of the buffer is still read
            meta_after = meta_end > i   # later ops read its shape: leave a placeholder
            if 0 <= data_end and donor in live.strip_after[data_end]:
                live.strip_after[data_end].remove(donor)
            end = max(data_end, meta_end)
            if not meta_after and 0 <= end and donor in live.free_after[end]:
                live.free_after[end].remove(donor)
            pairs.append((slot, donor, meta_after))
            handed.add(donor)
        per_op[i] = tuple(pairs)
    return per_op


def _interval_before(live, name, i):
    """``(data_end, meta_end)`` of ``name``'s value made before op ``i`` whose data is read last
    at ``i`` or earlier (None if there is none)."""
    found = [(data_end, meta_end) for n, start, data_end, meta_end in live.intervals
             if n == name and start < i and data_end <= i]
    return max(found) if found else None


def _read_from(live, name, i) -> bool:
    """Whether a value of ``name`` made before op ``i`` has its data read at ``i`` or later."""
    return any(n == name and start < i and data_end >= i for n, start, data_end, _ in live.intervals)
