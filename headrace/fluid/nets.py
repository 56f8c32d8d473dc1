"""``paddle.fluid.nets``: the 1.x composite networks, built from ``fluid.layers`` exactly as the
reference composes them (same layers, same order, so the same parameters and names)."""
from __future__ import annotations

from . import layers


def simple_img_conv_pool(input, num_filters, filter_size, pool_size, pool_stride, pool_padding=0,  # noqa: A002
                         pool_type="max", global_pooling=False, conv_stride=1, conv_padding=0,
                         conv_dilation=1, conv_groups=1, param_attr=None, bias_attr=None, act=None,
                         use_cudnn=True):
    """conv2d (with ``act``) then pool2d."""
    conv_out = layers.conv2d(input=input, num_filters=num_filters, filter_size=filter_size, stride=conv_stride,
                             padding=conv_padding, dilation=conv_dilation, groups=conv_groups,
                             param_attr=param_attr, bias_attr=bias_attr, act=act, use_cudnn=use_cudnn)
    return layers.pool2d(input=conv_out, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                         pool_padding=pool_padding, global_pooling=global_pooling, use_cudnn=use_cudnn)


def _per_conv(value, count, what):
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise ValueError(f"img_conv_group(): {what} has {len(value)} entries for {count} convolutions")
        return list(value)
    return [value] * count


def img_conv_group(input, conv_num_filter, pool_size, conv_padding=1, conv_filter_size=3,  # noqa: A002
                   conv_act=None, param_attr=None, conv_with_batchnorm=False, conv_batchnorm_drop_rate=0.0,
                   pool_stride=1, pool_type="max", use_cudnn=True):
    """VGG-style group: for each entry of ``conv_num_filter`` a conv2d (activation ``conv_act``, or
    batch_norm with it when ``conv_with_batchnorm``, then dropout when its rate is not 0); then one
    pool2d.  Per-convolution arguments may be lists."""
    if not isinstance(conv_num_filter, (list, tuple)):
        raise TypeError(f"img_conv_group(): conv_num_filter must be a list or tuple, got "
                        f"{type(conv_num_filter).__name__}")
    count = len(conv_num_filter)
    padding = _per_conv(conv_padding, count, "conv_padding")
    size = _per_conv(conv_filter_size, count, "conv_filter_size")
    attrs = _per_conv(param_attr, count, "param_attr")
    with_bn = _per_conv(conv_with_batchnorm, count, "conv_with_batchnorm")
    drop = _per_conv(conv_batchnorm_drop_rate, count, "conv_batchnorm_drop_rate")
    tmp = input
    for i in range(count):
        tmp = layers.conv2d(input=tmp, num_filters=conv_num_filter[i], filter_size=size[i], padding=padding[i],
                            param_attr=attrs[i], act=None if with_bn[i] else conv_act, use_cudnn=use_cudnn)
        if with_bn[i]:
            tmp = layers.batch_norm(input=tmp, act=conv_act)
            if abs(drop[i]) > 1e-5:
                tmp = layers.dropout(x=tmp, dropout_prob=drop[i])
    return layers.pool2d(input=tmp, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                         use_cudnn=use_cudnn)


def glu(input, dim=-1):  # noqa: A002
    """Gated linear unit: split ``input`` in two halves a, b along ``dim``; a * sigmoid(b)."""
    a, b = layers.split(input, num_or_sections=2, dim=dim)
    return layers.elementwise_mul(x=a, y=layers.sigmoid(x=b))


def _check_attention(queries, keys, values, num_heads):
    if not (len(queries.shape) == len(keys.shape) == len(values.shape) == 3):
        raise ValueError("scaled_dot_product_attention(): queries, keys and values must all be 3-D tensors, got "
                         f"shapes {list(queries.shape)}, {list(keys.shape)}, {list(values.shape)}")
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"scaled_dot_product_attention(): queries and keys need the same hidden size, got "
                         f"{queries.shape[-1]} and {keys.shape[-1]}")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention(): keys and values need the same sequence length, got "
                         f"{keys.shape[-2]} and {values.shape[-2]}")
    for what, var in (("keys", keys), ("values", values)):
        if var.shape[-1] % num_heads != 0:
            raise ValueError(f"scaled_dot_product_attention(): the hidden size of {what} ({var.shape[-1]}) must "
                             f"be divisible by num_heads ({num_heads})")


def scaled_dot_product_attention(queries, keys, values, num_heads=1, dropout_rate=0.0):
    """Multi-head dot-product attention without projections: softmax(q k^T / sqrt(d_head)) v per head
    (heads split from the hidden dimension), heads joined back; dropout on the weights if
    ``dropout_rate``.  Shapes [N, Lq, D], [N, Lk, D], [N, Lk, Dv] -> [N, Lq, Dv]."""
    _check_attention(queries, keys, values, num_heads)

    def split_heads(x):
        if num_heads == 1:
            return x
        reshaped = layers.reshape(x=x, shape=[0, 0, num_heads, x.shape[-1] // num_heads])
        return layers.transpose(x=reshaped, perm=[0, 2, 1, 3])

    def combine_heads(x):
        if len(x.shape) == 3:
            return x
        trans = layers.transpose(x, perm=[0, 2, 1, 3])
        return layers.reshape(x=trans, shape=[0, 0, trans.shape[2] * trans.shape[3]])

    q, k, v = split_heads(queries), split_heads(keys), split_heads(values)
    scaled_q = layers.scale(x=q, scale=(keys.shape[-1] // num_heads) ** -0.5)
    product = layers.matmul(x=scaled_q, y=k, transpose_y=True)
    weights = layers.softmax(product)
    if dropout_rate:
        weights = layers.dropout(weights, dropout_prob=dropout_rate, is_test=False)
    return combine_heads(layers.matmul(weights, v))


__all__ = ["glu", "img_conv_group", "scaled_dot_product_attention", "simple_img_conv_pool"]
