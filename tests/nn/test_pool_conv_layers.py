"""Pooling (1-D/2-D, adaptive) and convolution layers (Conv1D, Conv2DTranspose, Conv1DTranspose):
both modes agree with each other and with NumPy references written here (loops over output
positions), gradients against central differences, and the conv2d_transpose op's own checks."""
import math

import numpy as np
import pytest

import headrace as paddle
import headrace.nn.functional as F
from headrace.core import context
from headrace.core.errors import AttrError
from tests.nn.layer_checks import both_modes, fd_grad
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(3)
nn = paddle.nn


# --- NumPy references ------------------------------------------------------------------------------
def np_pool2d(x, kind, k, s, pads, ceil_mode=False, exclusive=True):
    """pads (top, bottom, left, right); windows clipped to the input (the reference CPU kernel)."""
    n, c, h, w = x.shape
    out_hw = []
    for size, kk, ss, before, after in ((h, k[0], s[0], pads[0], pads[1]), (w, k[1], s[1], pads[2], pads[3])):
        extra = ss - 1 if ceil_mode else 0
        out_hw.append((size + before + after - kk + extra) // ss + 1)
    out = np.zeros((n, c) + tuple(out_hw))
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            h0, w0 = i * s[0] - pads[0], j * s[1] - pads[2]
            h1, w1 = min(h0 + k[0], h), min(w0 + k[1], w)
            hs, ws = max(h0, 0), max(w0, 0)
            window = x[:, :, hs:h1, ws:w1]
            if kind == "max":
                out[:, :, i, j] = window.max(axis=(2, 3))
            else:
                count = (h1 - hs) * (w1 - ws) if exclusive else k[0] * k[1]
                out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    return out


def np_adaptive2d(x, kind, out_hw):
    n, c, h, w = x.shape
    out = np.zeros((n, c) + tuple(out_hw))
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            hs, he = (i * h) // out_hw[0], math.ceil((i + 1) * h / out_hw[0])
            ws, we = (j * w) // out_hw[1], math.ceil((j + 1) * w / out_hw[1])
            window = x[:, :, hs:he, ws:we]
            out[:, :, i, j] = window.max(axis=(2, 3)) if kind == "max" else window.mean(axis=(2, 3))
    return out


def np_conv1d(x, w, b, stride, pad, dilation, groups):
    n, c, length = x.shape
    o, cg, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[1])))
    out_len = (length + pad[0] + pad[1] - dilation * (k - 1) - 1) // stride + 1
    out = np.zeros((n, o, out_len))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for t in range(out_len):
            taps = xp[:, g * cg:(g + 1) * cg, t * stride: t * stride + dilation * (k - 1) + 1: dilation]
            out[:, oc, t] = np.einsum("nck,ck->n", taps, w[oc])
    return out + (0 if b is None else b[None, :, None])


def np_conv2d_transpose(x, w, b, stride, pads, dilation, groups, output_padding=(0, 0)):
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    full_h = (h - 1) * stride[0] + dilation[0] * (kh - 1) + 1 + output_padding[0]
    full_w = (wd - 1) * stride[1] + dilation[1] * (kw - 1) + 1 + output_padding[1]
    full = np.zeros((n, og * groups, full_h + pads[1], full_w + pads[3]))
    for ic in range(c):
        g = ic // cg
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for bb in range(kw):
                        full[:, g * og:(g + 1) * og, i * stride[0] + a * dilation[0], j * stride[1] + bb * dilation[1]] \
                            += x[:, ic, i, j][:, None] * w[ic, :, a, bb][None, :]
    out_h = full_h - pads[0] - pads[1]
    out_w = full_w - pads[2] - pads[3]
    out = full[:, :, pads[0]:pads[0] + out_h, pads[2]:pads[2] + out_w]
    return out + (0 if b is None else b[None, :, None, None])


# --- pooling -----------------------------------------------------------------------------------------
POOLS = {
    "max2d": (lambda: nn.MaxPool2D(3, 2, 1), (2, 3, 7, 6), lambda x, p: np_pool2d(x, "max", (3, 3), (2, 2), (1,) * 4)),
    "max2d-ceil": (lambda: nn.MaxPool2D(2, ceil_mode=True), (1, 2, 5, 5),
                   lambda x, p: np_pool2d(x, "max", (2, 2), (2, 2), (0,) * 4, ceil_mode=True)),
    "avg2d-exclusive": (lambda: nn.AvgPool2D(3, 2, padding=[1, 0]), (2, 2, 6, 7),
                        lambda x, p: np_pool2d(x, "avg", (3, 3), (2, 2), (1, 1, 0, 0))),
    "avg2d-inclusive": (lambda: nn.AvgPool2D(2, 1, padding=1, exclusive=False), (1, 2, 4, 4),
                        lambda x, p: np_pool2d(x, "avg", (2, 2), (1, 1), (1,) * 4, exclusive=False)),
    "avg2d-divisor": (lambda: nn.AvgPool2D(2, divisor_override=3), (1, 2, 4, 4),
                      lambda x, p: np_pool2d(x, "avg", (2, 2), (2, 2), (0,) * 4) * 4 / 3),
    "max1d": (lambda: nn.MaxPool1D(3, 2, padding=1), (2, 3, 9),
              lambda x, p: np_pool2d(x[:, :, None], "max", (1, 3), (1, 2), (0, 0, 1, 1))[:, :, 0]),
    "avg1d": (lambda: nn.AvgPool1D(2), (2, 3, 8),
              lambda x, p: np_pool2d(x[:, :, None], "avg", (1, 2), (1, 2), (0,) * 4)[:, :, 0]),
    "adaptive-avg2d": (lambda: nn.AdaptiveAvgPool2D([3, 2]), (2, 2, 7, 5), lambda x, p: np_adaptive2d(x, "avg", (3, 2))),
    "adaptive-max2d": (lambda: nn.AdaptiveMaxPool2D(3), (2, 2, 7, 5), lambda x, p: np_adaptive2d(x, "max", (3, 3))),
    "adaptive-avg2d-none": (lambda: nn.AdaptiveAvgPool2D([None, 2]), (1, 2, 4, 5),
                            lambda x, p: np_adaptive2d(x, "avg", (4, 2))),
    "adaptive-avg1d": (lambda: nn.AdaptiveAvgPool1D(4), (2, 3, 10),
                       lambda x, p: np_adaptive2d(x[:, :, None], "avg", (1, 4))[:, :, 0]),
    "adaptive-max1d": (lambda: nn.AdaptiveMaxPool1D(3), (2, 3, 10),
                       lambda x, p: np_adaptive2d(x[:, :, None], "max", (1, 3))[:, :, 0]),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pool_layers(name):
    make, shape, reference = POOLS[name]
    both_modes(make, rng.standard_normal(shape), reference)


def test_pool_nhwc_and_pair_padding_forms():
    x = rng.standard_normal((2, 6, 5, 3)).astype(np.float32)
    want = np_pool2d(x.transpose(0, 3, 1, 2), "max", (2, 2), (1, 1), (1, 0, 0, 1)).transpose(0, 2, 3, 1)
    with context.static_mode_guard(False):
        got = F.max_pool2d(paddle.to_tensor(x), 2, 1, [[0, 0], [1, 0], [0, 1], [0, 0]], data_format="NHWC")
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
        same = F.avg_pool2d(paddle.to_tensor(x.transpose(0, 3, 1, 2)), 3, 2, padding="SAME")
        assert same.shape == [2, 3, 3, 3]


def test_pool_errors():
    with context.static_mode_guard(False):
        x = paddle.to_tensor(np.zeros((1, 2, 4, 4), np.float32))
        with pytest.raises(ValueError, match="return_mask"):
            F.max_pool2d(paddle.to_tensor(np.zeros((1, 4, 4, 2), np.float32)), 2, return_mask=True,
                         data_format="NHWC")
        with pytest.raises(ValueError, match="padding"):
            F.max_pool2d(x, 2, padding=[1, 2, 3])
        with pytest.raises(ValueError, match="batch and channel"):
            F.max_pool2d(x, 2, padding=[[1, 1], [0, 0], [0, 0], [0, 0]])
        with pytest.raises(Exception, match="3-D"):
            F.max_pool1d(x, 2)


def test_pool_gradients_against_differences():
    x = rng.standard_normal((1, 2, 5, 6))
    fd_grad(lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True), [x])
    fd_grad(lambda t: F.adaptive_avg_pool1d(t, 3), [x[:, :, 0]])
    fd_grad(lambda t: F.max_pool1d(t, 2, 1), [x[:, :, 1]])
    fd_grad(lambda t: F.adaptive_max_pool2d(t, [2, 4]), [x])


# --- convolutions ------------------------------------------------------------------------------------
def _conv1d_ref(stride, pad, dilation, groups):
    return lambda x, p: np_conv1d(x, p[0], p[1], stride, pad, dilation, groups)


CONVS = {
    "conv1d": (lambda: nn.Conv1D(3, 4, 3, padding=1), (2, 3, 7), _conv1d_ref(1, (1, 1), 1, 1)),
    "conv1d-strided": (lambda: nn.Conv1D(4, 6, 2, stride=2, dilation=2, groups=2, padding=[1, 0]), (2, 4, 9),
                       _conv1d_ref(2, (1, 0), 2, 2)),
    "conv2d-transpose": (lambda: nn.Conv2DTranspose(3, 2, 3, stride=2, padding=1), (2, 3, 3, 4),
                         lambda x, p: np_conv2d_transpose(x, p[0], p[1], (2, 2), (1, 1, 1, 1), (1, 1), 1)),
    "conv2d-transpose-groups": (lambda: nn.Conv2DTranspose(4, 6, (2, 3), stride=(1, 2), groups=2, dilation=2,
                                                           output_padding=1), (1, 4, 3, 3),
                                lambda x, p: np_conv2d_transpose(x, p[0], p[1], (1, 2), (0,) * 4, (2, 2), 2, (1, 1))),
    "conv1d-transpose": (lambda: nn.Conv1DTranspose(3, 2, 3, stride=2), (2, 3, 4),
                         lambda x, p: np_conv2d_transpose(x[:, :, None], p[0][:, :, None], p[1], (1, 2), (0,) * 4,
                                                          (1, 1), 1)[:, :, 0]),
}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_layers(name):
    make, shape, reference = CONVS[name]
    both_modes(make, rng.standard_normal(shape), reference, rtol=1e-4, atol=1e-5)


def test_conv1d_nlc_and_same_padding():
    x = rng.standard_normal((2, 7, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3)).astype(np.float32)
    with context.static_mode_guard(False):
        got = F.conv1d(paddle.to_tensor(x), paddle.to_tensor(w), padding="SAME", data_format="NLC").numpy()
    want = np_conv1d(x.transpose(0, 2, 1), w, None, 1, (1, 1), 1, 1).transpose(0, 2, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_transpose_output_size_and_same():
    x = rng.standard_normal((1, 2, 3, 3)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    with context.static_mode_guard(False):
        big = F.conv2d_transpose(paddle.to_tensor(x), paddle.to_tensor(w), stride=2, padding=1, output_size=[6, 6])
        small = F.conv2d_transpose(paddle.to_tensor(x), paddle.to_tensor(w), stride=2, padding=1)
        same = F.conv2d_transpose(paddle.to_tensor(x), paddle.to_tensor(w), stride=2, padding="SAME")
        with pytest.raises(AttrError, match="output_size"):
            F.conv2d_transpose(paddle.to_tensor(x), paddle.to_tensor(w), stride=2, padding=1, output_size=[8, 8])
    # SAME pads as the forward convolution of this geometry would: total (ceil(3/2) - 1) * 2 + 3 - 3 = 2,
    # so the output is (3 - 1) * 2 - 2 + 3 = 5 (the reference's UpdatePaddingAndDilation on the input dims)
    assert small.shape == [1, 3, 5, 5] and big.shape == [1, 3, 6, 6] and same.shape == [1, 3, 5, 5]
    np.testing.assert_allclose(same.numpy(), small.numpy(), rtol=1e-6)
    np.testing.assert_allclose(big.numpy()[:, :, :5, :5], small.numpy(), rtol=1e-6)
    want = np_conv2d_transpose(x, w, None, (2, 2), (1, 1, 1, 1), (1, 1), 1, (1, 1))
    np.testing.assert_allclose(big.numpy(), want, rtol=1e-5, atol=1e-5)


def test_conv_gradients_against_differences():
    fd_grad(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=1, groups=2),
            [rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 2, 3)), rng.standard_normal(2)])
    fd_grad(lambda x, w: F.conv1d_transpose(x, w, stride=2, padding=1, output_padding=1),
            [rng.standard_normal((1, 2, 4)), rng.standard_normal((2, 3, 3))])


# --- the conv2d_transpose op ----------------------------------------------------------------------------
def _op_ref(stride, pads, dilation, groups, output_padding=(0, 0), nhwc=False):
    def reference(ins, attrs):
        x = ins["Input"].transpose(0, 3, 1, 2) if nhwc else ins["Input"]
        out = np_conv2d_transpose(x, ins["Filter"], None, stride, pads, dilation, groups, output_padding)
        return {"Output": (out.transpose(0, 2, 3, 1) if nhwc else out).astype(ins["Input"].dtype)}
    return reference


OP_CASES = [
    Case("conv2d_transpose", {"Input": rng.standard_normal((2, 3, 3, 4)), "Filter": rng.standard_normal((3, 2, 3, 3))},
         _op_ref((2, 2), (1, 1, 1, 1), (1, 1), 1), {"strides": [2, 2], "paddings": [1, 1]}, rtol=1e-10, id="basic"),
    Case("conv2d_transpose", {"Input": rng.standard_normal((1, 4, 3, 3)), "Filter": rng.standard_normal((4, 1, 2, 2))},
         _op_ref((1, 2), (0, 1, 1, 0), (2, 1), 2, (0, 1)),
         {"strides": [1, 2], "paddings": [0, 1, 1, 0], "dilations": [2, 1], "groups": 2, "output_padding": [0, 1]},
         rtol=1e-10, id="groups-dilation-asym"),
    Case("conv2d_transpose", {"Input": rng.standard_normal((2, 3, 4, 2)), "Filter": rng.standard_normal((2, 3, 2, 2))},
         _op_ref((2, 2), (0,) * 4, (1, 1), 1, nhwc=True), {"strides": [2, 2], "data_format": "NHWC"}, rtol=1e-10,
         id="nhwc"),
]


@pytest.mark.parametrize("case", OP_CASES, ids=[c.id for c in OP_CASES])
def test_conv2d_transpose_op(case):
    check_forward(case)
    check_infer_batch(Case(case.op, case.inputs, case.reference, case.attrs, batch_slots=("Input",), rtol=1e-10))
    check_grad("conv2d_transpose", case.inputs, case.attrs)


def test_conv2d_transpose_op_errors():
    check_build_error("conv2d_transpose", {"Input": np.zeros((1, 3, 4, 4)), "Filter": np.zeros((2, 2, 3, 3))}, {},
                      Exception, match="Filter")
    check_build_error("conv2d_transpose", {"Input": np.zeros((1, 2, 4, 4)), "Filter": np.zeros((2, 2, 3, 3))},
                      {"output_padding": [1, 1]}, AttrError, match="output_padding")
