"""Multi-process data parallel (MPI): all-reduce time and data-parallel efficiency.

    python bench/distributed.py [--part allreduce|efficiency|all] [--layers 16] [--hidden 1024]
                                [--batch 2048] [--steps 4] [--reps 20]

1. ``allreduce``: 2 ranks on this host (``mpiexec -n 2``), 64 MiB of float32.  Printed side by side,
   all measured in the same run:
   - the bound: both ranks copying 64 MiB at once (``np.copyto``; read + write), i.e. what reading
     the peer's 64 MiB and writing the sum costs at this machine's copy bandwidth;
   - headrace's all-reduce in place on a buffer in the shared window (``comm.all_reduce_sum_``
     on ``comm.buffer(...)``), on an ordinary array with a fresh result (``all_reduce_sum``: what
     one ``c_allreduce_sum`` does), and on a bucket of 16 arrays of 4 MiB with fresh results
     (``all_reduce_sum_many``: what a fused gradient bucket does);
   - MPI's own buffer ``Allreduce`` (in place), for comparison.
   Times are the slowest rank's per repetition (ranks start together after a barrier); median and
   best of ``--reps``.
2. ``efficiency``: the MLP input -> ``layers`` x (fc ``hidden`` + relu) -> fc 10, SGD, global batch
   ``batch``: one process with 2 BLAS threads on the whole batch, against 2 ranks with 1 BLAS
   thread each on half the batch (``with_data_parallel`` over processes, gradients in fused
   buckets).  Each configuration runs in a fresh process; efficiency = samples/s of the 2 ranks
   over samples/s of the one process (median step, after one warm-up step).  For context, one
   process with 1 BLAS thread on the whole batch too (the speed-up of 2 ranks over it).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20


def _run(cmd, threads, **extra):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               PYTHONPATH=os.path.dirname(HERE), **extra)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _mpiexec(n, args, threads):
    from headrace.distributed.launcher import find_mpiexec

    return _run([find_mpiexec(), "-n", str(n), sys.executable, __file__, *args], threads)


# --- 1. all-reduce --------------------------------------------------------------------------------
def _timed(comm, fn, reps):
    """Per repetition, the slowest rank's time (ranks start together after a barrier)."""
    import numpy as np

    times = []
    for _ in range(reps):
        comm.barrier()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    slowest = np.max(np.stack(comm.all_gather(np.array(times))), axis=0)
    return float(np.median(slowest)), float(np.min(slowest))


def allreduce_rank(reps):
    import numpy as np

    import headrace.distributed as dist
    from headrace.ops.collective import current_communicator

    dist.init_parallel_env()
    comm = current_communicator()
    count = 64 * MIB // 4
    src, dst = np.ones(count, np.float32), np.empty(count, np.float32)
    np.copyto(dst, src)
    results = {"copy": _timed(comm, lambda: np.copyto(dst, src), reps)}
    shared = comm.buffer((count,), np.float32)
    shared[:] = comm.rank + 1
    results["in_place"] = _timed(comm, lambda: comm.all_reduce_sum_(shared), reps)
    if shared[0] != 3 * 2 ** (reps - 1) or shared[-1] != shared[0]:   # (1 + 2) doubled per repetition
        sys.exit(f"wrong all-reduce result {shared[0]}")
    plain = np.full(count, comm.rank + 1, np.float32)
    results["fresh"] = _timed(comm, lambda: comm.all_reduce_sum(plain), max(reps // 2, 3))
    grads = [np.full(count // 16, comm.rank + 1, np.float32) for _ in range(16)]
    results["bucket"] = _timed(comm, lambda: comm.all_reduce_sum_many(grads), max(reps // 2, 3))
    mpi = comm.world.mpi
    results["mpi"] = _timed(comm, lambda: comm.world.comm.Allreduce(mpi.IN_PLACE, plain, op=mpi.SUM),
                            max(reps // 2, 3))
    if comm.rank == 0:
        print(json.dumps({"transport": comm.transport, **results}))


def allreduce(args):
    r = _mpiexec(2, ["--role", "allreduce-rank", "--reps", str(args.reps)], 1)
    copy_med, copy_best = r["copy"]
    print(f"all-reduce of 64 MiB float32, 2 ranks on one host ({r['transport']}), {args.reps} repetitions; "
          "median (best) ms of the slowest rank")
    print(f"  bound: copy 64 MiB on both ranks at once      {copy_med * 1e3:7.2f} ({copy_best * 1e3:.2f})   "
          f"= {2 * 64 / 1024 / copy_med:.1f} GB/s read+write per rank")
    for key, what in (("in_place", "headrace, in place in the shared window"),
                      ("fresh", "headrace, array in, fresh array out"),
                      ("bucket", "headrace, bucket of 16 x 4 MiB, fresh arrays out"),
                      ("mpi", "MPI Allreduce (buffers, in place)")):
        med, best = r[key]
        print(f"  {what:<46}{med * 1e3:7.2f} ({best * 1e3:.2f})   {med / copy_med:.1f} x bound")


# --- 2. data-parallel efficiency -------------------------------------------------------------------
def _train(args, batch, ranks):
    import numpy as np

    import headrace as paddle
    import headrace.static as static

    sys.path.insert(0, HERE)
    from _nets import mlp_program

    paddle.enable_static()
    if ranks > 1:
        paddle.distributed.init_parallel_env()
    main, startup, loss = mlp_program(args.hidden, args.layers)
    bs = static.BuildStrategy()
    bs.fuse_all_reduce_ops = True
    program = static.CompiledProgram(main, bs).with_data_parallel(loss_name=loss.name) if ranks > 1 else main
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((batch, args.hidden)).astype("float32"),
            "y": rng.integers(0, 10, (batch, 1)).astype("int64")}
    exe = static.Executor()
    exe.run(startup)
    exe.run(program, feed=feed, fetch_list=[loss])
    comm = paddle.distributed.env.current_communicator()
    times = []
    for _ in range(args.steps):
        comm.barrier()
        start = time.perf_counter()
        exe.run(program, feed=feed, fetch_list=[loss])
        times.append(time.perf_counter() - start)
    if ranks > 1:
        times = list(np.max(np.stack(comm.all_gather(np.array(times))), axis=0))
    if paddle.distributed.get_rank() == 0:
        print(json.dumps({"step": statistics.median(times), "steps": [float(t) for t in times]}))


def efficiency(args):
    common = ["--layers", str(args.layers), "--hidden", str(args.hidden), "--steps", str(args.steps)]
    one = _run([sys.executable, __file__, "--role", "single", "--batch", str(args.batch), *common], 2)
    two = _mpiexec(2, ["--role", "ranks", "--batch", str(args.batch // 2), *common], 1)
    single = _run([sys.executable, __file__, "--role", "single", "--batch", str(args.batch), *common], 1)
    one_rate, two_rate = args.batch / one["step"], args.batch / two["step"]
    print(f"MLP {args.hidden} -> {args.layers} x (fc {args.hidden} + relu) -> fc 10, SGD, global batch "
          f"{args.batch}, median of {args.steps} steps")
    print(f"  1 process x 2 BLAS threads, batch {args.batch}:        {one['step']:7.3f} s/step "
          f"{one_rate:8.1f} samples/s   steps {[round(t, 3) for t in one['steps']]}")
    print(f"  2 ranks x 1 BLAS thread, batch {args.batch // 2} each:   {two['step']:7.3f} s/step "
          f"{two_rate:8.1f} samples/s   steps {[round(t, 3) for t in two['steps']]}")
    print(f"  (context) 1 process x 1 BLAS thread, batch {args.batch}:  {single['step']:7.3f} s/step "
          f"{args.batch / single['step']:8.1f} samples/s   steps {[round(t, 3) for t in single['steps']]}")
    print(f"  efficiency (2 ranks / 1 process x 2 threads): {two_rate / one_rate:.3f}; "
          f"speed-up over 1 thread: {two_rate * single['step'] / args.batch:.2f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--part", choices=["allreduce", "efficiency", "all"], default="all")
    p.add_argument("--role", default=None, help=argparse.SUPPRESS)
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args()
    if args.role == "allreduce-rank":
        return allreduce_rank(args.reps)
    if args.role in ("single", "ranks"):
        return _train(args, args.batch, 1 if args.role == "single" else 2)
    if args.part in ("allreduce", "all"):
        allreduce(args)
    if args.part in ("efficiency", "all"):
        efficiency(args)


if __name__ == "__main__":
    main()
