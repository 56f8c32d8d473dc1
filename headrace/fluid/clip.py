"""``paddle.fluid.clip`` (facade): the 1.x gradient-clipping names."""
from ..optimizer.clip import (ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue, GradientClipByGlobalNorm,
                              GradientClipByNorm, GradientClipByValue)

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "GradientClipByGlobalNorm",
           "GradientClipByNorm", "GradientClipByValue"]
