"""Small networks shared by the BuildStrategy / data-parallel tests."""
from __future__ import annotations

import numpy as np

import headrace as paddle
import headrace.static as static
from headrace.core.context import program_guard
from headrace.core.program import Program


def conv_bn_fc_net(optimizer="sgd", seed=7):
    """x[N,3,8,8] -> conv2d(4) -> batch_norm(relu) -> depthwise conv -> fc(16, relu) -> fc(10)
    -> softmax cross-entropy mean.  Returns (main, startup, loss)."""
    main, startup = Program(), Program()
    main.random_seed = startup.random_seed = seed
    with program_guard(main, startup):
        x = static.data("x", [-1, 3, 8, 8], "float32")
        label = static.data("label", [-1, 1], "int64")
        h = static.nn.conv2d(x, num_filters=4, filter_size=3, padding=1)
        h = static.nn.batch_norm(h, act="relu")
        h = static.nn.conv2d(h, num_filters=4, filter_size=3, padding=1, groups=4)
        h = static.nn.fc(h, size=16, activation="relu")
        h = static.nn.fc(h, size=10, activation="tanh")
        logits = static.nn.fc(h, size=10)
        loss = paddle.mean(paddle.nn.functional.cross_entropy(logits, label))
        if optimizer == "sgd":
            paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
        else:
            paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9).minimize(loss)
    return main, startup, loss


def batches(steps, batch=8, seed=0):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((batch, 3, 8, 8)).astype("float32"),
             "label": rng.integers(0, 10, (batch, 1)).astype("int64")} for _ in range(steps)]


def train(main, startup, loss, feeds, compiled=None):
    """Losses per step (mean over places) and the final parameters."""
    scope = static.Scope()
    exe = static.Executor(static.CPUPlace())
    with static.scope_guard(scope):
        exe.run(startup)
        losses = []
        for feed in feeds:
            out, = exe.run(compiled if compiled is not None else main, feed=feed, fetch_list=[loss])
            losses.append(float(np.mean(out)))
        params = {p.name: np.array(scope._get_array(p.name)) for p in main.all_parameters()}
    return np.array(losses), params
