"""pool2d has two implementations (strided window offsets for small regular windows, gather with
index arrays otherwise): both give the same forward outputs and gradients on every pool case."""
import numpy as np
import pytest

from headrace.ops import pool2d as pool_ops
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup
from tests.ops.test_conv import POOL_CASES, ids


def _both_paths(monkeypatch, op, ins, attrs, slot):
    opdef = lookup(op)
    full = {**opdef.attrs, **attrs}
    strided = opdef.kernel(ins, full, context([slot]))[slot]
    monkeypatch.setattr(pool_ops, "_STRIDED_MAX_CELLS", 0)
    gathered = opdef.kernel(ins, full, context([slot]))[slot]
    return strided, gathered


@pytest.mark.parametrize("case", POOL_CASES, ids=ids(POOL_CASES))
def test_strided_and_gathered_pooling_agree(case, monkeypatch):
    x = case.inputs["X"]
    strided, gathered = _both_paths(monkeypatch, "pool2d", {"X": x}, case.attrs, "Out")
    assert strided.dtype == gathered.dtype == x.dtype and strided.flags.c_contiguous
    if case.attrs.get("pooling_type", "max") == "max":
        np.testing.assert_array_equal(strided, gathered)
    else:
        np.testing.assert_allclose(strided, gathered, rtol=1e-6 if x.dtype == np.float32 else 1e-13)


@pytest.mark.parametrize("case", [c for c in POOL_CASES if c.attrs.get("pooling_type", "max") == "max"],
                         ids=ids([c for c in POOL_CASES if c.attrs.get("pooling_type", "max") == "max"]))
def test_strided_and_gathered_max_pool_gradients_agree_with_ties(case, monkeypatch):
    x = np.round(case.inputs["X"])             # many ties: the first maximum in row-major order wins
    out = lookup("pool2d").kernel({"X": x}, {**lookup("pool2d").attrs, **case.attrs}, context(["Out"]))["Out"]
    dout = np.arange(1.0, out.size + 1).reshape(out.shape).astype(x.dtype)
    strided, gathered = _both_paths(monkeypatch, "pool2d_grad", {"X": x, grad_slot("Out"): dout}, case.attrs,
                                    grad_slot("X"))
    np.testing.assert_array_equal(strided, gathered)


@pytest.mark.parametrize("case", [c for c in POOL_CASES if c.attrs.get("pooling_type", "max") == "max"],
                         ids=ids([c for c in POOL_CASES if c.attrs.get("pooling_type", "max") == "max"]))
def test_max_pool_gradient_with_the_forward_output_is_bit_identical(case):
    """pool2d_grad may read Out (the windows' maxima) instead of finding them again."""
    x = np.round(case.inputs["X"] * 2)
    attrs = {**lookup("pool2d").attrs, **case.attrs}
    out = lookup("pool2d").kernel({"X": x}, attrs, context(["Out"]))["Out"]
    dout = np.arange(1.0, out.size + 1).reshape(out.shape).astype(x.dtype)
    kernel, wanted = lookup("pool2d_grad").kernel, context([grad_slot("X")])
    without = kernel({"X": x, grad_slot("Out"): dout}, attrs, wanted)[grad_slot("X")]
    with_out = kernel({"X": x, "Out": out, grad_slot("Out"): dout}, attrs, wanted)[grad_slot("X")]
    np.testing.assert_array_equal(with_out, without)
