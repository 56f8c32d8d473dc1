"""Training-step throughput: headrace vs a hand-written NumPy forward/backward of the same MLP.

    python bench/train_mlp.py [--hidden 1024] [--layers 8] [--batch 256] [--steps 20] [--inplace]

Network: input 1024 -> 8 x (fc 1024 + relu) -> fc 10 -> softmax cross-entropy (mean), float32,
plain SGD.  headrace builds it as a static Program (``static.nn.fc`` layers, ``SGD.minimize``)
and runs it with the Executor; the NumPy version is the same arithmetic written by hand (matmul,
bias add, relu, softmax-CE, their gradients, in-place SGD), with no input gradient for the first
layer, as autodiff also skips it.  The two are timed alternately in one process (same BLAS, same
threads), after a warm-up; the script prints steps/s of each and their ratio (target >= 0.9), and
checks that both produce the same losses.  ``--inplace`` runs the headrace program through
``CompiledProgram`` with ``BuildStrategy(enable_inplace=True, memory_optimize=True)``.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import headrace as paddle
import headrace.static as static

paddle.enable_static()  # a static-program benchmark (headrace starts in dygraph mode)
from headrace.nn import functional as F


def headrace_step_fn(weights, biases, lr, inplace=False):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [-1, weights[0].shape[0]], "float32")
        y = static.data("y", [-1, 1], "int64")
        h = x
        for i, (w, b) in enumerate(zip(weights, biases)):
            last = i == len(weights) - 1
            h = static.nn.fc(h, size=w.shape[1], activation=None if last else "relu",
                             weight_attr=paddle.ParamAttr(name=f"w{i}"),
                             bias_attr=paddle.ParamAttr(name=f"b{i}"))
        loss = paddle.mean(F.cross_entropy(h, y, reduction="none"))
        paddle.optimizer.SGD(learning_rate=lr).minimize(loss)
    scope = static.Scope()
    exe = static.Executor()
    exe.run(startup, scope=scope)
    for i, (w, b) in enumerate(zip(weights, biases)):  # same starting point as the NumPy version
        scope.var(f"w{i}").get_tensor().set(w)
        scope.var(f"b{i}").get_tensor().set(b)

    target = main
    if inplace:
        bs = static.BuildStrategy()
        bs.enable_inplace = True
        bs.memory_optimize = True
        target = static.CompiledProgram(main, build_strategy=bs)

    def step(xb, yb):
        return float(exe.run(target, feed={"x": xb, "y": yb}, fetch_list=[loss], scope=scope)[0])
    return step, len(main.global_block().ops)


def numpy_step_fn(weights, biases, lr):
    weights = [w.copy() for w in weights]
    biases = [b.copy() for b in biases]
    lr = np.float32(lr)

    def step(xb, yb):
        acts = [xb]
        h = xb
        for i, (w, b) in enumerate(zip(weights, biases)):
            z = h @ w
            z += b
            if i < len(weights) - 1:
                np.maximum(z, 0, out=z)
            acts.append(z)
            h = z
        logits = acts[-1]
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        probs = e / e.sum(axis=1, keepdims=True)
        rows = np.arange(len(yb))
        labels = yb[:, 0]
        loss = float(np.mean(-np.log(probs[rows, labels])))
        grad = probs
        grad[rows, labels] -= 1
        grad /= np.float32(len(yb))
        for i in range(len(weights) - 1, -1, -1):
            inp = acts[i]
            dw = inp.T @ grad
            db = grad.sum(axis=0)
            if i > 0:
                grad = grad @ weights[i].T
                grad *= inp > 0
            weights[i] -= lr * dw
            biases[i] -= lr * db
        return loss
    return step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--inplace", action="store_true", help="enable_inplace + memory_optimize")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    dims = [args.hidden] * (args.layers + 1) + [10]
    weights = [(rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32)
               for a, b in zip(dims[:-1], dims[1:])]
    biases = [np.zeros(b, np.float32) for b in dims[1:]]
    x = rng.standard_normal((args.batch, args.hidden)).astype(np.float32)
    y = rng.integers(0, 10, (args.batch, 1)).astype(np.int64)
    lr = 1e-3

    hr_step, n_ops = headrace_step_fn(weights, biases, lr, args.inplace)
    np_step = numpy_step_fn(weights, biases, lr)
    losses_hr, losses_np = [hr_step(x, y) for _ in range(2)], [np_step(x, y) for _ in range(2)]  # warm-up
    times_hr, times_np = [], []
    for _ in range(args.steps):
        t = time.perf_counter()
        losses_hr.append(hr_step(x, y))
        times_hr.append(time.perf_counter() - t)
        t = time.perf_counter()
        losses_np.append(np_step(x, y))
        times_np.append(time.perf_counter() - t)
    agree = np.allclose(losses_hr, losses_np, rtol=1e-4)
    med_hr, med_np = statistics.median(times_hr), statistics.median(times_np)
    print(f"MLP {args.layers} x {args.hidden}, batch {args.batch}, float32, SGD; "
          f"{n_ops} ops per headrace step{' (enable_inplace + memory_optimize)' if args.inplace else ''}; "
          f"{args.steps} timed steps each, alternating")
    print(f"headrace : {1 / med_hr:7.2f} steps/s (median {med_hr * 1e3:.1f} ms, min {min(times_hr) * 1e3:.1f} ms)")
    print(f"numpy    : {1 / med_np:7.2f} steps/s (median {med_np * 1e3:.1f} ms, min {min(times_np) * 1e3:.1f} ms)")
    print(f"ratio headrace/numpy throughput: {med_np / med_hr:.3f} (target >= 0.9)")
    print(f"losses agree (rtol 1e-4): {agree}; first {losses_hr[0]:.6f} vs {losses_np[0]:.6f}, "
          f"last {losses_hr[-1]:.6f} vs {losses_np[-1]:.6f}")


if __name__ == "__main__":
    main()
