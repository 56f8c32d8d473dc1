"""Execution order: parameter updates run as soon as their inputs are final.

``execution_order(program)`` is the order the executor and the memory passes use: program order
when the program is marked ``strict_order`` (``enable_sequential_execution``), else
``hoist_updates`` of the global block's ops.

Contract
--------
Input: a block's ops in program order.  Output: the same ops in an order the executor may run
them in, with the same results: every op keeps its position relative to every op it depends on
(it reads what the other writes, writes what the other reads, or both write the same name).
Only ops with the Optimize role move, and only earlier.  The Program itself is not changed.

Why: an optimizer appends its update ops after the whole backward, so every parameter gradient
would stay alive until the end of the step.  Running each update right after the last op that
writes its gradient and reads its parameter frees the gradient at once (lower peak memory) and
uses it while it is still in cache (measured in ``bench/train_mlp.py``).

Algorithm
---------
1. Alias classes: an op's output that may share its input's buffer (``OpDef.views``: reshape,
   transpose, slice ... return views) joins that input's class, so a stop_gradient ``reshape(W)``
   counts as ``W``.  Update ops write in place, so this is what makes moving them safe.
2. Walk the ops in program order; each Optimize op is moved up past every op it does not
   depend on (a scan backwards from its current position that stops at the first conflict).
3. A conflict: a write of one op meets a read or write of the other, names compared by alias
   class.
"""
from __future__ import annotations

from ..core import roles
from ..ops.registry import lookup


def _is_update(op) -> bool:
    return roles.is_optimize(op.attrs.get(roles.ROLE_ATTR, 0))


def alias_classes(ops) -> dict:
    """name -> a representative name of every name whose buffer it may share (via views)."""
    parent = {}

    def find(name):
        root = name
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(name, name) != root:
            parent[name], name = root, parent[name]
        return root

    for op in ops:
        for out_slot, in_slot in lookup(op.type).views.items():
            for a in op.outputs.get(out_slot, ()):
                for b in op.inputs.get(in_slot, ()):
                    ra, rb = find(a), find(b)
                    if ra != rb:
                        parent[ra] = rb
    return {name: find(name) for name in parent}


def execution_order(program) -> list:
    ops = program.global_block().ops
    return list(ops) if program.strict_order else hoist_updates(ops)


def hoist_updates(ops) -> list:
    order = list(ops)
    if not any(_is_update(op) for op in order):
        return order
    cls = alias_classes(order)

    def classes(names_):
        return {cls.get(n, n) for n in names_}

    for op in list(order):
        if not _is_update(op):
            continue
        i = next(k for k, o in enumerate(order) if o is op)
        reads, writes = classes(op.input_arg_names), classes(op.output_arg_names)
        j = i
        while j > 0:
            other = order[j - 1]
            other_writes = classes(other.output_arg_names)
            if other_writes & (reads | writes) or classes(other.input_arg_names) & writes:
                break
            j -= 1
        if j < i:
            order.insert(j, order.pop(i))
    return order
