"""CPU memory accounting: bytes of live buffers held by headrace's runtime.

Counts parameters and other values in scopes, feeds and the temporaries of a running program;
each buffer counts once however many views share it.  ``max_memory_allocated`` is the peak since
start or since ``reset_max_memory_allocated()``.
"""
from ..runtime.memory import max_memory_allocated, memory_allocated, reset_max_memory_allocated

__all__ = ["max_memory_allocated", "memory_allocated", "reset_max_memory_allocated"]
