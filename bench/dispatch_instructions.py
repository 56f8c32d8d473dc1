"""Per-op dispatch cost as machine instructions (noise-free), static Executor and eager mode.

Wall-clock dispatch timings on a shared 2-core machine vary by 2x between runs; the instruction
count of the same work does not.  This runs a chain of tiny ops (add/multiply on 16 floats; a
chain of 1,000 ops run by the Executor, and 200 eager ops) under Valgrind's ``lackey`` tool at two
repetition counts and prints the instructions per op (the difference, so start-up cancels out).
Needs ``valgrind`` (``apt-get install valgrind``); takes a few minutes.

    python bench/dispatch_instructions.py [--tree PATH ...]   # default: this checkout

``--tree`` may name several checkouts (e.g. an older commit in a git worktree) to compare.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

WORKLOAD = r'''
import sys
import numpy as np
import headrace as paddle
import headrace.static as static
from headrace.core.context import static_mode_guard
kind, runs = sys.argv[1], int(sys.argv[2])
if kind == "static":
    paddle.enable_static()
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [16], "float32")
        c = static.data("c", [16], "float32")
        h = x
        for i in range(1000):
            h = paddle.add(h, c) if i % 2 == 0 else paddle.multiply(h, c)
    exe = static.Executor(static.CPUPlace())
    feed = {"x": np.ones(16, "float32"), "c": np.full(16, 1.0001, "float32")}
    for _ in range(runs):
        exe.run(main, feed=feed, fetch_list=[h])
else:
    with static_mode_guard(False):
        a = paddle.to_tensor(np.ones(16, "float32"))
        b = paddle.to_tensor(np.full(16, 1.0001, "float32"))
        for _ in range(runs):
            t = a
            for i in range(200):
                t = paddle.add(t, b) if i % 2 == 0 else paddle.multiply(t, b)
'''

OPS = {"static": 1000, "eager": 200}
RUNS = {"static": (2, 12), "eager": (5, 30)}


def instructions(tree, kind, runs) -> int:
    env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0", HEADRACE_CHECK_KERNELS="0")
    out = subprocess.run(["valgrind", "--tool=lackey", "--basic-counts=yes", sys.executable, "-c",
                          WORKLOAD, kind, str(runs)], env=env, capture_output=True, text=True).stderr
    found = re.search(r"guest instrs:\s+([\d,]+)", out)
    if found is None:
        raise SystemExit(f"valgrind gave no count for {tree} {kind}:\n{out[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", help="a checkout to measure (default: this one)")
    trees = parser.parse_args().tree or [os.path.dirname(HERE)]
    for tree in trees:
        costs = []
        for kind in ("static", "eager"):
            few, many = RUNS[kind]
            delta = instructions(tree, kind, many) - instructions(tree, kind, few)
            costs.append(f"{kind} {delta / ((many - few) * OPS[kind]):,.0f}")
        print(f"{tree}: instructions per op: " + ", ".join(costs))


if __name__ == "__main__":
    main()
