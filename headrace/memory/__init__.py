"""``headrace.memory``: memory planning before running.

- ``estimate(program, feed, build_strategy=None)``: the peak of live bytes a run will reach, from
  the plan alone (``estimate.py``), equal to the measured ``max_memory_allocated()`` to the byte.
- ``plan_checkpoints(loss, budget_bytes, feed)``: recompute checkpoints of least recompute FLOPs
  whose estimated peak fits a budget (``planner.py``).
- ``BudgetedSequential(functions, budget_bytes)``: eager ``recompute_sequential`` with the number
  of segments chosen from a budget of activation bytes measured on the first call.
- ``plot(program, feed, path)``: the memory timeline as SVG or PNG (``plot.py``, needs matplotlib).
- ``python -m headrace.memory PROGRAM --feed x=64,784 [--plot out.svg]``: the same for a saved
  program (``__main__.py``).
"""
from ..nn.recompute_budget import BudgetedSequential
from .estimate import MemoryEstimate, estimate
from .planner import BudgetError, plan_checkpoints
from .plot import plot

__all__ = ["BudgetedSequential", "BudgetError", "MemoryEstimate", "estimate", "plan_checkpoints", "plot"]
