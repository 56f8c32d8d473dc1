"""Recurrent and attention layers (issue 16): a training step's forward + backward in eager and in
static mode, and the forward against the same formula written in NumPy.

    OMP_NUM_THREADS=1 python bench/nn_layers.py [--rounds 3] [--reps 10]

Nets: LSTM(input 32, hidden 64), batch 32, 20 time steps (the loop is unrolled into ops: ~10 ops per
step); TransformerEncoderLayer(d_model 64, 4 heads, feed-forward 128, dropout 0), batch 16,
sequence 32.  Each configuration runs in a fresh process (``--config NAME`` runs one and prints
its median ms); the driver interleaves the configurations over ``--rounds`` rounds and reports
the median of the rounds.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

CONFIGS = ["lstm-numpy-forward", "lstm-eager-forward", "lstm-eager-step", "lstm-static-step",
           "transformer-numpy-forward", "transformer-eager-forward", "transformer-eager-step",
           "transformer-static-step"]


def _inputs(name):
    rng = np.random.default_rng(0)
    if name.startswith("lstm"):
        return rng.standard_normal((32, 20, 32)).astype(np.float32)
    return rng.standard_normal((16, 32, 64)).astype(np.float32)


def _layer(name):
    import headrace as paddle
    paddle.seed(0)
    if name.startswith("lstm"):
        return paddle.nn.LSTM(32, 64)
    return paddle.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0)


def _numpy_forward(name, layer):
    """The layer's forward in plain NumPy with the layer's weights (float32)."""
    p = {k: v.numpy() for k, v in layer.state_dict().items()}
    if name.startswith("lstm"):
        w_ih, w_hh, b = p["0.cell.weight_ih"], p["0.cell.weight_hh"], p["0.cell.bias_ih"] + p["0.cell.bias_hh"]

        def run(x):
            h = np.zeros((x.shape[0], 64), np.float32)
            c = np.zeros_like(h)
            outs = []
            for t in range(x.shape[1]):
                g = x[:, t] @ w_ih.T + h @ w_hh.T + b
                i, f, gg, o = np.split(g, 4, axis=1)
                c = 1 / (1 + np.exp(-f)) * c + 1 / (1 + np.exp(-i)) * np.tanh(gg)
                h = 1 / (1 + np.exp(-o)) * np.tanh(c)
                outs.append(h)
            return np.stack(outs, 1)
        return run

    def lin(x, n):
        return x @ p[f"{n}.weight"] + p[f"{n}.bias"]

    def norm(x, n):
        m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-5) * p[f"{n}.weight"] + p[f"{n}.bias"]

    def run(x):
        b, t, _ = x.shape
        q, k, v = (lin(x, f"self_attn.{n}_proj").reshape(b, t, 4, 16).transpose(0, 2, 1, 3) for n in "qkv")
        s = q @ k.transpose(0, 1, 3, 2) / 4.0
        e = np.exp(s - s.max(-1, keepdims=True))
        a = (e / e.sum(-1, keepdims=True)) @ v
        h = norm(x + lin(a.transpose(0, 2, 1, 3).reshape(b, t, 64), "self_attn.out_proj"), "norm1")
        return norm(h + lin(np.maximum(lin(h, "linear1"), 0), "linear2"), "norm2")
    return run


def _time(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _static_step(name, x_value):
    import headrace as paddle
    import headrace.static as static
    from headrace.autodiff import gradients
    paddle.enable_static()
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", list(x_value.shape), "float32")
        layer = _layer(name)
        out = layer(x)
        out = out[0] if isinstance(out, tuple) else out
        loss = paddle.mean(out)
        grads = gradients([loss], layer.parameters())
    exe = static.Executor()
    exe.run(startup)
    return lambda: exe.run(main, feed={"x": x_value}, fetch_list=[loss] + grads), len(main.global_block().ops)


def run_one(name, reps):
    import headrace as paddle
    x_value = _inputs(name)
    if name.endswith("static-step"):
        fn, ops = _static_step(name, x_value)
        return _time(fn, reps), ops
    paddle.disable_static()
    layer = _layer(name)
    if "numpy" in name:
        forward = _numpy_forward(name, layer)
        return _time(lambda: forward(x_value), reps), 0
    x = paddle.to_tensor(x_value)

    def step():
        out = layer(x)
        out = out[0] if isinstance(out, tuple) else out
        if name.endswith("step"):
            paddle.mean(out).backward()
            layer.clear_gradients()
    if name.endswith("forward"):
        with paddle.no_grad():
            return _time(step, reps), 0
    return _time(step, reps), 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", choices=CONFIGS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    if args.config:
        ms, ops = run_one(args.config, args.reps)
        print(f"{ms:.3f} {ops}")
        return
    results = {c: [] for c in CONFIGS}
    ops = {}
    for _ in range(args.rounds):
        for config in CONFIGS:
            out = subprocess.run([sys.executable, __file__, "--config", config, "--reps", str(args.reps)],
                                 capture_output=True, text=True, check=True).stdout.split()
            results[config].append(float(out[0]))
            ops[config] = int(out[1])
    print("| configuration | ms (median of rounds) | ops in the program |")
    print("|---|---|---|")
    for config in CONFIGS:
        print(f"| {config} | {statistics.median(results[config]):.2f} | {ops[config] or ''} |")


if __name__ == "__main__":
    main()
