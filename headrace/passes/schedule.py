"""Execution order: parameter updates run as soon as their inputs are final.

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
1. Walk the ops in program order; each Optimize op is moved up past every op it does not
   depend on (a scan backwards from its current position that stops at the first conflict).
2. Conflicts are name-based: a write of one op meeting a read or write of the other.
"""
from __future__ import annotations

from ..core import roles


def _is_update(op) -> bool:
    return roles.is_optimize(op.attrs.get(roles.ROLE_ATTR, 0))


def hoist_updates(ops) -> list:
    order = list(ops)
    for op in list(order):
        if not _is_update(op):
            continue
        i = next(k for k, o in enumerate(order) if o is op)
        reads, writes = set(op.input_arg_names), set(op.output_arg_names)
        j = i
        while j > 0:
            other = order[j - 1]
            other_writes = other.output_arg_names
            if any(n in reads or n in writes for n in other_writes) or \
                    any(n in writes for n in other.input_arg_names):
                break
            j -= 1
        if j < i:
            order.insert(j, order.pop(i))
    return order
