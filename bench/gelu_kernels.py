"""Exact float32 gelu and gelu_grad kernels: this checkout against another one, side by side.

    python bench/gelu_kernels.py [--base PATH] [--elements 2097152] [--rounds 3] [--repeats 10]
                                 [--chunks 32768,65536]

Each (tree, threads) configuration runs in a fresh process, rounds interleaved; the figure is the
minimum over repeats and rounds of one kernel call on ``--elements`` float32 elements (the
encoder's FFN activation: 16 x 128 x 1024), into a handed output buffer as the executor's buffer
reuse gives it: CPU time of the process with 1 thread (steady on a shared machine), wall clock
with 2 threads (the intra-op pool).  ``--base``: a checkout to compare with (e.g.
``git worktree add /tmp/base main``).  ``--chunks``: also run this checkout with these float64
chunk lengths (``ops/activation.py`` ``_CHUNK``; the results do not depend on it), as ``chunk=N``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SETTINGS = ((1, "cpu"), (2, "wall"))


def child(tree, threads, clock, elements, repeats, chunk):
    sys.path.insert(0, tree)
    import numpy as np

    import headrace as paddle
    from headrace.ops import activation
    from headrace.ops.gradrule import grad_slot
    from headrace.ops.kernel import KernelContext
    from headrace.ops.registry import lookup

    paddle.set_flags({"FLAGS_paddle_num_threads": threads})
    if chunk:
        activation._CHUNK = chunk
    timer = time.process_time if clock == "cpu" else time.perf_counter
    x = (np.random.default_rng(0).standard_normal(elements) * 2).astype(np.float32).reshape(-1, 1024)
    dx, dout_slot = grad_slot("X"), grad_slot("Out")
    attrs = {"approximate": False}
    out, grad = np.empty_like(x), np.empty_like(x)
    forward = lookup("gelu").kernel({"X": x}, attrs, KernelContext(frozenset(["Out"]), {"Out": out}))["Out"]
    dout = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    runs = {
        "gelu": lambda: lookup("gelu").kernel({"X": x}, attrs, KernelContext(frozenset(["Out"]), {"Out": out})),
        "gelu_grad": lambda: lookup("gelu_grad").kernel({"X": x, "Out": forward, dout_slot: dout}, attrs,
                                                        KernelContext(frozenset([dx]), {dx: grad})),
    }
    for name, run in runs.items():
        best = float("inf")
        for _ in range(repeats):
            start = timer()
            run()
            best = min(best, timer() - start)
        print(name, best)


def measure(tree, chunk, threads, clock, args):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    command = [sys.executable, os.path.abspath(__file__), "--child", tree, "--threads", str(threads),
               "--clock", clock, "--elements", str(args.elements), "--repeats", str(args.repeats),
               "--chunk", str(chunk)]
    lines = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout.split("\n")
    return {name: float(value) for name, value in (line.split() for line in lines if line)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="another checkout to compare with")
    parser.add_argument("--elements", type=int, default=1 << 21)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--chunks", default="", help="float64 chunk lengths to try on this checkout")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--chunk", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--clock", default="cpu", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.threads, args.clock, args.elements, args.repeats, args.chunk)
        return
    trees = {"this": (os.path.dirname(HERE), 0)}
    for chunk in (int(c) for c in args.chunks.split(",") if c):
        trees[f"chunk={chunk}"] = (os.path.dirname(HERE), chunk)
    if args.base:
        trees["base"] = (os.path.abspath(args.base), 0)
    best = {}
    for _ in range(args.rounds):
        for label, (tree, chunk) in trees.items():
            for threads, clock in SETTINGS:
                for name, value in measure(tree, chunk, threads, clock, args).items():
                    key = (name, threads, clock, label)
                    best[key] = min(best.get(key, float("inf")), value)
    print(f"{'kernel':10} {'threads':>7} {'clock':>5} " + " ".join(f"{label + ' ms':>13}" for label in trees)
          + ("  base/this" if args.base else ""))
    for name in ("gelu", "gelu_grad"):
        for threads, clock in SETTINGS:
            row = [best[(name, threads, clock, label)] * 1e3 for label in trees]
            ratio = f"  {row[-1] / row[0]:8.2f}x" if args.base else ""
            print(f"{name:10} {threads:>7} {clock:>5} " + " ".join(f"{v:>13.2f}" for v in row) + ratio)


if __name__ == "__main__":
    main()
