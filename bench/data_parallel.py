"""Data parallel in one process: 2 places vs 1 place training throughput of an MLP.

    python bench/data_parallel.py [--hidden 1024] [--layers 8] [--batch 512] [--steps 10]

Network: input -> L x (fc hidden + relu) -> fc 10 -> softmax cross-entropy, SGD, float32.  The
same global batch runs through ``CompiledProgram(...).with_data_parallel(places=cpu_places(n))``
with n = 1 and n = 2 (AllReduce); the script prints samples/s (median step) of each, their ratio,
and the largest loss difference between the two (the mean of the per-place losses vs the
1-place loss).  Set OMP_NUM_THREADS/OPENBLAS_NUM_THREADS to control BLAS threads per place.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import headrace as paddle
import headrace.static as static
from _nets import mlp_program  # bench/ is the script's folder, so on sys.path

paddle.enable_static()


def run(places, args, feeds):
    main, startup, loss = mlp_program(args.hidden, args.layers)
    compiled = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name,
                                                               places=static.cpu_places(places))
    scope = static.Scope()
    exe = static.Executor()
    exe.run(startup, scope=scope)
    exe.run(compiled, feed=feeds[0], fetch_list=[loss], scope=scope)  # warm-up and compile
    times, losses = [], []
    for feed in feeds:
        start = time.perf_counter()
        out, = exe.run(compiled, feed=feed, fetch_list=[loss], scope=scope)
        times.append(time.perf_counter() - start)
        losses.append(float(np.mean(out)))
    return args.batch / statistics.median(times), np.array(losses)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal((args.batch, args.hidden)).astype("float32"),
              "y": rng.integers(0, 10, (args.batch, 1)).astype("int64")} for _ in range(args.steps)]
    one, losses1 = run(1, args, feeds)
    two, losses2 = run(2, args, feeds)
    print(f"MLP {args.hidden} x {args.layers}, global batch {args.batch}, {args.steps} steps")
    print(f"1 place : {one:9.1f} samples/s")
    print(f"2 places: {two:9.1f} samples/s   ratio {two / one:.2f}")
    print(f"max |loss(2 places) - loss(1 place)| = {np.max(np.abs(losses2 - losses1)):.2e}")


if __name__ == "__main__":
    main()
