"""Memory and time of a training step with and without activation recompute (checkpoints).

    python bench/recompute_memory.py [--layers 16] [--width 512] [--batch 2048] [--steps 5]

Network: input [batch, width] -> layers x (fc width + relu) -> fc 1 -> mean, float32, SGD, built
with ``fluid.layers`` and trained through ``RecomputeOptimizer`` (no checkpoints = the plain
backward).  Configurations: no checkpoints, the relu output of every 4th layer, of every 2nd.
All run in this one process, each on its own program and scope, starting from the same weights
and fed the same batches; the script checks that their losses are bit-identical.

Reported per configuration (medians over ``--steps`` steps after one warm-up step):
* executor extra: the executor's peak live bytes during a step minus the bytes it held before
  the step (``headrace.device.cpu``), i.e. what the step itself allocates on top of parameters
  and optimizer state;
* tracemalloc extra: the same for every allocation of the process (NumPy reports its buffers to
  tracemalloc), peak during the step minus the traced bytes before it;
* step time: median over ``--steps`` further steps, the configurations interleaved step by step
  (tracemalloc off);
* activations: executor extra divided by the size of one activation ([batch, width] float32).
"""
from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np

import headrace as paddle
import headrace.fluid as fluid
from headrace.core import names
from headrace.device import cpu


def build(layers, width, every, seed=1):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), names.guard():
        x = fluid.data(name="x", shape=[-1, width], dtype="float32")
        h, acts = x, []
        for _ in range(layers):
            h = fluid.layers.fc(h, width, act="relu")
            acts.append(h)
        loss = fluid.layers.reduce_mean(fluid.layers.fc(h, 1))
        opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(learning_rate=1e-3))
        opt._set_checkpoints([a for i, a in enumerate(acts) if every and (i + 1) % every == 0])
        opt.minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor()
    exe.run(startup, scope=scope)
    return main, loss, exe, scope


def stepper(config):
    main, loss, exe, scope = config

    def step(xb):
        return exe.run(main, feed={"x": xb}, fetch_list=[loss], scope=scope)[0]
    return step


def measure_memory(step, batches, steps):
    """Medians of (executor extra, tracemalloc extra) over ``steps`` steps; returns the losses too."""
    losses = [step(batches[0])]  # warm-up (plan built, buffers settled)
    extra, traced = [], []
    for xb in batches[1: steps + 1]:
        before = cpu.memory_allocated()
        cpu.reset_max_memory_allocated()
        tracemalloc.start()
        t_before = tracemalloc.get_traced_memory()[0]
        losses.append(step(xb))
        traced.append(tracemalloc.get_traced_memory()[1] - t_before)
        tracemalloc.stop()
        extra.append(cpu.max_memory_allocated() - before)
    return statistics.median(extra), statistics.median(traced), losses


def measure_times(steps_fns, batches):
    """Median step time of each configuration, steps interleaved round-robin (same conditions)."""
    times = [[] for _ in steps_fns]
    losses = [[] for _ in steps_fns]
    for xb in batches:
        for k, step in enumerate(steps_fns):
            t0 = time.perf_counter()
            losses[k].append(step(xb))
            times[k].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times], losses


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    paddle.enable_static()
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((args.batch, args.width)).astype("float32")
               for _ in range(2 * args.steps + 1)]
    act = args.batch * args.width * 4
    configs = [("none", 0), ("every 4", 4), ("every 2", 2)]
    built = [build(args.layers, args.width, every) for _, every in configs]
    print(f"MLP {args.layers} x fc({args.width}) + relu, batch {args.batch}, float32, SGD; "
          f"one activation = {act / 2**20:.1f} MiB; parameters = "
          f"{sum(int(np.prod(p.shape)) * 4 for p in built[0][0].global_block().all_parameters()) / 2**20:.1f} MiB")
    steps_fns = [stepper(c) for c in built]
    memory = [measure_memory(step, batches, args.steps) for step in steps_fns]
    times, timed_losses = measure_times(steps_fns, batches[args.steps + 1:])
    results = [(extra, traced, t, losses + more)
               for (extra, traced, losses), t, more in zip(memory, times, timed_losses)]
    base = results[0]
    print(f"{'checkpoints':<12}{'ops':>5}{'executor extra MiB':>20}{'ratio':>7}{'tracemalloc extra MiB':>23}"
          f"{'ratio':>7}{'step ms':>9}{'ratio':>7}{'activations':>13}")
    for (label, _), (prog, *_), (extra, traced, t, losses) in zip(configs, built, results):
        print(f"{label:<12}{len(prog.global_block().ops):>5}{extra / 2**20:>20.1f}{extra / base[0]:>7.2f}"
              f"{traced / 2**20:>23.1f}{traced / base[1]:>7.2f}{t * 1e3:>9.1f}{t / base[2]:>7.2f}"
              f"{extra / act:>13.1f}")
        if not all(np.array_equal(a, b) for a, b in zip(losses, base[3])):
            raise SystemExit(f"losses of '{label}' differ from the run without checkpoints")
    print("losses bit-identical across configurations")


if __name__ == "__main__":
    main()
