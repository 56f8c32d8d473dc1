"""Cost of FLAGS_check_nan_inf: time per run with the check off and on, each in a fresh process.

Workloads: ``chain`` (1,000 tiny elementwise ops on 16-element vectors: the per-op cost of
the check), ``tiny`` (the MLP below at width 16, batch 8: per-run costs show) and ``mlp`` (a training step of a 4-layer MLP, width 512, batch 64, squared error,
Momentum: the cost on realistic tensor sizes; the loss stays finite over the repeats).  Every configuration runs in its own process, alternating, ``--rounds``
times; the table gives the median over rounds of each process's best time.

    python bench/nan_check.py [--rounds 5] [--repeats 20]
    python bench/nan_check.py --child chain on     # one measurement (what the parent runs)

``--modes off`` with a copy of this file in another checkout's ``bench/`` measures that commit's
check-off path (a commit without the flag has no "on").
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _build(workload):
    import headrace as paddle
    import headrace.static as static
    import numpy as np

    paddle.enable_static()
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        if workload == "chain":
            x = static.data("x", [16], "float32")
            c = static.data("c", [16], "float32")
            h = x
            for i in range(1000):
                h = paddle.add(h, c) if i % 2 == 0 else paddle.multiply(h, c)
            feed = {"x": np.full(16, 1.0, "float32"), "c": np.full(16, 1.0001, "float32")}
            fetch = [h]
        else:
            width = 512 if workload == "mlp" else 16
            x = static.data("x", [None, width], "float32")
            h = x
            for _ in range(4):
                h = static.nn.fc(h, size=width, activation="relu")
            y = static.data("y", [None, 1], "float32")
            loss = paddle.mean(paddle.square(static.nn.fc(h, size=1) - y))
            paddle.optimizer.Momentum(learning_rate=1e-4, momentum=0.9).minimize(loss)
            rng = np.random.default_rng(0)
            batch = 64 if workload == "mlp" else 8
            feed = {"x": rng.standard_normal((batch, width)).astype("float32"),
                    "y": rng.standard_normal((batch, 1)).astype("float32")}
            fetch = [loss]
    exe = static.Executor()
    exe.run(startup)
    return exe, main, feed, fetch


def child(workload, mode, repeats):
    import headrace as paddle

    if mode == "on":
        paddle.set_flags({"FLAGS_check_nan_inf": True})
    exe, main, feed, fetch = _build(workload)
    exe.run(main, feed=feed, fetch_list=fetch)   # plan built, caches warm
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        exe.run(main, feed=feed, fetch_list=fetch)
        best = min(best, time.perf_counter() - t0)
    print(best)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--modes", default="off,on", help="comma-separated: off,on")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "MODE"))
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.repeats)
        return
    modes = args.modes.split(",")
    configs = [(w, m) for w in ("chain", "tiny", "mlp") for m in modes]
    times = {c: [] for c in configs}
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for _ in range(args.rounds):
        for workload, mode in configs:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", workload, mode,
                                  "--repeats", str(args.repeats)], env=env, check=True,
                                 capture_output=True, text=True).stdout
            times[(workload, mode)].append(float(out.strip().splitlines()[-1]))
    print(f"{'workload':8} {'check':6} {'ms per run (median of best)':>28}")
    for workload, mode in configs:
        ms = statistics.median(times[(workload, mode)]) * 1e3
        ratio = ""
        if mode != "off" and (workload, "off") in times:
            ratio = f"   ({ms / statistics.median(times[(workload, 'off')]) / 1e3:.2f}x)"
        print(f"{workload:8} {mode:6} {ms:28.3f}{ratio}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, ".."))
    main()
