"""``MultiHeadAttention`` and the Transformer stack (encoder/decoder layers, encoder, decoder,
``Transformer``), written with existing layers and ops (Linear, LayerNorm, Dropout, matmul_v2,
softmax, reshape2, transpose2, concat) so both modes run them and gradients come from the ops.

Semantics are the reference's (``paddle.nn.layer.transformer``): inputs are [batch, length,
d_model]; attention is ``softmax(q k^T / sqrt(head_dim) + mask) v`` per head, with dropout on the
weights while training; a bool or integer ``attn_mask`` keeps positions holding True/1 (the
others get ``-1e9`` added: ``(mask - 1) * 1e9``), a float mask is added as is; ``need_weights``
also returns the [batch, heads, query, key] weights.  ``cache``: ``MultiHeadAttention.Cache(k,
v)`` appends this call's keys and values (incremental decoding) and is returned updated,
``StaticCache(k, v)`` replaces the key/value projections (encoder memory).  Encoder/decoder
layers: ``normalize_before`` puts LayerNorm before each sub-layer (pre-norm), else after the
residual add (post-norm); ``attn_dropout``/``act_dropout`` default to ``dropout``; a list
``weight_attr``/``bias_attr`` gives one per sub-layer.  ``Transformer`` adds a final LayerNorm
after the encoder and after the decoder, as the reference does.
"""
from __future__ import annotations

import collections
import copy

import numpy as np

from ..core.errors import AttrError, located
from ..core.dtypes import convert_dtype
from ..ops.apply import apply_op_single
from . import functional as F
from .containers import LayerList
from .layer import Layer
from .layers import Dropout, LayerNorm, Linear
from .param_attr import ParamAttr
from .tensor import _key, assign, cast, concat, reshape, transpose


def convert_attention_mask(attn_mask, dtype):
    """A bool/int mask (True/1 = attend) as an additive float mask: ``(mask - 1) * 1e9``; a float
    mask cast to ``dtype``."""
    if attn_mask is None or attn_mask.dtype == dtype:
        return attn_mask
    name = str(convert_dtype(attn_mask.dtype))
    if name == "bool" or "int" in name:
        return apply_op_single("scale", {"X": cast(attn_mask, dtype)}, {"scale": 1e9, "bias": -1e9},
                               name_key=_key("attn_mask"))
    return cast(attn_mask, dtype)


def _param_attrs(attr, n):
    """One attr per sub-layer: a list/tuple of length n as given, else ``attr`` n times (a named
    ParamAttr gets ``_<i>`` suffixes so the parameters stay distinct)."""
    if isinstance(attr, (list, tuple)):
        if len(attr) != n:
            raise located(AttrError, f"expected {n} parameter attributes, got {len(attr)}")
        return list(attr)
    out = []
    for i in range(n):
        item = ParamAttr.to_attr(attr) if attr is not False else False
        if item is not False and item.name is not None:
            item = copy.copy(item)
            item.name = f"{item.name}_{i}"
        out.append(item if attr is not None else None)
    return out


class MultiHeadAttention(Layer):
    """Multi-head attention (see the module docstring)."""

    Cache = collections.namedtuple("Cache", ["k", "v"])
    StaticCache = collections.namedtuple("StaticCache", ["k", "v"])

    def __init__(self, embed_dim, num_heads, dropout=0.0, kdim=None, vdim=None, need_weights=False,
                 weight_attr=None, bias_attr=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise located(AttrError, f"MultiHeadAttention: embed_dim and num_heads must be positive, got {embed_dim}, "
                             f"{num_heads}")
        if embed_dim % num_heads:
            raise located(AttrError, f"MultiHeadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                             f"({num_heads})")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.need_weights = need_weights
        self.head_dim = embed_dim // num_heads
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)

    def _heads(self, x):
        """[batch, length, embed] -> [batch, heads, length, head_dim]."""
        return transpose(reshape(x, [0, 0, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def compute_kv(self, key, value):
        """The key and value projections split into heads."""
        return self._heads(self.k_proj(key)), self._heads(self.v_proj(value))

    def gen_cache(self, key, value=None, type=Cache):  # noqa: A002  (the reference's argument name)
        """A ``StaticCache`` of ``compute_kv(key, value)``, an empty ``Cache`` (length 0, batch of
        ``key``) when ``value`` is None, else ``Cache(key, value)``."""
        if type == MultiHeadAttention.StaticCache:
            return self.StaticCache(*self.compute_kv(key, value))
        if value is None:
            k, v = self.compute_kv(key, key)
            empty = {"axes": [2], "starts": [0], "ends": [0]}
            return self.Cache(apply_op_single("slice", {"Input": k}, empty, name_key=_key("cache")),
                              apply_op_single("slice", {"Input": v}, empty, name_key=_key("cache")))
        return self.Cache(key, value)

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        key = query if key is None else key
        value = query if value is None else value
        q = self._heads(self.q_proj(query))
        if isinstance(cache, self.StaticCache):
            k, v = cache.k, cache.v
        else:
            k, v = self.compute_kv(key, value)
        if isinstance(cache, self.Cache):
            k, v = concat([cache.k, k], axis=2), concat([cache.v, v], axis=2)
            cache = self.Cache(k, v)
        keyname = _key("multi_head_attention")
        q = apply_op_single("scale", {"X": q}, {"scale": self.head_dim ** -0.5}, name_key=keyname)
        product = apply_op_single("matmul_v2", {"X": q, "Y": k}, {"trans_y": True}, name_key=keyname)
        if attn_mask is not None:
            mask = convert_attention_mask(attn_mask, product.dtype)
            product = apply_op_single("elementwise_add", {"X": product, "Y": mask}, name_key=keyname)
        weights = F.softmax(product)
        if self.dropout:
            weights = F.dropout(weights, self.dropout, training=self.training, mode="upscale_in_train")
        out = apply_op_single("matmul_v2", {"X": weights, "Y": v}, name_key=keyname)
        out = reshape(transpose(out, [0, 2, 1, 3]), [0, 0, self.embed_dim])
        out = self.out_proj(out)
        outs = [out]
        if self.need_weights:
            outs.append(weights)
        if cache is not None:
            outs.append(cache)
        return out if len(outs) == 1 else tuple(outs)


def _layer_setup(layer, kind, config, n):
    """The common start of the encoder and decoder layers: keeps ``config``, checks the sizes, sets
    ``normalize_before``; returns the attention and activation dropout rates and ``n`` weight and
    bias attrs (one per sub-layer)."""
    layer._config = config
    if config["d_model"] <= 0 or config["nhead"] <= 0 or config["dim_feedforward"] <= 0:
        raise located(AttrError, f"{kind}: d_model, nhead and dim_feedforward must be positive")
    layer.normalize_before = config["normalize_before"]
    dropout = config["dropout"]
    attn_dropout = dropout if config["attn_dropout"] is None else config["attn_dropout"]
    act_dropout = dropout if config["act_dropout"] is None else config["act_dropout"]
    return attn_dropout, act_dropout, _param_attrs(config["weight_attr"], n), _param_attrs(config["bias_attr"], n)


def _add_feed_forward(layer, config, act_dropout, weight_attr, bias_attr, norms):
    """linear1 -> activation -> dropout -> linear2, then ``norms`` LayerNorms and as many residual
    dropouts (norm1.., dropout1..), in the order the layers always created them."""
    d_model, hidden, eps = config["d_model"], config["dim_feedforward"], config["layer_norm_eps"]
    layer.linear1 = Linear(d_model, hidden, weight_attr, bias_attr=bias_attr)
    layer.dropout = Dropout(act_dropout, mode="upscale_in_train")
    layer.linear2 = Linear(hidden, d_model, weight_attr, bias_attr=bias_attr)
    for k in range(1, norms + 1):
        setattr(layer, f"norm{k}", LayerNorm(d_model, eps))
    for k in range(1, norms + 1):
        setattr(layer, f"dropout{k}", Dropout(config["dropout"], mode="upscale_in_train"))
    layer.activation = getattr(F, config["activation"])


class TransformerEncoderLayer(Layer):
    """Self-attention and a feed-forward network, each with dropout, residual and LayerNorm."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None, layer_norm_eps=1e-5):
        config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        super().__init__()
        attn_dropout, act_dropout, weights, biases = _layer_setup(self, "TransformerEncoderLayer", config, 2)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weights[0],
                                            bias_attr=biases[0])
        _add_feed_forward(self, config, act_dropout, weights[1], biases[1], norms=2)

    def forward(self, src, src_mask=None, cache=None):
        src_mask = convert_attention_mask(src_mask, src.dtype)
        residual = src
        if self.normalize_before:
            src = self.norm1(src)
        if cache is None:
            src = self.self_attn(src, src, src, src_mask)
        else:
            src, incremental_cache = self.self_attn(src, src, src, src_mask, cache)
        src = residual + self.dropout1(src)
        if not self.normalize_before:
            src = self.norm1(src)
        residual = src
        if self.normalize_before:
            src = self.norm2(src)
        src = self.linear2(self.dropout(self.activation(self.linear1(src))))
        src = residual + self.dropout2(src)
        if not self.normalize_before:
            src = self.norm2(src)
        return src if cache is None else (src, incremental_cache)

    def gen_cache(self, src):
        return self.self_attn.gen_cache(src, type=self.self_attn.Cache)


class TransformerEncoder(Layer):
    """``num_layers`` copies of ``encoder_layer`` (the first is the given one, the others new
    layers of its configuration), then ``norm`` if given."""

    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = LayerList([encoder_layer if i == 0 else type(encoder_layer)(**encoder_layer._config)
                                 for i in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src, src_mask=None, cache=None):
        src_mask = convert_attention_mask(src_mask, src.dtype)
        output, new_caches = src, []
        for i, layer in enumerate(self.layers):
            if cache is None:
                output = layer(output, src_mask=src_mask)
            else:
                output, new_cache = layer(output, src_mask=src_mask, cache=cache[i])
                new_caches.append(new_cache)
        if self.norm is not None:
            output = self.norm(output)
        return output if cache is None else (output, new_caches)

    def gen_cache(self, src):
        return [layer.gen_cache(src) for layer in self.layers]


class TransformerDecoderLayer(Layer):
    """Self-attention, cross-attention over ``memory`` and a feed-forward network."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None, layer_norm_eps=1e-5):
        config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        super().__init__()
        attn_dropout, act_dropout, weights, biases = _layer_setup(self, "TransformerDecoderLayer", config, 3)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weights[0],
                                            bias_attr=biases[0])
        self.cross_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weights[1],
                                             bias_attr=biases[1])
        _add_feed_forward(self, config, act_dropout, weights[2], biases[2], norms=3)

    def _sublayer(self, x, norm, dropout, body):
        residual = x
        if self.normalize_before:
            x = norm(x)
        x, extra = body(x)
        x = residual + dropout(x)
        if not self.normalize_before:
            x = norm(x)
        return x, extra

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        tgt_mask = convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = convert_attention_mask(memory_mask, memory.dtype)

        def attend(attn, mask, layer_cache):
            def body(x):
                kv = x if attn is self.self_attn else memory
                if layer_cache is None:
                    return attn(x, kv, kv, mask), None
                return attn(x, kv, kv, mask, layer_cache)
            return body

        tgt, incremental = self._sublayer(tgt, self.norm1, self.dropout1,
                                          attend(self.self_attn, tgt_mask, None if cache is None else cache[0]))
        tgt, static = self._sublayer(tgt, self.norm2, self.dropout2,
                                     attend(self.cross_attn, memory_mask, None if cache is None else cache[1]))
        tgt, _ = self._sublayer(tgt, self.norm3, self.dropout3,
                                lambda x: (self.linear2(self.dropout(self.activation(self.linear1(x)))), None))
        return tgt if cache is None else (tgt, (incremental, static))

    def gen_cache(self, memory):
        incremental = self.self_attn.gen_cache(memory, type=self.self_attn.Cache)
        static = self.cross_attn.gen_cache(memory, memory, type=self.cross_attn.StaticCache)
        return incremental, static


class TransformerDecoder(Layer):
    """``num_layers`` copies of ``decoder_layer``, then ``norm`` if given."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = LayerList([decoder_layer if i == 0 else type(decoder_layer)(**decoder_layer._config)
                                 for i in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        tgt_mask = convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = convert_attention_mask(memory_mask, memory.dtype)
        output, new_caches = tgt, []
        for i, layer in enumerate(self.layers):
            if cache is None:
                output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)
            else:
                output, new_cache = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, cache=cache[i])
                new_caches.append(new_cache)
        if self.norm is not None:
            output = self.norm(output)
        return output if cache is None else (output, new_caches)

    def gen_cache(self, memory, do_zip=False):
        cache = [layer.gen_cache(memory) for layer in self.layers]
        return list(zip(*cache)) if do_zip else cache


def _split_attrs(attr):
    """The reference's rule for Transformer's list attrs: (encoder attrs, decoder attrs)."""
    if not isinstance(attr, (list, tuple)):
        return attr, attr
    if len(attr) == 1:
        return [attr[0]] * 2, [attr[0]] * 3
    if len(attr) == 2:
        return list(attr), [attr[0], attr[0], attr[-1]]
    if len(attr) == 3:
        return [attr[0], attr[-1]], list(attr)
    raise located(AttrError, f"Transformer: a list weight_attr/bias_attr must have 1, 2 or 3 entries, got {len(attr)}")


class Transformer(Layer):
    """An encoder and a decoder (each with a final LayerNorm) of the given sizes."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation="relu", attn_dropout=None, act_dropout=None, normalize_before=False,
                 weight_attr=None, bias_attr=None, custom_encoder=None, custom_decoder=None):
        super().__init__()
        enc_w, dec_w = _split_attrs(weight_attr)
        enc_b, dec_b = _split_attrs(bias_attr)
        common = (d_model, nhead, dim_feedforward, dropout, activation, attn_dropout, act_dropout, normalize_before)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(*common, enc_w, enc_b), num_encoder_layers, LayerNorm(d_model))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(*common, dec_w, dec_b), num_decoder_layers, LayerNorm(d_model))
        self.d_model, self.nhead = d_model, nhead

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None):
        src_mask = convert_attention_mask(src_mask, src.dtype)
        memory = self.encoder(src, src_mask=src_mask)
        tgt_mask = convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = convert_attention_mask(memory_mask, memory.dtype)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)

    def generate_square_subsequent_mask(self, length):
        """A [length, length] float mask: 0 on and below the diagonal, -inf above (causal)."""
        mask = np.triu(np.full((int(length), int(length)), -np.inf, dtype=np.float32), 1)
        return assign(mask)
