"""``sync_batch_norm``: every ``batch_norm`` (and its gradient) becomes ``sync_batch_norm``.

Contract
--------
Input: any Program.  Output: the same program where each ``batch_norm`` / ``batch_norm_grad`` op
is of type ``sync_batch_norm`` / ``sync_batch_norm_grad`` (identical slots and attributes).  Run
on several places, the statistics are those of the whole global batch (ops/collective.py); on
one place the results equal batch_norm's up to summation order.

Algorithm: one walk over the ops, retyping the matching ones.
"""
from __future__ import annotations

_RETYPE = {"batch_norm": "sync_batch_norm", "batch_norm_grad": "sync_batch_norm_grad"}


def apply(program, ctx):
    count = 0
    for block in program.blocks:
        for op in block.ops:
            new = _RETYPE.get(op.type)
            if new is not None:
                op.type = new
                op._touch()
                count += 1
    ctx.log.append(("sync_batch_norm_pass", f"{count} ops now synchronise statistics"))
    return program
