"""A rank that misbehaves (argv[1] = raise | kill | late | stall | loop), for
tests/distributed/test_faults.py.  Run with ``mpiexec -n 2 python faults.py MODE`` (plain MPI
launcher: the script joins the group itself) or through headrace.distributed.launch."""
import os
import signal
import sys
import time

import numpy as np

mode = sys.argv[1]
rank = int(os.environ.get("PMI_RANK", "0"))
if mode == "late" and rank == 1:
    time.sleep(600)            # never joins

import headrace.distributed as dist  # noqa: E402

dist.init_parallel_env()
comm = dist.env.current_communicator()
comm.all_reduce_sum(np.ones(4))
if mode == "loop":
    with open(os.path.join(sys.argv[2], f"tmp.{rank}"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join(sys.argv[2], f"tmp.{rank}"), os.path.join(sys.argv[2], f"pid.{rank}"))
    while True:
        comm.barrier()
        time.sleep(0.01)
if rank == 1:
    if mode == "raise":
        raise ValueError("a planted failure on rank 1")
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "stall":
        time.sleep(600)
for _ in range(100000):       # rank 0 keeps calling collectives
    comm.all_reduce_sum(np.ones(4))
