"""What fleet does to a program for rank 1 of 2, and when DataParallel reduces its buckets, checked
in one process with the group size faked (no MPI)."""
import numpy as np
import pytest

import headrace as paddle
import headrace.distributed.fleet.base as fleet_base
from headrace.distributed import fleet
from headrace.distributed.data_parallel import _Reducer
from headrace.eager import tape

from .workers import nets


@pytest.fixture
def two_ranks(monkeypatch):
    monkeypatch.setattr(fleet_base, "get_world_size", lambda: 2)
    monkeypatch.setattr(fleet_base, "get_rank", lambda: 1)
    fleet.init(is_collective=True)


@pytest.mark.parametrize("scale,seed_value", [("avg", 0.5), ("sum", 1.0), ("customized", None)])
def test_fleet_rewrites_the_program_for_its_rank(two_ranks, scale, seed_value):
    def build(loss, hidden):
        strategy = fleet.DistributedStrategy()
        strategy.gradient_scale_configs = {"scale_strategy": scale}
        strategy.fuse_grad_size_in_MB = 0.0005
        fleet.distributed_optimizer(paddle.optimizer.SGD(learning_rate=0.1), strategy).minimize(loss)

    main, startup, loss = nets.mlp(build)
    ops = main.global_block().ops
    seeds = [op for op in ops if loss.name + "@GRAD" in op.output_arg_names and op.type == "fill_constant"]
    if seed_value is None:
        assert not seeds and main.global_block().var(loss.name + "@GRAD").is_data
    else:
        assert [op.attrs["value"] for op in seeds] == [seed_value]
    fused = [op for op in ops if op.type == "c_fused_allreduce_sum"]
    reduced = sum((op.inputs["X"] for op in fused), []) + \
        [op.inputs["X"][0] for op in ops if op.type == "c_allreduce_sum"]
    assert sorted(reduced) == sorted(p.name + "@GRAD" for p in main.all_parameters())
    assert len(fused) >= 1 and len(reduced) > len(fused[0].inputs["X"])   # a bucket of one stays c_allreduce_sum
    broadcast = [op for op in startup.global_block().ops if op.type == "c_broadcast"]
    assert len(broadcast) == 1 and sorted(broadcast[0].inputs["X"]) == sorted(p.name for p in main.all_parameters())


def test_fleet_applies_the_build_strategy_fusions(two_ranks):
    def build(loss, hidden):
        strategy = fleet.DistributedStrategy()
        bs = paddle.static.BuildStrategy()
        bs.fuse_elewise_add_act_ops = True
        strategy.build_strategy = bs
        fleet.distributed_optimizer(paddle.optimizer.SGD(learning_rate=0.1), strategy).minimize(loss)

    main, _, _ = nets.mlp(build)
    assert "fused_elemwise_add_activation" in [op.type for op in main.global_block().ops]


def test_lars_needs_a_momentum_optimizer(two_ranks):
    def build(loss, hidden):
        strategy = fleet.DistributedStrategy()
        strategy.lars = True
        with pytest.warns(UserWarning, match="lars needs the inner optimizer to be Momentum"):
            fleet.distributed_optimizer(paddle.optimizer.SGD(learning_rate=0.1), strategy).minimize(loss)

    main, _, _ = nets.mlp(build)
    assert "lars_momentum" not in [op.type for op in main.global_block().ops]


class _Recorder:
    """A two-rank communicator stand-in (the peer's gradients equal ours) that logs each bucket."""

    rank, world_size = 0, 2

    def __init__(self, events, names):
        self.events, self.names = events, names

    def all_reduce_sum_many(self, arrays):
        self.events.append(("reduce", [self.names[id(a)] for a in arrays]))
        return [a * 2 for a in arrays]


class _Ready:
    def __init__(self, events, names):
        self.events, self.names = events, names

    def leaf_ready(self, tensor):
        if id(tensor) in self.names:
            self.events.append(("ready", self.names[id(tensor)]))

    def backward_done(self):
        self.events.append(("done", None))


def test_data_parallel_reduces_each_bucket_as_soon_as_backward_completes_it():
    with paddle.fluid.dygraph.guard():
        net = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.ReLU(), paddle.nn.Linear(8, 8),
                                   paddle.nn.ReLU(), paddle.nn.Linear(8, 2))
        params = net.parameters()
        names = {id(p): p.name for p in params}
        events = []
        reducer = _Reducer(params, None, bucket_mb=1e-9, first_mb=1e-9)   # one parameter per bucket
        assert [b[0].name for b in reducer.buckets] == [p.name for p in reversed(params)]
        ready = _Ready(events, names)
        tape.grad_listeners.extend([ready, reducer])
        try:
            x = paddle.to_tensor(np.random.default_rng(0).standard_normal((3, 4)).astype("float32"))
            loss = paddle.mean(net(x))
            grads_by_name = {}

            def recorder_all_reduce(arrays):
                for p, a in zip(reducer.buckets[reducer.next], arrays):
                    names[id(a)] = p.name
                    grads_by_name[p.name] = a.copy()
                return _Recorder(events, names).all_reduce_sum_many(arrays)

            reducer.comm = type("C", (), {"world_size": 2, "all_reduce_sum_many": staticmethod(recorder_all_reduce)})()
            loss.backward()
        finally:
            tape.grad_listeners.remove(ready)
            tape.grad_listeners.remove(reducer)
    kinds = [k for k, _ in events]
    assert kinds.count("reduce") == len(params)
    assert kinds.index("reduce") < max(i for i, k in enumerate(kinds) if k == "ready"), \
        "the first bucket is reduced while backward still produces gradients"
    assert [n for k, n in events if k == "reduce"] == [[p.name] for p in reversed(params)]
    for p in params:   # (local + peer's identical gradient) / 2 ranks = the local gradient
        np.testing.assert_array_equal(p.grad.numpy(), grads_by_name[p.name])


def test_data_parallel_reduces_each_bucket_once_with_recompute_inside():
    """A reentrant recompute runs a backward inside the backward: its end is not the end, and the
    parameters only it reaches are reduced when the outer backward ends."""
    from headrace.distributed.fleet.utils import recompute

    with paddle.fluid.dygraph.guard():
        fc1, fc2, fc3 = paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 4), paddle.nn.Linear(4, 1)
        params = fc1.parameters() + fc2.parameters() + fc3.parameters()
        reduced = []

        def all_reduce(arrays):
            reduced.extend(p.name for p in reducer.buckets[len(reduced)])
            return [a * 2 for a in arrays]

        reducer = _Reducer(params, type("C", (), {"world_size": 2, "all_reduce_sum_many": staticmethod(all_reduce)})(),
                           bucket_mb=1e-9, first_mb=1e-9)
        tape.grad_listeners.append(reducer)
        try:
            x = paddle.to_tensor(np.ones((2, 4), "float32"))
            h = recompute(lambda a: paddle.nn.functional.relu(fc2(a)), fc1(x))
            paddle.mean(fc3(h)).backward()
        finally:
            tape.grad_listeners.remove(reducer)
    assert reduced == [p.name for p in reversed(params)]
