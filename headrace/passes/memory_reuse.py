"""``memory_optimize`` (reuse dead buffers across the step), ``enable_sequential_execution``, and
the planned peak of a program's temporaries.

Contract (``apply``)
--------------------
Input: a Program; its buffer plan (see ``passes/inplace.py``) may already hold inplace entries.
Output: the same ops; the buffer plan gains entries ``(out_slot, out_name, donor)`` where
``donor`` is a variable whose value is dead before the op runs, so the kernel computes into the
donor's buffer instead of a fresh one.  Results are unchanged (kernels check the buffer's shape
and dtype and do the same arithmetic).

Algorithm
---------
1. Execution order and the shared liveness analysis (``inplace.BufferFacts``).
2. Walk the ops.  A buffer becomes *free* after the last op reading any name that may share it
   (``OpDef.views`` alias classes); only buffers of values computed by ops, never persistable,
   fed or fetched ones.
3. For each output of an op whose kernel accepts ``out`` (not a view output, not persistable,
   not already planned), take the free buffer of the same shape and dtype that died most
   recently (the shortest extra hold), provided holding it from its death to this op does not
   raise the planned peak (``planned_profile`` after the inplace pass, evaluated with unknown
   dims at 1 and at 4096, since the batch is not known when compiling): memory_optimize trades
   allocations for held bytes only below the peak the step reaches anyway.  The buffer leaves
   the free set.

``apply_sequential`` marks the program to run strictly in program order (no update hoisting).

``planned_peak(program, keep, batch)`` is the peak of live temporary bytes the executor's order,
the liveness analysis and the buffer plan imply, with every unknown (-1) dim taken as ``batch``;
persistables are not counted.
"""
from __future__ import annotations

import numpy as np

from ..core import flags
from ..ops.registry import lookup
from .inplace import BufferFacts, buffer_plan, plan_inplace


def apply_sequential(program, ctx):
    program.strict_order = True
    ctx.log.append(("sequential_execution_pass", "ops run in program order"))
    return program


GUARD_BATCHES = (1, 4096)   # batch sizes (unknown -1 dims) at which a hold must not raise the peak


def apply(program, ctx):
    count = plan_reuse(BufferFacts(program, ctx.keep))
    ctx.log.append(("memory_optimize_pass", f"{count} outputs reuse a dead buffer"))
    return program


def plan_reuse(facts) -> int:
    """Add the cross-op reuse entries to ``facts``' buffer plan; returns how many."""
    dying_at = {}
    for name in facts.produced_at:
        end = facts.dies_at(name)
        if end is not None:
            dying_at.setdefault(end, []).append(name)
    free = []   # (died_at, name)
    count = 0
    # the batch is unknown here: the hold must keep the peak at a small and at a large batch
    profiles = {b: _profile(facts, b) for b in GUARD_BATCHES}
    peaks = {b: int(p.max()) if len(p) else 0 for b, p in profiles.items()}
    for i, op in enumerate(facts.ops):
        opdef = lookup(op.type)
        if opdef.buffers and free:
            planned = {out for slot, out, _ in facts.plan.get(op.id, ())}
            for slot, outs in op.outputs.items():
                if slot in opdef.views or len(outs) != 1:
                    continue
                name = outs[0]
                if name in planned or name in facts.persistables:
                    continue
                best = None
                for k, (died, donor) in enumerate(free):
                    if facts.donatable(donor) and facts.same_layout(name, donor):
                        var = facts.block._find_var_recursive(donor)
                        if died + 1 < i and any(int(profiles[b][died + 1:i].max()) + _nbytes(var, b) > peaks[b]
                                                for b in GUARD_BATCHES):
                            continue  # the hold would raise the peak
                        if best is None or died > free[best][0]:
                            best = k
                if best is not None:
                    died, donor = free.pop(best)
                    facts.assign(op, slot, name, donor)
                    for b in GUARD_BATCHES:
                        profiles[b][died + 1:i] += _nbytes(facts.block._find_var_recursive(donor), b)
                    count += 1
        for name in dying_at.get(i, ()):
            if facts.donatable(name):
                free.append((i, name))
    return count


def _nbytes(var, batch) -> int:
    if var is None or var.shape is None or var.dtype is None:
        return 0
    dims = [batch if d < 0 else d for d in var.shape]
    return int(np.prod(dims, dtype=np.int64)) * var.dtype.numpy.itemsize


def planned_peak(program, keep=frozenset(), batch=1) -> int:
    """Peak bytes of temporaries alive during any op (see the module docstring)."""
    profile = planned_profile(program, keep, batch)
    return int(profile.max()) if len(profile) else 0


def planned_profile(program, keep=frozenset(), batch=1) -> np.ndarray:
    """Bytes of temporaries alive during each op, in execution order, with the buffer plan the
    executor uses for it (``executor_buffer_plan``)."""
    facts = BufferFacts(program, keep, record=False, plan=executor_buffer_plan(program, keep))
    return _profile(facts, batch)


def _profile(facts, batch) -> np.ndarray:
    """The executor's accounting, predicted: a buffer counts from the op that creates it until
    the last op reading any name that may share it (a ``views`` output keeps its base alive, as
    the tracker counts the owning buffer); a view output adds no bytes of its own unless it was
    computed into a handed buffer; a donor counts until the op it is handed to, and that op's
    output counts from the next op on (during the op the donor's bytes stand for it)."""
    block = facts.block
    view_outputs = {name for op in facts.ops for slot in lookup(op.type).views
                    for name in op.outputs.get(slot, ())}
    index_of = {op.id: i for i, op in enumerate(facts.ops)}
    donated_at = {}   # donor -> op index receiving it
    receivers = {}    # (index, out name) -> donor
    for op_id, entries in facts.plan.items():
        if op_id in index_of:
            for _, out, donor in entries:
                donated_at[donor] = index_of[op_id]
                receivers[(index_of[op_id], out)] = donor
    received = {out for _, out in receivers}
    views_end = {}    # alias-class root -> the last data read of any view output in the class
    for name in view_outputs:
        root = facts.root(name)
        views_end[root] = max(views_end.get(root, -1), facts.data_end.get(name, -1))
    n = len(facts.ops)
    delta = np.zeros(n + 2, dtype=np.int64)

    def count(name, first, last):
        if first <= last:
            size = _nbytes(block._find_var_recursive(name), batch)
            delta[first] += size
            delta[last + 1] -= size

    for name, start, data_end, meta_end in facts.live.intervals:
        if name in facts.persistables:
            continue
        first = max(start, 0)
        if name in facts.never:
            last = n - 1
        else:
            last = max(data_end, first, views_end.get(facts.root(name), -1))  # stripped: no bytes
        if name in donated_at:
            if name in view_outputs:       # its base is counted to the class end; hold the rest
                count(name, last + 1, donated_at[name])
                continue
            last = donated_at[name]        # held until the op that reuses it
        if name in view_outputs and name not in received:
            continue
        if (start, name) in receivers:
            first = start + 1              # the donor's buffer covers the op itself
        count(name, first, last)
    return np.cumsum(delta)[:n]


def executor_buffer_plan(program, keep=frozenset()) -> dict:
    """The buffer plan the executor runs ``program`` with, fetching ``keep``: the program's own
    (IR, from the memory passes) if it has one, else with ``FLAGS_executor_buffer_reuse`` on (the
    default) ``default_buffer_plan``, else none.  Not while ``FLAGS_check_nan_inf`` is on: its
    report says whether an op's inputs were already non-finite, so they must survive the op.
    Either way, entries whose donor has a known size under ``DEFAULT_MIN_BYTES`` are left out
    (dropping an entry only means a fresh array: always safe, and the estimate uses this plan)."""
    own = buffer_plan(program)
    if own:
        return _without_small_donors(program, own)
    if not flags.buffer_reuse() or flags.nan_inf_level() is not None:
        return own
    return default_buffer_plan(program, frozenset(keep))


def default_buffer_plan(program, keep=frozenset()) -> dict:
    """The buffer plan the executor gives a program that carries none (``FLAGS_executor_buffer_reuse``):
    the inplace entries, then the cross-op reuse entries, exactly what ``enable_inplace`` +
    ``memory_optimize`` would record with ``keep`` (the fetch names) kept alive, but returned as a
    side table ``{op id: ((out_slot, out_name, donor), ...)}``: the program is not modified.
    Entries whose donor has a known size below ``DEFAULT_MIN_BYTES`` are left out."""
    facts = BufferFacts(program, keep, record=False)
    plan_inplace(facts)
    plan_reuse(facts)
    return _without_small_donors(program, facts.plan)


def _without_small_donors(program, plan) -> dict:
    block = program.global_block()
    kept = {}
    for op_id, entries in plan.items():
        entries = tuple(e for e in entries if not _small(block._find_var_recursive(e[2])))
        if entries:
            kept[op_id] = entries
    return kept


DEFAULT_MIN_BYTES = 64 * 1024
"""The executor hands no buffer whose size is known (no -1 dim) and below this, in the default
plan and in a pass-made one: for small arrays a fresh one is cheaper than handing one over
(measured on the zoo's tiny model: static 8%, with the passes 1.51 -> 1.27 ms a step)."""


def _small(var) -> bool:
    return (var is not None and var.shape is not None and -1 not in var.shape
            and _nbytes(var, 1) < DEFAULT_MIN_BYTES)
