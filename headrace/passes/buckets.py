"""Buckets: consecutive tensors of one dtype grouped into flat buffers of bounded size.

Contract
--------
``plan_buckets(items, bucket_bytes)`` takes ``(name, nbytes, dtype)`` in the order the tensors
become ready and returns lists of names such that: every name is in exactly one bucket, in the
given order; a bucket holds one dtype; a bucket's bytes stay <= ``bucket_bytes`` unless it is a
single tensor larger than that; ``breaks`` (names) start a new bucket.  The fused all-reduce pass
(``fuse_all_reduce.py``) plans its buckets with it, and a multi-process communicator can plan its
own the same way; the kernel side (one flat buffer per bucket, views back into it) is
``ops/coalesce.py``.
"""
from __future__ import annotations

# The reference's default bucket size for fused gradient all-reduce (fuse_grad_size_in_MB = 32).
DEFAULT_BUCKET_BYTES = 32 * 1024 * 1024


def plan_buckets(items, bucket_bytes: int = DEFAULT_BUCKET_BYTES, breaks=()) -> list:
    """Group ``(name, nbytes, dtype)`` items into buckets (see the module docstring)."""
    if bucket_bytes <= 0:
        raise ValueError(f"plan_buckets: bucket_bytes must be > 0, got {bucket_bytes}")
    breaks = set(breaks)
    buckets, current, size, dtype = [], [], 0, None
    for name, nbytes, item_dtype in items:
        full = current and (item_dtype != dtype or size + nbytes > bucket_bytes or name in breaks)
        if full:
            buckets.append(current)
            current, size = [], 0
        current.append(name)
        size += nbytes
        dtype = item_dtype
    if current:
        buckets.append(current)
    return buckets


def var_bytes(var) -> int:
    """Bytes of a variable of known shape (-1 dims count as 1)."""
    size = var.dtype.numpy.itemsize
    for d in var.shape:
        size *= max(int(d), 1)
    return size
