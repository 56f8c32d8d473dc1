"""Static data parallel on every rank of an MPI job: ``with_data_parallel`` and ``fleet`` against
one process on the whole batch (run by tests/distributed/test_static.py; writes an .npz)."""
import sys

import numpy as np

import headrace as paddle
import headrace.static as static
from headrace.distributed import fleet
from tests.distributed.workers import nets

paddle.enable_static()
fleet.init(is_collective=True)
rank, world = fleet.worker_index(), fleet.worker_num()
out = {}


def sgd(loss, hidden):
    paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)


# 1. CompiledProgram.with_data_parallel over the processes (each feeds its slice)
data = nets.mlp_data()
main, startup, loss = nets.mlp(sgd)
compiled = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name)
losses, state = nets.run(main, startup, loss, [nets.shard(f, rank, world) for f in data], compiled)
out["wdp_losses"] = np.array(losses)
out.update({f"wdp/{k}": v for k, v in state.items()})


# 2. fleet: recompute + LARS + global-norm clipping + fused buckets (small, so several)
def fleet_lars(loss, hidden):
    strategy = fleet.DistributedStrategy()
    strategy.recompute = True
    strategy.recompute_configs = {"checkpoints": [hidden[1].name]}
    strategy.lars = True
    strategy.lars_configs = {"lars_coeff": 0.01, "lars_weight_decay": 0.0005}
    strategy.fuse_all_reduce_ops = True
    strategy.fuse_grad_size_in_MB = 0.0005
    opt = paddle.optimizer.Momentum(learning_rate=0.5, momentum=0.9,
                                    grad_clip=paddle.nn.ClipGradByGlobalNorm(0.05))
    fleet.distributed_optimizer(opt, strategy).minimize(loss)


main, startup, loss = nets.mlp(fleet_lars)
out["fleet_ops"] = np.array([op.type for op in main.global_block().ops])
losses, state = nets.run(main, startup, loss, [nets.shard(f, rank, world) for f in nets.mlp_data()])
out["fleet_losses"] = np.array(losses)
out.update({f"fleet/{k}": v for k, v in state.items()})


# 3. fleet: sync_batch_norm on a conv + batch_norm net
def fleet_sync_bn(loss, hidden):
    strategy = fleet.DistributedStrategy()
    strategy.sync_batch_norm = True
    fleet.distributed_optimizer(paddle.optimizer.SGD(learning_rate=0.2), strategy).minimize(loss)


main, startup, loss = nets.conv_bn(fleet_sync_bn)
losses, state = nets.run(main, startup, loss, [nets.shard(f, rank, world) for f in nets.conv_data()])
out["bn_losses"] = np.array(losses)
out.update({f"bn/{k}": v for k, v in state.items()})

# 4. paddle.distributed.all_reduce / broadcast on static Variables: collective ops in a program
from headrace.core.context import program_guard  # noqa: E402
from headrace.core.program import Program  # noqa: E402

prog = Program()
with program_guard(prog, Program()):
    v = static.data("v", [3], "float32")
    s = v * 1.0
    b = v * 1.0
    paddle.distributed.all_reduce(s)
    paddle.distributed.broadcast(b, src=world - 1)
summed, broadcast = static.Executor().run(prog, feed={"v": np.full(3, rank + 1, "float32")}, fetch_list=[s, b])
out["static_all_reduce"], out["static_broadcast"] = summed, broadcast

# every rank's results, gathered on rank 0
from headrace.ops.collective import current_communicator  # noqa: E402

comm = current_communicator()
gathered = {k: comm.all_gather(np.ascontiguousarray(v)) if v.dtype.kind != "U" else [v] for k, v in out.items()}
if rank == 0:
    np.savez(sys.argv[1], world=world, **{k: np.stack(v) for k, v in gathered.items()})
