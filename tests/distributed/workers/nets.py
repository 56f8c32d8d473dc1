"""Programs shared by the multi-process workers and the tests that check their results."""
from __future__ import annotations

import numpy as np

import headrace as paddle
import headrace.static as static
from headrace.core.context import program_guard
from headrace.core.program import Program

STEPS = 3
BATCH = 16


def mlp_data(steps=STEPS, batch=BATCH, seed=0):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((batch, 8)).astype("float32"),
             "label": rng.integers(0, 4, (batch, 1)).astype("int64")} for _ in range(steps)]


def conv_data(steps=STEPS, batch=8, seed=1):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((batch, 3, 6, 6)).astype("float32"),
             "label": rng.integers(0, 4, (batch, 1)).astype("int64")} for _ in range(steps)]


def shard(feed, rank, world):
    """Rank ``rank``'s rows of a global batch (even split)."""
    out = {}
    for name, value in feed.items():
        n = value.shape[0] // world
        out[name] = value[rank * n:(rank + 1) * n]
    return out


def mlp(optimizer_fn, seed=5, checkpoints=False):
    """x[N,8] -> fc(16, relu) -> fc(16, relu) -> fc(4) -> softmax cross-entropy mean.
    ``optimizer_fn(loss, hidden)`` builds the training ops.  Returns (main, startup, loss)."""
    main, startup = Program(), Program()
    main.random_seed = startup.random_seed = seed
    with program_guard(main, startup):
        x = static.data("x", [-1, 8], "float32")
        label = static.data("label", [-1, 1], "int64")
        h1 = static.nn.fc(x, size=16, activation="relu")
        h2 = static.nn.fc(h1, size=16, activation="relu")
        logits = static.nn.fc(h2, size=4)
        loss = paddle.mean(paddle.nn.functional.cross_entropy(logits, label))
        optimizer_fn(loss, [h1, h2])
    return main, startup, loss


def conv_bn(optimizer_fn, seed=6):
    """x[N,3,6,6] -> conv2d(4) -> batch_norm(relu) -> fc(4) -> cross-entropy mean."""
    main, startup = Program(), Program()
    main.random_seed = startup.random_seed = seed
    with program_guard(main, startup):
        x = static.data("x", [-1, 3, 6, 6], "float32")
        label = static.data("label", [-1, 1], "int64")
        h = static.nn.conv2d(x, num_filters=4, filter_size=3, padding=1)
        h = static.nn.batch_norm(h, act="relu")
        logits = static.nn.fc(h, size=4)
        loss = paddle.mean(paddle.nn.functional.cross_entropy(logits, label))
        optimizer_fn(loss, [])
    return main, startup, loss


def run(main, startup, loss, feeds, program=None):
    """Losses per step and the final persistables (parameters and statistics)."""
    scope = static.Scope()
    exe = static.Executor(static.CPUPlace())
    with static.scope_guard(scope):
        exe.run(startup)
        losses = [np.asarray(exe.run(program if program is not None else main, feed=f,
                                     fetch_list=[loss])[0]) for f in feeds]
        state = {v.name: np.array(scope._get_array(v.name)) for v in main.list_vars()
                 if v.persistable and scope._get_array(v.name) is not None}
    return losses, state
