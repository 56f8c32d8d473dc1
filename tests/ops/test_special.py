"""headrace.ops.special: erf/erfc against the math module, to ~1e-15 relative."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from headrace.ops.special import erf, erfc

REL = 1e-15   # erf: a few units in the last place of float64


def _points():
    """A wide spread: tiny, the region boundaries (0.46875, 4) and their neighbours, the tails."""
    rng = np.random.default_rng(7)
    tiny = np.logspace(-310, -1, 400)
    boundaries = []
    for b in (0.46875, 4.0, 26.543):
        boundaries += [np.nextafter(b, 0.0), b, np.nextafter(b, np.inf)]
    positive = np.concatenate([tiny, np.linspace(0.0, 8.0, 4001), rng.uniform(0.0, 30.0, 2000),
                               np.array(boundaries), np.array([1e3, 1e300])])
    return np.concatenate([positive, -positive])


POINTS = _points()


def _max_rel_error(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    exact = want == 0
    assert np.array_equal(got[exact], want[exact])
    return float(np.max(np.abs(got[~exact] - want[~exact]) / np.abs(want[~exact])))


def test_erf_matches_math_erf_to_1e15_relative():
    want = np.array([math.erf(v) for v in POINTS])
    assert _max_rel_error(erf(POINTS), want) <= REL


def test_erfc_matches_math_erfc_where_normal():
    """erfc is accurate also in the right tail, where 1 - erf would lose every digit."""
    want = np.array([math.erfc(v) for v in POINTS])
    normal = want > 1e-300  # below that math.erfc returns subnormals Cody's scheme flushes to 0
    assert _max_rel_error(erfc(POINTS[normal]), want[normal]) <= 2 * REL
    assert np.all(erfc(POINTS[~normal]) <= 1e-300)


@given(st.floats(min_value=-40.0, max_value=40.0, allow_nan=False))
def test_erf_any_float(x):
    got = float(erf(np.array([x]))[0])
    want = math.erf(x)
    assert abs(got - want) <= REL * abs(want)


def test_erf_is_odd_and_bounded():
    x = POINTS[POINTS > 0]
    np.testing.assert_array_equal(erf(-x), -erf(x))
    values = erf(POINTS)
    assert np.all(np.abs(values) <= 1.0)


def test_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    got = erf(x)
    np.testing.assert_array_equal(got[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(got[1]) and np.isnan(got[4])
    got = erfc(x)
    np.testing.assert_array_equal(got[:4], [1.0, 1.0, 0.0, 2.0])
    assert np.isnan(got[4])


def test_small_arguments_keep_relative_accuracy():
    x = np.array([5e-324, 1e-300, 1e-20, 1.1e-16, 1e-10])
    want = np.array([math.erf(v) for v in x])
    assert _max_rel_error(erf(x[1:]), want[1:]) <= REL
    assert erf(x[:1])[0] == math.erf(5e-324)


@pytest.mark.parametrize("dtype, out", [("float64", "float64"), ("float32", "float32"), ("int64", "float64")])
def test_shape_and_dtype(dtype, out):
    x = np.arange(-3, 3).reshape(2, 3).astype(dtype)
    got = erf(x)
    assert isinstance(got, np.ndarray) and got.shape == (2, 3) and got.dtype == np.dtype(out)
    want = np.array([math.erf(float(v)) for v in x.ravel()]).reshape(2, 3).astype(out)
    np.testing.assert_allclose(got, want, rtol=REL if out == "float64" else np.finfo(np.float32).eps / 2)


def test_zero_dim_in_zero_dim_out():
    got = erf(np.array(0.5))
    assert isinstance(got, np.ndarray) and got.shape == ()
    assert abs(float(got) - math.erf(0.5)) <= REL * math.erf(0.5)
    assert erfc(np.zeros((0, 3))).shape == (0, 3)
