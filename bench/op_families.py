"""Forward + backward time of single layers from model families outside bench/zoo.py, headrace eager
against PyTorch CPU (a bench-only dependency), each configuration in a fresh process.

    python bench/op_families.py [--ops silu,depthwise3x3,...] [--rounds 2] [--threads 2] [--base PATH]

Each op runs on a fixed input (shapes below), the loss is the output's mean, and one step is the
forward, the backward and clearing the gradients; a child process warms up, then prints the best
of 7 steps in ms.  ``--base PATH`` also runs another checkout's headrace (as ``hr@base``).  The
ops are layers whose kernels are not the zoo's: depthwise and transposed convolutions
(MobileNet, UNet/GAN), global average pooling and overlapping max pooling (ResNet's head and
stem), group norm, silu, log_softmax, soft-label cross entropy, nearest/bilinear upsampling,
dropout, a wide layer norm and batched matmul.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (call(P, F, *inputs) -> output, input shapes; every input requires grad)
OPS = {
    "depthwise3x3": (lambda P, F, x, w: F.conv2d(x, w, padding=1, groups=64), [(32, 64, 32, 32), (64, 1, 3, 3)]),
    "conv1d_k5": (lambda P, F, x, w: F.conv1d(x, w, padding=2), [(32, 128, 256), (128, 128, 5)]),
    "conv_transpose": (lambda P, F, x, w: (F.conv_transpose2d if hasattr(F, "conv_transpose2d") else F.conv2d_transpose)(
        x, w, stride=2), [(32, 64, 16, 16), (64, 32, 2, 2)]),
    "avg_pool2": (lambda P, F, x: F.avg_pool2d(x, 2), [(64, 64, 32, 32)]),
    "global_avg_pool": (lambda P, F, x: F.adaptive_avg_pool2d(x, 1), [(64, 256, 14, 14)]),
    "max_pool3s2": (lambda P, F, x: F.max_pool2d(x, 3, 2, 1), [(32, 64, 56, 56)]),
    "group_norm": (lambda P, F, x: F.group_norm(x, 8), [(32, 64, 32, 32)]),
    "silu": (lambda P, F, x: F.silu(x), [(64, 1024, 64)]),
    "log_softmax": (lambda P, F, x: F.log_softmax(x, -1), [(2048, 1000)]),
    "soft_label_ce": (None, [(2048, 1000), (2048, 1000)]),
    "upsample_nearest": (lambda P, F, x: F.interpolate(x, scale_factor=2, mode="nearest"), [(32, 64, 32, 32)]),
    "upsample_bilinear": (lambda P, F, x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
                          [(32, 64, 32, 32)]),
    "dropout": (lambda P, F, x: F.dropout(x, 0.1), [(2048, 1024)]),
    "layer_norm_1024": (None, [(64, 128, 1024)]),
    "batched_matmul": (lambda P, F, x, y: P.matmul(x, y), [(64, 128, 64), (64, 64, 128)]),
}


def _call(name, lib, P, F):
    fn, _ = OPS[name]
    if name == "soft_label_ce":
        if lib == "torch":
            return lambda P, F, x, y: F.cross_entropy(x, F.softmax(y, -1))
        return lambda P, F, x, y: F.cross_entropy(x, F.softmax(y, -1), soft_label=True)
    if name == "layer_norm_1024":
        return lambda P, F, x: F.layer_norm(x, (1024,) if lib == "torch" else [1024])
    return fn


def _step(name, lib, threads):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in OPS[name][1]]
    if lib == "torch":
        import torch
        import torch.nn.functional as F
        torch.set_num_threads(threads)
        ins = [torch.tensor(a, requires_grad=True) for a in arrays]
        fn = _call(name, lib, torch, F)

        def step():
            fn(torch, F, *ins).float().mean().backward()
            for t in ins:
                t.grad = None
        return step
    import headrace as P
    import headrace.nn.functional as F
    P.disable_static()
    P.set_flags({"FLAGS_paddle_num_threads": threads})
    ins = [P.to_tensor(a, stop_gradient=False) for a in arrays]
    fn = _call(name, lib, P, F)

    def step():
        fn(P, F, *ins).mean().backward()
        for t in ins:
            t.clear_gradient()
    return step


def child(name, lib, threads):
    step = _step(name, lib, threads)
    for _ in range(3):
        step()
    best = float("inf")
    for _ in range(7):
        start = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - start)
    print(best)


def run_child(name, config, args):
    env = dict(os.environ)
    tree = os.path.join(HERE, "..")
    lib = config
    if config.endswith("@base"):
        lib, tree = config[:-len("@base")], args.base
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(args.threads)
    env["PYTHONPATH"] = os.path.abspath(tree) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, lib,
                           "--threads", str(args.threads)], env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.stderr.write(f"{name}/{config} failed:\n{proc.stderr[-2000:]}\n")
        return None
    return float(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--base", help="another checkout whose headrace runs as hr@base")
    parser.add_argument("--child", nargs=2, metavar=("OP", "LIB"))
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], args.child[1], args.threads)
    try:
        import torch  # noqa: F401
        configs = ["hr", "torch"]
    except ImportError:
        configs = ["hr"]
    if args.base:
        configs.append("hr@base")
    best = {}
    for r in range(args.rounds):
        for name in args.ops.split(","):
            for config in configs:
                t = run_child(name, config, args)
                if t is not None:
                    best[name, config] = min(t, best.get((name, config), float("inf")))
                print(f"round {r + 1} {name:18s} {config:8s} {'failed' if t is None else f'{t * 1e3:8.2f} ms'}",
                      file=sys.stderr, flush=True)
    ratios = [c for c in configs if c != "torch"] if "torch" in configs else []
    header = "| op | " + " | ".join(f"{c} ms" for c in configs) + "".join(f" | {c} / torch" for c in ratios)
    print(header + " |")
    print("|" + "---|" * (1 + len(configs) + len(ratios)))
    for name in args.ops.split(","):
        cells = [f"{best[name, c] * 1e3:.2f}" if (name, c) in best else "-" for c in configs]
        t = best.get((name, "torch"))
        cells += [f"{best[name, c] / t:.2f}x" if t and (name, c) in best else "-" for c in ratios]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
