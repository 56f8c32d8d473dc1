"""The demo: build a seed-style MLP and a small conv net as static Programs and run them.

    python -m headrace.demo

Prints each program's ops, the output of a forward run, the time per run and the peak bytes the
runtime held.  (Training arrives with automatic differentiation.)
"""
from __future__ import annotations

import time

import numpy as np

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static


def mlp(x, hidden=128, classes=10):
    h = fluid.layers.fc(input=x, size=hidden, act="relu")
    h = fluid.layers.dropout(h, dropout_prob=0.1, is_test=True)
    return fluid.layers.fc(input=[h], size=classes, act="softmax")


def conv_net(image, classes=10):
    h = static.nn.conv2d(image, num_filters=8, filter_size=3, padding=1, act=None)
    h = static.nn.batch_norm(h, act="relu", is_test=True)
    h = fluid.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
    return static.nn.fc(h, size=classes, activation="softmax")


def run(name, program, startup, feed, fetch):
    exe = static.Executor(static.CPUPlace())
    scope = static.Scope()
    exe.run(startup, scope=scope)
    print(f"\n== {name}: {len(program.global_block().ops)} ops ==")
    for op in program.global_block().ops:
        ins = ", ".join(n for names in op.inputs.values() for n in names)
        outs = ", ".join(n for names in op.outputs.values() for n in names)
        print(f"  {op.type:<28} {ins} -> {outs}")
    paddle.device.cpu.reset_max_memory_allocated()
    base = paddle.device.cpu.memory_allocated()
    t0 = time.perf_counter()
    for _ in range(10):
        out = exe.run(program, feed=feed, fetch_list=[fetch], scope=scope)[0]
    elapsed = (time.perf_counter() - t0) / 10
    peak = paddle.device.cpu.max_memory_allocated() - base
    print(f"  output {out.shape}, rows sum to 1: {np.allclose(out.sum(axis=1), 1.0, atol=1e-5)}")
    print(f"  first row: {np.array2string(out[0], precision=3)}")
    print(f"  {elapsed * 1e3:.2f} ms per run; peak extra memory {peak / 1024:.1f} KiB")


def main():
    paddle.seed(2024)
    rng = np.random.default_rng(0)
    main_prog, startup = static.Program(), static.Program()
    with static.program_guard(main_prog, startup):
        x = fluid.layers.data(name="x", shape=[64], dtype="float32")
        probs = mlp(x)
    run("MLP", main_prog, startup, {"x": rng.random((32, 64), dtype=np.float32)}, probs)

    main_prog, startup = static.Program(), static.Program()
    with static.program_guard(main_prog, startup):
        image = static.data(name="image", shape=[None, 1, 8, 8], dtype="float32")
        probs = conv_net(image)
    run("conv net", main_prog, startup, {"image": rng.random((16, 1, 8, 8), dtype=np.float32)}, probs)


if __name__ == "__main__":
    main()
