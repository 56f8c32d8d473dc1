"""Eager indexing, ``__setitem__`` and in-place ``_`` variants (nn/tensor_index.py): values against
NumPy, gradients against float64 central differences, inplace_version, the leaf rule, and the same
indexing in static programs."""
import warnings

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core import context

rng = np.random.default_rng(31)
A = rng.standard_normal((3, 4, 5))


def _numeric_grad(f, arrays, eps=1e-6):
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            g[idx] = (f(*plus) - f(*minus)) / (2 * eps)
        grads.append(g)
    return grads


INDICES = [np.s_[::2, 1], np.s_[..., ::-2], np.s_[None, 0, :, None], np.s_[[2, 0, 2]], np.s_[:, [1, 1], 2:],
           np.s_[A[:, :, 0] > 0], np.s_[1, [0, 3], [4, 4]], np.s_[-1, 1:3, ::3]]


@pytest.mark.parametrize("index", INDICES, ids=[str(i)[:30] for i in INDICES])
def test_getitem_values_and_gradient(index):
    w = rng.standard_normal(A[index].shape)

    def value(a):
        return float(np.sum(paddle.to_tensor(a)[index].numpy() * w))
    x = paddle.to_tensor(A, stop_gradient=False)
    y = x[index]
    np.testing.assert_array_equal(y.numpy(), A[index])
    (y * paddle.to_tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _numeric_grad(value, [A])[0], rtol=1e-6, atol=1e-8)


def test_getitem_with_tensor_indices():
    x = paddle.to_tensor(A)
    i = paddle.to_tensor(np.array([2, 0]))
    np.testing.assert_array_equal(x[i].numpy(), A[[2, 0]])
    np.testing.assert_array_equal(x[x > 0.5].numpy(), A[A > 0.5])
    np.testing.assert_array_equal(x[1, paddle.to_tensor(np.array([True, False, True, False]))].numpy(),
                                  A[1, [True, False, True, False]])
    with pytest.raises(TypeError, match="index tensor"):
        x[paddle.to_tensor(np.array([0.5]))]
    with pytest.raises(IndexError):
        x[:, :, :, 0]


def _setitem_fn(index, value_shape):
    def f(a, v):
        y = paddle.to_tensor(a) * 2.0
        y[index] = paddle.to_tensor(v) if value_shape is not None else 1.5
        return y
    return f


SET_INDICES = [(np.s_[0], (5,)), (np.s_[:, 1:3], (2, 1)), (np.s_[[2, 0, 2], 1], (5,)), (np.s_[::-1, 0, ::2], ()),
               (np.s_[A[..., 0] > 0], (5,)), (np.s_[1, 2, 3], None)]


@pytest.mark.parametrize("index, value_shape", SET_INDICES, ids=[str(i)[:30] for i, _ in SET_INDICES])
def test_setitem_values_and_gradients(index, value_shape):
    v = rng.standard_normal(value_shape or ())
    want = A * 2.0
    want[index] = v if value_shape is not None else 1.5
    w = rng.standard_normal(A.shape)
    f = _setitem_fn(index, value_shape)
    x = paddle.to_tensor(A, stop_gradient=False)
    vt = paddle.to_tensor(v, stop_gradient=False)
    y = x * 2.0
    y[index] = vt if value_shape is not None else 1.5
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-15)
    assert y.inplace_version == 1 and not y.stop_gradient
    (y * paddle.to_tensor(w)).sum().backward()

    def loss(a, b):
        return float(np.sum(f(a, b).numpy() * w))
    gx, gv = _numeric_grad(loss, [A.copy(), np.asarray(v, dtype=np.float64)])
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-6, atol=1e-8)
    if value_shape is not None:
        np.testing.assert_allclose(vt.grad.numpy(), gv, rtol=1e-6, atol=1e-8)


def test_earlier_readers_keep_the_old_value_for_their_gradients():
    a = rng.standard_normal((3, 2))
    x = paddle.to_tensor(a, stop_gradient=False)
    y = x * 1.0
    z = y * y               # saves y's old value
    y[0] = 0.0
    (z.sum() + y.sum()).backward()
    mask = np.ones_like(a)
    mask[0] = 0
    np.testing.assert_allclose(x.grad.numpy(), 2 * a + mask)
    np.testing.assert_allclose(z.numpy(), a * a)


def test_leaf_requiring_grad_cannot_be_written_except_without_grad():
    x = paddle.to_tensor(np.zeros(3), stop_gradient=False)
    with pytest.raises(ValueError, match="leaf"):
        x[0] = 1.0
    with pytest.raises(ValueError, match="leaf"):
        paddle.tanh_(x)
    with paddle.no_grad():
        x[0] = 1.0
    assert x.numpy().tolist() == [1.0, 0.0, 0.0] and x.inplace_version == 1
    c = paddle.to_tensor(np.zeros(3))   # stop_gradient: free to write
    c[1:] = paddle.to_tensor(np.array([4.0, 5.0]))
    assert c.numpy().tolist() == [0.0, 4.0, 5.0]


def test_inplace_variants():
    a = rng.uniform(0.1, 0.9, (2, 3))
    x = paddle.to_tensor(a)
    same = paddle.tanh_(x)
    assert same is x and x.inplace_version == 1
    np.testing.assert_allclose(x.numpy(), np.tanh(a))
    x.add_(paddle.ones([2, 3], "float64"))
    x.scale_(2.0)
    np.testing.assert_allclose(x.numpy(), (np.tanh(a) + 1) * 2)
    x.reshape_([3, 2])
    assert x.shape == [3, 2] and x.inplace_version == 4
    x.zero_()
    assert not x.numpy().any()
    x.fill_(3.0)
    assert x.numpy().tolist() == [[3.0, 3.0]] * 3
    n = paddle.to_tensor(np.array([1, 5]))
    paddle.equal_(n, paddle.to_tensor(np.array([1, 4])))      # the result keeps x's dtype
    assert n.dtype == "int64" and n.numpy().tolist() == [1, 0]
    y = paddle.to_tensor(a, stop_gradient=False) * 1.0
    paddle.exp_(y)
    y.sum().backward()


def test_inplace_gradient_flows():
    a = rng.uniform(-1, 1, (2, 3))
    x = paddle.to_tensor(a, stop_gradient=False)
    y = x * 3.0
    y.tanh_()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * (1 - np.tanh(3.0 * a) ** 2), rtol=1e-12)


def test_static_mode_setitem_and_inplace():
    with context.static_mode_guard(True):
        main = static.Program()
        with static.program_guard(main, static.Program()):
            x = static.data("x", [3, 2], "float64")
            x.stop_gradient = False
            y = x * 2.0
            old = y
            y[0] = 5.0
            y[1:, 1] = paddle.full([2], 7.0, "float64")
            assert y is old
            loss = paddle.sum(y * y)
            grad = static.gradients([loss], [x])[0]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t = paddle.tanh_(x)
            assert any("does not perform inplace" in str(w.message) for w in caught) and t is not x
        a = rng.standard_normal((3, 2))
        got_y, got_g = static.Executor().run(main, feed={"x": a}, fetch_list=[y, grad])
    want = a * 2.0
    want[0] = 5.0
    want[1:, 1] = 7.0
    np.testing.assert_allclose(got_y, want)
    mask = np.ones_like(a)
    mask[0] = 0
    mask[1:, 1] = 0
    np.testing.assert_allclose(got_g, 2 * want * 2.0 * mask)


def test_static_getitem_with_steps_and_masks():
    with context.static_mode_guard(True):
        main = static.Program()
        with static.program_guard(main, static.Program()):
            x = static.data("x", [-1, 4, 5], "float64")
            outs = [x[::2, ::-1], x[:, None, 1], x[x > 0], x[:, [3, 0]]]
        got = static.Executor().run(main, feed={"x": A}, fetch_list=outs)
    for g, w in zip(got, [A[::2, ::-1], A[:, None, 1], A[A > 0], A[:, [3, 0]]]):
        np.testing.assert_array_equal(g, w)


def test_static_setitem_on_a_parameter_writes_it_in_place():
    with context.static_mode_guard(True):
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            w = static.create_parameter([3, 2], "float32", default_initializer=paddle.nn.initializer.Constant(1.0))
            name = w.name
            w[0] = 5.0
            assert w.name == name          # a persistable keeps its variable
            out = w * 1.0
        scope = static.global_scope()
        exe = static.Executor()
        exe.run(startup)
        got = exe.run(main, fetch_list=[out])[0]
    want = np.ones((3, 2), np.float32)
    want[0] = 5.0
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.array(scope.find_var(name).get_tensor()), want)
