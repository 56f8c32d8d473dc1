"""The eager runner's fast path (eager/fast.py), which optimizers' dygraph updates take too.

The suite runs in check mode, where it is off; the ``plain`` fixture (conftest.py) turns check mode off in
every module that reads it (and empties the caches made in check mode), as a run without
HEADRACE_CHECK_KERNELS would."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core.errors import KernelError, NonFiniteError, ShapeError
from headrace.eager import fast, runner, tape
from headrace.nn import functional as F
from headrace.ops.registry import lookup
from tests.helpers import TanhMLP, set_check_mode


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def test_a_repeated_call_takes_the_fast_path_and_computes_the_same(plain):
    x = paddle.to_tensor(_rand(3, 4), stop_gradient=False)
    first = F.tanh(x)
    key = fast.fast_key("tanh", {"X": x}, None, None)
    assert key in fast.FAST
    second = F.tanh(x)
    np.testing.assert_array_equal(second.numpy(), np.tanh(_rand(3, 4)))
    assert not second.stop_gradient and second._node is not None
    assert second._node.plan is first._node.plan          # one record plan for the signature
    F.tanh(paddle.to_tensor(_rand(2, 4)))                  # another shape: a key of its own
    assert len(fast.FAST) == 2


def test_keys_tell_attribute_types_and_signed_zeros_apart(plain):
    x = paddle.to_tensor(_rand(2))
    keys = {fast.fast_key("scale", {"X": x}, attrs, None)
            for attrs in ({"bias": 0.0}, {"bias": -0.0}, {"bias": 0}, {"bias": False}, None)}
    assert len(keys) == 5
    assert fast.fast_key("scale", {"X": x}, {"bias": [1.0]}, None) is None      # a list: full path
    assert fast.fast_key("concat", {"X": [x, x]}, None, None) is None           # a Tensor list too


def test_a_lone_tensor_for_a_slot_of_several_stays_on_the_full_path(plain):
    x = paddle.to_tensor(_rand(2, 3))
    for _ in range(2):
        out = runner.run_op("concat", {"X": x}, {"axis": 0})["Out"][0]   # X takes a list
        np.testing.assert_array_equal(out.numpy(), _rand(2, 3))
    assert fast.fast_key("concat", {"X": x}, {"axis": 0}, None) not in fast.FAST


def test_update_ops_write_into_the_tensors_passed_and_fall_back_when_grad_is_needed(plain):
    p = paddle.to_tensor(np.ones(3, "float32"))
    g = paddle.to_tensor(np.full(3, 2.0, "float32"))
    lr = paddle.to_tensor(np.array([0.5], "float32"))
    for expected in (0.0, -1.0):
        out = runner.run_op("sgd", {"Param": p, "Grad": g, "LearningRate": lr}, None, {"ParamOut": p})
        assert out["ParamOut"][0] is p
        np.testing.assert_array_equal(p.numpy(), np.full(3, expected, "float32"))
    assert fast.fast_key("sgd", {"Param": p, "Grad": g, "LearningRate": lr}, None, {"ParamOut": p}) in fast.FAST
    x, t = paddle.to_tensor(_rand(3)), paddle.to_tensor(np.zeros(3, "float32"))
    for _ in range(2):
        runner.run_op("scale", {"X": x}, {"scale": 2.0}, {"Out": t})
    np.testing.assert_array_equal(t.numpy(), 2 * _rand(3))
    with tape.recomputation():        # a recompute's second forward leaves passed outputs alone
        runner.run_op("scale", {"X": paddle.to_tensor(np.ones(3, "float32"))}, {"scale": 2.0}, {"Out": t})
    np.testing.assert_array_equal(t.numpy(), 2 * _rand(3))
    ones = paddle.to_tensor(np.ones(3, "float32"), stop_gradient=False)   # the same key, needing grad:
    runner.run_op("scale", {"X": ones}, {"scale": 2.0}, {"Out": t})       # the full path, no graph for t
    np.testing.assert_array_equal(t.numpy(), np.full(3, 2.0, "float32"))
    assert t._node is None and t.stop_gradient


def test_gradients_hooks_and_modes_on_the_fast_path(plain):
    x = paddle.to_tensor(_rand(3, 4), stop_gradient=False)
    seen = []
    for _ in range(2):                                     # the second round is all fast path
        y = F.tanh(x)
        y.register_hook(lambda g: seen.append(g.numpy()) or g * 2)
        (y * y).sum().backward()
    t = np.tanh(_rand(3, 4))
    np.testing.assert_allclose(seen[1], 2 * t, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * (2 * 2 * t * (1 - t * t)), rtol=1e-5)
    with paddle.no_grad():
        z = F.tanh(x)
    assert z.stop_gradient and z._node is None
    with tape.track_only():
        w = F.tanh(x)
    assert not w.stop_gradient and w._node is None and tape.computed_while_tracking(w)
    assert F.tanh(paddle.to_tensor(_rand(3, 4))).stop_gradient     # no input requires grad


def test_an_input_error_after_the_signature_passed_still_names_the_users_line(plain):
    x = paddle.to_tensor(_rand(2, 3))
    y = paddle.to_tensor(_rand(3, 4))
    paddle.matmul(x, y)
    paddle.matmul(x, y)
    with pytest.raises(ShapeError) as info:
        paddle.matmul(y, y)                                # 3x4 @ 3x4: another key, full checks
    assert "test_fast_path.py" in str(info.value)


def test_a_kernel_error_on_the_fast_path_is_wrapped(plain, monkeypatch):
    x = paddle.to_tensor(_rand(2, 3))
    F.sigmoid(x)
    assert fast.fast_key("sigmoid", {"X": x}, None, None) in fast.FAST

    def broken(ins, attrs, ctx):
        raise ZeroDivisionError("broken kernel")
    monkeypatch.setattr(lookup("sigmoid"), "kernel", broken)   # read from the OpDef at each call
    with pytest.raises(KernelError) as info:
        F.sigmoid(x)
    assert isinstance(info.value, ZeroDivisionError) and "op `sigmoid`" in str(info.value)
    assert "test_fast_path.py" in str(info.value)


def test_the_nan_check_turned_on_later_still_checks(plain):
    x = paddle.to_tensor(np.array([-1.0, 4.0], "float32"))
    with np.errstate(invalid="ignore"):
        paddle.log(x)
        paddle.log(x)                                     # fast path: unchecked, NaN passes
    old = paddle.get_flags(["FLAGS_check_nan_inf"])
    paddle.set_flags({"FLAGS_check_nan_inf": True})
    try:
        with np.errstate(invalid="ignore"), pytest.raises(NonFiniteError, match="op `log`"):
            paddle.log(x)
    finally:
        paddle.set_flags(old)


def _eager_training(steps=3):
    paddle.seed(3)
    net = TanhMLP(6, 4)
    net.fcs[1].weight.optimize_attr["learning_rate"] = 0.5     # a per-parameter rate: a scale op first
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    x = paddle.to_tensor(_rand(5, 6, seed=1))
    losses = []
    for _ in range(steps):
        loss = net(x)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(loss.numpy())
    return losses, [p.numpy() for p in net.parameters()]


def _static_training(steps=3):
    paddle.enable_static()
    try:
        main, startup = static.Program(), static.Program()
        main.random_seed = startup.random_seed = 3
        with static.program_guard(main, startup):
            paddle.seed(3)
            x = static.data("x", [5, 6], "float32")
            net = TanhMLP(6, 4)
            net.fcs[1].weight.optimize_attr["learning_rate"] = 0.5
            loss = net(x)
            paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
        exe, scope = static.Executor(), static.Scope()
        exe.run(startup, scope=scope)
        init = [np.array(scope.find_var(p.name).get_tensor()) for p in net.parameters()]
        losses = [exe.run(main, feed={"x": _rand(5, 6, seed=1)}, fetch_list=[loss], scope=scope)[0]
                  for _ in range(steps)]
        return init, losses, [np.array(scope.find_var(p.name).get_tensor()) for p in net.parameters()]
    finally:
        paddle.disable_static()


def test_training_on_the_fast_path_is_bit_identical_to_check_mode_and_static_mode(plain, monkeypatch):
    fast_losses, fast_params = _eager_training()
    assert len(fast.FAST) > 3
    set_check_mode(monkeypatch, True)                       # back to check mode: the full path
    full_losses, full_params = _eager_training()
    assert not fast.FAST
    for a, b in zip(fast_losses + fast_params, full_losses + full_params):
        np.testing.assert_array_equal(a, b)
    init, static_losses, static_params = _static_training()
    paddle.seed(3)
    for p, value in zip(TanhMLP(6, 4).parameters(), init):        # the same initial values in both modes
        np.testing.assert_array_equal(p.numpy(), value)
    for a, b in zip(fast_losses + fast_params, static_losses + static_params):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
