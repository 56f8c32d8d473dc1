"""``paddle.fluid.regularizer`` (facade): the 1.x names."""
from ..optimizer.regularizer import L1Decay, L1DecayRegularizer, L2Decay, L2DecayRegularizer

__all__ = ["L1Decay", "L1DecayRegularizer", "L2Decay", "L2DecayRegularizer"]
