"""max_pool2d_with_index and unpool: forward against loop references written here (first maximum
of a window in row-major order), shape inference with an unknown batch, float64 gradient checks,
and the F/nn forms (return_mask, MaxUnPool1D/2D) in both modes."""
import math

import numpy as np
import pytest

import headrace as paddle
import headrace.nn.functional as F
from headrace.core import context
from tests.nn.layer_checks import both_modes, fd_grad
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(8)


def _windows(size, k, s, before, after, ceil_mode, adaptive):
    if adaptive:
        return [((i * size) // k, math.ceil((i + 1) * size / k)) for i in range(k)]
    out = (size + before + after - k + (s - 1 if ceil_mode else 0)) // s + 1
    return [(max(i * s - before, 0), min(i * s - before + k, size)) for i in range(out)]


def _ref(ins, attrs):
    x = ins["X"]
    n, c, h, w = x.shape
    p = attrs.get("paddings", [0, 0])
    p = [p[0], p[0], p[1], p[1]] if len(p) == 2 else p
    k, s = attrs["ksize"], attrs.get("strides", [1, 1])
    ad, cm = attrs.get("adaptive", False), attrs.get("ceil_mode", False)
    rows = _windows(h, k[0], s[0], p[0], p[1], cm, ad)
    cols = _windows(w, k[1], s[1], p[2], p[3], cm, ad)
    out = np.zeros((n, c, len(rows), len(cols)), x.dtype)
    mask = np.zeros(out.shape, np.int32)
    for b in range(n):
        for ch in range(c):
            for i, (r0, r1) in enumerate(rows):
                for j, (c0, c1) in enumerate(cols):
                    best = None
                    for r in range(r0, r1):
                        for q in range(c0, c1):
                            if best is None or x[b, ch, r, q] > x[b, ch, best[0], best[1]]:
                                best = (r, q)
                    out[b, ch, i, j] = x[b, ch, best[0], best[1]]
                    mask[b, ch, i, j] = best[0] * w + best[1]
    return {"Out": out, "Mask": mask}


TIES = np.array([[[[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, 0.0, 3.0], [0.0, 0.0, 1.0, 1.0]]]])
CASES = [
    Case("max_pool2d_with_index", {"X": rng.standard_normal((2, 3, 5, 6))}, _ref, {"ksize": [2, 2], "strides": [2, 2]},
         id="2x2"),
    Case("max_pool2d_with_index", {"X": rng.standard_normal((1, 2, 5, 5))}, _ref,
         {"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}, id="padded"),
    Case("max_pool2d_with_index", {"X": rng.standard_normal((1, 2, 5, 5)).astype("float32")}, _ref,
         {"ksize": [2, 3], "strides": [2, 2], "paddings": [0, 1, 1, 0], "ceil_mode": True}, id="ceil-asym-f32"),
    Case("max_pool2d_with_index", {"X": rng.standard_normal((2, 2, 7, 5))}, _ref, {"ksize": [3, 2], "adaptive": True},
         id="adaptive"),
    Case("max_pool2d_with_index", {"X": TIES}, _ref, {"ksize": [2, 2], "strides": [1, 2]}, id="ties-first-max"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_max_pool_with_index(case):
    check_forward(case)
    check_infer_batch(case)


@pytest.mark.parametrize("case", CASES[:2] + CASES[3:4], ids=[c.id for c in CASES[:2] + CASES[3:4]])
def test_max_pool_with_index_gradient(case):
    check_grad("max_pool2d_with_index", case.inputs, case.attrs, out_slots=("Out",))


def _unpool_ref(ins, attrs):
    x, idx = ins["X"], ins["Indices"]
    n, c = x.shape[:2]
    out = np.zeros((n, c) + tuple(attrs["output_size"]), x.dtype)
    for b in range(n):
        for ch in range(c):
            for v, i in zip(x[b, ch].ravel(), idx[b, ch].ravel()):
                out[b, ch].reshape(-1)[i] = v
    return {"Out": out}


def test_unpool_op():
    x = rng.standard_normal((2, 2, 2, 3))
    idx = np.stack([rng.permutation(20)[:6].reshape(2, 3) for _ in range(4)]).reshape(2, 2, 2, 3).astype("int32")
    case = Case("unpool", {"X": x, "Indices": idx}, _unpool_ref, {"output_size": [4, 5]})
    check_forward(case)
    check_infer_batch(case)
    check_grad("unpool", case.inputs, case.attrs, wrt=("X",))
    check_build_error("unpool", {"X": x, "Indices": idx}, {"output_size": [4]}, Exception, match="output_size")


def test_return_mask_and_unpool_forms():
    x = rng.standard_normal((2, 3, 6, 4)).astype(np.float32)
    with context.static_mode_guard(False):
        out, mask = F.max_pool2d(paddle.to_tensor(x), 2, return_mask=True)
        want = _ref({"X": x}, {"ksize": [2, 2], "strides": [2, 2]})
        np.testing.assert_array_equal(out.numpy(), want["Out"])
        np.testing.assert_array_equal(mask.numpy(), want["Mask"])
        back = paddle.nn.MaxUnPool2D(2)(out, mask).numpy()
        assert back.shape == x.shape
        np.testing.assert_array_equal(back, _unpool_ref({"X": want["Out"], "Indices": want["Mask"]},
                                                        {"output_size": [6, 4]})["Out"])
        o1, m1 = F.max_pool1d(paddle.to_tensor(x[:, :, 0]), 3, 1, padding=1, return_mask=True)
        w1 = _ref({"X": x[:, :, :1]}, {"ksize": [1, 3], "paddings": [0, 0, 1, 1]})
        np.testing.assert_array_equal(m1.numpy(), w1["Mask"][:, :, 0])
        u1 = F.max_unpool1d(o1, m1, 3, 1, padding=1)
        assert u1.shape == [2, 3, 4]
        oa, ma = F.adaptive_max_pool2d(paddle.to_tensor(x), [4, 3], return_mask=True)
        np.testing.assert_array_equal(ma.numpy(), _ref({"X": x}, {"ksize": [4, 3], "adaptive": True})["Mask"])
        with pytest.raises(ValueError, match="output_size"):
            F.max_unpool2d(out, mask, 2, output_size=[9, 9])


def test_pool_unpool_layers_both_modes_and_gradients():
    class PoolUnpool(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.pool = paddle.nn.MaxPool2D(2, return_mask=True)
            self.unpool = paddle.nn.MaxUnPool2D(2)

        def forward(self, x):
            return self.unpool(*self.pool(x))

    x = rng.standard_normal((2, 2, 4, 6))
    both_modes(PoolUnpool, x, lambda v, p: _unpool_ref(
        {"X": _ref({"X": v}, {"ksize": [2, 2], "strides": [2, 2]})["Out"],
         "Indices": _ref({"X": v}, {"ksize": [2, 2], "strides": [2, 2]})["Mask"]}, {"output_size": [4, 6]})["Out"])
    fd_grad(lambda t: F.max_unpool1d(*F.max_pool1d(t, 2, return_mask=True), 2), [x[:, :, 0]])
