"""Each nn layer runs in both modes; with the same weights and input, the eager tape's gradients
equal static autodiff's (same kernels, same gradient rules) for the input and every parameter."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.autodiff import gradients
from headrace.core import context
from headrace.runtime import Executor, Scope


def _weights(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _eager(make, x_value, x_grad, param_values, out_weight):
    with context.static_mode_guard(False):
        layer = make()
        for p, v in zip(layer.parameters(), param_values):
            p.set_value(v)
        x = paddle.to_tensor(x_value, stop_gradient=not x_grad)
        paddle.seed(7)
        out = layer(x)
        loss = paddle.sum(out * paddle.to_tensor(out_weight))
        loss.backward()
        grads = [p.grad.numpy() if p.grad is not None else None for p in layer.parameters()]
        return out.numpy(), (x.grad.numpy() if x_grad else None), grads, [p.numpy() for p in layer.parameters()]


def _static(make, x_value, x_grad, param_values, out_weight):
    main, startup = static.Program(), static.Program()
    with context.static_mode_guard(True), static.program_guard(main, startup):
        x = static.data("x", list(x_value.shape), x_value.dtype.name)
        x.stop_gradient = not x_grad
        layer = make()
        out = layer(x)
        loss = paddle.sum(out * paddle.assign(out_weight))
        params = layer.parameters()
        trainable = [p for p in params if p.trainable]
        grads = gradients([loss], ([x] if x_grad else []) + trainable)
    scope = Scope()
    exe = Executor()
    exe.run(startup, scope=scope)
    for p, v in zip(params, param_values):
        scope.var(p.name).get_tensor().set(v)
    fetched = [g for g in grads if g is not None]
    paddle.seed(7)
    values = exe.run(main, feed={"x": x_value}, fetch_list=[out] + fetched, scope=scope)
    by_var = dict(zip([id(g) for g in fetched], values[1:]))
    grad_values = [by_var.get(id(g)) if g is not None else None for g in grads]
    x_g = grad_values.pop(0) if x_grad else None
    it = iter(grad_values)
    param_grads = [next(it) if p.trainable else None for p in params]
    after = [scope.find_var(p.name).get_tensor().numpy() for p in params]
    return values[0], x_g, param_grads, after


LAYERS = {
    "linear": (lambda: paddle.nn.Linear(5, 3), (4, 5), True),
    "linear_no_bias": (lambda: paddle.nn.Linear(5, 3, bias_attr=False), (2, 6, 5), True),
    "sequential": (lambda: paddle.nn.Sequential(("fc", paddle.nn.Linear(5, 4)), ("act", paddle.nn.Tanh()),
                                                paddle.nn.Linear(4, 2)), (3, 5), True),
    "relu": (lambda: paddle.nn.ReLU(), (4, 5), True),
    "sigmoid": (lambda: paddle.nn.Sigmoid(), (4, 5), True),
    "gelu": (lambda: paddle.nn.GELU(), (4, 5), True),
    "leaky_relu": (lambda: paddle.nn.LeakyReLU(0.1), (4, 5), True),
    "softmax": (lambda: paddle.nn.Softmax(), (4, 5), True),
    "dropout": (lambda: paddle.nn.Dropout(0.4), (8, 5), True),
    "conv2d": (lambda: paddle.nn.Conv2D(3, 4, 3, padding=1), (2, 3, 5, 5), True),
    "conv2d_groups": (lambda: paddle.nn.Conv2D(4, 4, 3, stride=2, groups=4), (2, 4, 5, 5), True),
    "batch_norm": (lambda: paddle.nn.BatchNorm2D(3), (4, 3, 2, 2), True),
    "layer_norm": (lambda: paddle.nn.LayerNorm([4, 5]), (3, 4, 5), True),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_eager_gradients_equal_static_gradients(name):
    make, shape, x_grad = LAYERS[name]
    with context.static_mode_guard(False):
        template = make()
        # running statistics (not trainable) keep their valid initial values
        values = [_weights(p.shape, k) if p.trainable else p.numpy()
                  for k, p in enumerate(template.parameters())]
    x_value = _weights(shape, 99)
    with context.static_mode_guard(False):
        out_shape = make()(paddle.to_tensor(x_value)).shape
    out_weight = _weights(out_shape, 100)
    e_out, e_xg, e_grads, e_after = _eager(make, x_value, x_grad, values, out_weight)
    s_out, s_xg, s_grads, s_after = _static(make, x_value, x_grad, values, out_weight)
    np.testing.assert_allclose(e_out, s_out, rtol=1e-6, atol=1e-7)
    if x_grad:
        np.testing.assert_allclose(e_xg, s_xg, rtol=1e-5, atol=1e-6)
    assert len(e_grads) == len(s_grads)
    for k, (e, s) in enumerate(zip(e_grads, s_grads)):
        assert (e is None) == (s is None), f"parameter {k}"
        if e is not None:
            np.testing.assert_allclose(e, s, rtol=1e-5, atol=1e-6, err_msg=f"parameter {k}")
    for e, s in zip(e_after, s_after):    # running statistics updated the same way
        np.testing.assert_allclose(e, s, rtol=1e-6, atol=1e-7)


def test_embedding_gradients_equal_static():
    ids = np.array([[1, 3, 3], [0, 9, 1]], np.int64)
    make = lambda: paddle.nn.Embedding(10, 4, padding_idx=0)  # noqa: E731
    table = _weights([10, 4], 1)
    out_weight = _weights([2, 3, 4], 2)
    e_out, _, e_grads, _ = _eager(make, ids, False, [table], out_weight)
    s_out, _, s_grads, _ = _static(make, ids, False, [table], out_weight)
    np.testing.assert_array_equal(e_out, s_out)
    np.testing.assert_allclose(e_grads[0], s_grads[0], rtol=1e-6)
    assert not e_out[1, 0].any() and not e_grads[0][0].any()   # padding row: zero output, no gradient
