"""Training programs the memory tests estimate and run: an MLP, a conv net with batch norm and a
transformer encoder block, each optionally with recompute checkpoints."""
import numpy as np

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static


def mlp(checkpoints=False, layers=6, width=64, batch=32):
    x = static.data("x", [-1, 32], "float32")
    h, acts = x, []
    for _ in range(layers):
        h = static.nn.fc(h, size=width, activation="relu")
        acts.append(h)
    loss = paddle.mean(static.nn.fc(h, size=1))
    feed = {"x": np.random.default_rng(0).random((batch, 32), dtype=np.float32)}
    return loss, acts[1::2] if checkpoints else None, feed, paddle.optimizer.Adam(0.01)


def conv_bn(checkpoints=False, batch=8):
    img = static.data("img", [-1, 3, 16, 16], "float32")
    label = static.data("label", [-1, 1], "int64")
    h, marks = img, []
    for channels in (8, 16):
        h = fluid.layers.conv2d(h, num_filters=channels, filter_size=3, padding=1)
        h = fluid.layers.batch_norm(h, act="relu")
        h = fluid.layers.pool2d(h, pool_size=2, pool_stride=2, pool_type="max")
        marks.append(h)
    h = fluid.layers.reshape(h, [-1, 16 * 4 * 4])
    logits = static.nn.fc(h, size=10)
    loss = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(logits, label))
    rng = np.random.default_rng(1)
    feed = {"img": rng.random((batch, 3, 16, 16), dtype=np.float32),
            "label": rng.integers(0, 10, (batch, 1)).astype(np.int64)}
    return loss, marks if checkpoints else None, feed, paddle.optimizer.Momentum(0.1, momentum=0.9)


def transformer_block(checkpoints=False, batch=4, seq=8, d=16, heads=2):
    x = static.data("x", [-1, seq, d], "float32")
    dh = d // heads

    def split_heads(t):
        t = fluid.layers.reshape(t, [-1, seq, heads, dh])
        return fluid.layers.transpose(t, [0, 2, 1, 3])

    q, k, v = (split_heads(static.nn.fc(x, size=d, num_flatten_dims=2)) for _ in range(3))
    scores = fluid.layers.matmul(q, k, transpose_y=True, alpha=dh ** -0.5)
    attn = fluid.layers.dropout(fluid.layers.softmax(scores), dropout_prob=0.1,
                                dropout_implementation="upscale_in_train")
    ctx = fluid.layers.transpose(fluid.layers.matmul(attn, v), [0, 2, 1, 3])
    ctx = fluid.layers.reshape(ctx, [-1, seq, d])
    h1 = fluid.layers.layer_norm(fluid.layers.elementwise_add(x, static.nn.fc(ctx, size=d, num_flatten_dims=2)),
                                 begin_norm_axis=2)
    ff = static.nn.fc(static.nn.fc(h1, size=4 * d, num_flatten_dims=2, activation="gelu"), size=d,
                      num_flatten_dims=2)
    h2 = fluid.layers.layer_norm(fluid.layers.elementwise_add(h1, ff), begin_norm_axis=2)
    loss = paddle.mean(h2 * h2)
    feed = {"x": np.random.default_rng(2).random((batch, seq, d), dtype=np.float32)}
    return loss, [h1] if checkpoints else None, feed, paddle.optimizer.SGD(0.01)


NETS = {"mlp": mlp, "conv_bn": conv_bn, "transformer": transformer_block}


def build(name, checkpoints=False, **kw):
    """(main, startup, loss, feed) of a training program: the net, its optimizer (recompute-wrapped
    when ``checkpoints``), minimize."""
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 5
    with static.program_guard(main, startup):
        loss, marks, feed, opt = NETS[name](checkpoints=checkpoints, **kw)
        if marks:
            opt = paddle.incubate.optimizer.RecomputeOptimizer(opt)
            opt._set_checkpoints(marks)
        opt.minimize(loss)
    return main, startup, loss, feed
