"""Automatic differentiation: gradient ops appended to a Program (see ``backward.py``)."""
from .backward import BackwardError, append_backward, calc_gradient, gradients

__all__ = ["append_backward", "gradients", "calc_gradient", "BackwardError"]
