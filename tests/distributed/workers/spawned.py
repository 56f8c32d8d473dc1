"""A function for paddle.distributed.spawn (tests/distributed/test_launch.py)."""
import os

import numpy as np


def train(folder, fail_rank=-1):
    import headrace as paddle
    import headrace.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == fail_rank:
        raise RuntimeError(f"planted failure on rank {rank}")
    with paddle.fluid.dygraph.guard():
        t = paddle.to_tensor(np.array([rank + 1.0]))
        dist.all_reduce(t)
    with open(os.path.join(folder, f"rank{rank}.txt"), "w") as f:
        f.write(f"{rank} {world} {float(t.numpy()[0])}")
