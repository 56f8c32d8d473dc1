"""``paddle.fluid.clip`` (facade): the 1.x gradient-clipping names."""
from ..optimizer.clip import (ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue, GradientClipByGlobalNorm,
                              GradientClipByNorm, GradientClipByValue)
from ..optimizer.clip_attr import append_gradient_clip_ops, set_gradient_clip

__all__ = ["ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "GradientClipByGlobalNorm",
           "GradientClipByNorm", "GradientClipByValue", "append_gradient_clip_ops", "set_gradient_clip"]
