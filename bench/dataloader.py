"""DataLoader throughput: samples per second with ``num_workers=0`` and ``num_workers=2`` on a map
dataset whose per-sample transform costs about 1 ms of real CPU work (NumPy matmul + tanh rounds,
not sleep).

    python bench/dataloader.py [--rounds 5] [--samples 1024] [--batch 16] [--ms 1.0] [--workers 0 2]

The per-sample cost is calibrated once (rounds of a 48x48 matmul + tanh until a sample takes
``--ms``); every measurement then runs in a fresh Python process (``--child``), the
configurations interleaved round by round, with one BLAS thread everywhere (so the main process
gets no hidden threads the workers do not). A measurement is one full epoch over ``--samples``
samples, worker start-up included, in dygraph mode (batches become Tensors). Reported: the median
samples/s of each configuration, the ratio to ``num_workers=0``, the CPU seconds spent in the main
process and in the workers, and the cores the run obtained ((main + workers CPU) / wall time: on a
loaded machine this, not the loader, bounds the ratio).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

SIDE = 48


class Costly:
    """Map dataset: sample ``i`` is a 48x48 image pushed through ``reps`` matmul+tanh rounds."""

    def __init__(self, n, reps):
        self.n, self.reps = n, reps
        rng = np.random.default_rng(0)
        self.weight = (rng.standard_normal((SIDE, SIDE)) / SIDE ** 0.5).astype(np.float32)
        self.base = rng.standard_normal((SIDE, SIDE)).astype(np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        img = self.base + np.float32(i % 97) / 97
        for _ in range(self.reps):
            img = np.tanh(img @ self.weight)
        return img, np.int64(i % 10)


def calibrate(ms: float) -> int:
    """Rounds per sample so one sample costs about ``ms`` milliseconds here (best of 5)."""
    probe = Costly(1, 200)
    best = min(_time(lambda: probe[0]) for _ in range(5)) / 200
    return max(1, round(ms / 1000 / best))


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def child(workers: int, samples: int, batch: int, reps: int) -> None:
    import headrace as paddle
    from headrace.io import DataLoader, Dataset

    class Data(Costly, Dataset):
        pass

    paddle.disable_static()
    loader = DataLoader(Data(samples, reps), batch_size=batch, num_workers=workers)
    before = os.times()
    start = time.perf_counter()
    seen = sum(int(x.shape[0]) for x, _ in loader)
    elapsed = time.perf_counter() - start
    after = os.times()      # the workers are joined at the end of the epoch: their CPU time is counted
    assert seen == samples, (seen, samples)
    main_cpu = after.user + after.system - before.user - before.system
    worker_cpu = (after.children_user + after.children_system - before.children_user
                  - before.children_system)
    print(f"{samples / elapsed:.1f} {main_cpu:.3f} {worker_cpu:.3f} {elapsed:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--ms", type=float, default=1.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--child", nargs=4, type=int, metavar=("WORKERS", "SAMPLES", "BATCH", "REPS"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    reps = calibrate(args.ms)
    per_sample = min(_time(lambda: Costly(1, reps)[0]) for _ in range(20)) * 1000
    print(f"transform: {reps} matmul+tanh rounds = {per_sample:.2f} ms per sample; {args.samples} samples, "
          f"batch {args.batch}, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    rates = {w: [] for w in args.workers}
    cpu = {w: [] for w in args.workers}
    for r in range(args.rounds):
        for w in args.workers:
            out = subprocess.run([sys.executable, __file__, "--child", str(w), str(args.samples),
                                  str(args.batch), str(reps)], env=env, check=True, capture_output=True,
                                 text=True).stdout
            rate, main_cpu, worker_cpu, wall = map(float, out.split()[-4:])
            rates[w].append(rate)
            cpu[w].append((main_cpu, worker_cpu, (main_cpu + worker_cpu) / wall))
        print(f"round {r + 1}: " + ", ".join(f"num_workers={w}: {rates[w][-1]:.0f}/s" for w in args.workers))
    base = statistics.median(rates[args.workers[0]])
    print("\n| num_workers | samples/s (median) | ratio | CPU s main / workers (median) | cores obtained |\n"
          "|---|---|---|---|---|")
    for w in args.workers:
        med = statistics.median(rates[w])
        main_cpu, worker_cpu, cores = (statistics.median(c[k] for c in cpu[w]) for k in range(3))
        print(f"| {w} | {med:.0f} | {med / base:.2f}x | {main_cpu:.2f} / {worker_cpu:.2f} | {cores:.2f} |")


if __name__ == "__main__":
    main()
