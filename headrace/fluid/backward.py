"""``paddle.fluid.backward``."""
from ..autodiff import append_backward, gradients

__all__ = ["append_backward", "gradients"]
