"""Where one training step of a zoo model spends its time, per op type (kernels wrapped with a
timer; gradient ops are op types of their own):

    python bench/kernel_profile.py encoder [--mode static|passes|eager] [--threads 2] [--steps 20]
                                           [--clock wall|thread] [--top 15]

``--clock thread`` counts the calling thread's CPU time (steady on a busy machine, but blind to
work the intra-op pool's threads do); ``wall`` is what a user waits for.  The models and modes are
``bench/zoo.py``'s.  The step total includes everything outside the kernels (executor, tape).
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--mode", default="static", choices=("static", "passes", "eager"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--clock", default="wall", choices=("wall", "thread"))
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(args.threads)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import zoo
    from headrace.ops import registry

    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    totals = collections.defaultdict(lambda: [0, 0.0])

    def timed(name, kernel):
        def run(ins, attrs, ctx):
            start = clock()
            try:
                return kernel(ins, attrs, ctx)
            finally:
                entry = totals[name]
                entry[0] += 1
                entry[1] += clock() - start
        return run

    for name, opdef in list(registry._REGISTRY.items()):
        object.__setattr__(opdef, "kernel", timed(name, opdef.kernel))
    data = zoo.make_data(args.model)
    if args.mode == "eager":
        step = zoo.headrace_eager_step(args.model, data)
    else:
        step = zoo.headrace_static_step(args.model, data, passes=args.mode == "passes")
    for _ in range(5):
        step()
    totals.clear()
    start = clock()
    for _ in range(args.steps):
        step()
    per_step = (clock() - start) / args.steps * 1e3
    in_kernels = sum(t for _, t in totals.values()) / args.steps * 1e3
    print(f"{args.model} {args.mode}, {args.threads} threads, {args.clock} clock: step {per_step:.2f} ms, "
          f"kernels {in_kernels:.2f} ms, outside kernels {per_step - in_kernels:.2f} ms")
    for name, (count, seconds) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"{seconds / args.steps * 1e3:9.3f} ms  x{count / args.steps:4.0f}  {name}")


if __name__ == "__main__":
    main()
