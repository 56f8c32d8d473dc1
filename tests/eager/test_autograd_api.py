"""paddle.grad, paddle.autograd.backward, Tensor.register_hook, paddle.amp on the CPU."""
import warnings

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core.context import static_mode_guard
from headrace.eager.tape import GraphFreedError

rng = np.random.default_rng(9)
XV = rng.standard_normal(3)
WV = rng.standard_normal((3, 2))


@pytest.fixture(autouse=True)
def eager():
    with static_mode_guard(False):
        yield


def _leaf(value):
    t = paddle.to_tensor(value)
    t.stop_gradient = False
    return t


def test_grad_of_leaves_and_intermediates_matches_numpy_and_leaves_grad_untouched():
    x, w = _leaf(XV), _leaf(WV)
    h = paddle.matmul(x.reshape([1, 3]), w)       # [1, 2]
    y = (h * h).sum()
    dx, dw, dh = paddle.grad(y, [x, w, h], retain_graph=True)
    hv = XV.reshape(1, 3) @ WV
    np.testing.assert_allclose(dh.numpy(), 2 * hv, rtol=1e-12)
    np.testing.assert_allclose(dw.numpy(), XV.reshape(3, 1) @ (2 * hv), rtol=1e-12)
    np.testing.assert_allclose(dx.numpy(), (2 * hv @ WV.T).ravel(), rtol=1e-12)
    assert x.grad is None and w.grad is None and dx.stop_gradient
    (dx2,) = paddle.grad([y], [x], grad_outputs=[paddle.to_tensor(3.0)])
    np.testing.assert_allclose(dx2.numpy(), 3 * dx.numpy(), rtol=1e-12)


def test_grad_frees_the_graph_unless_retained():
    x = _leaf(XV)
    y = (x * x).sum()
    paddle.grad(y, x)
    with pytest.raises(GraphFreedError):
        paddle.grad(y, x)


def test_unused_inputs_and_no_grad_vars():
    x, z = _leaf(XV), _leaf(XV)
    y = (x * 2.0).sum()
    with pytest.raises(ValueError, match="allow_unused=True"):
        paddle.grad(y, [x, z], retain_graph=True)
    dx, dz = paddle.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert dz is None
    np.testing.assert_array_equal(dx.numpy(), np.full(3, 2.0))
    a = x * 3.0
    b = (a + x).sum()
    (only_direct,) = paddle.grad(b, x, no_grad_vars=[a])
    np.testing.assert_array_equal(only_direct.numpy(), np.ones(3))    # nothing flows through a


def test_create_graph_is_a_clear_error_and_bad_arguments():
    x = _leaf(XV)
    y = (x * x).sum()
    with pytest.raises(NotImplementedError, match="create_graph"):
        paddle.grad(y, x, create_graph=True)
    with pytest.raises(TypeError, match="inputs"):
        paddle.grad(y, XV)
    with pytest.raises(ValueError, match="shape"):
        paddle.grad(y, x, grad_outputs=[paddle.to_tensor([1.0, 2.0])])
    with pytest.raises(RuntimeError, match="stop_gradient"):
        paddle.grad(paddle.to_tensor(XV).sum(), x)


def test_grad_in_static_mode_appends_gradient_ops():
    main, startup = static.Program(), static.Program()
    with static_mode_guard(True), static.program_guard(main, startup):
        x = static.data("x", [3], "float64")
        x.stop_gradient = False
        y = paddle.sum(x * x)
        (dx,) = paddle.grad([y], [x])
        (value,) = static.Executor().run(main, feed={"x": XV}, fetch_list=[dx], scope=static.Scope())
    np.testing.assert_allclose(value, 2 * XV, rtol=1e-12)


def test_autograd_backward_with_several_roots():
    x = _leaf(XV)
    a, b = (x * x).sum(), (x * 3.0).sum()
    paddle.autograd.backward([a, b], [paddle.to_tensor(2.0), None])
    np.testing.assert_allclose(x.grad.numpy(), 4 * XV + 3.0, rtol=1e-12)
    with pytest.raises(ValueError, match="gradient"):
        paddle.autograd.backward([(x * x).sum()], [None, None])


def test_register_hook_on_leaf_and_intermediate():
    x = _leaf(XV)
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.numpy()) or g * 2)
    h = x * 3.0
    h.register_hook(lambda g: g + 1.0)
    (h * h).sum().backward()
    want_h = 2 * (3.0 * XV) + 1.0          # dL/dh, then the hook adds 1
    np.testing.assert_allclose(seen[0], 3.0 * want_h, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 2 * 3.0 * want_h, rtol=1e-12)
    assert handle.remove() is True and handle.remove() is False
    x.clear_grad()
    (x * 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))        # removed: no doubling
    with pytest.raises(RuntimeError, match="stop_gradient"):
        paddle.to_tensor(XV).register_hook(lambda g: g)
    y = _leaf(XV)
    y.register_hook(lambda g: paddle.to_tensor([1.0]))
    with pytest.raises(ValueError, match="shape"):
        (y * 1.0).sum().backward()


def test_amp_on_the_cpu_runs_in_float32_like_no_amp():
    batch = rng.standard_normal((4, 3)).astype("float32")

    def train(use_amp):
        paddle.seed(3)
        model = paddle.nn.Linear(3, 1)
        opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
        if use_amp:
            model, opt = paddle.amp.decorate(models=model, optimizers=opt, level="O2")
            scaler = paddle.amp.GradScaler(init_loss_scaling=1024)
        data = paddle.to_tensor(batch)
        for _ in range(3):
            if use_amp:
                with paddle.amp.auto_cast():
                    loss = model(data).mean()
                assert loss.dtype == paddle.float32
                scaler.scale(loss).backward()
                scaler.minimize(opt, scaler.scale(loss))
                scaler.update()
            else:
                loss = model(data).mean()
                loss.backward()
                opt.minimize(loss)
            opt.clear_grad()
        return [p.numpy() for p in model.parameters()]

    plain = train(False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        amp = train(True)
    assert any("makes no effect" in str(w.message) for w in caught)
    for a, b in zip(plain, amp):
        np.testing.assert_array_equal(a, b)
    with pytest.warns(UserWarning, match="makes no effect"):
        scaler = paddle.amp.GradScaler()
    assert not scaler.is_enable() and scaler.get_init_loss_scaling() == 65536.0 and scaler.state_dict() == {}
    with pytest.raises(ValueError, match="level"):
        paddle.amp.auto_cast(level="O3").__enter__()
    with pytest.raises(ValueError, match="incr_ratio"):
        paddle.amp.GradScaler(enable=False, incr_ratio=0.5)
    assert paddle.amp.is_float16_supported() is False
