"""sigmoid without a select (ops/activation.py ``sigmoid``): exp(min(x, 0)) / (1 + exp(-|x|)) is,
bit for bit, the two-branch stable formula 1 / (1 + e) for x >= 0 and e / (1 + e) below (e =
exp(-|x|)), on every value class; in place, 0-D, both dtypes; swish and the ops built on it agree."""
import numpy as np
import pytest

from headrace.ops.activation import sigmoid
from headrace.ops.kernel import context
from headrace.ops.registry import lookup


def _two_branch(x):
    e = np.exp(-np.abs(x))
    one = x.dtype.type(1)
    return np.where(x >= 0, one / (one + e), e / (one + e))


def _values(dtype):
    rng = np.random.default_rng(3)
    specials = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-30, -1e-30, 20, -20, 88, -88, 104, -104, 710, -750,
                         np.inf, -np.inf, np.nan, -np.nan], dtype)
    return np.concatenate([specials, (rng.standard_normal(20000) * 12).astype(dtype),
                           rng.uniform(-1e-3, 1e-3, 1000).astype(dtype)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_bits_of_the_two_branch_formula(dtype):
    x = _values(dtype)
    with np.errstate(all="ignore"):
        want = _two_branch(x)
        got = sigmoid(x)
        in_place = x.copy()
        assert sigmoid(in_place, out=in_place) is in_place
    assert got.dtype == dtype
    nan = np.isnan(x)                       # (a NaN's sign and payload are NumPy's business)
    for result in (got, in_place):
        np.testing.assert_array_equal(np.isnan(result), nan)
        assert result[~nan].tobytes() == want[~nan].tobytes()
    assert not (got[np.isfinite(x)] > 1).any() and not (got < 0).any()


def test_zero_d_and_the_op():
    x = np.array(-3.5, np.float32)
    assert sigmoid(x).shape == () and sigmoid(x).tobytes() == _two_branch(x).tobytes()
    out = np.empty((), np.float32)
    assert sigmoid(x, out=out) is out and out.tobytes() == _two_branch(x).tobytes()
    xs = _values(np.float32).reshape(-1, 2)
    with np.errstate(all="ignore"):
        op = lookup("sigmoid").kernel({"X": xs}, lookup("sigmoid").attrs, context(["Out"]))["Out"]
        assert op.tobytes() == _two_branch(xs).tobytes()


@pytest.mark.parametrize("beta", [1.0, 1.5])
def test_swish_and_its_gradient_against_float64(beta):
    """swish = x / (1 + exp(-beta x)) (ops/activation_ext.py): within a few float32 ulps of
    x * sigmoid(beta x), the limits where exp overflows, no warning."""
    x = _values(np.float32)
    x = x[np.isfinite(x)]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out = lookup("swish").kernel({"X": x}, {**lookup("swish").attrs, "beta": beta}, context(["Out"]))["Out"]
        grad = lookup("swish_grad").kernel({"X": x, "Out@GRAD": np.ones_like(x)}, {**lookup("swish").attrs, "beta": beta},
                                           context(["X@GRAD"]))["X@GRAD"]
    x64 = x.astype(np.float64)
    s = _two_branch(beta * x64)
    # float32 rounding, plus beta * x's own rounding, which exp(-beta x) scales by |beta x|
    rounding = 3e-7 * (1 + np.abs(beta * x64) * (beta != 1.0))
    assert (np.abs(out - x64 * s) <= rounding * np.abs(x64 * s) + 1e-37).all()
    term = beta * x64 * s * (1 - s)
    # the same, of the terms' size (their sum cancels where the gradient crosses 0)
    assert (np.abs(grad - (s + term)) <= 1.5 * rounding * (np.abs(s) + np.abs(term)) + 1e-37).all()
    assert out.dtype == grad.dtype == np.float32


@pytest.mark.parametrize("dtype, band", [(np.float32, (-91.9, -86.0)), (np.float64, (-716.0, -706.0))])
def test_swish_far_left_keeps_its_tiny_normal_values(dtype, band):
    """exp(-x) overflows there, x / inf would be -0 (a review found the band); no flag escapes."""
    x = np.linspace(*band, 301).astype(dtype)
    with np.errstate(all="raise"):
        out = lookup("swish").kernel({"X": x}, lookup("swish").attrs, context(["Out"]))["Out"]
        grad = lookup("swish_grad").kernel({"X": x, "Out@GRAD": np.ones_like(x)}, lookup("swish").attrs,
                                           context(["X@GRAD"]))["X@GRAD"]
    x64 = x.astype(np.longdouble)
    s = np.exp(x64) / (1 + np.exp(x64))
    normal = np.abs(x64 * s) >= np.finfo(dtype).tiny
    rtol = 4 * np.finfo(dtype).eps           # a few ulps where the result is a normal float
    np.testing.assert_allclose(out.astype(np.longdouble)[normal], (x64 * s)[normal], rtol=rtol)
    np.testing.assert_allclose(grad.astype(np.longdouble)[normal], (s * (1 + x64 * (1 - s)))[normal], rtol=rtol)
    assert (out < 0).all() and (grad < 0).all()
    with_nan = np.concatenate([x[:5], [np.nan]]).astype(dtype)     # a NaN elsewhere hides nothing
    out_nan = lookup("swish").kernel({"X": with_nan}, lookup("swish").attrs, context(["Out"]))["Out"]
    np.testing.assert_array_equal(out_nan[:5], out[:5])
    assert np.isnan(out_nan[5])
