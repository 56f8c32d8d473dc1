"""``paddle.incubate.optimizer`` (facade): LarsMomentumOptimizer, RecomputeOptimizer."""
from ..optimizer import RecomputeOptimizer
from ..optimizer.lars import LarsMomentum as LarsMomentumOptimizer

__all__ = ["LarsMomentumOptimizer", "RecomputeOptimizer"]
