"""Normalisation and softmax kernels at the zoo's shapes: time per call, this tree vs another one.

    python bench/norm_kernels.py [--base /path/to/other/tree] [--threads 1] [--metric cpu|wall]
                                 [--rounds 5] [--repeats 20]

Shapes: the encoder's layer norm ([2048, 256] float32 with Scale and Bias) and attention softmax
([16, 4, 128, 128], last axis); the ResNet block's training-mode batch norm ([32, 64, 16, 16]
NCHW).  Gradient kernels are asked for every input gradient.  Each tree runs in its own process
(``PYTHONPATH`` set to the tree), rounds interleaved, min over repeats and rounds.  ``--metric
cpu`` is the process CPU time (steady on a shared machine; with several threads it adds their
times up), ``wall`` the elapsed time.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

KERNELS = ("layer_norm", "layer_norm_grad", "softmax", "softmax_grad", "batch_norm", "batch_norm_grad")


def _cases(np):
    rng = np.random.default_rng(0)
    f32 = np.float32
    x = rng.standard_normal((2048, 256), dtype=f32) * 2 + 0.5
    scale, bias = rng.uniform(0.5, 1.5, 256).astype(f32), rng.standard_normal(256, dtype=f32)
    ln_attrs = {"begin_norm_axis": 1, "epsilon": 1e-5}
    ln_rows = x.astype(np.float64)
    ln_grad = {"X": x, "Scale": scale, "Bias": bias, "Mean": ln_rows.mean(axis=1).astype(f32),
               "Variance": ln_rows.var(axis=1).astype(f32), "Y@GRAD": rng.standard_normal(x.shape, dtype=f32)}
    logits = rng.standard_normal((16, 4, 128, 128), dtype=f32)
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    image = rng.standard_normal((32, 64, 16, 16), dtype=f32)
    channels = image.astype(np.float64)
    bn_attrs = {"momentum": 0.9, "epsilon": 1e-5, "is_test": False, "data_layout": "NCHW",
                "use_global_stats": False, "trainable_statistics": False, "use_mkldnn": False}
    ones, zeros = np.ones(64, f32), np.zeros(64, f32)
    bn_grad = {"X": image, "Scale": ones * 1.1, "Bias": zeros, "SavedMean": channels.mean(axis=(0, 2, 3)).astype(f32),
               "SavedVariance": (1 / np.sqrt(channels.var(axis=(0, 2, 3)) + 1e-5)).astype(f32),
               "Y@GRAD": rng.standard_normal(image.shape, dtype=f32)}
    return {
        "layer_norm": ({"X": x, "Scale": scale, "Bias": bias}, ln_attrs, ()),
        "layer_norm_grad": (ln_grad, ln_attrs, ("X@GRAD", "Scale@GRAD", "Bias@GRAD")),
        "softmax": ({"X": logits}, {"axis": -1}, ()),
        "softmax_grad": ({"Out": probs, "Out@GRAD": rng.standard_normal(probs.shape, dtype=f32)}, {"axis": -1},
                         ("X@GRAD",)),
        "batch_norm": ({"X": image, "Scale": ones, "Bias": zeros, "Mean": zeros, "Variance": ones}, bn_attrs, ()),
        "batch_norm_grad": (bn_grad, bn_attrs, ("X@GRAD", "Scale@GRAD", "Bias@GRAD")),
    }


def _child(args):
    """Time every kernel in this process (the tree on PYTHONPATH); print JSON {kernel: seconds}."""
    import numpy as np

    import headrace as paddle
    from headrace.ops.kernel import context
    from headrace.ops.registry import lookup
    paddle.set_flags({"FLAGS_paddle_num_threads": args.threads})
    clock = time.process_time if args.metric == "cpu" else time.perf_counter
    best = {}
    for name, (ins, attrs, wanted) in _cases(np).items():
        kernel, ctx = lookup(name).kernel, context(set(wanted))
        for _ in range(3):
            kernel(ins, attrs, ctx)
        times = []
        for _ in range(args.repeats):
            start = clock()
            kernel(ins, attrs, ctx)
            times.append(clock() - start)
        best[name] = min(times)
    print(json.dumps(best))


def _run(tree, args):
    env = dict(os.environ, PYTHONPATH=tree)
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[variable] = str(args.threads)
    command = [sys.executable, os.path.abspath(__file__), "--child", "--threads", str(args.threads),
               "--metric", args.metric, "--repeats", str(args.repeats)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default=None, help="another tree to compare with (e.g. a worktree of main)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--metric", default="cpu", choices=("cpu", "wall"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    trees = {"this": here} if args.base is None else {"base": args.base, "this": here}
    best = {label: {k: float("inf") for k in KERNELS} for label in trees}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            for name, seconds in _run(tree, args).items():
                best[label][name] = min(best[label][name], seconds)
    print(f"{args.metric} time, {args.threads} thread(s), min of {args.rounds} x {args.repeats}, ms per call")
    print(f"{'kernel':18}" + "".join(f"{label:>10}" for label in trees) + ("  this/base" if args.base else ""))
    for name in KERNELS:
        row = "".join(f"{best[label][name] * 1e3:10.3f}" for label in trees)
        ratio = f"  {best['this'][name] / best['base'][name]:8.2f}x" if args.base else ""
        print(f"{name:18}{row}{ratio}")


if __name__ == "__main__":
    main()
