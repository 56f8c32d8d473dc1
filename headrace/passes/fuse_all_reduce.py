"""``fuse_all_reduce_op_pass``: the per-gradient all-reduces become bucketed ``c_fused_allreduce_sum``.

Contract
--------
Input: a program after ``all_reduce_mode_multi_devices_pass`` (one ``c_allreduce_sum(g) -> g`` right
after each gradient ``g`` is complete).  Output: the same program where consecutive all-reduces
are grouped into buckets of at most ``ctx.fuse_grad_size_in_MB`` megabytes (a gradient larger than
that is a bucket of its own) and one dtype; each bucket is one ``c_fused_allreduce_sum`` placed
where the bucket's last all-reduce was.  So the gradients computed first (the last layers) are
combined while the backward of the earlier layers has not run yet, and a bucket costs one
synchronisation instead of one per gradient.

Invariant: delaying a gradient's all-reduce to the end of its bucket changes nothing, because a
bucket is closed before an op that reads or writes one of its gradients (other than the
all-reduces themselves) would run in between.  Results are bit-identical to unfused all-reduces
(each element is still the rank-ordered sum of the same values).
"""
from __future__ import annotations

from ..core import roles
from ..core.roles import OpRole


def _nbytes(var) -> int:
    size = 1
    for d in var.shape:
        size *= max(int(d), 1)
    return size * var.dtype.numpy.itemsize


def _buckets(block, limit) -> list:
    """Lists of (op index, grad name) to fuse, in program order."""
    buckets, current, size, dtype = [], [], 0, None
    members = set()

    def close():
        nonlocal current, size, dtype
        if len(current) > 1:
            buckets.append(current)
        current, size, dtype = [], 0, None
        members.clear()

    for index, op in enumerate(block.ops):
        if op.type == "c_allreduce_sum" and op.inputs["X"] == op.outputs["Out"]:
            grad = op.inputs["X"][0]
            var = block.var(grad)
            nbytes = _nbytes(var)
            if current and (var.dtype != dtype or size + nbytes > limit):
                close()
            current.append((index, grad))
            members.add(grad)
            size += nbytes
            dtype = var.dtype
            continue
        if current and members & (set(op.input_arg_names) | set(op.output_arg_names)):
            close()
    close()
    return buckets


def apply(program, ctx):
    block = program.global_block()
    limit = max(int(ctx.fuse_grad_size_in_MB * (1 << 20)), 1)
    buckets = _buckets(block, limit)
    for bucket in reversed(buckets):
        grads = [g for _, g in bucket]
        at = bucket[-1][0]
        for index, _ in reversed(bucket):
            block._remove_op(index)
        at -= len(bucket) - 1
        block._insert_op(at, "c_fused_allreduce_sum", {"X": grads}, {"Out": grads},
                         {roles.ROLE_ATTR: int(OpRole.Backward)})
    if buckets:
        count = sum(len(b) for b in buckets)
        ctx.log.append(("fuse_all_reduce_op_pass", f"fused {count} all-reduces into {len(buckets)} buckets"))
    return program
