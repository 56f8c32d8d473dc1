"""BuildStrategy passes: peak live bytes and step time of one MLP training step, per config.

    python bench/passes.py [--hidden 1024] [--layers 8] [--batch 256] [--steps 10]

Network: input -> L x (fc hidden + relu) -> fc 10 -> softmax cross-entropy (mean), SGD, float32,
run through ``CompiledProgram(main, build_strategy)`` on one place.  For each config the script
prints the measured peak of live temporary bytes in a step (``max_memory_allocated`` minus the
bytes held before the step: parameters and optimizer state excluded), the planned peak of the
compiled program (``passes.memory_reuse.planned_peak``), the median step time (the configs' steps
interleaved, so machine noise hits all alike), and checks that every config gives the same losses
as the plain run (bit for bit).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import headrace as paddle
import headrace.static as static
from _nets import mlp_program  # bench/ is the script's folder, so on sys.path
from headrace.passes.inplace import buffer_plan  # noqa: E402
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


def prepare(flags, args, feeds):
    """Compile one config and run its warm-up step; returns a step function and the program."""
    main, startup, loss = mlp_program(args.hidden, args.layers)
    bs = static.BuildStrategy()
    for k, v in flags.items():
        setattr(bs, k, v)
    compiled = static.CompiledProgram(main, build_strategy=bs)
    scope = static.Scope()
    exe = static.Executor()
    exe.run(startup, scope=scope)
    exe.run(compiled, feed=feeds[0], fetch_list=[loss], scope=scope)  # warm-up and compile
    (program,), = compiled._compiled.values()

    def step(feed):
        memory.reset_max_memory_allocated()
        base = memory.memory_allocated()
        start = time.perf_counter()
        out, = exe.run(compiled, feed=feed, fetch_list=[loss], scope=scope)
        return time.perf_counter() - start, memory.max_memory_allocated() - base, float(out)
    return step, program, loss


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
    runs = {name: prepare(flags, args, feeds) for name, flags in CONFIGS.items()}
    times = {name: [] for name in CONFIGS}
    peaks = {name: [] for name in CONFIGS}
    losses = {name: [] for name in CONFIGS}
    for feed in feeds:          # configs interleaved step by step: machine noise hits all alike
        for name, (step, _, _) in runs.items():
            t, peak, loss = step(feed)
            times[name].append(t)
            peaks[name].append(peak)
            losses[name].append(loss)
    reference = losses["plain"]
    print(f"MLP {args.hidden} x {args.layers} fc+relu, batch {args.batch}, {args.steps} steps (interleaved)")
    print(f"{'config':36s} {'peak MiB':>9s} {'planned MiB':>12s} {'step ms':>8s} {'buffers':>8s}")
    for name, (_, program, loss) in runs.items():
        planned = planned_peak(program, {loss.name}, args.batch)
        buffers = sum(len(v) for v in buffer_plan(program).values())
        same = "same losses" if losses[name] == reference else \
            f"LOSSES DIFFER {np.max(np.abs(np.subtract(losses[name], reference)))}"
        print(f"{name:36s} {max(peaks[name]) / 2**20:9.2f} {planned / 2**20:12.2f} "
              f"{statistics.median(times[name]) * 1e3:8.1f} {buffers:8d}  {same}")


if __name__ == "__main__":
    main()
