"""BuildStrategy passes: peak live bytes and step time of one MLP training step, per config.

    python bench/passes.py [--hidden 1024] [--layers 8] [--batch 256] [--steps 10]

Network: input -> L x (fc hidden + relu) -> fc 10 -> softmax cross-entropy (mean), SGD, float32,
run through ``CompiledProgram(main, build_strategy)`` on one place.  For each config the script
prints the measured peak of live temporary bytes in a step (``max_memory_allocated`` minus the
bytes held before the step: parameters and optimizer state excluded), the planned peak of the
compiled program (``passes.memory_reuse.planned_peak``), the median step time, and checks that
every config gives the same losses as the plain run (bit for bit).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import headrace as paddle
import headrace.static as static
from headrace.nn import functional as F
from headrace.passes.memory_reuse import planned_peak
from headrace.runtime import memory

paddle.enable_static()

CONFIGS = {
    "plain": {},
    "inplace+memory_optimize": {"enable_inplace": True, "memory_optimize": True},
    "fuse_elewise_add_act": {"fuse_elewise_add_act_ops": True},
    "fuse + inplace + memory_optimize": {"fuse_elewise_add_act_ops": True, "enable_inplace": True,
                                         "memory_optimize": True},
}


def build(hidden, layers):
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 1
    with static.program_guard(main, startup):
        h = static.data("x", [-1, hidden], "float32")
        y = static.data("y", [-1, 1], "int64")
        for _ in range(layers):
            h = static.nn.fc(h, size=hidden, activation="relu")
        logits = static.nn.fc(h, size=10)
        loss = paddle.mean(F.cross_entropy(logits, y, reduction="none"))
        paddle.optimizer.SGD(learning_rate=1e-3).minimize(loss)
    return main, startup, loss


def measure(flags, args, feeds):
    main, startup, loss = build(args.hidden, args.layers)
    bs = static.BuildStrategy()
    for k, v in flags.items():
        setattr(bs, k, v)
    compiled = static.CompiledProgram(main, build_strategy=bs)
    scope = static.Scope()
    exe = static.Executor()
    exe.run(startup, scope=scope)
    exe.run(compiled, feed=feeds[0], fetch_list=[loss], scope=scope)  # warm-up and compile
    losses, times, peaks = [], [], []
    for feed in feeds:
        memory.reset_max_memory_allocated()
        base = memory.memory_allocated()
        start = time.perf_counter()
        out, = exe.run(compiled, feed=feed, fetch_list=[loss], scope=scope)
        times.append(time.perf_counter() - start)
        peaks.append(memory.max_memory_allocated() - base)
        losses.append(float(out))
    (program,), = compiled._compiled.values()
    planned = planned_peak(program, {loss.name}, args.batch)
    return losses, max(peaks), planned, statistics.median(times), sum(len(v) for v in getattr(program, "_buffer_plan", {}).values())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal((args.batch, args.hidden)).astype("float32"),
              "y": rng.integers(0, 10, (args.batch, 1)).astype("int64")} for _ in range(args.steps)]
    reference = None
    print(f"MLP {args.hidden} x {args.layers} fc+relu, batch {args.batch}, {args.steps} steps")
    print(f"{'config':36s} {'peak MiB':>9s} {'planned MiB':>12s} {'step ms':>8s} {'buffers':>8s}")
    for name, flags in CONFIGS.items():
        losses, peak, planned, step, buffers = measure(flags, args, feeds)
        if reference is None:
            reference = losses
        same = "same losses" if losses == reference else f"LOSSES DIFFER {np.max(np.abs(np.subtract(losses, reference)))}"
        print(f"{name:36s} {peak / 2**20:9.2f} {planned / 2**20:12.2f} {step * 1e3:8.1f} {buffers:8d}  {same}")


if __name__ == "__main__":
    main()
