"""Static data parallel over MPI processes equals one process on the whole batch
(CompiledProgram.with_data_parallel, and fleet with recompute + LARS + clipping + fused buckets,
and sync_batch_norm); processes equal in-process thread places bit for bit."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import names
from headrace.optimizer.lars import LarsMomentum

from .mpirun import launch
from .workers import nets

pytestmark = pytest.mark.slow


def _solo_runs():
    """What the worker computes, on one process over the whole batch (built in the same order,
    so with the same names)."""
    out = {}
    main, startup, loss = nets.mlp(lambda loss, h: paddle.optimizer.SGD(learning_rate=0.5).minimize(loss))
    out["wdp"] = nets.run(main, startup, loss, nets.mlp_data())

    def lars(loss, hidden):
        opt = LarsMomentum(learning_rate=0.5, momentum=0.9, lars_coeff=0.01, lars_weight_decay=0.0005,
                           grad_clip=paddle.nn.ClipGradByGlobalNorm(0.05))
        opt = paddle.optimizer.RecomputeOptimizer(opt)
        opt._set_checkpoints([hidden[1].name])
        opt.minimize(loss)

    main, startup, loss = nets.mlp(lars)
    out["fleet"] = nets.run(main, startup, loss, nets.mlp_data())
    main, startup, loss = nets.conv_bn(lambda loss, h: paddle.optimizer.SGD(learning_rate=0.2).minimize(loss))
    out["bn"] = nets.run(main, startup, loss, nets.conv_data())
    return out


def _check(result, world, key, solo, rtol, atol):
    losses, state = solo
    dist_losses = result[f"{key}_losses"]            # [rank, step]: each rank's mean on its slice
    np.testing.assert_allclose(dist_losses.mean(axis=0), np.array(losses).reshape(-1), rtol=rtol, atol=atol)
    names = [k.split("/", 1)[1] for k in result.files if k.startswith(key + "/")]
    assert sorted(names) == sorted(state)
    for name in names:
        per_rank = result[f"{key}/{name}"]
        for r in range(1, world):   # every rank holds the same parameters, bit for bit
            np.testing.assert_array_equal(per_rank[r], per_rank[0], err_msg=name)
        np.testing.assert_allclose(per_rank[0], state[name], rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("world", [2, 4])
def test_processes_equal_one_process_on_the_whole_batch(world, tmp_path):
    out = tmp_path / "result.npz"
    launch(world, "static_dp.py", out)
    result = np.load(out)
    assert int(result["world"]) == world
    solo = _solo_runs()
    _check(result, world, "wdp", solo["wdp"], 2e-6, 1e-6)
    _check(result, world, "fleet", solo["fleet"], 2e-5, 1e-6)
    _check(result, world, "bn", solo["bn"], 2e-5, 1e-6)
    np.testing.assert_array_equal(result["static_all_reduce"], np.full((world, 3), world * (world + 1) / 2))
    np.testing.assert_array_equal(result["static_broadcast"], np.full((world, 3), world))
    ops = list(result["fleet_ops"][0])
    assert "c_fused_allreduce_sum" in ops and "lars_momentum" in ops
    assert ops.count("relu") > 2, "recompute replays the segment before the checkpoint"
    if world == 2:
        old = names.switch()   # the same names as the worker's first program
        main, startup, loss = nets.mlp(lambda loss, h: paddle.optimizer.SGD(learning_rate=0.5).minimize(loss))
        names.switch(old)
        threads = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=static.cpu_places(2))
        losses, state = nets.run(main, startup, loss, nets.mlp_data(), threads)
        for name, value in state.items():  # same rewrite, same rank-ordered sums: identical bits
            np.testing.assert_array_equal(result[f"wdp/{name}"][0], value, err_msg=name)
