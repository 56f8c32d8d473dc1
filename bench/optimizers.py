"""Optimizer update cost: each update kernel against the same formula written by hand in NumPy,
and a whole training step per optimizer against SGD.

    OMP_NUM_THREADS=2 python bench/optimizers.py [--size 1024] [--hidden 1024] [--layers 8] [--batch 256]

Part 1 runs each registered update op (through ``apply_op`` in eager mode, as ``optimizer.step()``
does) on a [size, size] float32 parameter and times it against a hand-written in-place NumPy
version of the same formula (medians of interleaved repetitions; the results are checked equal).
Part 2 trains the MLP of bench/_nets.py in static mode with SGD, Momentum, Adam and LARS
(interleaved steps) and prints each step time relative to SGD.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import headrace as paddle
import headrace.static as static
from _nets import mlp_program  # bench/ is the script's folder, so on sys.path
from headrace.core import context
from headrace.eager import Tensor, no_grad
from headrace.ops.apply import apply_op
from headrace.optimizer.lars import LarsMomentum


def numpy_updates():
    """The formulas, by hand, in place (float32 like the parameter)."""
    def sgd(p, g, s, lr):
        p -= np.float32(lr) * g

    def momentum(p, g, s, lr, mu=0.9):
        s["v"] *= np.float32(mu)
        s["v"] += g
        p -= np.float32(lr) * s["v"]

    def adam(p, g, s, lr, b1=0.9, b2=0.999, eps=1e-8):
        s["m1"] *= np.float32(b1)
        s["m1"] += np.float32(1 - b1) * g
        s["m2"] *= np.float32(b2)
        s["m2"] += np.float32(1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - s["b2p"]) / (1 - s["b1p"])
        p -= np.float32(lr_t) * s["m1"] / (np.sqrt(s["m2"]) + np.float32(eps * np.sqrt(1 - s["b2p"])))
        s["b1p"] *= b1
        s["b2p"] *= b2

    def lars(p, g, s, lr, mu=0.9, coeff=0.001, wd=0.0005):
        pn, gn = float(np.sqrt(np.vdot(p, p))), float(np.sqrt(np.vdot(g, g)))
        local = lr * coeff * pn / (gn + wd * pn)
        s["v"] *= np.float32(mu)
        s["v"] += np.float32(local) * (g + np.float32(wd) * p)
        p -= s["v"]
    return {"sgd": sgd, "momentum": momentum, "adam": adam, "lars_momentum": lars}


def headrace_updates():
    def run(op, ins, outs, attrs):
        with no_grad():
            apply_op(op, ins, attrs, outs)

    def sgd(p, g, s, lr):
        run("sgd", {"Param": p, "Grad": g, "LearningRate": s["lr"]}, {"ParamOut": p}, {})

    def momentum(p, g, s, lr):
        run("momentum", {"Param": p, "Grad": g, "Velocity": s["v"], "LearningRate": s["lr"]},
            {"ParamOut": p, "VelocityOut": s["v"]}, {"mu": 0.9, "use_nesterov": False})

    def adam(p, g, s, lr):
        run("adam", {"Param": p, "Grad": g, "Moment1": s["m1"], "Moment2": s["m2"], "Beta1Pow": s["b1p"],
                     "Beta2Pow": s["b2p"], "LearningRate": s["lr"]},
            {"ParamOut": p, "Moment1Out": s["m1"], "Moment2Out": s["m2"], "Beta1PowOut": s["b1p"],
             "Beta2PowOut": s["b2p"]}, {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8})

    def lars(p, g, s, lr):
        run("lars_momentum", {"Param": p, "Grad": g, "Velocity": s["v"], "LearningRate": s["lr"]},
            {"ParamOut": p, "VelocityOut": s["v"]},
            {"mu": 0.9, "lars_coeff": 0.001, "lars_weight_decay": 0.0005, "epsilon": 0.0, "rescale_grad": 1.0})
    return {"sgd": sgd, "momentum": momentum, "adam": adam, "lars_momentum": lars}


def kernels(size, reps):
    rng = np.random.default_rng(0)
    p0 = rng.standard_normal((size, size)).astype(np.float32)
    g = rng.standard_normal((size, size)).astype(np.float32) * np.float32(0.01)
    lr = 0.01
    mine, ref = headrace_updates(), numpy_updates()
    print(f"update kernels on a [{size}, {size}] float32 parameter (median of {reps}, ms)")
    print(f"{'op':16s} {'headrace':>9s} {'numpy':>9s} {'ratio':>7s}")
    for name in mine:
        ref_p, ref_s = p0.copy(), {"v": np.zeros_like(p0), "m1": np.zeros_like(p0), "m2": np.zeros_like(p0),
                                    "b1p": 0.9, "b2p": 0.999}
        with context.static_mode_guard(False):
            t = lambda a: Tensor(np.asarray(a))  # noqa: E731
            my_p = t(p0.copy())
            my_s = {"v": t(np.zeros_like(p0)), "m1": t(np.zeros_like(p0)), "m2": t(np.zeros_like(p0)),
                    "b1p": t(np.array([0.9], np.float32)), "b2p": t(np.array([0.999], np.float32)),
                    "lr": t(np.array([lr], np.float32))}
            gt = t(g)
            times_mine, times_ref = [], []
            runs = [(mine[name], (my_p, gt, my_s, lr), times_mine), (ref[name], (ref_p, g, ref_s, lr), times_ref)]
            for rep in range(reps):
                for fn, fn_args, times in (runs if rep % 2 else runs[::-1]):   # alternate who goes first
                    start = time.perf_counter()
                    fn(*fn_args)
                    times.append(time.perf_counter() - start)
            np.testing.assert_allclose(my_p.numpy(), ref_p, rtol=1e-5, atol=1e-6)
        a, b = statistics.median(times_mine) * 1e3, statistics.median(times_ref) * 1e3
        print(f"{name:16s} {a:9.3f} {b:9.3f} {a / b:7.2f}")


OPTIMIZERS = {
    "sgd": lambda: paddle.optimizer.SGD(1e-3),
    "momentum": lambda: paddle.optimizer.Momentum(1e-3, momentum=0.9),
    "adam": lambda: paddle.optimizer.Adam(1e-3),
    "lars": lambda: LarsMomentum(1e-3, 0.9),
}


def training(args):
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((args.batch, args.hidden)).astype(np.float32),
            "y": rng.integers(0, 10, (args.batch, 1)).astype(np.int64)}
    runs = {}
    for name, make in OPTIMIZERS.items():
        main, startup, loss = mlp_program(args.hidden, args.layers, optimizer=make)
        scope, exe = static.Scope(), static.Executor()
        exe.run(startup, scope=scope)
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)      # warm-up
        runs[name] = (main, loss, scope, exe, [])
    for _ in range(args.steps):
        for name, (main, loss, scope, exe, times) in runs.items():
            start = time.perf_counter()
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
            times.append(time.perf_counter() - start)
    base = statistics.median(runs["sgd"][4])
    print(f"\ntraining step, MLP {args.hidden} x {args.layers}, batch {args.batch} (median of {args.steps}, ms)")
    for name, run in runs.items():
        t = statistics.median(run[4])
        print(f"{name:10s} {t * 1e3:8.1f}   x SGD {t / base:5.2f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    paddle.enable_static()
    kernels(args.size, args.reps)
    training(args)


if __name__ == "__main__":
    main()
