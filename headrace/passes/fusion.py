"""Shared vocabulary of the fusion passes: who reads and writes each name, and op replacement."""
from __future__ import annotations

from ..core import roles
from ..ops.registry import lookup


class Uses:
    """Readers and writers (op objects) of every name in a block."""

    def __init__(self, block):
        self.readers, self.writers = {}, {}
        for op in block.ops:
            for name in op.input_arg_names:
                self.readers.setdefault(name, []).append(op)
            for name in op.output_arg_names:
                self.writers.setdefault(name, []).append(op)

    def only_readers(self, name, allowed) -> bool:
        return all(any(op is a for a in allowed) for op in self.readers.get(name, []))

    def single_writer(self, name, op) -> bool:
        writers = self.writers.get(name, [])
        return len(writers) == 1 and writers[0] is op


def grad_op_of(uses, forward_type, slot, name):
    """The gradient op of ``forward_type`` reading ``name`` in ``slot`` (None if not unique)."""
    found = [op for op in uses.readers.get(name, [])
             if lookup(op.type).forward_type == forward_type and name in op.inputs.get(slot, [])]
    return found[0] if len(found) == 1 else None


def replace(block, old, type, inputs, outputs, attrs):
    """Put a new op where ``old`` is (same role, name scope and callsite); remove ``old``."""
    index = next(i for i, op in enumerate(block.ops) if op is old)
    for key in (roles.ROLE_ATTR, roles.NAMESCOPE_ATTR, roles.ROLE_VAR_ATTR):
        if key in old.attrs:
            attrs.setdefault(key, old.attrs[key])
    block._remove_op(index)
    return block._insert_op(index, type, inputs, outputs, attrs, callsite=old.callsite)


def remove(block, op) -> None:
    block._remove_op(next(i for i, o in enumerate(block.ops) if o is op))
