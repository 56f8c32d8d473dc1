"""Exact gelu on float32 (``special.normal_tail`` in float64 chunks): against math.erfc, one
correctly rounded float32 value at a time, over the whole range, in place and across chunks."""
import importlib.util
import math
import pathlib

import numpy as np
import pytest

from headrace.ops import activation, special
from headrace.ops.activation import _CHUNK
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import KernelContext, context
from headrace.ops.registry import lookup
from headrace.ops.special import normal_cdf

DX, DOUT = grad_slot("X"), grad_slot("Out")
EXACT = {"approximate": False}


def _points(n=20000, seed=3):
    rng = np.random.default_rng(seed)
    return np.concatenate([np.linspace(-15.0, 15.0, n), rng.standard_normal(n) * 3,
                           np.array([0.0, -0.0, 1e-30, -1e-30, -13.9, 40.0, -40.0, 1e4, -1e4])]).astype(np.float32)


def _ulps(got, want):
    """Units in the last place between two float32 arrays of finite numbers."""
    def ordered(a):
        i = a.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(got) - ordered(want))


def _phi(v):
    return 0.5 * math.erfc(-v / math.sqrt(2.0))


def test_normal_cdf_relative_error_is_below_1e8_everywhere():
    x = np.concatenate([np.linspace(-37.0, 37.0, 100001), [0.0, -1e-300, 1e-300]])
    got = normal_cdf(x)
    want = np.array([_phi(v) for v in x])
    normal = want > 1e-300
    assert np.max(np.abs(got[normal] - want[normal]) / want[normal]) <= 1e-8
    assert normal_cdf(np.array([np.inf, -np.inf]))[0] == 1.0 and normal_cdf(np.array([-np.inf]))[0] == 0.0
    _, density = normal_cdf(x, density=True)
    np.testing.assert_allclose(density, np.exp(-x * x / 2), rtol=1e-12, atol=0)  # x**2 rounds differently


def test_float32_gelu_is_within_one_ulp_of_the_correctly_rounded_value():
    x = _points()
    got = lookup("gelu").kernel({"X": x}, EXACT, context())["Out"]
    want = np.array([float(v) * _phi(float(v)) for v in x]).astype(np.float32)
    assert got.dtype == np.float32
    assert _ulps(got, want).max() <= 1
    assert np.mean(got == want) > 0.95          # mostly correctly rounded


def _gelu(x):
    return lookup("gelu").kernel({"X": x}, EXACT, context())["Out"]


def test_float32_gelu_gradient_is_within_three_half_ulps_of_its_terms():
    """(Phi(x) + x phi(x)) dOut, with Phi(x) = Out / x from the forward's float32 Out (one
    rounding) where Out is a normal float32.  The two terms cancel near x = -0.75, so the error is
    measured against the size of the terms (|Phi| + |x phi|) |dOut|, in float32 half-ulps:
    Out's rounding, the forward's approximation and the final rounding."""
    x = np.concatenate([_points(seed=4), np.array([1e-40, -1e-40, -13.5, -14.0, -20.0], np.float32)])
    dout = np.random.default_rng(5).uniform(0.5, 2.0, x.shape).astype(np.float32)
    got = lookup("gelu_grad").kernel({"X": x, "Out": _gelu(x), DOUT: dout}, EXACT, context([DX]))[DX]
    terms = [(_phi(float(v)), float(v) * math.exp(-float(v) ** 2 / 2) / math.sqrt(2 * math.pi), float(d))
             for v, d in zip(x, dout)]
    want = np.array([(p + q) * d for p, q, d in terms])
    scale = np.array([(abs(p) + abs(q)) * d for p, q, d in terms])
    assert got.dtype == np.float32
    assert np.all(np.abs(got - want) <= 3 * 2.0 ** -24 * scale + 1e-45)


@pytest.mark.parametrize("op", ["gelu", "gelu_grad"])
def test_float32_gelu_in_place_across_chunks_and_on_views_is_bit_identical(op):
    """More elements than one chunk; the handed buffer may be the input itself (inplace); a
    transposed input gives the same numbers as its contiguous copy."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((_CHUNK // 64 + 3, 130)) * 4).astype(np.float32)
    opdef = lookup(op)
    out_slot, reads = ("Out", {"X": x}) if op == "gelu" else (DX, {"X": x, "Out": _gelu(x), DOUT: x * 0.5})
    plain = opdef.kernel(dict(reads), EXACT, context([out_slot]))[out_slot]
    own = reads["X"].copy() if op == "gelu" else reads[DOUT].copy()
    inplace = dict(reads, **({"X": own} if op == "gelu" else {DOUT: own}))
    got = opdef.kernel(inplace, EXACT, KernelContext(frozenset([out_slot]), {out_slot: own}))[out_slot]
    assert got is own and np.array_equal(got, plain)
    transposed = {k: np.ascontiguousarray(v.T).T for k, v in reads.items()}
    assert np.array_equal(opdef.kernel(transposed, EXACT, context([out_slot]))[out_slot], plain)


def test_float32_gelu_gradient_without_out_is_bit_identical():
    """Out is an optional slot of gelu_grad (programs built without it still load and run): the
    kernel then computes the forward again, which gives the same bits."""
    x = _points(seed=8)
    dout = np.random.default_rng(9).standard_normal(x.shape).astype(np.float32)
    kernel = lookup("gelu_grad").kernel
    with_out = kernel({"X": x, "Out": _gelu(x), DOUT: dout}, EXACT, context([DX]))[DX]
    without = kernel({"X": x, DOUT: dout}, EXACT, context([DX]))[DX]
    np.testing.assert_array_equal(without, with_out)


@pytest.mark.parametrize("op", ["gelu", "gelu_grad"])
@pytest.mark.parametrize("chunk", [64, 777, 4096])
def test_float32_gelu_does_not_depend_on_the_chunk_length(op, chunk, monkeypatch):
    """Each element goes through the same passes whatever the float64 chunk it lands in (full
    chunks, a ragged last one, SIMD tails at any offset): the bits of the default chunk length."""
    x = np.concatenate([_points(n=5000, seed=10), np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)])
    opdef = lookup(op)
    out_slot, reads = ("Out", {"X": x}) if op == "gelu" else (DX, {"X": x, "Out": _gelu(x), DOUT: x * 0.5})
    want = opdef.kernel(dict(reads), EXACT, context([out_slot]))[out_slot]
    monkeypatch.setattr(activation, "_CHUNK", chunk)
    got = opdef.kernel(dict(reads), EXACT, context([out_slot]))[out_slot]
    assert got.tobytes() == want.tobytes()


def test_float32_gelu_special_values():
    """inf, nan and signed zeros: gelu(inf) = inf (not inf * 0), gelu(-inf) = nan as x Phi(x);
    the gradient is 1/2 at both zeros (Phi computed again where Out is 0) and nan where Out is."""
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45, -20.0, 3e38, -3e38], np.float32)
    out = _gelu(x)
    np.testing.assert_array_equal(out, np.array([np.inf, np.nan, np.nan, 0.0, 0.0, 1e-45, 0.0, 0.0, 3e38, 0.0], np.float32))
    grad = lookup("gelu_grad").kernel({"X": x, "Out": out, DOUT: np.ones_like(x)}, EXACT, context([DX]))[DX]
    np.testing.assert_array_equal(grad, np.array([np.nan, np.nan, np.nan, 0.5, 0.5, 0.5, 0.5, 0.0, 1.0, 0.0], np.float32))


def test_the_fit_script_gives_the_coefficients_and_the_bound():
    """scripts/fit_erfc.py derives normal_tail's polynomial (degree 11, scale k = 2.05): the same
    constants to the printed digits, and a fit error below the 1e-8 the tests above rely on."""
    path = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "fit_erfc.py"
    spec = importlib.util.spec_from_file_location("fit_erfc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    coefficients, error = module.fit(len(special._ERFC_P) - 1, special._ERFC_K)
    assert [float(f"{c:.17e}") for c in coefficients] == list(special._ERFC_P)
    assert error < 6e-9


def test_the_gradient_fast_path_bound_keeps_out_normal():
    """gelu_grad skips the check of Out when every x >= -13 and |x| >= 2**-124: there x Phi(x)
    is a normal float32 (its smallest magnitudes are at the ends: -13 and +-2**-124)."""
    low, _ = activation._NORMAL_OUT
    bits = np.arange(np.float32(-12.0).view(np.int32), np.float32(low).view(np.int32) + 1, dtype=np.int64)
    exponents = np.random.default_rng(11).uniform(-124.0, 0.0, 20000)
    small = (2.0 ** exponents).astype(np.float32)
    x = np.concatenate([bits.astype(np.int32).view(np.float32), small, -small,
                        np.array([2.0 ** -124, -2.0 ** -124], np.float32)])
    assert x.min() == low and np.min(x.astype(np.float64) ** 2) >= activation._NORMAL_OUT[1]
    assert np.abs(_gelu(x)).min() >= np.finfo(np.float32).tiny
