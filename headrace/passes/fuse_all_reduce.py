"""fuse_all_reduce_ops: the per-gradient all-reduces of data parallel become one per bucket.

Contract
--------
Input: a place program after ``all_reduce_mode_multi_devices_pass`` (``c_allreduce_sum(g) -> g``
right after each gradient's completion).  Output: the same program where runs of those ops are
replaced by ``c_fused_allreduce_sum(X=[g1, g2, ...]) -> [g1, g2, ...]``: one collective over the
bucket's concatenation (``ops/coalesce.py``).  Every place gets the same sums as before, bit for
bit (the threads backend sums each element in rank order either way); fewer, larger collectives.

Algorithm
---------
1. Walk the ops in order.  Each ``c_allreduce_sum`` whose ``X`` is its ``Out`` (one name) joins
   the open bucket; a pending gradient read or written by any other op closes the bucket right
   before that op (nobody may see an unreduced gradient where it used to see the reduced one).
2. ``buckets.plan_buckets`` splits the joined gradients by dtype and size
   (``ctx.fuse_grad_bytes``, default 32 MiB) — consecutive runs only, so order is kept.
3. Each bucket becomes one fused op at the position of its last member's all-reduce (its
   gradients are then all complete); the members are removed.  Buckets of one gradient keep
   their plain op.
"""
from __future__ import annotations

from ..core import roles
from .buckets import DEFAULT_BUCKET_BYTES, plan_buckets, var_bytes

PASS_NAME = "fuse_all_reduce_op_pass"


def _runs(block):
    """Runs of all-reduce ops no other op interrupts: lists of (index, grad name)."""
    runs, current, pending = [], [], set()
    for index, op in enumerate(block.ops):
        xs, outs = op.inputs.get("X", []), op.outputs.get("Out", [])
        if op.type == "c_allreduce_sum" and len(xs) == 1 and xs == outs and op.attrs.get("ring_id", 0) == 0:
            current.append((index, xs[0]))
            pending.add(xs[0])
            continue
        if pending & (set(op.input_arg_names) | set(op.output_arg_names)):
            runs.append(current)
            current, pending = [], set()
    if current:
        runs.append(current)
    return runs


def apply(program, ctx):
    block = program.global_block()
    limit = getattr(ctx, "fuse_grad_bytes", 0) or DEFAULT_BUCKET_BYTES
    replacements = []   # (index of the last member, [member indices], [grads])
    for run in _runs(block):
        index_of = dict((g, i) for i, g in run)
        items = [(g, var_bytes(block.var(g)), str(block.var(g).dtype)) for _, g in run]
        for bucket in plan_buckets(items, limit):
            if len(bucket) > 1:
                replacements.append((index_of[bucket[-1]], [index_of[g] for g in bucket], bucket))
    for last, members, grads in sorted(replacements, key=lambda r: -r[0]):
        attrs = {roles.ROLE_ATTR: block.ops[last].attrs.get(roles.ROLE_ATTR, 0)}
        callsite = block.ops[last].callsite
        block._insert_op(last + 1, "c_fused_allreduce_sum", {"X": grads}, {"Out": grads}, attrs, callsite=callsite)
        for index in sorted(members, reverse=True):
            block._remove_op(index)
    if replacements:
        count = sum(len(g) for _, _, g in replacements)
        ctx.log.append((PASS_NAME, f"fused {count} all-reduces into {len(replacements)} bucket(s)"))
    return program
