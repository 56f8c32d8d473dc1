"""``paddle.fluid.regularizer`` (facade): the 1.x names.  As in the reference's fluid, the short
names ``L1Decay`` / ``L2Decay`` are the 1.x classes (keyword ``regularization_coeff``)."""
from ..optimizer.regularizer import L1DecayRegularizer, L2DecayRegularizer

L1Decay = L1DecayRegularizer
L2Decay = L2DecayRegularizer

__all__ = ["L1Decay", "L1DecayRegularizer", "L2Decay", "L2DecayRegularizer"]
