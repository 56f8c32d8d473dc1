"""Liveness of variables over a list of ops: the one analysis all memory work shares.

Contract
--------
Input: ops in execution order, plus the names that must stay alive to the end (fetch targets) and
the names that are never freed (persistables).  Output, per op index ``i``:
``free_after[i]``  names whose data can be released once op ``i`` has run;
``strip_after[i]`` names whose data can be released but whose shape/dtype a later op still reads
                   through a ``no_need_buffer`` slot (they become shape-only placeholders).

Algorithm
---------
1. Walk the ops in order.  For each op, its inputs in ``no_need_buffer`` slots are *meta reads*,
   its other inputs are *data reads*, its outputs are *writes*.
2. Every write opens a new live interval of that name (a name written twice — e.g. an in-place
   update — has two intervals); the previous interval ends at its last read, or at its write if
   nothing read it.  When that end is the rewriting op itself, no free is emitted: storing the new
   value releases the old one.
3. An interval's data dies at its last data read (or its write); if meta reads come later, the
   data is stripped there and the placeholder dies at the last meta read.
4. Names in ``keep`` or ``never_free`` are never freed; names read but never written (feeds) start
   their interval before op 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Liveness:
    free_after: list = field(default_factory=list)   # list[list[str]]
    strip_after: list = field(default_factory=list)  # list[list[str]]
    intervals: list = field(default_factory=list)    # (name, start, last_data_use, last_meta_use)

def op_uses(op, no_need_buffer) -> tuple:
    """(data_reads, meta_reads, writes) of one op as lists of names."""
    data, meta = [], []
    for slot, names in op.inputs.items():
        (meta if slot in no_need_buffer else data).extend(names)
    return data, meta, op.output_arg_names


def analyze(ops, no_need_buffer_of, keep=frozenset(), never_free=frozenset()) -> Liveness:
    """Compute free/strip points. ``no_need_buffer_of(op)`` gives the op's shape-only input slots."""
    n = len(ops)
    result = Liveness([[] for _ in range(n)], [[] for _ in range(n)], [])
    open_intervals: dict = {}  # name -> [start, last_data, last_meta]

    def close(name, interval, replaced_at=None):
        start, last_data, last_meta = interval
        result.intervals.append((name, start, last_data, last_meta))
        if name in keep or name in never_free:
            return
        # a free at the op that writes the name again is implied: the new value replaces the old
        if last_meta > last_data:
            if 0 <= last_data != replaced_at:
                result.strip_after[last_data].append(name)
            if last_meta != replaced_at:
                result.free_after[last_meta].append(name)
        elif 0 <= last_data != replaced_at:
            result.free_after[last_data].append(name)

    for i, op in enumerate(ops):
        data, meta, writes = op_uses(op, no_need_buffer_of(op))
        for name in data:
            interval = open_intervals.get(name)
            if interval is None:
                interval = open_intervals[name] = [-1, -1, -1]
            interval[1] = i
        for name in meta:
            interval = open_intervals.get(name)
            if interval is None:
                interval = open_intervals[name] = [-1, -1, -1]
            interval[2] = i
        for name in writes:
            old = open_intervals.get(name)
            if old is not None and old[0] != i:
                close(name, old, replaced_at=i)
            open_intervals[name] = [i, i, -1]
    for name, interval in open_intervals.items():
        close(name, interval)
    return result
