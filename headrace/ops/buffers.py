"""Output buffers handed to kernels: the ``out=`` half of the buffer plan.

The inplace and memory-reuse passes (``passes/inplace.py``, ``passes/memory_reuse.py``) record
which dying or dead buffer an op's output may be computed into; the executor then calls the
kernel with ``out={slot: buffer}``.  A kernel that accepts ``out`` (a keyword parameter of its
signature) takes a buffer only through ``take``: exactly the output's shape and dtype,
C-contiguous and writable; anything else is ignored and the kernel allocates as usual.  A kernel
computes the same arithmetic either way (NumPy ``out=`` arguments), so results are bit-identical
with or without a buffer.  A buffer may be one of the op's own inputs only for the input its
``OpDef.inplace`` names; kernels that overwrite an input read everything they need from it first.
"""
from __future__ import annotations

import numpy as np


def take(out, slot, shape, dtype):
    """The buffer handed for ``slot`` if it fits (shape, dtype, C-contiguous, writable), else None."""
    if not out:
        return None
    buf = out.get(slot)
    if (type(buf) is np.ndarray and buf.shape == tuple(shape) and buf.dtype == dtype
            and buf.flags.c_contiguous and buf.flags.writeable):
        return buf
    return None


def store(value, buf):
    """``value`` written into ``buf`` (if given, same shape) and returned; otherwise ``value`` as an array."""
    if buf is None:
        return np.asarray(value)
    np.copyto(buf, value, casting="same_kind")
    return buf
