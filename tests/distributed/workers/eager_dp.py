"""Eager data parallel on every rank: DataParallel (buckets, no_sync), SyncBatchNorm, recompute,
LARS, global-norm clipping and the paddle.distributed collectives, against one model on the whole
batch in the same process (run by tests/distributed/test_eager.py; writes an .npz on rank 0)."""
import sys

import numpy as np

import headrace as paddle
import headrace.distributed as dist
from headrace.distributed.fleet.utils import recompute
from headrace.optimizer.lars import LarsMomentum

dist.init_parallel_env()
rank, world = dist.get_rank(), dist.get_world_size()
out = {"world": np.array(world)}

# --- the collectives -----------------------------------------------------------------------------
t = paddle.to_tensor(np.full((2, 3), rank + 1, dtype="float32"))
dist.all_reduce(t)
out["all_reduce"] = t.numpy()
t = paddle.to_tensor(np.full((3,), rank * 10, dtype="int64"))
dist.broadcast(t, src=world - 1)
out["broadcast"] = t.numpy()
gathered = []
dist.all_gather(gathered, paddle.to_tensor(np.array([rank, -rank], dtype="float64")))
out["all_gather"] = np.stack([g.numpy() for g in gathered])
dist.barrier()


# --- training ------------------------------------------------------------------------------------
class Net(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = paddle.nn.Linear(8, 16)
        self.bn = paddle.nn.BatchNorm1D(16)
        self.fc2 = paddle.nn.Linear(16, 16)
        self.fc3 = paddle.nn.Linear(16, 4)

    def block(self, x):
        return paddle.nn.functional.relu(self.fc2(x))

    def forward(self, x):
        h = paddle.nn.functional.relu(self.bn(self.fc1(x)))
        h = recompute(self.block, h)
        return self.fc3(h)


def loss_of(model, x, y):
    return paddle.mean(paddle.nn.functional.cross_entropy(model(paddle.to_tensor(x)), paddle.to_tensor(y)))


def optimizer(params):
    return LarsMomentum(learning_rate=0.5, momentum=0.9, lars_coeff=0.01, parameter_list=params,
                        grad_clip=paddle.nn.ClipGradByGlobalNorm(0.05))


rng = np.random.default_rng(0)
steps = [(rng.standard_normal((16, 8)).astype("float32"), rng.integers(0, 4, (16, 1)).astype("int64"))
         for _ in range(3)]
paddle.seed(100 + rank)   # different initial values per rank: DataParallel broadcasts rank 0's
model = Net()
paddle.seed(100)
solo = Net()              # = rank 0's initial model
dp = dist.DataParallel(paddle.nn.SyncBatchNorm.convert_sync_batchnorm(model), comm_buffer_size=0.0005,
                       last_comm_buffer_size=0.0002)
assert len(dp._reducer.buckets) > 1
opt, solo_opt = optimizer(dp.parameters()), optimizer(solo.parameters())
n = 16 // world
dist_losses, solo_losses = [], []
for k, (x, y) in enumerate(steps):
    xs, ys = x[rank * n:(rank + 1) * n], y[rank * n:(rank + 1) * n]
    if k == 2:   # gradient accumulation: the first half of the slice without communication
        h = n // 2
        with dp.no_sync():
            loss_a = loss_of(dp, xs[:h], ys[:h]) * 0.5
            loss_a.backward()
        loss = loss_of(dp, xs[h:], ys[h:]) * 0.5
        loss.backward()
        solo_loss = loss_of(solo, x.reshape(world, 2, h, 8)[:, 0].reshape(-1, 8),
                            y.reshape(world, 2, h, 1)[:, 0].reshape(-1, 1)) * 0.5
        solo_loss.backward()
        solo_loss = loss_of(solo, x.reshape(world, 2, h, 8)[:, 1].reshape(-1, 8),
                            y.reshape(world, 2, h, 1)[:, 1].reshape(-1, 1)) * 0.5
    else:
        loss = loss_of(dp, xs, ys)
        loss.backward()
        solo_loss = loss_of(solo, x, y)
    solo_loss.backward()
    opt.step()
    opt.clear_grad()
    solo_opt.step()
    solo_opt.clear_grad()
    dist_losses.append(float(loss.numpy()))
    solo_losses.append(float(solo_loss.numpy()))
out["dist_losses"] = np.array(dist_losses)
out["solo_losses"] = np.array(solo_losses)
for name, value in dp.state_dict().items():
    out[f"dist/{name}"] = value.numpy()
for name, value in solo.state_dict().items():
    out[f"solo/{name}"] = value.numpy()

comm = paddle.distributed.env.current_communicator()
gathered = {k: comm.all_gather(np.ascontiguousarray(v)) for k, v in out.items()}
if rank == 0:
    np.savez(sys.argv[1], **{k: np.stack(v) for k, v in gathered.items()})
