"""``headrace.memory``: memory planning before running.

- ``estimate(program, feed, build_strategy=None)``: the peak of live bytes a run will reach, from
  the plan alone (``estimate.py``), equal to the measured ``max_memory_allocated()`` to the byte.
"""
from .estimate import MemoryEstimate, estimate

__all__ = ["MemoryEstimate", "estimate"]
