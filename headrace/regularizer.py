"""``paddle.regularizer`` (facade): weight decay for optimizers and ``ParamAttr``."""
from .optimizer.regularizer import L1Decay, L2Decay

__all__ = ["L1Decay", "L2Decay"]
