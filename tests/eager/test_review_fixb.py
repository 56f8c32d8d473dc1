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
