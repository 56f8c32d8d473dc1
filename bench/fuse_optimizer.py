"""Step time with and without ``BuildStrategy.fuse_all_optimizer_ops``.

    python bench/fuse_optimizer.py [--layers 16] [--hidden 64] [--batch 32] [--steps 60] [--rounds 3]
                                   [--optimizers sgd,momentum,adam,adagrad,rmsprop,adadelta]

Network: input [hidden] -> ``layers`` x (fc hidden + tanh) -> fc 1 -> mean, float32, run through
``CompiledProgram`` (one place).  For each optimizer (SGD, Momentum, Adam) the unfused and fused
programs are timed, each configuration in a fresh process, alternating (``rounds`` times each,
fused/unfused order swapped every round); each process warms up, then reports the median step
time and its fastest step.  The script prints, per configuration, the median over rounds of the
fastest step (robust on a shared, loaded machine) and of the median step, the ratio fused /
unfused of the former, and checks that both give bit-identical parameters after the same steps
(each child prints a checksum).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def child(args) -> None:
    import hashlib

    import numpy as np

    import headrace as paddle
    import headrace.static as static

    paddle.enable_static()
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 1
    with static.program_guard(main, startup):
        x = static.data("x", [-1, args.hidden], "float32")
        h = x
        for _ in range(args.layers):
            h = static.nn.fc(h, size=args.hidden, activation="tanh")
        loss = paddle.mean(static.nn.fc(h, size=1))
        make = {"sgd": lambda: paddle.optimizer.SGD(0.01),
                "momentum": lambda: paddle.optimizer.Momentum(0.01, momentum=0.9),
                "adam": lambda: paddle.optimizer.Adam(0.001),
                "adagrad": lambda: paddle.optimizer.Adagrad(0.01),
                "rmsprop": lambda: paddle.optimizer.RMSProp(0.001, momentum=0.9),
                "adadelta": lambda: paddle.optimizer.Adadelta(0.5)}[args.optimizer]
        make().minimize(loss)
    strategy = static.BuildStrategy()
    strategy.fuse_all_optimizer_ops = args.fused
    program = static.CompiledProgram(main, build_strategy=strategy)
    scope = static.Scope()
    exe = static.Executor()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    batch = {"x": rng.standard_normal((args.batch, args.hidden)).astype("float32")}
    for _ in range(5):
        exe.run(program, feed=batch, fetch_list=[loss], scope=scope)
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        exe.run(program, feed=batch, fetch_list=[loss], scope=scope)
        times.append(time.perf_counter() - start)
    digest = hashlib.sha1()
    for p in main.all_parameters():
        digest.update(np.ascontiguousarray(scope._get_array(p.name)).tobytes())
    print(json.dumps({"ms": min(times) * 1e3, "median_ms": statistics.median(times) * 1e3, "sha1": digest.hexdigest(),
                      "updates": len(main.all_parameters())}))


def run_config(args, optimizer, fused) -> dict:
    cmd = [sys.executable, __file__, "--child", "--optimizer", optimizer, "--layers", str(args.layers),
           "--hidden", str(args.hidden), "--batch", str(args.batch), "--steps", str(args.steps)]
    if fused:
        cmd.append("--fused")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--fused", action="store_true")
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--optimizers", default="sgd,momentum,adam",
                        help="comma-separated: sgd, momentum, adam, adagrad, rmsprop, adadelta")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    print(f"MLP {args.layers} x fc {args.hidden}, batch {args.batch}, float32; median step ms over "
          f"{args.rounds} fresh processes per configuration")
    print("| optimizer | updates | unfused ms (median) | fused ms (median) | fused / unfused | bit-identical |")
    print("|---|---|---|---|---|---|")
    for optimizer in args.optimizers.split(","):
        results = {False: [], True: []}
        for r in range(args.rounds):
            for fused in ((False, True) if r % 2 == 0 else (True, False)):
                results[fused].append(run_config(args, optimizer, fused))
        plain = statistics.median(x["ms"] for x in results[False])
        fused = statistics.median(x["ms"] for x in results[True])
        plain_med = statistics.median(x["median_ms"] for x in results[False])
        fused_med = statistics.median(x["median_ms"] for x in results[True])
        same = {x["sha1"] for x in results[False] + results[True]}
        print(f"| {optimizer} | {results[False][0]['updates']} | {plain:.3f} ({plain_med:.3f}) | {fused:.3f} "
              f"({fused_med:.3f}) | {fused / plain:.2f} | {'yes' if len(same) == 1 else 'NO'} |")


if __name__ == "__main__":
    main()
