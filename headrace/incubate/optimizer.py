"""``paddle.incubate.optimizer`` (facade): RecomputeOptimizer."""
from ..optimizer import RecomputeOptimizer

__all__ = ["RecomputeOptimizer"]
