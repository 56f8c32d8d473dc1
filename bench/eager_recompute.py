"""Eager recompute: peak memory and step time of seed 001's net widened to 1024, batch 256.

    python bench/eager_recompute.py [--steps 5] [--width 1024] [--batch 256]

The net is seed 001's ``Naive_fc_net`` (5 blocks of Linear -> Dropout(0.5) -> ReLU -> Linear ->
ReLU -> Linear, no biases; the last block ends in Linear(width, 1)), trained with SGD(0.01) in
dygraph mode.  Configurations, all in this one process, each on a freshly built model from the
same seed: no recompute; blocks [1, 2] recomputed (the seed's choice) and blocks [0, 1, 2, 3]
recomputed, each with use_reentrant=True and False.  Per configuration: one warm-up step, then
``--steps`` timed steps; tracemalloc (NumPy reports its buffers to it) runs from before the
model is built.  Printed: the bytes live before the timed steps (parameters, gradient buffers,
optimizer state), the peak of traced bytes during the timed steps, their difference (what a
step adds: activations and transient gradients), and the median (min) step time.  Losses must be identical across configurations (checked).

A second table gives the eager per-op overhead on tiny tensors: forward without grad, forward
recorded on the tape, and backward, per op.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import headrace as paddle  # noqa: E402
from headrace.distributed.fleet.utils import recompute  # noqa: E402

MIB = 1024 * 1024


def fc_block(width, is_last):
    layers = [paddle.nn.Linear(width, width, bias_attr=False), paddle.nn.Dropout(p=0.5), paddle.nn.ReLU(),
              paddle.nn.Linear(width, width, bias_attr=False), paddle.nn.ReLU(),
              paddle.nn.Linear(width, 1 if is_last else width, bias_attr=False)]
    return paddle.nn.Sequential(*layers)


class Net(paddle.nn.Layer):
    def __init__(self, width, blocks, use_reentrant):
        super().__init__()
        self.blocks = [fc_block(width, i == 4) for i in range(5)]
        for i, block in enumerate(self.blocks):
            self.add_sublayer(f"runfunc{i}", block)
        self.recompute_blocks, self.use_reentrant = blocks, use_reentrant

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            if i in self.recompute_blocks:
                x = recompute(block, x, preserve_rng_state=True, use_reentrant=self.use_reentrant)
            else:
                x = block(x)
        return x


def run(width, batch, steps, blocks, use_reentrant):
    tracemalloc.start()
    paddle.seed(10)
    model = Net(width, blocks, use_reentrant)
    opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
    losses, times = [], []

    def step():
        x = paddle.rand([batch, width])
        loss = model(x).mean()
        losses.append(loss.item())
        loss.backward()
        opt.step()
        opt.clear_grad()

    step()                                   # warm-up: gradients and state exist from here on
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    params = sum(p.size * 4 for p in model.parameters())
    return {"losses": losses, "peak_above": (peak - base) / MIB, "base": base / MIB, "peak": peak / MIB,
            "params": params / MIB, "ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3}


def op_overhead(n=3000):
    x = paddle.to_tensor(np.ones((4, 4), np.float32), stop_gradient=False)
    with paddle.no_grad():
        start = time.perf_counter()
        for _ in range(n):
            paddle.nn.functional.relu(x)
        no_grad = (time.perf_counter() - start) / n
    start = time.perf_counter()
    h = x
    for _ in range(n):
        h = paddle.nn.functional.relu(h)
    recorded = (time.perf_counter() - start) / n
    start = time.perf_counter()
    h.sum().backward()
    backward = (time.perf_counter() - start) / n
    kernel_start = time.perf_counter()
    arr = np.ones((4, 4), np.float32)
    for _ in range(n):
        np.maximum(arr, 0)
    kernel = (time.perf_counter() - kernel_start) / n
    return no_grad, recorded, backward, kernel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    print(f"seed-001 net, width {args.width}, batch {args.batch}, SGD, {args.steps} timed steps after 1 warm-up")
    configs = [("none", [], True), ("[1,2] reentrant", [1, 2], True), ("[1,2] hooks", [1, 2], False),
               ("[0-3] reentrant", [0, 1, 2, 3], True), ("[0-3] hooks", [0, 1, 2, 3], False)]
    print(f"{'recompute':<18}{'live MiB':>10}{'peak MiB':>10}{'peak-live MiB':>14}{'step ms (min)':>16}")
    ref = None
    for name, blocks, reentrant in configs:
        r = run(args.width, args.batch, args.steps, blocks, reentrant)
        if ref is None:
            ref = r["losses"]
            print(f"(parameters {r['params']:.1f} MiB)")
        assert r["losses"] == ref, f"{name}: losses differ from no recompute"
        print(f"{name:<18}{r['base']:>10.1f}{r['peak']:>10.1f}{r['peak_above']:>14.1f}"
              f"{r['ms']:>10.0f} ({r['min_ms']:.0f})")
        gc.collect()
    print("losses identical in every configuration:", [round(v, 6) for v in ref])
    no_grad, recorded, backward, kernel = op_overhead()
    print(f"eager per-op time on 4x4 relu: no_grad {no_grad * 1e6:.1f} us, recorded {recorded * 1e6:.1f} us, "
          f"backward {backward * 1e6:.1f} us per op (NumPy kernel alone {kernel * 1e6:.1f} us)")


if __name__ == "__main__":
    main()
