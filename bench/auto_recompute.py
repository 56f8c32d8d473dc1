"""Automatic checkpoints under a memory budget vs the best hand-chosen checkpoints.

    python bench/auto_recompute.py [--rounds 3] [--steps 5] [--models mlp,transformer] [--metric cpu]

Models (static programs, SGD): ``mlp``: 16 x (fc 512 + relu), batch 2048; ``transformer``: 4 post-
layer-norm encoder blocks (d 256, 4 heads, FFN 1024 with gelu, seq 128), batch 16.  For each model
the plain step's peak P is measured; then for budgets 0.4 P .. 1.0 P the script runs
``RecomputeOptimizer._set_checkpoints("auto", budget=...)`` and every hand-chosen set (every k-th
block output, k = 1, 2, 4, ...; for the transformer also the blocks' inner layer-norm outputs),
each configuration in a fresh process, interleaved over rounds.  It prints the measured peak of the
automatic choice against the budget, its median step time, and the best median step time among the
hand-chosen sets whose measured peak meets the same budget (ratio target <= 1.05), and the FLOPs
each one recomputes (``estimate(...).flops`` of the forward copies the recompute pass inserted:
load-independent).  ``--metric cpu`` times each step by the process's CPU time instead of the
wall clock (steadier on a loaded machine; run with OMP_NUM_THREADS=1 so it is the work done).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np


def build(model, spec):
    import headrace as paddle
    import headrace.fluid as fluid
    import headrace.static as static

    paddle.enable_static()
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 1
    with static.program_guard(main, startup):
        if model == "mlp":
            x = static.data("x", [2048, 512], "float32")
            h, marks = x, []
            for _ in range(16):
                h = static.nn.fc(h, size=512, activation="relu")
                marks.append(h)
            loss = paddle.mean(static.nn.fc(h, size=1))
            feed = {"x": np.random.default_rng(0).random((2048, 512), dtype=np.float32)}
            inner = []
        else:
            seq, d, heads, batch = 128, 256, 4, 16
            x = static.data("x", [batch, seq, d], "float32")
            h, marks, inner = x, [], []
            for _ in range(4):
                h, mid = _block(fluid, static, h, seq, d, heads)
                marks.append(h)
                inner.append(mid)
            loss = paddle.mean(h * h)
            feed = {"x": np.random.default_rng(0).random((batch, seq, d), dtype=np.float32)}
        opt = paddle.incubate.optimizer.RecomputeOptimizer(paddle.optimizer.SGD(0.001))
        kind, _, arg = spec.partition(":")
        if kind == "auto":
            opt._set_checkpoints("auto", budget=int(arg))
        elif kind == "every":
            k = int(arg)
            opt._set_checkpoints(marks[k - 1::k][:-1] or marks[:1])
        elif kind == "inner":
            opt._set_checkpoints(sorted(marks[:-1] + inner, key=lambda v: v.name))
        else:
            opt._set_checkpoints([])
        opt.minimize(loss)
    return main, startup, loss, feed, opt


def _block(fluid, static, x, seq, d, heads):
    dh = d // heads

    def split(t):
        return fluid.layers.transpose(fluid.layers.reshape(t, [-1, seq, heads, dh]), [0, 2, 1, 3])

    q, k, v = (split(static.nn.fc(x, size=d, num_flatten_dims=2)) for _ in range(3))
    attn = fluid.layers.softmax(fluid.layers.matmul(q, k, transpose_y=True, alpha=dh ** -0.5))
    ctx = fluid.layers.reshape(fluid.layers.transpose(fluid.layers.matmul(attn, v), [0, 2, 1, 3]), [-1, seq, d])
    h1 = fluid.layers.layer_norm(fluid.layers.elementwise_add(x, static.nn.fc(ctx, size=d, num_flatten_dims=2)),
                                 begin_norm_axis=2)
    ff = static.nn.fc(static.nn.fc(h1, size=4 * d, num_flatten_dims=2, activation="gelu"), size=d,
                      num_flatten_dims=2)
    return fluid.layers.layer_norm(fluid.layers.elementwise_add(h1, ff), begin_norm_axis=2), h1


def child(model, spec, steps, metric):
    import logging

    logging.disable(logging.WARNING)
    import headrace.static as static
    from headrace import memory
    from headrace.device import cpu

    main, startup, loss, feed, opt = build(model, spec)
    exe = static.Executor()
    before = cpu.memory_allocated()
    exe.run(startup)
    exe.run(main, feed=feed, fetch_list=[loss])          # warm-up (plans, caches)
    cpu.reset_max_memory_allocated()
    clock = time.process_time if metric == "cpu" else time.perf_counter
    times = []
    for _ in range(steps):
        t = clock()
        exe.run(main, feed=feed, fetch_list=[loss])
        times.append(clock() - t)
    chosen = [v.name for v in getattr(opt, "chosen_checkpoints", [])]
    est = memory.estimate(main, feed, fetch_list=[loss], live_at_peak=False)
    flops = sum(f for f, copy in zip(est.flops, est.recomputed) if copy)
    print(json.dumps({"peak": cpu.max_memory_allocated() - before, "time": statistics.median(times),
                      "chosen": chosen, "flops": flops}))


def run(model, spec, steps, metric="wall"):
    out = subprocess.run([sys.executable, __file__, "--child", model, spec, str(steps), metric],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(model, rounds, steps, metric):
    plain = run(model, "none", steps, metric)
    P = plain["peak"]
    hand = [f"every:{k}" for k in (1, 2, 4, 8) if model == "mlp" or k <= 2] + (["inner"] if model != "mlp" else [])
    print(f"\n{model}: plain step peak {P / 2**20:.1f} MiB, {plain['time'] * 1e3:.1f} ms")
    print(f"{'budget':>7} {'auto peak/budget':>16} {'auto ms':>8} {'GFLOP':>6} {'best hand ms':>12} {'(set)':>9} "
          f"{'GFLOP':>6} {'ratio':>6}")
    for frac in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4):
        budget = int(P * frac)
        specs = [f"auto:{budget}"] + hand
        results = {s: [] for s in specs}
        for _ in range(rounds):   # interleaved: each round runs every configuration once
            for s in specs:
                results[s].append(run(model, s, steps, metric))
        auto = results[specs[0]]
        if "error" in auto[0]:
            print(f"{frac:6.1f}P  auto: {auto[0]['error'][:90]}")
            continue
        auto_ms = statistics.median(r["time"] for r in auto) * 1e3
        fits = {s: statistics.median(r["time"] for r in rs) * 1e3 for s, rs in results.items()
                if s in hand and all("error" not in r and r["peak"] <= budget for r in rs)}
        best = min(fits.items(), key=lambda kv: kv[1]) if fits else None
        ratio = f"{auto_ms / best[1]:.3f}" if best else "  -"
        hand_flops = results[best[0]][0]["flops"] / 1e9 if best else float("nan")
        print(f"{frac:6.1f}P {max(r['peak'] for r in auto) / budget:16.3f} {auto_ms:8.1f} {auto[0]['flops'] / 1e9:6.2f} "
              f"{best[1] if best else float('nan'):12.1f} {best[0] if best else 'none fits':>9} {hand_flops:6.2f} "
              f"{ratio:>6}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--models", default="mlp,transformer")
    parser.add_argument("--metric", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    for model in args.models.split(","):
        bench(model, args.rounds, args.steps, args.metric)


if __name__ == "__main__":
    main()
