"""matmul's gradients of 2-D operands take a short path (ops/linalg.py ``_matmul_grads_2d``): the
same bits as the general path for every transpose flag, dtype and wanted subset; the general
path still serves handed buffers, batches, 1-D operands and alpha; fused_gemm_epilogue's bias
gradient is elementwise_add's sum, bit for bit."""
import itertools

import numpy as np
import pytest

from headrace.ops import linalg
from headrace.ops.elementwise import unbroadcast
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

DX, DY, DB = grad_slot("X"), grad_slot("Y"), grad_slot("Bias")
RNG = np.random.default_rng(41)


def _general(x, y, d, tx, ty, wanted):
    """The general path: a handed buffer for a slot the op does not have keeps it from the short one."""
    ctx = context(wanted, out={"Unrelated": np.empty(1)})
    return linalg._matmul_grads(x, y, d, tx, ty, 1.0, ctx)


@pytest.mark.parametrize("tx, ty", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("wanted", [(DX, DY), (DX,), (DY,)])
def test_the_short_path_gives_the_general_paths_bits(tx, ty, dtype, wanted, monkeypatch):
    m, k, n = 7, 5, 3
    x = RNG.standard_normal((k, m) if tx else (m, k)).astype(dtype)
    y = RNG.standard_normal((n, k) if ty else (k, n)).astype(dtype)
    d = RNG.standard_normal((m, n)).astype(dtype)
    used = []
    real = linalg._matmul_grads_2d
    monkeypatch.setattr(linalg, "_matmul_grads_2d", lambda *a: used.append(1) or real(*a))
    short = linalg._matmul_grads(x, y, d, tx, ty, 1.0, context(wanted))
    assert used
    general = _general(x, y, d, tx, ty, wanted)
    assert sorted(short) == sorted(general) == sorted(wanted)
    for slot in wanted:
        assert short[slot].dtype == dtype and short[slot].shape == (x if slot == DX else y).shape
        assert short[slot].tobytes() == general[slot].tobytes()
    if DX in wanted:   # against the formula, in float64
        xo, yo = (x.T if tx else x).astype(float), (y.T if ty else y).astype(float)
        want = d @ yo.T
        np.testing.assert_allclose(short[DX], want.T if tx else want, rtol=1e-5, atol=1e-5)
        want_y = xo.T @ d
        if DY in wanted:
            np.testing.assert_allclose(short[DY], want_y.T if ty else want_y, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x_shape, y_shape, alpha", [
    ((2, 4, 3), (3, 5), 1.0),      # a batch
    ((3,), (3, 5), 1.0),           # 1-D operand
    ((4, 3), (3, 5), 0.5),         # alpha (matmul's)
])
def test_other_calls_keep_the_general_path(x_shape, y_shape, alpha, monkeypatch):
    monkeypatch.setattr(linalg, "_matmul_grads_2d", lambda *a: pytest.fail("short path taken"))
    x, y = RNG.standard_normal(x_shape), RNG.standard_normal(y_shape)
    d = RNG.standard_normal(np.matmul(x, y).shape)
    grads = linalg._matmul_grads(x, y, d, False, False, alpha, context((DX, DY)))
    assert grads[DX].shape == x.shape and grads[DY].shape == y.shape


def test_a_handed_buffer_keeps_the_general_path(monkeypatch):
    monkeypatch.setattr(linalg, "_matmul_grads_2d", lambda *a: pytest.fail("short path taken"))
    x, y, d = RNG.standard_normal((4, 3)), RNG.standard_normal((3, 5)), RNG.standard_normal((4, 5))
    buf = np.empty((4, 3))
    grads = linalg._matmul_grads(x, y, d, False, False, 1.0, context((DX,), out={DX: buf}))
    assert grads[DX] is buf
    np.testing.assert_array_equal(buf, d @ y.T)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_epilogue_bias_gradient_is_elementwise_adds_sum(dtype):
    x, y = RNG.standard_normal((33, 6)).astype(dtype), RNG.standard_normal((6, 17)).astype(dtype)
    bias, d = RNG.standard_normal(17).astype(dtype), RNG.standard_normal((33, 17)).astype(dtype)
    grads = lookup("fused_gemm_epilogue_grad").kernel(
        {"X": x, "Y": y, "Bias": bias, grad_slot("Out"): d}, lookup("fused_gemm_epilogue").attrs,
        context((DX, DY, DB)))
    assert grads[DB].dtype == dtype and grads[DB].shape == (17,)
    assert grads[DB].tobytes() == unbroadcast(d, (17,), (17,)).tobytes()
    np.testing.assert_allclose(grads[DB], d.astype(float).sum(axis=0), rtol=1e-5)
