"""The distributed API in a process started without a launcher (a group of one), the strategy's
checks, the sampler's reference semantics and the launcher's command lines."""
import numpy as np
import pytest

import headrace as paddle
import headrace.distributed as dist
from headrace.distributed import fleet
from headrace.distributed.launcher import _count_hosts, find_mpiexec, mpiexec_command
from headrace.io import DistributedBatchSampler


def test_a_process_without_launcher_is_rank_0_of_1(monkeypatch):
    for var in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    env = dist.init_parallel_env()
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size(), env.rank, env.world_size) == (0, 1, 0, 1)
    with paddle.fluid.dygraph.guard():
        t = paddle.to_tensor(np.arange(3, dtype="float32"))
        dist.all_reduce(t)
        dist.broadcast(t, src=0)
        got = []
        dist.all_gather(got, t)
        dist.barrier()
        np.testing.assert_array_equal(t.numpy(), [0, 1, 2])
        assert len(got) == 1 and np.array_equal(got[0].numpy(), [0, 1, 2])
        layer = paddle.nn.Linear(2, 2)
        model = paddle.DataParallel(layer)
        assert model.state_dict().keys() == layer.state_dict().keys()
        with model.no_sync():
            paddle.mean(model(paddle.to_tensor(np.ones((3, 2), "float32")))).backward()
        assert layer.weight.grad is not None
        with pytest.raises(NotImplementedError, match="ReduceOp.SUM"):
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
        with pytest.raises(ValueError, match="src 3"):
            dist.broadcast(t, src=3)


def test_fleet_in_one_process():
    with pytest.raises(NotImplementedError, match="parameter-server"):
        fleet.init()
    fleet.init(is_collective=True)
    assert (fleet.worker_index(), fleet.worker_num(), fleet.is_first_worker()) == (0, 1, True)


def test_distributed_strategy_defaults_and_checks():
    s = fleet.DistributedStrategy()
    assert (s.recompute, s.lars, s.fuse_all_reduce_ops, s.sync_batch_norm) == (False, False, True, False)
    assert s.lars_configs == {"lars_coeff": 0.001, "lars_weight_decay": 0.0005, "epsilon": 0.0,
                              "exclude_from_weight_decay": []}
    assert s.gradient_scale_configs["scale_strategy"] == "avg"
    s.recompute_configs = {"checkpoints": ["a"]}
    assert s.recompute_configs["checkpoints"] == ["a"] and s.recompute_configs["enable_offload"] is False
    with pytest.raises(ValueError, match="unknown key"):
        s.lars_configs = {"lars_coef": 0.1}
    with pytest.raises(ValueError, match="scale_strategy"):
        s.gradient_scale_configs = {"scale_strategy": "mean"}
    with pytest.raises(TypeError, match="bool"):
        s.lars = 1
    with pytest.raises(NotImplementedError, match="amp"):
        s.amp = True
    with pytest.raises(AttributeError, match="no attribute"):
        s.no_such_switch = True
    with pytest.raises(TypeError, match="BuildStrategy"):
        s.build_strategy = object()
    bs = paddle.static.BuildStrategy()
    s.build_strategy = bs
    assert s.build_strategy is bs


def _reference_split(n, batch, ranks, shuffle_epoch=None):
    """The reference's rule written out: pad by repeating, (shuffle), take every rank's batch from
    each run of batch * ranks, split the tail evenly."""
    total = -(-n // ranks) * ranks
    idx = list(range(n))
    idx = (idx * ranks)[:total]
    if shuffle_epoch is not None:
        np.random.RandomState(shuffle_epoch).shuffle(idx)
    out = []
    for r in range(ranks):
        tail = total % (batch * ranks)
        mine = []
        for start in range(r * batch, total - tail, batch * ranks):
            mine += idx[start:start + batch]
        share = tail // ranks
        mine += idx[total - tail:][r * share:(r + 1) * share]
        out.append(mine)
    return out


@pytest.mark.parametrize("n,batch,ranks", [(10, 3, 2), (11, 2, 4), (7, 5, 3), (8, 4, 2), (3, 2, 4)])
def test_distributed_batch_sampler_pads_and_splits_like_the_reference(n, batch, ranks):
    expected = _reference_split(n, batch, ranks)
    seen = []
    for r in range(ranks):
        sampler = DistributedBatchSampler(list(range(n)), batch, num_replicas=ranks, rank=r)
        batches = list(sampler)
        assert sum(batches, []) == expected[r]
        assert all(len(b) == batch for b in batches[:-1]) and len(batches) == len(sampler)
        dropped = list(DistributedBatchSampler(list(range(n)), batch, num_replicas=ranks, rank=r, drop_last=True))
        assert all(len(b) == batch for b in dropped)
        seen += expected[r]
    assert set(seen) == set(range(n)) and len(seen) == -(-n // ranks) * ranks


def test_distributed_batch_sampler_shuffles_by_epoch_alike_on_every_rank():
    samplers = [DistributedBatchSampler(list(range(12)), 2, num_replicas=3, rank=r, shuffle=True) for r in range(3)]
    first = [sum(list(s), []) for s in samplers]
    assert first == _reference_split(12, 2, 3, shuffle_epoch=0)
    second = [sum(list(s), []) for s in samplers]   # the epoch advanced by one
    assert second == _reference_split(12, 2, 3, shuffle_epoch=1) and second != first
    for s in samplers:
        s.set_epoch(0)
    assert [sum(list(s), []) for s in samplers] == first


def test_distributed_batch_sampler_checks_its_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        DistributedBatchSampler(range(4), 0, num_replicas=1, rank=0)
    with pytest.raises(ValueError, match="rank 2 is not below"):
        DistributedBatchSampler(range(4), 1, num_replicas=2, rank=2)
    with pytest.raises(TypeError, match="shuffle"):
        DistributedBatchSampler(range(4), 1, num_replicas=1, rank=0, shuffle=1)
    assert DistributedBatchSampler(range(5), 2).nranks == 1


def test_launcher_command_lines(tmp_path):
    exe = find_mpiexec()
    assert exe.endswith("mpiexec")
    assert mpiexec_command(2, ["python", "t.py"]) == [exe, "-n", "2", "python", "t.py"]
    assert mpiexec_command(3, ["p"], ips="10.0.0.1,10.0.0.2") == [exe, "-hosts", "10.0.0.1,10.0.0.2", "-ppn", "3",
                                                                   "-n", "6", "p"]
    hosts = tmp_path / "hosts"
    hosts.write_text("a  # first\n\nb\n")
    assert _count_hosts(hosts) == 2
    assert mpiexec_command(2, ["p"], host_file=str(hosts)) == [exe, "-f", str(hosts), "-ppn", "2", "-n", "4", "p"]
    with pytest.raises(ValueError, match="at least 1"):
        mpiexec_command(0, ["p"])


def test_static_collectives_that_are_not_supported_say_so():
    v = paddle.static.data("v", [3], "float32")
    with pytest.raises(NotImplementedError, match="all_gather on a static Variable"):
        dist.all_gather([], v)
    with pytest.raises(NotImplementedError, match="op=AVG"):
        dist.all_reduce(v, op=dist.ReduceOp.AVG)


def test_result_pool_reuses_an_array_only_when_nobody_else_holds_it():
    from headrace.runtime.mpi_comm import _OutputPool

    pool = _OutputPool()
    a = pool.take((4, 3), np.float32)
    b = pool.take((4, 3), np.float32)
    assert a is not b                       # a is still held here
    view = b[1:]
    del b
    c = pool.take((4, 3), np.float32)
    assert c is not a and not np.shares_memory(c, view)   # a view keeps b taken
    address = a.__array_interface__["data"][0]
    del a
    d = pool.take((4, 3), np.float32)
    assert d.__array_interface__["data"][0] == address    # released: handed out again
    assert pool.take((4, 3), np.float64).dtype == np.float64


def test_recompute_configs_auto_plans_checkpoints_under_the_budget():
    """recompute_configs {"checkpoints": "auto", "memory_budget": bytes}: the meta-optimizer lets
    headrace.memory choose the checkpoints; the training step's estimate fits the budget."""
    import numpy as np

    import headrace.static as static
    from headrace import memory
    from headrace.core import names

    def build(strategy):
        paddle.enable_static()
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup), names.guard():
            h = static.data("x", [-1, 64], "float32")
            for _ in range(8):
                h = static.nn.fc(h, size=64, activation="relu")
            loss = paddle.mean(static.nn.fc(h, size=1))
            opt = fleet.distributed_optimizer(paddle.optimizer.Momentum(0.01, momentum=0.9), strategy)
            opt.minimize(loss)
        return main, loss, opt

    fleet.init(is_collective=True)
    feed = {"x": np.random.default_rng(0).random((256, 64), dtype=np.float32)}
    plain, plain_loss, _ = build(fleet.DistributedStrategy())
    budget = int(memory.estimate(plain, feed, fetch_list=[plain_loss]).peak_bytes * 0.85)
    s = fleet.DistributedStrategy()
    s.recompute = True
    s.recompute_configs = {"checkpoints": "auto", "memory_budget": budget, "feed": {"x": [256, 64]}}
    main, loss, opt = build(s)
    assert memory.estimate(main, feed, fetch_list=[loss]).peak_bytes <= budget
    assert any(".subprog_" in n for op in main.global_block().ops for n in op.output_arg_names)
    with pytest.raises(ValueError, match="memory_budget, a positive number"):
        s.recompute_configs = {"checkpoints": "auto"}
