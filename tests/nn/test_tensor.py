"""paddle.* math and manipulation functions against NumPy."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
from tests.helpers import build_and_run

rng = np.random.default_rng(4)
X = rng.normal(size=(2, 3, 4))
Y = rng.normal(size=(2, 3, 4))


def _run(build, **feeds):
    return build_and_run(build, feeds)


@pytest.mark.parametrize("fn, ref", [
    (paddle.add, np.add), (paddle.subtract, np.subtract), (paddle.multiply, np.multiply),
    (paddle.divide, np.divide), (paddle.maximum, np.maximum), (paddle.minimum, np.minimum),
])
def test_binary(fn, ref):
    (got,), _ = _run(fn, x=X, y=Y)
    np.testing.assert_allclose(got, ref(X, Y), rtol=1e-12)


@pytest.mark.parametrize("fn, ref", [
    (lambda x: paddle.mean(x), lambda x: x.mean()),
    (lambda x: paddle.mean(x, axis=1), lambda x: x.mean(1)),
    (lambda x: paddle.mean(x, axis=[0, 2], keepdim=True), lambda x: x.mean((0, 2), keepdims=True)),
    (lambda x: paddle.sum(x, axis=-1), lambda x: x.sum(-1)),
    (lambda x: paddle.max(x, axis=0), lambda x: x.max(0)),
    (lambda x: paddle.min(x), lambda x: x.min()),
    (lambda x: fluid.layers.reduce_mean(x, dim=[1]), lambda x: x.mean(1)),
    (lambda x: fluid.layers.reduce_sum(x, dim=2, keep_dim=True), lambda x: x.sum(2, keepdims=True)),
    (lambda x: fluid.layers.reduce_max(x), lambda x: x.max().reshape(1)),   # fluid 1.x: shape [1]
    (lambda x: fluid.layers.mean(x), lambda x: x.mean().reshape(1)),
])
def test_reductions(fn, ref):
    (got,), _ = _run(fn, x=X)
    want = ref(X)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_reduction_op_names_follow_the_reference():
    _, (out,) = _run(lambda x: paddle.mean(x), x=X)
    assert out.op.type == "reduce_mean" and out.name.startswith("mean_")
    _, (out,) = _run(lambda x: fluid.layers.mean(x), x=X)
    assert out.op.type == "mean"


def test_manipulation():
    (r, t, c, f, sq, usq, sl), _ = _run(lambda x, y: (
        paddle.reshape(x, [0, -1]), paddle.transpose(x, [2, 0, 1]), paddle.concat([x, y], axis=1),
        paddle.flatten(x, 1, 2), paddle.squeeze(paddle.unsqueeze(x, 0), 0), paddle.unsqueeze(x, [0, 4]),
        fluid.layers.slice(x, axes=[1, 2], starts=[1, 0], ends=[3, -1])), x=X, y=Y)
    np.testing.assert_array_equal(r, X.reshape(2, 12))
    np.testing.assert_array_equal(t, X.transpose(2, 0, 1))
    np.testing.assert_array_equal(c, np.concatenate([X, Y], 1))
    np.testing.assert_array_equal(f, X.reshape(2, 12))
    np.testing.assert_array_equal(sq, X)
    assert usq.shape == (1, 2, 3, 4, 1)
    np.testing.assert_array_equal(sl, X[:, 1:3, 0:-1])


def test_split_by_count_and_sections():
    parts, outs = _run(lambda x: paddle.split(x, 2, axis=2), x=X)
    np.testing.assert_array_equal(parts[0], X[:, :, :2])
    np.testing.assert_array_equal(parts[1], X[:, :, 2:])
    parts, _ = _run(lambda x: fluid.layers.split(x, [1, -1], dim=1), x=X)
    np.testing.assert_array_equal(parts[1], X[:, 1:])


def test_creation_functions():
    (f, z, o, a, c), _ = _run(lambda: (paddle.full([2, 2], 3.5), paddle.zeros([3], "int64"), paddle.ones([1]),
                                       paddle.assign(np.arange(4.0).reshape(2, 2)),
                                       paddle.cast(paddle.full([2], 2.7), "int32")))
    np.testing.assert_array_equal(f, np.full((2, 2), 3.5, "float32"))
    assert z.dtype == np.int64 and o.dtype == np.float32
    np.testing.assert_array_equal(a, np.arange(4.0).reshape(2, 2))
    np.testing.assert_array_equal(c, [2, 2])


def test_fluid_elementwise_with_axis_and_act():
    bias = rng.normal(size=(3,))
    (got,), _ = _run(lambda x, b: fluid.layers.elementwise_add(x, b, axis=1, act="relu"), x=X, b=bias)
    np.testing.assert_allclose(got, np.maximum(X + bias.reshape(1, 3, 1), 0), rtol=1e-12)


def test_matmul_variants():
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    (m2, m1, mu), _ = _run(lambda a, b: (paddle.matmul(a, b, transpose_y=True),
                                         fluid.layers.matmul(a, b, transpose_y=True, alpha=2.0),
                                         fluid.layers.mul(a, paddle.full([4, 6], 1.0, "float64"), x_num_col_dims=2)),
                           a=a, b=b)
    np.testing.assert_allclose(m2, a @ b.transpose(0, 2, 1), rtol=1e-12)
    np.testing.assert_allclose(m1, 2 * (a @ b.transpose(0, 2, 1)), rtol=1e-12)
    np.testing.assert_allclose(mu, np.repeat(a.sum(-1, keepdims=True), 6, -1), rtol=1e-12)


def test_fluid_flatten_is_2d():
    (f1, f0, f3), _ = _run(lambda x: (fluid.layers.flatten(x, 1), fluid.layers.flatten(x, 0),
                                      fluid.layers.flatten(x, 3)), x=X)
    assert f1.shape == (2, 12) and f0.shape == (1, 24) and f3.shape == (24, 1)
