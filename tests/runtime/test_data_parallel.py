"""CompiledProgram.with_data_parallel on CPU places in one process (paddle_behaviour.md §6.3)."""
import threading

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import names
from headrace.core.errors import DeviceError, FeedError
from headrace.optimizer.lars import LarsMomentum
from headrace.passes import PassError
from headrace.runtime import memory

from ..passes.dp_nets import batches, conv_bn_fc_net, train

BS = static.BuildStrategy


def seed_net():
    """The seed's net: fc(size=10) on X [N, 1], mean, SGD 0.01."""
    x = static.data("X", [None, 1], "float32")
    hidden = static.nn.fc(x=x, size=10)
    loss = paddle.mean(hidden)
    paddle.optimizer.SGD(learning_rate=0.01).minimize(loss)
    exe = static.Executor(static.CPUPlace())
    exe.run(static.default_startup_program())
    return exe, hidden, loss


def compiled(loss, places=2, **flags):
    bs = BS()
    for k, v in flags.items():
        setattr(bs, k, v)
    return static.CompiledProgram(static.default_main_program()).with_data_parallel(
        loss_name=loss.name, build_strategy=bs, places=static.cpu_places(places))


X10 = (np.arange(10, dtype="float32") / 10).reshape(10, 1)


def test_cpu_places_honours_cpu_num(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "3")
    assert len(static.cpu_places()) == 3
    assert len(static.cpu_places(2)) == 2
    with pytest.raises(DeviceError, match="no GPU"):
        static.cuda_places()


@pytest.mark.parametrize("batch,sizes", [(10, [5, 5]), (3, [2, 1])])
def test_feed_is_split_like_the_reference(batch, sizes):
    exe, hidden, loss = seed_net()
    prog = compiled(loss)
    loss_v, hid = exe.run(prog, feed={"X": X10[:batch]}, fetch_list=[loss, hidden], return_merged=False)
    assert [h.shape for h in hid] == [(s, 10) for s in sizes]
    assert len(loss_v) == 2 and all(v.shape == () for v in loss_v)
    merged_loss, merged_hid = exe.run(prog, feed={"X": X10[:batch]}, fetch_list=[loss, hidden])
    assert merged_loss.shape == (2,) and merged_hid.shape == (batch, 10)


def test_batch_smaller_than_places_is_an_error():
    exe, _, loss = seed_net()
    with pytest.raises(FeedError, match="smaller than the number of places"):
        exe.run(compiled(loss), feed={"X": X10[:1]}, fetch_list=[loss])


def _weight_grad_after_one_step(strategy, feed_extra=None):
    exe, hidden, loss = seed_net()
    w = static.default_main_program().all_parameters()[0]
    scope = static.global_scope()
    before = np.array(scope._get_array(w.name))
    feed = {"X": X10, **(feed_extra(loss) if feed_extra else {})}
    out = exe.run(compiled(loss, gradient_scale_strategy=strategy), feed=feed,
                  fetch_list=[loss, loss.name + "@GRAD"])
    after = np.array(scope._get_array(w.name))
    return out, (before - after) / 0.01, X10


def test_coeff_num_device_reproduces_the_full_batch_gradient():
    (loss_v, loss_grad), dw, x = _weight_grad_after_one_step(BS.GradientScaleStrategy.CoeffNumDevice)
    np.testing.assert_allclose(loss_grad, [0.5, 0.5])
    # d mean(x W + b) / dW = mean(x) / 10 per column, over the whole batch
    np.testing.assert_allclose(dw, np.full((1, 10), x.mean() / 10), rtol=0, atol=2e-5)


def test_one_gives_places_times_the_gradient():
    (_, loss_grad), dw, x = _weight_grad_after_one_step(BS.GradientScaleStrategy.One)
    np.testing.assert_allclose(loss_grad, [1.0, 1.0])
    np.testing.assert_allclose(dw, np.full((1, 10), 2 * x.mean() / 10), rtol=0, atol=2e-5)


def test_customized_uses_the_fed_loss_gradient():
    (_, loss_grad), dw, x = _weight_grad_after_one_step(
        BS.GradientScaleStrategy.Customized, lambda loss: {loss.name + "@GRAD": np.array([0.01, 0.03], "float32")})
    np.testing.assert_allclose(loss_grad, [0.01, 0.03])
    expected = (0.01 * x[:5].mean() + 0.03 * x[5:].mean()) / 10
    np.testing.assert_allclose(dw, np.full((1, 10), expected), rtol=0, atol=2e-5)


def test_customized_without_the_loss_gradient_is_a_clear_error():
    exe, _, loss = seed_net()
    with pytest.raises(FeedError, match="Customized.*must be fed"):
        exe.run(compiled(loss, gradient_scale_strategy=BS.GradientScaleStrategy.Customized),
                feed={"X": X10}, fetch_list=[loss])


def test_updates_without_loss_name_is_an_error():
    exe, _, loss = seed_net()
    prog = static.CompiledProgram(static.default_main_program()).with_data_parallel(places=static.cpu_places(2))
    with pytest.raises(Exception, match="loss_name"):
        exe.run(prog, feed={"X": X10}, fetch_list=[loss])


def test_persistable_feed_goes_whole_to_every_place():
    exe, _, loss = seed_net()
    lr = next(v for v in static.default_main_program().list_vars() if v.name.startswith("learning_rate"))
    exe.run(compiled(loss), feed={"X": X10, lr.name: np.array([0.5], "float32")}, fetch_list=[loss])
    with pytest.raises(FeedError, match="expected shape"):
        exe.run(compiled(loss), feed={"X": X10, lr.name: np.array([0.5, 1], "float32")}, fetch_list=[loss])


@pytest.mark.parametrize("reduce", ["AllReduce", "Reduce"])
@pytest.mark.parametrize("optimizer", ["sgd", "momentum"])
def test_two_places_equal_one_place_with_sync_batch_norm(reduce, optimizer):
    feeds = batches(3)
    main, startup, loss = conv_bn_fc_net(optimizer)
    one, one_params = train(main, startup, loss, feeds)
    bs = BS()
    bs.sync_batch_norm = True
    bs.reduce_strategy = getattr(BS.ReduceStrategy, reduce)
    bs.fuse_broadcast_ops = reduce == "Reduce"
    main, startup, loss = conv_bn_fc_net(optimizer)
    prog = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=bs,
                                                           places=static.cpu_places(2))
    two, two_params = train(main, startup, loss, feeds, prog)
    np.testing.assert_allclose(two, one, rtol=1e-5, atol=1e-6)
    for a, b in zip(two_params.values(), one_params.values()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_without_sync_batch_norm_places_use_local_statistics():
    feeds = batches(2)
    main, startup, loss = conv_bn_fc_net()
    one, _ = train(main, startup, loss, feeds)
    main, startup, loss = conv_bn_fc_net()
    prog = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=static.cpu_places(2))
    two, _ = train(main, startup, loss, feeds, prog)
    assert np.abs(two - one).max() > 1e-4  # batch statistics over 4 samples differ from over 8


def test_reduce_keeps_parameters_identical_on_every_place():
    feeds = batches(2)
    main, startup, loss = conv_bn_fc_net("momentum")
    bs = BS()
    bs.reduce_strategy = BS.ReduceStrategy.Reduce
    prog = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=bs,
                                                           places=static.cpu_places(2))
    scope, exe = static.Scope(), static.Executor(static.CPUPlace())
    with static.scope_guard(scope):   # kept alive: the place scopes live as long as the caller's
        exe.run(startup)
        for feed in feeds:
            exe.run(prog, feed=feed, fetch_list=[loss])
    programs, = prog._compiled.values()
    updates = [sum(op.type == "momentum" for op in p.global_block().ops) for p in programs]
    trainable = [p for p in main.all_parameters() if p.trainable]
    assert sum(updates) == len(trainable) and min(updates) > 0  # each update on exactly one place
    scopes = prog._runner._scopes(scope)
    for param in trainable:
        np.testing.assert_array_equal(scopes[0]._get_array(param.name), scopes[1]._get_array(param.name))


def test_memory_tracker_is_thread_safe():
    tracker = memory.MemoryTracker()
    arrays = [np.zeros(16) for _ in range(200)]

    def work():
        for _ in range(50):
            for a in arrays:
                tracker.acquire(a)
            for a in arrays:
                tracker.release(a)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert tracker.current == 0 and tracker.peak <= 200 * 16 * 8 * 1


def _decay_clip_net(optimizer=None, **optimizer_args):
    main, startup = static.Program(), static.Program()
    main.random_seed = startup.random_seed = 3
    with static.program_guard(main, startup), names.guard():
        x = static.data("x", [-1, 8], "float32")
        h = static.nn.fc(x, size=6, activation="tanh")
        y = static.nn.fc(h, size=4)
        loss = paddle.mean(y * y)
        if optimizer is None:
            optimizer = paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.5, **optimizer_args)
        optimizer.minimize(loss)
    return main, startup, loss


def _run_decay_clip(places, reduce=False, optimizer=None, after_step=None, **optimizer_args):
    main, startup, loss = _decay_clip_net(optimizer() if optimizer else None, **optimizer_args)
    prog = main
    if places:
        bs = BS()
        bs.reduce_strategy = BS.ReduceStrategy.Reduce if reduce else BS.ReduceStrategy.AllReduce
        prog = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=bs,
                                                               places=static.cpu_places(places))
    scope, exe = static.Scope(), static.Executor(static.CPUPlace())
    rng = np.random.default_rng(0)
    with static.scope_guard(scope):
        exe.run(startup)
        for _ in range(3):
            exe.run(prog, feed={"x": rng.standard_normal((4, 8)).astype("float32")}, fetch_list=[loss])
            if after_step:
                after_step()
        return {p.name: np.array(scope._get_array(p.name)) for p in main.all_parameters()}


DECAY_CLIP = {
    "l2": {"weight_decay": 0.5},
    "l1": {"weight_decay": paddle.regularizer.L1Decay(0.05)},
    "by_value": {"grad_clip": paddle.nn.ClipGradByValue(0.01)},
    "by_norm": {"grad_clip": paddle.nn.ClipGradByNorm(0.02)},
    "global_norm": {"grad_clip": paddle.nn.ClipGradByGlobalNorm(0.05), "weight_decay": 0.1},
}


@pytest.mark.parametrize("reduce", [False, True], ids=["allreduce", "reduce"])
@pytest.mark.parametrize("case", sorted(DECAY_CLIP))
def test_clipping_and_decay_act_on_the_combined_gradient(case, reduce):
    """The collectives go on the backward's gradients; clipping / decay then see the full-batch
    gradient on every place, so 2 places train like 1 (they would not if each place clipped or
    decayed its own half before combining)."""
    if reduce and case == "global_norm":
        with pytest.raises(PassError, match="Reduce mode .* depends on the gradient"):
            _run_decay_clip(2, reduce, **DECAY_CLIP[case])
        return
    one = _run_decay_clip(0, **DECAY_CLIP[case])
    two = _run_decay_clip(2, reduce, **DECAY_CLIP[case])
    plain = _run_decay_clip(0)
    for name in one:
        np.testing.assert_allclose(two[name], one[name], rtol=1e-5, atol=1e-7)
    assert any(np.abs(one[n] - plain[n]).max() > 1e-4 for n in one)   # the clip / decay did act


@pytest.mark.parametrize("reduce", [False, True], ids=["allreduce", "reduce"])
def test_lars_with_a_schedule_on_two_places_trains_like_one_place(reduce):
    """LARS norms are taken over the combined gradient, and the scheduled rate reaches every place."""
    def run(places):
        sched = paddle.optimizer.lr.StepDecay(0.5, step_size=1, gamma=0.5)
        make = lambda: LarsMomentum(  # noqa: E731
            sched, 0.9, lars_coeff=0.1, lars_weight_decay=0.01, exclude_from_weight_decay=["b_0"])
        return _run_decay_clip(places, reduce, optimizer=make, after_step=sched.step)
    one, two = run(0), run(2)
    for name in one:
        np.testing.assert_allclose(two[name], one[name], rtol=1e-5, atol=1e-7, err_msg=name)


def test_reduce_mode_leaves_all_optimizer_state_in_the_callers_scope():
    """Velocities of parameters owned by place 1 are copied back: the caller's scope (the one a
    user saves) matches a 1-place run."""
    def velocities(places):
        with names.guard():
            main, startup, loss = conv_bn_fc_net("momentum")
        prog = main
        if places > 1:
            bs = BS()
            bs.reduce_strategy = BS.ReduceStrategy.Reduce
            bs.sync_batch_norm = True   # batch statistics over the global batch, as with 1 place
            prog = static.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=bs,
                                                                   places=static.cpu_places(places))
        scope, exe = static.Scope(), static.Executor(static.CPUPlace())
        with static.scope_guard(scope):
            exe.run(startup)
            for feed in batches(2):
                exe.run(prog, feed=feed, fetch_list=[loss])
        return {v.name: np.array(scope._get_array(v.name)) for v in main.list_vars()
                if v.persistable and "velocity" in v.name}
    one, two = velocities(1), velocities(2)
    assert one.keys() == two.keys() and len(one) > 2
    for name in one:
        assert np.abs(one[name]).max() > 0, name
        np.testing.assert_allclose(two[name], one[name], rtol=1e-5, atol=1e-7, err_msg=name)


def test_recompute_program_on_two_places_trains_like_the_plain_program_on_one():
    """Checkpoints (recompute copies in the backward) and data parallel together."""
    def run(places, checkpoints):
        main, startup = static.Program(), static.Program()
        main.random_seed = startup.random_seed = 5
        with static.program_guard(main, startup), names.guard():
            x = static.data("x", [-1, 8], "float32")
            h, acts = x, []
            for _ in range(4):
                h = static.nn.fc(h, size=8, activation="tanh")
                acts.append(h)
            loss = paddle.mean(static.nn.fc(h, size=1))
            opt = paddle.optimizer.Momentum(0.1, momentum=0.9, grad_clip=paddle.nn.ClipGradByGlobalNorm(0.5))
            if checkpoints:
                opt = paddle.incubate.optimizer.RecomputeOptimizer(opt)
                opt._set_checkpoints([acts[1], acts[3]])
            opt.minimize(loss)
        prog = main if places == 1 else static.CompiledProgram(main).with_data_parallel(
            loss_name=loss.name, places=static.cpu_places(places))
        scope, exe = static.Scope(), static.Executor(static.CPUPlace())
        rng = np.random.default_rng(0)
        with static.scope_guard(scope):
            exe.run(startup)
            for _ in range(3):
                exe.run(prog, feed={"x": rng.standard_normal((6, 8)).astype("float32")}, fetch_list=[loss])
            return {p.name: np.array(scope._get_array(p.name)) for p in main.all_parameters()}
    plain = run(1, False)
    both = run(2, True)
    for name in plain:
        np.testing.assert_allclose(both[name], plain[name], rtol=1e-5, atol=1e-7, err_msg=name)
