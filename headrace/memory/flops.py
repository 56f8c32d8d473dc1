"""Floating-point operations of one op at concrete shapes: what recompute costs, for the planner.

Matrix products and convolutions count 2 multiply-adds per term; every other op counts the elements
it writes (a fair measure for elementwise and reduction work, which is memory-bound anyway).
"""
from __future__ import annotations

import numpy as np


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape is not None else 0


def _mul(ins, outs, attrs):
    x = ins["X"][0].shape
    k = _size(x[int(attrs.get("x_num_col_dims", 1)):])
    return 2 * _size(outs["Out"][0][0]) * k


def _matmul(ins, outs, attrs):
    x = ins["X"][0].shape
    transpose = attrs.get("transpose_X", attrs.get("trans_x", False))
    k = (x[-2] if transpose else x[-1]) if len(x) >= 2 else _size(x)
    return 2 * _size(outs["Out"][0][0]) * int(k)


def _conv(ins, outs, attrs):
    w = ins["Filter"][0].shape        # [out channels, in channels / groups, kh, kw]
    return 2 * _size(outs["Output"][0][0]) * _size(w[1:])


_RULES = {"mul": _mul, "matmul": _matmul, "matmul_v2": _matmul, "conv2d": _conv,
          "depthwise_conv2d": _conv}


def op_flops(op_type, ins, outs, attrs) -> int:
    """FLOPs of one op: ``ins`` slot -> values with ``.shape``, ``outs`` slot -> [(shape, dtype)]."""
    rule = _RULES.get(op_type)
    if rule is not None:
        try:
            return int(rule(ins, outs, attrs))
        except (KeyError, IndexError, TypeError):
            pass
    return sum(_size(shape) for metas in outs.values() for shape, _ in metas)
