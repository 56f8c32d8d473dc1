"""The kernel protocol: every kernel is ``kernel(ins, attrs, ctx) -> outs``.

``ins`` maps input slot names to arrays (a list for a ``many`` slot; an absent ``optional`` slot
is missing), ``attrs`` holds the op's resolved attributes, ``outs`` maps output slot names to
arrays.  Inputs an op lists in ``no_need_buffer`` may arrive as a ``Meta`` (shape and dtype
only).  ``ctx`` is a ``KernelContext``:

- ``ctx.wanted``: the output slots to compute (a gradient kernel computes only these; a forward
  kernel may compute every output, and the extra ones are ignored);
- ``ctx.rng``: the ``numpy.random.Generator`` a random op draws from;
- ``ctx.buffer(slot, shape, dtype)``: the buffer handed for ``slot`` by the buffer plan (the
  inplace / memory-reuse passes) if it fits exactly, else ``None`` — so ``np.add(x, y,
  out=ctx.buffer("Out", shape, dtype))`` computes into the handed buffer or a fresh array, with
  the same arithmetic either way (bit-identical results); ``store(value, buf)`` copies an
  already computed value into the handed buffer, if any.

Only ops registered with ``buffers=True`` are handed buffers.  A buffer may be one of the op's own
inputs only for the input its ``OpDef.inplace`` names; such a kernel reads everything it needs from
that input before it writes.
"""
from __future__ import annotations

import numpy as np

_NO_BUFFERS: dict = {}
_ndarray = np.ndarray


def root_of(value):
    """The array owning ``value``'s buffer, following ``.base`` (anything that is not an array:
    itself).  Check mode (``ops/step.py``), the runtime's byte accounting (``runtime/memory.py``,
    ``runtime/ledger.py``) and the memory estimate count and compare buffers by it."""
    base = getattr(value, "base", None)
    while base is not None and isinstance(base, _ndarray):
        value, base = base, base.base
    return value


class KernelContext:
    """What a kernel gets besides its inputs and attributes (see the module docstring)."""

    __slots__ = ("wanted", "out", "_rng")

    def __init__(self, wanted=frozenset(), out=None, rng=None):
        self.wanted = wanted
        self.out = out if out is not None else _NO_BUFFERS
        self._rng = rng   # the numpy Generator of this call (random ops), else None

    def wants(self, slot: str) -> bool:
        return slot in self.wanted

    @property
    def rng(self) -> np.random.Generator:
        if self._rng is None:
            raise RuntimeError("this kernel draws random numbers but its op is not registered random=True")
        return self._rng

    def buffer(self, slot: str, shape, dtype):
        """The buffer handed for ``slot`` if it has exactly this shape and dtype and is C-contiguous
        and writable, else None (pass it as a NumPy ``out=``: None means a fresh array)."""
        buf = self.out.get(slot) if self.out else None
        if (type(buf) is np.ndarray and buf.shape == tuple(shape) and buf.dtype == dtype
                and buf.flags.c_contiguous and buf.flags.writeable):
            return buf
        return None

    def buffer_like(self, slot: str, like):
        """``buffer(slot, like.shape, like.dtype)``."""
        return self.buffer(slot, like.shape, like.dtype) if self.out else None


def store(value, buf):
    """``value`` written into ``buf`` (if given, same shape) and returned; otherwise ``value`` as an array."""
    if buf is None:
        return np.asarray(value)
    np.copyto(buf, value, casting="same_kind")
    return buf


def context(wanted=(), out=None, rng=None) -> KernelContext:
    """A context for calling a kernel directly (tests, tools): ``wanted`` slot names."""
    return KernelContext(frozenset(wanted), out, rng)
