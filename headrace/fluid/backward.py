"""``paddle.fluid.backward``."""
from ..static.backward import append_backward, calc_gradient, gradients

__all__ = ["append_backward", "calc_gradient", "gradients"]
