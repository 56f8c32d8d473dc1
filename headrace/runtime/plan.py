"""Plan: a Program (+ feed and fetch names) turned into a list of ready-to-call steps.

Each step holds the kernel, where its inputs come from, its resolved attrs, where its outputs go,
the random generator it draws from, and the names whose data can be released after it (from the
shared liveness analysis).  Building a plan also checks that every variable the program reads is
fed, persistable (read from the scope) or produced by an earlier op.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..core.errors import FeedError, FetchError, where
from ..core.random import default_generator, fixed_generator
from ..ops.registry import lookup
from ..passes import liveness
from ..passes.inplace import execution_order
from ..passes.schedule import alias_classes

CHECK_KERNELS = os.environ.get("HEADRACE_CHECK_KERNELS", "") not in ("", "0")


@dataclass
class Step:
    kernel: object
    ins: tuple     # ((slot, (names...), many), ...)
    attrs: dict
    outs: tuple    # ((slot, (names...), many), ...)
    frees: tuple
    strips: tuple
    rng: object    # None, or a callable returning a numpy Generator
    op: object
    donors: tuple = ()  # ((out slot, donor name, keep a shape placeholder), ...): ``out=`` buffers

    def as_tuple(self):
        return (self.kernel, self.ins, self.attrs, self.outs, self.frees, self.strips, self.rng,
                self.donors)


@dataclass
class Plan:
    steps: list
    fast_steps: list          # Step.as_tuple() of each step, for the executor's loop
    persist_reads: tuple      # persistable names read before written: loaded from the scope
    persistables: frozenset   # every persistable name the program touches
    fetch_names: tuple
    feed_names: tuple
    check_kernels: bool


def _rng_source(op, program):
    """Which generator a random op draws from (see core/random.py)."""
    attrs = op.attrs
    seed = int(attrs.get("seed", 0) or 0)
    if attrs.get("fix_seed", False) or seed != 0:
        return lambda: fixed_generator(seed)
    program_gen = program.random_generator()
    if program_gen is not None:
        return lambda: program_gen.numpy
    return lambda: default_generator().numpy


def build_plan(program, feed_names, fetch_names, check_kernels=None) -> Plan:
    block = program.global_block()
    ops = execution_order(program)
    persistables = frozenset(v.name for v in program.list_vars() if v.persistable)
    fed = set(feed_names)
    produced = set()
    persist_reads = []
    steps = []
    opdefs = [lookup(op.type) for op in ops]
    for op in ops:
        for name in op.output_arg_names:
            if name in fed:
                raise FeedError(f"cannot feed {name!r}: it is computed by {where(op.type, op.callsite)}, "
                                "which would overwrite the fed value")
    for op, opdef in zip(ops, opdefs):
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
    live = liveness.analyze(ops, lambda op: lookup(op.type).no_need_buffer,
                            keep=frozenset(fetch_names), never_free=persistables)
    donors = _buffer_donors(program, ops, live, frozenset(fetch_names))
    for i, (op, opdef) in enumerate(zip(ops, opdefs)):
        ins = tuple((slot, tuple(names), opdef.input_slot(slot).many)
                    for slot, names in op.inputs.items() if names)
        outs = tuple((slot, tuple(names), opdef.output_slot(slot).many)
                     for slot, names in op.outputs.items() if names)
        steps.append(Step(opdef.bind_kernel(slot for slot, _, _ in outs), ins, op.attrs, outs, tuple(live.free_after[i]),
                          tuple(live.strip_after[i]),
                          _rng_source(op, program) if opdef.random else None, op, donors[i]))
    return Plan(steps, [s.as_tuple() for s in steps], tuple(persist_reads), persistables,
                tuple(fetch_names), tuple(feed_names),
                CHECK_KERNELS if check_kernels is None else check_kernels)


def _buffer_donors(program, ops, live, fetch_names) -> list:
    """Per op, the ``(out slot, donor)`` pairs of the program's buffer plan (set by the inplace and
    memory-reuse passes, see passes/inplace.py).  A donor is handed to its receiving op instead of
    being freed, so its own free/strip point is removed here.  Entries whose donor is fetched, or
    may share its buffer with a fetched name (``views``), are ignored (the plan may have been made
    for other fetches)."""
    buffer_plan = getattr(program, "_buffer_plan", None)
    per_op = [() for _ in ops]
    if not buffer_plan:
        return per_op
    classes = alias_classes(ops)
    fetched = {classes.get(n, n) for n in fetch_names}
    for i, op in enumerate(ops):
        entries = buffer_plan.get(op.id)
        if not entries:
            continue
        pairs = []
        for slot, _, donor in entries:
            if donor in fetch_names or classes.get(donor, donor) in fetched:
                continue
            found = [(data_end, meta_end) for name, start, data_end, meta_end in live.intervals
                     if name == donor and start < i and data_end <= i]
            if not found:
                continue
            data_end, meta_end = max(found)
            meta_after = meta_end > i   # later ops read its shape: leave a placeholder
            if 0 <= data_end and donor in live.strip_after[data_end]:
                live.strip_after[data_end].remove(donor)
            end = max(data_end, meta_end)
            if not meta_after and 0 <= end and donor in live.free_after[end]:
                live.free_after[end].remove(donor)
            pairs.append((slot, donor, meta_after))
        per_op[i] = tuple(pairs)
    return per_op
