"""Eager training step split into phases, and the per-parameter cost of ``opt.step()``.

    OMP_NUM_THREADS=1 python bench/eager_step.py [--optimizers sgd,momentum,adam,adamw] [--steps 300]
                                                 [--rounds 5] [--layers 32] [--width 16] [--batch 8]

The model is bench/zoo.py's ``tiny`` (``--layers`` x (Linear width->width + tanh), batch
``--batch``, loss = mean; 2 parameters per layer).  For each optimizer it warms up, then times
``--steps`` steps phase by phase (forward, backward, step, clear_grad) with the process's CPU time
(``time.process_time``: steadier than wall-clock time on a shared machine) and wall time, and
prints each phase's median over ``--rounds`` rounds in ms per step, plus ``step`` in us per
parameter and ``kernels``: the update kernels alone, called in a plain loop over the parameters with
their arrays (what ``step()`` cannot go below; only when the optimizer's memo of its updates,
``optimizer/eager_memo.py``, exists and holds every parameter, i.e. not on an older checkout).  Run it against another checkout with ``PYTHONPATH=<checkout> python
bench/eager_step.py`` to compare (each run is a fresh process).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def build(args, name):
    import headrace as paddle
    import headrace.nn as nn
    import headrace.nn.functional as F

    paddle.disable_static()
    paddle.seed(1)

    class Tiny(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fcs = nn.Sequential(*[nn.Linear(args.width, args.width) for _ in range(args.layers)])

        def forward(self, x):
            h = x
            for fc in self.fcs:
                h = F.tanh(fc(h))
            return paddle.mean(h)

    net = Tiny()
    params = net.parameters()
    opt = {"sgd": lambda: paddle.optimizer.SGD(learning_rate=1e-3, parameters=params),
           "momentum": lambda: paddle.optimizer.Momentum(learning_rate=1e-3, momentum=0.9, parameters=params),
           "adam": lambda: paddle.optimizer.Adam(learning_rate=1e-3, parameters=params),
           "adamw": lambda: paddle.optimizer.AdamW(learning_rate=1e-3, parameters=params)}[name]()
    x = paddle.to_tensor(np.random.default_rng(0).standard_normal((args.batch, args.width), dtype=np.float32))
    return net, opt, x, len(params)


def phases(net, opt, x, steps, clock):
    spent = {"forward": 0.0, "backward": 0.0, "step": 0.0, "clear": 0.0}
    for _ in range(steps):
        t0 = clock()
        loss = net(x)
        t1 = clock()
        loss.backward()
        t2 = clock()
        opt.step()
        t3 = clock()
        opt.clear_grad()
        t4 = clock()
        spent["forward"] += t1 - t0
        spent["backward"] += t2 - t1
        spent["step"] += t3 - t2
        spent["clear"] += t4 - t3
    return {k: v / steps for k, v in spent.items()}


def kernels_only(opt, params, steps):
    """CPU seconds per call of every parameter's update kernel, straight (None without a memo)."""
    memo = getattr(opt, "_update_memo", None)
    if memo is None or memo.entries is None or None in memo.entries:
        return None
    lr = opt._eager_learning_rate._value
    calls = []
    for p, entry in zip(params, memo.entries):
        template, checked, opdef, attrs, ctx = entry[0], entry[1], entry[6], entry[7], entry[8]
        ins = dict(template, Grad=p._grad._value if p._grad is not None else np.zeros_like(p._value),
                   LearningRate=lr, **{slot: tref()._value for slot, tref, *_ in checked})
        calls.append((opdef.kernel, ins, attrs, ctx))
    t0 = time.process_time()
    for _ in range(steps):
        for kernel, ins, attrs, ctx in calls:
            kernel(ins, attrs, ctx)
    return (time.process_time() - t0) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimizers", default="sgd,momentum,adam,adamw")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    print(f"{'optimizer':10} {'clock':5} {'forward':>8} {'backward':>8} {'step':>8} {'clear':>8} "
          f"{'total':>8}  step us/param  kernels us/param")
    for name in args.optimizers.split(","):
        net, opt, x, n_params = build(args, name)
        phases(net, opt, x, 20, time.perf_counter)          # warm-up: signatures learned
        for label, clock in (("cpu", time.process_time), ("wall", time.perf_counter)):
            rounds = [phases(net, opt, x, args.steps, clock) for _ in range(args.rounds)]
            med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
            total = sum(med.values())
            print(f"{name:10} {label:5} {med['forward'] * 1e3:8.3f} {med['backward'] * 1e3:8.3f} "
                  f"{med['step'] * 1e3:8.3f} {med['clear'] * 1e3:8.3f} {total * 1e3:8.3f}  "
                  f"{med['step'] * 1e6 / n_params:13.2f}")
        net(x).backward()
        floor = [kernels_only(opt, net.parameters(), args.steps) for _ in range(args.rounds)]
        if floor[0] is not None:
            print(f"{name:10} {'cpu':5} {'':>8} {'':>8} {'':>8} {'':>8} {'':>8}  {'':>13}  "
                  f"{statistics.median(floor) * 1e6 / n_params:16.2f}")


if __name__ == "__main__":
    main()
