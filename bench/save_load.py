"""Save and load a 64 MiB state: MB/s of headrace.save / headrace.load next to a plain file copy
of the same bytes, measured in the same run (best of N repetitions each).

    python bench/save_load.py [--mib 64] [--repeat 5] [--dir DIR]

The state: 16 float32 tensors of 4 MiB (a Layer-like state dict of Tensors).  "save" writes a
checksummed container through a temporary file, fsync and rename; "load" reads and verifies it
into fresh arrays.  The baselines copy the saved file's bytes: ``shutil.copyfile`` (no fsync) and
a copy followed by fsync (what an atomic save must at least do).  The page cache holds the
source file in every case (it was just written), as it does for the loads.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import headrace as paddle  # noqa: E402


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def copy_fsync(src: str, dst: str) -> None:
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, 16 << 20)
        fout.flush()
        os.fsync(fout.fileno())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    paddle.disable_static()
    n = args.mib * 2**20 // 4 // 16
    rng = np.random.default_rng(0)
    state = {f"layer{i}.weight": paddle.to_tensor(rng.random(n, dtype=np.float32)) for i in range(16)}
    mib = 16 * n * 4 / 2**20
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path, copy = os.path.join(tmp, "state.pdparams"), os.path.join(tmp, "copy.bin")
        rows = [
            ("headrace.save", best(lambda: paddle.save(state, path), args.repeat)),
            ("headrace.load", best(lambda: paddle.load(path), args.repeat)),
            ("copy (shutil.copyfile)", best(lambda: shutil.copyfile(path, copy), args.repeat)),
            ("copy + fsync", best(lambda: copy_fsync(path, copy), args.repeat)),
        ]
        loaded = paddle.load(path)
        assert all(np.array_equal(loaded[k].numpy(), v.numpy()) for k, v in state.items())
    copy_rate = mib / rows[2][1]
    print(f"state: {mib:.0f} MiB in 16 float32 tensors; best of {args.repeat}")
    print("| | MiB/s | vs copy | vs copy + fsync |")
    print("|---|---|---|---|")
    for name, seconds in rows:
        rate = mib / seconds
        print(f"| {name} | {rate:.0f} | {rate / copy_rate:.2f} | {rate / (mib / rows[3][1]):.2f} |")


if __name__ == "__main__":
    main()
