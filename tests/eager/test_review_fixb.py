"""Integration review (fixB): the eager dispatch cache and value-dependent creation ops."""
import numpy as np

import headrace as paddle
from headrace.core.fetched import scalar_like


def test_negative_zero_attribute_is_not_served_from_the_cache_of_positive_zero():
    # 0.0 == -0.0 and both hash alike: the signature must still tell them apart
    assert not np.signbit(paddle.full([2], 0.0).numpy()).any()
    assert np.signbit(paddle.full([2], -0.0).numpy()).all()
    x = paddle.to_tensor([1.0])
    assert not np.signbit(paddle.scale(x, scale=0.0).numpy()).any()
    assert np.signbit(paddle.scale(x, scale=-0.0).numpy()).all()
    assert np.signbit(paddle.scale(x, scale=np.float64(-0.0)).numpy()).all()


def test_arange_takes_its_dtype_from_tensor_and_numpy_float_bounds():
    step = paddle.arange(0, 1, paddle.to_tensor(0.25))
    assert str(step.dtype).endswith("float32")
    np.testing.assert_array_equal(step.numpy(), np.array([0.0, 0.25, 0.5, 0.75], np.float32))
    np.testing.assert_array_equal(paddle.arange(np.float32(2.5)).numpy(), np.array([0.0, 1.0, 2.0], np.float32))
    ints = paddle.arange(paddle.to_tensor(3))
    assert str(ints.dtype).endswith("int64")
    np.testing.assert_array_equal(ints.numpy(), [0, 1, 2])


def test_arange_takes_a_fetched_shape_one_value():
    n = scalar_like(np.array([4], np.int64))      # what Executor.run returns for a [1] int64
    np.testing.assert_array_equal(paddle.arange(n).numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(paddle.arange(0, n, 2).numpy(), [0, 2])
    try:
        paddle.arange(np.array([1, 2]))
    except TypeError as exc:
        assert "end" in str(exc) and "[2]" in str(exc)
    else:
        raise AssertionError("arange accepted a two-element bound")


def _block(x, w):
    y = paddle.matmul(x, w)
    y[0] = paddle.tanh(y[1])        # in-place on an intermediate inside the recomputed function
    y[:, 1] *= 2.0
    return paddle.exp(y * 0.1)


def _loss(xv, wv, mode):
    from headrace.distributed.fleet.utils import recompute
    x = paddle.to_tensor(xv, stop_gradient=mode is None)
    w = paddle.to_tensor(wv, stop_gradient=mode is None)
    z = _block(x, w) if mode in (None, "plain") else recompute(_block, x, w, use_reentrant=mode == "reentrant")
    return x, w, (z * z).sum()


def test_setitem_inside_recompute_gives_finite_difference_gradients():
    rng = np.random.default_rng(1)
    x0, w0 = rng.standard_normal((3, 4)), rng.standard_normal((4, 4))
    expected = []
    for which in (0, 1):
        g = np.zeros_like((x0, w0)[which])
        for i in np.ndindex(g.shape):
            vals = []
            for sign in (1, -1):
                args = [x0.copy(), w0.copy()]
                args[which][i] += sign * 1e-6
                vals.append(_loss(*args, None)[2].item())
            g[i] = (vals[0] - vals[1]) / 2e-6
        expected.append(g)
    for mode in ("plain", "reentrant", "non_reentrant"):
        x, w, loss = _loss(x0, w0, mode)
        loss.backward()
        np.testing.assert_allclose(x.grad.numpy(), expected[0], atol=1e-7, err_msg=mode)
        np.testing.assert_allclose(w.grad.numpy(), expected[1], atol=1e-7, err_msg=mode)


def test_setitem_on_a_leaf_inside_reentrant_recompute_still_refused():
    from headrace.distributed.fleet.utils import recompute

    def f(x):
        x[0] = 1.0
        return x * 2.0
    x = paddle.to_tensor(np.ones(3), stop_gradient=False)
    try:
        recompute(f, x)     # refused in the forward, before the leaf is changed
    except ValueError as exc:
        assert "leaf" in str(exc)
    else:
        raise AssertionError("an in-place change of a leaf requiring grad went through")
    np.testing.assert_array_equal(x.numpy(), np.ones(3))


def test_iterating_a_zero_d_tensor_is_an_error_not_empty():
    # without __iter__, Python iterated by indexing until IndexError: a 0-D Tensor looked empty
    try:
        list(paddle.to_tensor(1))
    except TypeError as exc:
        assert "0-D" in str(exc)
    else:
        raise AssertionError("a 0-D Tensor iterated")
    rows = list(paddle.to_tensor(np.arange(6.0).reshape(2, 3)))
    assert [r.shape for r in rows] == [[3], [3]]
    np.testing.assert_array_equal(rows[1].numpy(), [3.0, 4.0, 5.0])


def test_axis_given_as_a_tensor_is_used_not_dropped():
    x0 = np.arange(6.0).reshape(2, 3)
    x = paddle.to_tensor(x0)
    axis = paddle.to_tensor(1)
    assert paddle.unsqueeze(x, axis).shape == [2, 1, 3]
    np.testing.assert_allclose(paddle.mean(x, axis=axis).numpy(), x0.mean(axis=1))
    np.testing.assert_allclose(paddle.sum(x, axis=paddle.to_tensor([0])).numpy(), x0.sum(axis=0))
    assert paddle.squeeze(paddle.unsqueeze(x, 0), paddle.to_tensor(0)).shape == [2, 3]
    axis.set_value(np.array(0))     # a changed value is read again (nothing cached by the Tensor)
    assert paddle.unsqueeze(x, axis).shape == [1, 2, 3]
    np.testing.assert_allclose(paddle.mean(x, axis=axis).numpy(), x0.mean(axis=0))
