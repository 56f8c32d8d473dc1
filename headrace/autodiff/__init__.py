"""Automatic differentiation: gradient ops appended to a Program (see ``backward.py``).

These entry points take checked, normalized arguments; users call the facades
(``paddle.static.append_backward`` / ``gradients``, ``headrace/static/backward.py``).
"""
from .backward import BackwardError, append_backward, gradients

__all__ = ["BackwardError", "append_backward", "gradients"]
