"""paddle.Model.fit overhead: the same training as a hand-written loop, in eager and static mode.

An MLP (64 -> 128 -> 128 -> 10, ReLU, cross entropy, Adam) trains on 32 fixed batches of 64
samples per epoch (a list of batches, so no data loading is timed).  Four configurations, each in
a fresh process, interleaved over ``--rounds`` rounds: a hand-written eager loop
(``loss.backward(); opt.step(); opt.clear_grad()``), ``Model.fit`` in eager mode, a hand-written
static loop (``exe.run`` per batch) and ``Model.fit`` in static mode (``verbose=0``, the default
ModelCheckpoint/LRScheduler callbacks present, no metrics).  Prints the best and median time per
step of each and the ratio of fit to its hand-written loop.

    python bench/model_fit.py [--rounds 3] [--epochs 3]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

CONFIGS = ("eager_loop", "eager_fit", "static_loop", "static_fit")
BATCHES, BATCH = 32, 64


def data():
    rng = np.random.default_rng(0)
    x = rng.random((BATCHES * BATCH, 64)).astype(np.float32)
    y = rng.integers(0, 10, (BATCHES * BATCH, 1)).astype(np.int64)
    return [(x[i:i + BATCH], y[i:i + BATCH]) for i in range(0, len(x), BATCH)]


def network(nn):
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))


def child(config, epochs):
    import headrace as paddle
    from headrace import nn
    from headrace.static import InputSpec

    batches = data()
    static = config.startswith("static")
    if static:
        paddle.enable_static()
    paddle.seed(0)
    net = network(nn)
    opt = paddle.optimizer.Adam(0.001, parameters=net.parameters())
    loss_fn = nn.CrossEntropyLoss()
    if config.endswith("fit"):
        model = paddle.Model(net, [InputSpec([None, 64], "float32", "x")], [InputSpec([None, 1], "int64", "y")])
        model.prepare(opt, loss_fn)

        def epoch():
            model.fit(batches, epochs=1, verbose=0)
    elif static:
        import headrace.static as st

        x = st.data("x", [-1, 64], "float32")
        y = st.data("y", [-1, 1], "int64")
        loss = loss_fn(net(x), y)
        opt.minimize(loss)
        exe = st.Executor(paddle.CPUPlace())
        exe.run(st.default_startup_program())

        def epoch():
            for bx, by in batches:
                exe.run(feed={"x": bx, "y": by}, fetch_list=[loss])
    else:
        def epoch():
            for bx, by in batches:
                loss = loss_fn(net(paddle.to_tensor(bx)), paddle.to_tensor(by))
                loss.backward()
                opt.step()
                opt.clear_grad()
                float(loss)      # fetch the loss as fit does
    epoch()                      # warm-up (plans, accumulators)
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        epoch()
        times.append((time.perf_counter() - t0) / BATCHES)
    print(" ".join(f"{t:.6f}" for t in times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("CONFIG", "EPOCHS"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1")
    results = {c: [] for c in CONFIGS}
    for _ in range(args.rounds):
        for config in CONFIGS:
            out = subprocess.run([sys.executable, __file__, "--child", config, str(args.epochs)], env=env,
                                 capture_output=True, text=True, check=True).stdout
            results[config] += [float(t) for t in out.split()]
    for config in CONFIGS:
        t = np.array(results[config]) * 1e3
        print(f"{config:12s} best {t.min():7.3f} ms/step  median {np.median(t):7.3f} ms/step")
    for mode in ("eager", "static"):
        ratio = np.median(results[f"{mode}_fit"]) / np.median(results[f"{mode}_loop"])
        print(f"{mode}: Model.fit / hand-written loop (medians) = {ratio:.2f}")


if __name__ == "__main__":
    main()
