"""headrace.memory.estimate equals the measured peak of live bytes to the byte, before running."""
import gc

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace import memory
from headrace.device import cpu
from headrace.runtime.scope import Scope, scope_guard

from .nets import build


def measured_peak(main, startup, feed, fetch, program=None):
    """max_memory_allocated() of one training step, less what was tracked before the startup ran."""
    # arrays of earlier tests kept in reference cycles (an exception's traceback) are counted until
    # the garbage collector frees them: collect now, not during the measured run
    gc.collect()
    with scope_guard(Scope()):
        exe = static.Executor()
        before = cpu.memory_allocated()
        exe.run(startup)
        cpu.reset_max_memory_allocated()
        exe.run(program if program is not None else main, feed=feed, fetch_list=fetch)
        return cpu.max_memory_allocated() - before


@pytest.fixture(autouse=True)
def static_mode():
    paddle.enable_static()
    yield


@pytest.mark.parametrize("name", ["mlp", "conv_bn", "transformer"])
@pytest.mark.parametrize("checkpoints", [False, True])
def test_estimate_equals_measured_peak(name, checkpoints):
    main, startup, loss, feed = build(name, checkpoints)
    shapes = {k: list(v.shape) for k, v in feed.items()}
    est = memory.estimate(main, shapes, fetch_list=[loss])
    assert est.peak_bytes == measured_peak(main, startup, feed, [loss])
    assert est.persistable_bytes < est.peak_bytes
    assert sum(est.live_at_peak.values()) == est.peak_bytes
    assert est.peak_op[1] == est.op_types[est.peak_op[0]]
    assert max(high for _, _, _, high in est.profile) == est.peak_bytes


@pytest.mark.parametrize("name", ["mlp", "conv_bn", "transformer"])
def test_estimate_with_memory_passes_equals_measured_peak(name):
    main, startup, loss, feed = build(name)
    strategy = static.BuildStrategy()
    strategy.enable_inplace = True
    strategy.memory_optimize = True
    est = memory.estimate(main, feed, build_strategy=strategy, fetch_list=[loss])
    compiled = static.CompiledProgram(main, strategy)
    assert est.peak_bytes == measured_peak(main, startup, feed, [loss], program=compiled)


def test_recompute_lowers_the_estimate():
    plain = build("mlp", False, layers=12, width=256, batch=256)
    ckpt = build("mlp", True, layers=12, width=256, batch=256)
    a = memory.estimate(plain[0], plain[3], fetch_list=[plain[2]])
    b = memory.estimate(ckpt[0], ckpt[3], fetch_list=[ckpt[2]])
    assert b.peak_bytes < a.peak_bytes
    assert b.peak_bytes == measured_peak(ckpt[0], ckpt[1], ckpt[3], [ckpt[2]])


def test_bad_feed_is_a_clear_error():
    main, _, loss, _ = build("mlp")
    with pytest.raises(Exception, match="feed 'x' must be an array or a shape"):
        memory.estimate(main, {"x": "big"})
    with pytest.raises(TypeError, match="feed must be a dict"):
        memory.estimate(main, [32, 32])
    with pytest.raises(Exception, match="estimate: .*mul"):
        memory.estimate(main, {"x": [4, 31]})


def test_every_op_declaring_views_has_an_aliasing_rule():
    from headrace.memory import aliasing
    from headrace.ops.registry import _REGISTRY

    ours = [d for d in _REGISTRY.values() if getattr(d.kernel, "__module__", "").startswith("headrace.")]
    assert len(ours) > 300      # (ops that tests register for themselves are not headrace's)
    assert aliasing.check_rules_cover(ours) == []


@pytest.mark.parametrize("name, batch", [("mlp", 1), ("mlp", 7), ("conv_bn", 3), ("transformer", 1)])
def test_estimate_follows_the_batch_size(name, batch):
    main, startup, loss, feed = build(name, True, batch=batch)
    est = memory.estimate(main, feed, fetch_list=[loss])     # arrays work as well as shapes
    assert est.peak_bytes == measured_peak(main, startup, feed, [loss])


def test_data_parallel_is_refused_clearly():
    main, _, loss, feed = build("mlp")
    compiled = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=static.cpu_places(2))
    with pytest.raises(NotImplementedError, match="data-parallel"):
        memory.estimate(compiled, feed)


def test_collectives_on_several_tensors_return_each_input():
    """c_broadcast of a list: Out[k] is X[k] itself, for every k."""
    from headrace.memory import aliasing

    outs = {"Out": [((2,), None), ((3,), None), ((4,), None)]}
    sources, _ = aliasing.RULES["c_broadcast"]({}, {"X": [None] * 3}, outs)
    assert sources == {"Out": [("input", "X", 0), ("input", "X", 1), ("input", "X", 2)]}


@pytest.mark.parametrize("optimizer", [lambda: paddle.optimizer.Momentum(0.1, momentum=0.9),
                                       lambda: paddle.optimizer.Adam(0.01)])
def test_estimate_with_fused_optimizer_updates(optimizer):
    """fuse_all_optimizer_ops: parameters and state live in flat buffers (counted once)."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        h = static.data("x", [-1, 8], "float32")
        for _ in range(3):
            h = static.nn.fc(h, size=8, activation="relu")
        loss = paddle.mean(static.nn.fc(h, size=1))
        optimizer().minimize(loss)
    strategy = static.BuildStrategy()
    strategy.fuse_all_optimizer_ops = True
    feed = {"x": np.ones((4, 8), np.float32)}
    est = memory.estimate(main, feed, build_strategy=strategy, fetch_list=[loss])
    assert est.peak_bytes == measured_peak(main, startup, feed, [loss], program=static.CompiledProgram(main, strategy))
