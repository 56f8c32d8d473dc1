"""``headrace.memory``: memory planning before running.

- ``estimate(program, feed, build_strategy=None)``: the peak of live bytes a run will reach, from
  the plan alone (``estimate.py``), equal to the measured ``max_memory_allocated()`` to the byte.
- ``plan_checkpoints(loss, budget_bytes, feed)``: recompute checkpoints of least recompute FLOPs
  whose estimated peak fits a budget (``planner.py``).
"""
from .estimate import MemoryEstimate, estimate
from .planner import BudgetError, plan_checkpoints

__all__ = ["BudgetError", "MemoryEstimate", "estimate", "plan_checkpoints"]
