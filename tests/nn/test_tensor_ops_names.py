"""Every ``paddle.*`` name the tensor-op families add runs and matches a reference written here:
the unary and binary tables in both modes against NumPy/math, the remaining functions, and every
in-place ``_`` variant against its out-of-place function (same values, same object, version + 1)."""
import math

import numpy as np
import pytest

import headrace as paddle
from headrace.core import context
from headrace.nn import paddle_ops
from tests.nn.test_tensor_ops_api import run_both

rng = np.random.default_rng(37)
U = rng.uniform(-0.9, 0.9, (2, 3))        # in every unary domain below (after the shifts)
POS = rng.uniform(1.2, 3.0, (2, 3))
INT = rng.integers(-9, 9, (2, 3)).astype(np.int64)
INT2 = rng.integers(1, 9, (2, 3)).astype(np.int64)

UNARY = {
    "acos": (np.arccos, U), "asin": (np.arcsin, U), "atan": (np.arctan, U), "atanh": (np.arctanh, U),
    "asinh": (np.arcsinh, U), "acosh": (np.arccosh, POS), "cosh": (np.cosh, U), "sinh": (np.sinh, U),
    "tan": (np.tan, U), "expm1": (np.expm1, U), "log10": (np.log10, POS), "log2": (np.log2, POS),
    "frac": (lambda a: a - np.trunc(a), POS * np.sign(U)), "gammaln": (np.vectorize(math.lgamma), POS),
    "digamma": (np.vectorize(lambda v: (math.lgamma(v + 1e-5) - math.lgamma(v - 1e-5)) / 2e-5), POS),
    "neg": (np.negative, U), "negative": (np.negative, U), "reciprocal": (np.reciprocal, POS),
    "rsqrt": (lambda a: 1 / np.sqrt(a), POS), "sgn": (np.sign, U), "logical_not": (np.logical_not, INT),
    "bitwise_not": (np.invert, INT), "bitwise_invert": (np.invert, INT), "isinf": (np.isinf, np.array([np.inf, -np.inf, 1.0, np.nan])),
    "nan_to_num": (lambda a: np.nan_to_num(a, posinf=np.finfo(a.dtype).max, neginf=np.finfo(a.dtype).min),
                   np.array([np.nan, np.inf, -np.inf, 1.0])),
    "deg2rad": (np.deg2rad, U), "rad2deg": (np.rad2deg, U), "stanh": (lambda a: 1.7159 * np.tanh(0.67 * a), U),
    "logit": (lambda a: np.log(a / (1 - a)), np.abs(U)),
    "erfinv": (None, U), "i0": (np.i0, U), "i0e": (lambda a: np.exp(-np.abs(a)) * np.i0(a), U),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_names(name):
    ref, x = UNARY[name]
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.asarray(x)
        for got in run_both(getattr(paddle, name), [x]):
            if name == "erfinv":   # erf(erfinv(y)) == y, erf from the math module
                np.testing.assert_allclose(np.vectorize(math.erf)(got[0]), x, rtol=1e-12)
                continue
            want = ref(x)
            assert got[0].dtype == want.dtype, (name, got[0].dtype, want.dtype)
            np.testing.assert_allclose(got[0], want, rtol=1e-7 if name == "digamma" else 1e-12)


BINARY = {
    "bitwise_and": (np.bitwise_and, INT, INT2), "bitwise_or": (np.bitwise_or, INT, INT2),
    "bitwise_xor": (np.bitwise_xor, INT, INT2), "lcm": (np.lcm, INT, INT2),
    "copysign": (np.copysign, U, -U), "div": (np.divide, U, POS), "true_divide": (np.divide, U, POS),
    "sub": (np.subtract, U, POS), "floor_mod": (np.mod, U, POS), "fmax": (np.fmax, U, -U), "fmin": (np.fmin, U, -U),
    "heaviside": (np.heaviside, U, POS), "hypot": (np.hypot, U, POS), "logaddexp": (np.logaddexp, U, POS),
    "logical_and": (np.logical_and, INT, INT2), "logical_or": (np.logical_or, INT, INT2),
    "eq": (np.equal, INT, INT2), "equal": (np.equal, INT, INT2), "ne": (np.not_equal, INT, INT2),
    "not_equal": (np.not_equal, INT, INT2), "ge": (np.greater_equal, U, -U), "greater": (np.greater, U, -U),
    "greater_equal": (np.greater_equal, U, -U), "greater_than": (np.greater, U, -U), "gt": (np.greater, U, -U),
    "le": (np.less_equal, U, -U), "less": (np.less, U, -U), "less_equal": (np.less_equal, U, -U),
    "less_than": (np.less, U, -U), "lt": (np.less, U, -U),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_names(name):
    ref, x, y = BINARY[name]
    want = ref(x, y)
    for got in run_both(getattr(paddle, name), [x, y]):
        assert got[0].dtype == want.dtype, (name, got[0].dtype)
        np.testing.assert_allclose(got[0], want, rtol=1e-12)


M = rng.standard_normal((3, 4))
OTHERS = [
    ("amin", lambda a: paddle.amin(a, axis=1), lambda a: a.min(1), [M]),
    ("atleast_1d", paddle.atleast_1d, lambda a: a.reshape(1), [np.array(2.0)]),
    ("atleast_3d", paddle.atleast_3d, lambda a: a[None, :, None], [M[0]]),
    ("cat", lambda a, b: paddle.cat([a, b], axis=1), lambda a, b: np.concatenate([a, b], 1), [M, M]),
    ("hstack", lambda a, b: paddle.hstack([a, b]), lambda a, b: np.hstack([a, b]), [M, M]),
    ("index_sample", paddle.index_sample, lambda a, i: np.take_along_axis(a, i, 1), [M, np.array([[3, 0]] * 3)]),
    ("is_empty", paddle.is_empty, lambda a: np.array(False), [M]),
    ("matrix_transpose", paddle.matrix_transpose, lambda a: a.T, [M]),
    ("mm", paddle.mm, np.matmul, [M, M.T]), ("msort", paddle.msort, lambda a: np.sort(a, 0), [M]),
    ("nanmean", paddle.nanmean, lambda a: np.array(np.nanmean(a)), [np.array([1.0, np.nan, 4.0])]),
    ("permute", lambda a: paddle.permute(a, [1, 0]), lambda a: a.T, [M]),
    ("reverse", lambda a: paddle.reverse(a, [0]), lambda a: a[::-1], [M]),
    ("scatter_nd_add", lambda a, i, u: paddle.scatter_nd_add(a, i, u),
     lambda a, i, u: a + np.array([[0, 0, 0, 0], [0, 0, 3.0, 0], [0, 0, 0, 0]]),
     [M, np.array([[1, 2], [1, 2]]), np.array([1.0, 2.0])]),
    ("swapdims", lambda a: paddle.swapdims(a, 0, 1), lambda a: a.T, [M]),
    ("view", lambda a: paddle.view(a, [4, 3]), lambda a: a.reshape(4, 3), [M]),
]


@pytest.mark.parametrize("row", OTHERS, ids=[r[0] for r in OTHERS])
def test_other_names(row):
    _, fn, ref, arrays = row
    want = ref(*arrays)
    for got in run_both(fn, arrays):
        np.testing.assert_allclose(got[0], want, rtol=1e-12)


def test_constants_shapes_and_random_likes():
    assert (paddle.pi, paddle.e, paddle.newaxis) == (math.pi, math.e, None)
    assert paddle.inf == math.inf and math.isnan(paddle.nan)
    assert paddle.broadcast_shape([3, 1], [4]) == [3, 4] and paddle.broadcast_shapes([2, 1], [1, 5], [5]) == [2, 5]
    with context.static_mode_guard(False):
        x = paddle.ones([3, 2], "float64")
        assert paddle.randn_like(x).shape == [3, 2] and paddle.randn_like(x).dtype == "float64"
        r = paddle.randint_like(paddle.ones([50], "int64"), 2, 5).numpy()
        assert r.dtype == np.int64 and r.min() >= 2 and r.max() < 5
        p = paddle.poisson(paddle.full([400], 3.0, "float64")).numpy()
        assert 2.6 < p.mean() < 3.4


# in-place variant -> arguments after x (None: x only)
ARGS = {
    "clip_": (-0.2, 0.3), "cast_": ("float32",), "reshape_": ([3, 2],), "flatten_": (), "squeeze_": (),
    "unsqueeze_": (0,), "t_": (), "transpose_": ([1, 0],), "tril_": (), "triu_": (), "cumsum_": (1,),
    "masked_fill_": ("MASK", 5.0), "scatter_": ("IDS", "UPD"), "nan_to_num_": (), "pow_": (2.0,),
    "scale_": (3.0,), "cumprod_": (1,), "index_add_": ("IDS", 0, "UPD"), "index_fill_": ("IDS", 1, -2.0),
    "index_put_": ("IDX2", "VAL2"), "renorm_": (2.0, 0, 0.5), "masked_scatter_": ("MASK", "Y"),
    "multigammaln_": (3,), "polygamma_": (1,), "ldexp_": ("INTS",), "lerp_": ("Y", 0.3), "put_along_axis_": ("IDS2", 9.0, 1),
}
_BINARY_INPLACE = {"bitwise_left_shift_", "bitwise_right_shift_", "add_", "bitwise_and_", "bitwise_or_", "bitwise_xor_", "copysign_", "div_", "divide_",
                   "equal_", "floor_divide_", "floor_mod_", "gcd_", "greater_equal_", "greater_than_", "hypot_",
                   "lcm_", "less_", "less_equal_", "less_than_", "logical_and_", "logical_or_", "logical_xor_",
                   "mod_", "multiply_", "remainder_", "sub_", "subtract_"}
_INT_INPLACE = {"bitwise_left_shift_", "bitwise_right_shift_", "bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_not_", "bitwise_invert_", "gcd_", "lcm_"}


@pytest.mark.parametrize("name", sorted(set(paddle_ops.INPLACE) - {"fill_", "zero_", "addmm_", "baddbmm_", "uniform_",
                                                                    "normal_", "log_normal_"}))
def test_every_inplace_variant_equals_its_function(name):
    base = paddle_ops._base(name)
    a = (rng.integers(1, 9, (2, 3)) if name in _INT_INPLACE else rng.uniform(0.2, 0.9, (2, 3))).astype(
        np.int64 if name in _INT_INPLACE else np.float64)
    with context.static_mode_guard(False):
        def arg(v):
            if v == "MASK":
                return paddle.to_tensor(a > 0.5)
            if v == "IDS":
                return paddle.to_tensor(np.array([1]))
            if v == "UPD":
                return paddle.to_tensor(np.ones((1, 3)))
            special = {"IDX2": (paddle.to_tensor(np.array([0, 1])), paddle.to_tensor(np.array([2, 0]))),
                       "VAL2": paddle.to_tensor(np.array([5.0, 6.0])), "INTS": paddle.to_tensor(np.array([1, 2, -1])),
                       "Y": paddle.to_tensor(a[::-1].copy()), "IDS2": paddle.to_tensor(np.array([[0], [2]]))}
            return special.get(v, v) if isinstance(v, str) else v
        if name in _BINARY_INPLACE:
            args = (paddle.to_tensor(a[::-1].copy()),)
        else:
            args = tuple(arg(v) for v in ARGS.get(name, ()))
        want = base(paddle.to_tensor(a), *args)
        x = paddle.to_tensor(a)
        got = getattr(paddle, name)(x, *args)
        assert got is x and x.inplace_version == 1
        method = getattr(paddle.to_tensor(a), name)(*args)
        for out in (x, method):
            expected = want.numpy()
            if name not in ("cast_", "reshape_", "flatten_", "squeeze_", "unsqueeze_", "t_", "transpose_"):
                expected = expected.astype(a.dtype)
            np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
            assert out.shape == list(expected.shape)


def test_random_refills_and_baddbmm_inplace():
    with context.static_mode_guard(False):
        x = paddle.zeros([500], "float64")
        assert paddle.uniform_(x, 2.0, 3.0) is x and x.dtype == "float64" and x.inplace_version == 1
        assert 2.0 <= x.numpy().min() and x.numpy().max() < 3.0
        x.normal_(5.0, 0.1)
        assert abs(x.numpy().mean() - 5.0) < 0.05
        paddle.log_normal_(x, 0.0, 0.1)
        assert x.numpy().min() > 0 and x.inplace_version == 3
        c = paddle.to_tensor(np.ones((2, 2, 2)))
        e = paddle.to_tensor(np.stack([np.eye(2)] * 2))
        paddle.baddbmm_(c, e, e, beta=2.0, alpha=3.0)
        np.testing.assert_allclose(c.numpy(), 2.0 + 3.0 * np.stack([np.eye(2)] * 2))


def test_addmm_inplace_fill_and_zero():
    with context.static_mode_guard(False):
        c = paddle.to_tensor(np.ones((2, 2)))
        a = paddle.to_tensor(np.eye(2))
        paddle.addmm_(c, a, a, beta=2.0, alpha=3.0)
        np.testing.assert_allclose(c.numpy(), 2.0 + 3.0 * np.eye(2))
        assert paddle.zero_(c) is c and not c.numpy().any()
