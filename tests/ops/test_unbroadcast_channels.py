"""The gradient of a broadcast per-channel operand (a conv bias: [N, C, H, W] summed to [C]) is
summed row by row on the intra-op threads (ops/elementwise.py ``_channel_sums``): the same bits
for any thread count, the values of the plain sum."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops import elementwise, parallel
from headrace.ops.elementwise import unbroadcast

RNG = np.random.default_rng(5)


@pytest.fixture
def threads(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 8)
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    yield lambda count: paddle.set_flags({"FLAGS_paddle_num_threads": count})
    paddle.set_flags(old)


@pytest.mark.parametrize("shape, aligned", [((6, 3, 5, 4), (1, 3, 1, 1)), ((7, 2, 3, 5), (1, 2, 3, 1)),
                                            ((3, 4, 6), (3, 4, 1)), ((5, 4, 9), (1, 4, 1))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_channel_sums_match_the_plain_sum_with_the_same_bits_for_any_thread_count(threads, shape, aligned, dtype):
    grad = RNG.standard_normal(shape).astype(dtype)
    target = tuple(d for d in aligned if d != 1) or (1,)
    axes = tuple(i for i, d in enumerate(aligned) if d == 1)
    assert elementwise._channel_sums(grad, axes) is not None
    bits = set()
    for count in (1, 2, 3):
        threads(count)
        got = unbroadcast(grad, aligned, target)
        assert got.shape == target and got.dtype == grad.dtype
        np.testing.assert_allclose(got, grad.astype("float64").sum(axis=axes).reshape(target),
                                   rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)
        bits.add(got.tobytes())
    assert len(bits) == 1


@pytest.mark.parametrize("shape, aligned, why", [
    ((6, 3), (1, 3), "the last axis kept: rows added whole"),
    ((4, 3, 5), (4, 1, 5), "kept axes on both sides of a summed one"),
    ((4, 3, 5), (1, 1, 1), "every axis summed"),
])
def test_other_axes_keep_the_plain_sum(shape, aligned, why):
    grad = RNG.standard_normal(shape).astype("float32")
    axes = tuple(i for i, d in enumerate(aligned) if d == 1)
    assert elementwise._channel_sums(grad, axes) is None, why
    target = tuple(d if d != 1 else 1 for d in aligned)
    np.testing.assert_array_equal(unbroadcast(grad, aligned, target), grad.sum(axis=axes, keepdims=True))


def test_integer_and_strided_gradients():
    ints = RNG.integers(-5, 5, (4, 3, 5)).astype("int32")
    assert elementwise._channel_sums(ints, (0, 2)) is None
    np.testing.assert_array_equal(unbroadcast(ints, (1, 3, 1), (3,)), ints.sum(axis=(0, 2)))
    strided = RNG.standard_normal((4, 5, 3)).astype("float64").transpose(0, 2, 1)   # [4, 3, 5], not contiguous
    np.testing.assert_allclose(unbroadcast(strided, (1, 3, 1), (3,)), strided.sum(axis=(0, 2)), rtol=1e-12)


@pytest.mark.parametrize("shape, aligned", [((0, 3, 4, 4), (1, 3, 1, 1)), ((2, 0, 4, 4), (1, 0, 1, 1)),
                                            ((2, 3, 0, 4), (1, 3, 1, 1))])
def test_empty_gradients_sum_to_zeros(shape, aligned):
    """An empty batch (or channel axis, or image) gives zeros of the operand's shape (review: the
    row view could not infer its length from an empty array)."""
    grad = np.ones(shape, "float32")
    target = tuple(d for d in aligned if d != 1) or (1,)
    got = unbroadcast(grad, aligned, target)
    assert got.shape == target
    np.testing.assert_array_equal(got, np.zeros(target, "float32"))
