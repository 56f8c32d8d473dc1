"""``paddle.nn.functional``: ``scaled_dot_product_attention``, ``swiglu`` and ``sequence_mask``
— compositions of existing ops (both modes, gradients from the ops' rules)."""
from __future__ import annotations

import numbers

import numpy as np

from ..core import context
from ..core.dtypes import convert_dtype
from ..core.errors import AttrError, ShapeError, fmt_shape, located
from ..ops.apply import apply_op_single
from . import functional as F
from .tensor import _key, assign, cast, split, transpose, unsqueeze


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, training=True,
                                 name=None):
    """``softmax(q k^T / sqrt(head_dim) + mask) v`` per head, inputs and output [batch, seq_len,
    num_heads, head_dim] (or without the batch dim).  A float ``attn_mask`` is added to the scores,
    a bool one keeps the positions holding True; ``is_causal`` masks keys after the query's position;
    dropout ``dropout_p`` on the weights while ``training``."""
    rank = len(query.shape)
    if rank not in (3, 4) or len(key.shape) != rank or len(value.shape) != rank:
        raise located(ShapeError, f"scaled_dot_product_attention(): query, key and value must all be 4-D [batch, seq, heads, "
                         f"dim] (or 3-D), got {fmt_shape(query.shape)}, {fmt_shape(key.shape)}, "
                         f"{fmt_shape(value.shape)}")
    perm = [0, 2, 1, 3] if rank == 4 else [1, 0, 2]
    q, k, v = (transpose(t, perm) for t in (query, key, value))
    k_name = _key("scaled_dot_product_attention", name)
    q = apply_op_single("scale", {"X": q}, {"scale": float(query.shape[-1]) ** -0.5}, name_key=k_name)
    scores = apply_op_single("matmul_v2", {"X": q, "Y": k}, {"trans_y": True}, name_key=k_name)
    if is_causal:
        length_q, length_k = query.shape[rank - 3], key.shape[rank - 3]
        if length_q < 0 or length_k < 0:
            raise located(ShapeError, "scaled_dot_product_attention(): is_causal needs known sequence lengths")
        causal = np.triu(np.full((length_q, length_k), -1e9, str(convert_dtype(query.dtype))), 1)
        scores = apply_op_single("elementwise_add", {"X": scores, "Y": assign(causal)}, name_key=k_name)
    if attn_mask is not None:
        if str(convert_dtype(attn_mask.dtype)) == "bool":
            attn_mask = apply_op_single("scale", {"X": cast(attn_mask, scores.dtype)}, {"scale": 1e9, "bias": -1e9},
                                        name_key=k_name)
        scores = apply_op_single("elementwise_add", {"X": scores, "Y": attn_mask}, name_key=k_name)
    weights = F.softmax(scores)
    if dropout_p:
        weights = F.dropout(weights, dropout_p, training=training, mode="upscale_in_train")
    out = apply_op_single("matmul_v2", {"X": weights, "Y": v}, name_key=k_name)
    return transpose(out, perm)


def swiglu(x, y=None, name=None):
    """``silu(x) * y``; with ``y=None``, ``x`` is split in two halves along the last dim."""
    if y is None:
        if x.shape[-1] >= 0 and x.shape[-1] % 2:
            raise located(ShapeError, f"swiglu(): the last dim must be even when y is None, got {fmt_shape(x.shape)}")
        x, y = split(x, 2, -1)
    key = _key("swiglu", name)
    gate = apply_op_single("swish", {"X": x}, {"beta": 1.0}, name_key=key)
    return apply_op_single("elementwise_mul", {"X": gate, "Y": y}, name_key=key)


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """``out[..., j] = j < x[...]`` for ``j`` in ``[0, maxlen)`` (default: the largest length,
    dygraph mode only), as ``dtype``."""
    if maxlen is None:
        if context.in_static_mode():
            raise located(AttrError, "sequence_mask(): give maxlen in static mode (the default is the largest value)")
        maxlen = int(np.max(x.numpy())) if int(np.prod(x.shape)) else 0
    if isinstance(maxlen, bool) or not isinstance(maxlen, numbers.Integral) or maxlen < 0:
        raise located(AttrError, f"sequence_mask(): maxlen must be a non-negative int, got {maxlen!r}")
    key = _key("sequence_mask", name)
    positions = assign(np.arange(int(maxlen), dtype=str(convert_dtype(x.dtype))))
    inside = apply_op_single("less_than", {"X": positions, "Y": unsqueeze(x, [len(x.shape)])}, name_key=key)
    return cast(inside, dtype)
