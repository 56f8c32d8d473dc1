"""conv2d's Filter@GRAD has two layouts (ops/conv.py): per-sample products summed over the batch
when they are small, else one GEMM over batch-innermost columns.  Both against a loop reference."""
import numpy as np
import pytest

from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

DW = grad_slot("Filter")


def _reference_dw(x, dout, w_shape, stride, pad, groups):
    """dW[m, c, i, j] = sum over n, oh, ow of dOut[n, m, oh, ow] * Xpad[n, g*cg + c, oh*s + i, ow*s + j]."""
    m, cg, kh, kw = w_shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = dout.shape[2:]
    dw = np.zeros(w_shape)
    for f in range(m):
        g = f // (m // groups)
        for c in range(cg):
            for i in range(kh):
                for j in range(kw):
                    window = xp[:, g * cg + c, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
                    dw[f, c, i, j] = np.sum(dout[:, f] * window)
    return dw


@pytest.mark.parametrize("x_shape, w_shape, stride, pad, groups, per_sample", [
    ((4, 1, 9, 9), (3, 1, 3, 3), 1, 0, 1, True),      # few filters of few cells: per-sample partials
    ((3, 2, 8, 8), (4, 1, 2, 2), 2, 1, 2, True),
    ((2, 6, 5, 5), (8, 6, 3, 3), 1, 1, 1, False),     # partials larger than Output@GRAD: one GEMM
    ((2, 4, 4, 4), (6, 2, 3, 3), 2, 1, 2, False),
])
def test_filter_gradient_in_both_layouts(x_shape, w_shape, stride, pad, groups, per_sample):
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    attrs = {**lookup("conv2d").attrs, "strides": [stride, stride], "paddings": [pad, pad], "groups": groups}
    out = lookup("conv2d").kernel({"Input": x, "Filter": w}, attrs, context(["Output"]))["Output"]
    dout = rng.standard_normal(out.shape)
    n, m, k = x_shape[0], w_shape[0], w_shape[1] * w_shape[2] * w_shape[3]
    assert (n * m * k <= dout.size * groups) == per_sample
    ins = {"Input": x, "Filter": w, grad_slot("Output"): dout}
    dw = lookup("conv2d_grad").kernel(ins, attrs, context([DW]))[DW]
    np.testing.assert_allclose(dw, _reference_dw(x, dout, w_shape, stride, pad, groups), rtol=1e-12, atol=1e-12)
    both = lookup("conv2d_grad").kernel(ins, attrs, context([DW, grad_slot("Input")]))
    np.testing.assert_array_equal(both[DW], dw)    # the same numbers whether Input@GRAD is wanted or not
