"""Per-op dispatch overhead of the Executor.

Builds a chain of 1,000 tiny elementwise ops (alternating add and multiply on 16-element float32
vectors), runs it with the Executor, and runs the same NumPy calls directly in a Python loop, in
the same process.  Prints the time per op of each and their difference: the executor's overhead
per op (plan lookup, gathering inputs, storing outputs, freeing dead values, memory accounting).

    python bench/executor_overhead.py [--ops 1000] [--repeats 30]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import headrace as paddle  # noqa: E402
import headrace.static as static  # noqa: E402

paddle.enable_static()  # a static-program benchmark (headrace starts in dygraph mode)


def build(n_ops):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [16], "float32")
        c = static.data("c", [16], "float32")
        h = x
        for i in range(n_ops):
            h = paddle.add(h, c) if i % 2 == 0 else paddle.multiply(h, c)
    return main, h


def direct(x, c, n_ops):
    h = x
    for i in range(n_ops):
        h = np.add(h, c) if i % 2 == 0 else np.multiply(h, c)
    return h


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    program, out = build(args.ops)
    exe = static.Executor(static.CPUPlace())
    x = np.full(16, 1.0, "float32")
    c = np.full(16, 1.0001, "float32")
    feed = {"x": x, "c": c}
    got = exe.run(program, feed=feed, fetch_list=[out])[0]
    want = direct(x, c, args.ops)
    assert np.array_equal(got, want), "executor and direct NumPy disagree"
    exe_min, exe_med = best_of(lambda: exe.run(program, feed=feed, fetch_list=[out]), args.repeats)
    np_min, np_med = best_of(lambda: direct(x, c, args.ops), args.repeats)
    per = 1e6 / args.ops
    print(f"chain of {args.ops} tiny ops, best of {args.repeats} runs (median in brackets)")
    print(f"  executor     : {exe_min * per:7.2f} us/op  ({exe_med * per:.2f})")
    print(f"  direct NumPy : {np_min * per:7.2f} us/op  ({np_med * per:.2f})")
    print(f"  overhead     : {(exe_min - np_min) * per:7.2f} us/op  ({(exe_med - np_med) * per:.2f})")
    print(f"  ratio        : {exe_min / np_min:7.2f}x")


if __name__ == "__main__":
    main()
