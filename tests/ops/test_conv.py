"""conv2d, depthwise_conv2d and pool2d against naive references that loop over output positions."""
import math

import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError, ShapeError
from headrace.ops.kernel import context
from tests.ops.harness import Case, build_and_run, check_build_error, check_forward, check_infer_batch, ids, infer_shapes

rng = np.random.default_rng(7)


# --- references ----------------------------------------------------------------------------------
def _pads(attrs, in_hw, ksize, strides):
    """(top, bottom, left, right) the reference would use, written out for the test."""
    algorithm = attrs.get("padding_algorithm", "EXPLICIT")
    if algorithm == "VALID":
        return [0, 0, 0, 0]
    if algorithm == "SAME":
        pads = []
        for size, k, s in zip(in_hw, ksize, strides):
            out = math.ceil(size / s)
            total = max((out - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
        return pads
    p = list(attrs.get("paddings", [0, 0]))
    return [p[0], p[0], p[1], p[1]] if len(p) == 2 else p


def _to_nchw(x, attrs):
    return x.transpose(0, 3, 1, 2) if attrs.get("data_format") == "NHWC" else x


def _from_nchw(out, attrs):
    return out.transpose(0, 2, 3, 1) if attrs.get("data_format") == "NHWC" else out


def conv_reference(ins, attrs):
    x, w = _to_nchw(ins["Input"], attrs), ins["Filter"]
    strides = attrs.get("strides", [1, 1])
    dilations = attrs.get("dilations", [1, 1])
    if attrs.get("padding_algorithm") == "SAME":
        dilations = [1, 1]
    groups = attrs.get("groups", 1)
    t, b, l, r = _pads(attrs, x.shape[2:], w.shape[2:], strides)
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    n, _, hp, wp = xp.shape
    m, cg, kh, kw = w.shape
    span_h, span_w = dilations[0] * (kh - 1) + 1, dilations[1] * (kw - 1) + 1
    oh, ow = (hp - span_h) // strides[0] + 1, (wp - span_w) // strides[1] + 1
    out = np.zeros((n, m, oh, ow), dtype=x.dtype)
    per_group = m // groups
    for o in range(m):
        g = o // per_group
        for i in range(oh):
            for j in range(ow):
                h0, w0 = i * strides[0], j * strides[1]
                patch = xp[:, g * cg:(g + 1) * cg, h0:h0 + span_h:dilations[0], w0:w0 + span_w:dilations[1]]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
    return {"Output": _from_nchw(out, attrs)}


def _bounds(i, size, out, k, stride, pad, adaptive):
    if adaptive:
        return math.floor(i * size / out), math.ceil((i + 1) * size / out)
    start = i * stride - pad
    return max(start, 0), min(start + k, size)


def pool_reference(ins, attrs):
    x = _to_nchw(ins["X"], attrs)
    n, c, h, w = x.shape
    ksize, strides = list(attrs["ksize"]), attrs.get("strides", [1, 1])
    adaptive, exclusive = attrs.get("adaptive", False), attrs.get("exclusive", True)
    if attrs.get("global_pooling", False):
        ksize, pads, oh, ow = [h, w], [0, 0, 0, 0], 1, 1
    elif adaptive:
        pads, (oh, ow) = [0, 0, 0, 0], ksize
    else:
        pads = _pads(attrs, (h, w), ksize, strides)
        extra = [s - 1 if attrs.get("ceil_mode", False) else 0 for s in strides]
        oh = (h + pads[0] + pads[1] - ksize[0] + extra[0]) // strides[0] + 1
        ow = (w + pads[2] + pads[3] - ksize[1] + extra[1]) // strides[1] + 1
    out = np.zeros((n, c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        hs, he = _bounds(i, h, oh, ksize[0], strides[0], pads[0], adaptive)
        for j in range(ow):
            ws, we = _bounds(j, w, ow, ksize[1], strides[1], pads[2], adaptive)
            window = x[:, :, hs:he, ws:we]
            if attrs.get("pooling_type", "max") == "max":
                out[:, :, i, j] = window.max(axis=(2, 3))
            else:
                count = (he - hs) * (we - ws) if exclusive or adaptive else ksize[0] * ksize[1]
                out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    return {"Out": _from_nchw(out, attrs)}


# --- cases -----------------------------------------------------------------------------------------
def _conv_case(id, x_shape, w_shape, dtype="float64", op="conv2d", **attrs):
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-10
    return Case(op, {"Input": x, "Filter": w}, conv_reference, attrs=attrs, id=f"{op}-{id}-{dtype}",
                batch_slots=("Input",), batch_outputs=("Output",), rtol=tol, atol=tol)


CONV_CASES = [
    _conv_case("basic", (2, 3, 6, 7), (4, 3, 3, 3)),
    _conv_case("basic", (2, 3, 6, 7), (4, 3, 3, 3), dtype="float32"),
    _conv_case("1x1", (2, 5, 4, 4), (3, 5, 1, 1)),
    _conv_case("stride2-pad1", (2, 3, 7, 8), (4, 3, 3, 3), strides=[2, 2], paddings=[1, 1]),
    _conv_case("rect-kernel-stride", (1, 2, 8, 9), (3, 2, 2, 4), strides=[3, 2], paddings=[0, 2]),
    _conv_case("pad4", (2, 3, 5, 6), (2, 3, 3, 2), paddings=[0, 2, 1, 3]),
    _conv_case("pad4", (2, 3, 5, 6), (2, 3, 3, 2), dtype="float32", paddings=[2, 1, 0, 1]),
    _conv_case("dilation2", (2, 3, 9, 8), (4, 3, 3, 3), dilations=[2, 2], paddings=[1, 1]),
    _conv_case("dilation-rect", (1, 2, 9, 10), (3, 2, 2, 3), dilations=[3, 2], strides=[1, 2]),
    _conv_case("groups2", (2, 4, 6, 6), (6, 2, 3, 3), groups=2, paddings=[1, 1]),
    _conv_case("groups3", (2, 6, 5, 5), (3, 2, 2, 2), dtype="float32", groups=3, strides=[2, 1]),
    _conv_case("depthwise-as-conv", (2, 3, 6, 6), (3, 1, 3, 3), groups=3, paddings=[1, 1]),
    _conv_case("depthwise", (2, 3, 6, 6), (3, 1, 3, 3), op="depthwise_conv2d", groups=3, paddings=[1, 1]),
    _conv_case("depthwise-mult2", (2, 3, 7, 6), (6, 1, 3, 3), op="depthwise_conv2d", groups=3, strides=[2, 2]),
    _conv_case("depthwise-mult2", (2, 4, 5, 5), (8, 1, 3, 3), dtype="float32", op="depthwise_conv2d",
               groups=4, dilations=[2, 1], paddings=[1, 1]),
    _conv_case("nhwc", (2, 6, 7, 3), (4, 3, 3, 3), data_format="NHWC", strides=[2, 1], paddings=[1, 0]),
    _conv_case("nhwc-groups", (2, 5, 5, 4), (6, 2, 2, 2), dtype="float32", data_format="NHWC", groups=2),
    _conv_case("depthwise-nhwc", (2, 5, 6, 3), (3, 1, 3, 3), op="depthwise_conv2d", groups=3,
               data_format="NHWC", paddings=[1, 1]),
    _conv_case("same-stride2", (2, 3, 7, 8), (4, 3, 3, 3), padding_algorithm="SAME", strides=[2, 2]),
    _conv_case("same-even-kernel", (1, 2, 6, 5), (3, 2, 4, 2), padding_algorithm="SAME", strides=[1, 2]),
    _conv_case("same-resets-dilation", (1, 2, 6, 6), (2, 2, 3, 3), padding_algorithm="SAME", dilations=[2, 2]),
    _conv_case("valid-ignores-pads", (2, 3, 6, 6), (2, 3, 3, 3), padding_algorithm="VALID", paddings=[2, 2]),
]


def _pool_case(id, x_shape, dtype="float64", **attrs):
    x = rng.standard_normal(x_shape).astype(dtype) - 3.0  # mostly negative: zero padding would show
    tol = 1e-6 if dtype == "float32" else 1e-12
    return Case("pool2d", {"X": x}, pool_reference, attrs=attrs, id=f"pool-{id}-{dtype}",
                batch_slots=("X",), batch_outputs=("Out",), rtol=tol, atol=tol)


POOL_CASES = [
    _pool_case("max2x2", (2, 3, 6, 6), ksize=[2, 2], strides=[2, 2]),
    _pool_case("max2x2", (2, 3, 6, 6), dtype="float32", ksize=[2, 2], strides=[2, 2]),
    _pool_case("max-pad-neg-inf", (2, 2, 5, 5), ksize=[3, 3], paddings=[1, 1]),
    _pool_case("max-pad4", (1, 2, 5, 6), ksize=[3, 2], strides=[2, 2], paddings=[1, 0, 0, 1]),
    _pool_case("avg-exclusive", (2, 3, 5, 5), pooling_type="avg", ksize=[3, 3], paddings=[1, 1]),
    _pool_case("avg-inclusive", (2, 3, 5, 5), pooling_type="avg", ksize=[3, 3], paddings=[1, 1], exclusive=False),
    _pool_case("avg-inclusive", (2, 3, 5, 5), dtype="float32", pooling_type="avg", ksize=[3, 3],
               paddings=[1, 1], exclusive=False),
    _pool_case("avg-rect", (1, 2, 7, 6), pooling_type="avg", ksize=[3, 2], strides=[2, 3]),
    _pool_case("max-ceil", (2, 2, 7, 6), ksize=[2, 2], strides=[2, 2], ceil_mode=True),
    _pool_case("avg-ceil-exclusive", (1, 2, 7, 7), pooling_type="avg", ksize=[3, 3], strides=[2, 2],
               ceil_mode=True, paddings=[1, 1]),
    _pool_case("avg-ceil-inclusive", (1, 2, 7, 7), pooling_type="avg", ksize=[2, 2], strides=[2, 2],
               ceil_mode=True, exclusive=False),
    _pool_case("global-max", (2, 3, 5, 4), ksize=[1, 1], global_pooling=True),
    _pool_case("global-avg", (2, 3, 5, 4), pooling_type="avg", ksize=[2, 2], global_pooling=True,
               paddings=[1, 1]),
    _pool_case("global-avg", (2, 3, 5, 4), dtype="float32", pooling_type="avg", ksize=[3, 3], global_pooling=True),
    _pool_case("adaptive-avg", (2, 3, 7, 5), pooling_type="avg", ksize=[3, 2], adaptive=True),
    _pool_case("adaptive-max", (2, 3, 7, 5), ksize=[3, 3], adaptive=True),
    _pool_case("adaptive-grow", (1, 2, 2, 3), pooling_type="avg", ksize=[3, 4], adaptive=True),
    _pool_case("nhwc-max", (2, 6, 5, 3), ksize=[2, 2], strides=[2, 2], data_format="NHWC", ceil_mode=True),
    _pool_case("nhwc-avg", (2, 5, 5, 4), pooling_type="avg", ksize=[3, 3], paddings=[1, 1], data_format="NHWC"),
    _pool_case("same", (2, 2, 7, 6), ksize=[3, 3], strides=[2, 2], padding_algorithm="SAME"),
    _pool_case("same-avg", (2, 2, 7, 6), pooling_type="avg", ksize=[2, 3], strides=[2, 2],
               padding_algorithm="SAME"),
    _pool_case("valid", (2, 2, 7, 6), ksize=[3, 3], strides=[2, 2], paddings=[1, 1], padding_algorithm="VALID"),
]
CASES = CONV_CASES + POOL_CASES


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_infer_with_unknown_batch(case):
    check_infer_batch(case)


def test_max_pool_ignores_padding_and_avg_divisors_differ():
    """Hand-checkable values: the two avg modes differ at the border, max never sees the padding."""
    x = -np.arange(1.0, 10.0).reshape(1, 1, 3, 3)
    got = {}
    for name, attrs in [("max", {"pooling_type": "max"}), ("excl", {"pooling_type": "avg"}),
                        ("incl", {"pooling_type": "avg", "exclusive": False})]:
        case = Case("pool2d", {"X": x}, pool_reference, attrs={"ksize": [2, 2], "paddings": [1, 1], **attrs})
        got[name] = build_and_run(case)[1]["Out"][0][0, 0]
    assert got["max"][0, 0] == -1.0          # window {pad, pad, pad, -1}
    assert got["excl"][0, 0] == -1.0         # -1 / 1 cell
    assert got["incl"][0, 0] == -0.25        # -1 / 4 cells
    assert got["excl"][1, 1] == (-1 - 2 - 4 - 5) / 4


def _inferred(op, inputs, attrs, out_slot):
    return infer_shapes(op, inputs, attrs)[out_slot][0]


def test_unknown_spatial_dims_stay_unknown():
    assert _inferred("conv2d", {"Input": (-1, 3, -1, 8), "Filter": (4, 3, 3, 3)}, {}, "Output") == (-1, 4, -1, 6)
    assert _inferred("conv2d", {"Input": (-1, -1, 8, 8), "Filter": (4, 3, 3, 3)},
                     {"padding_algorithm": "SAME", "strides": [2, 2]}, "Output") == (-1, 4, 4, 4)
    assert _inferred("pool2d", {"X": (-1, 3, -1, -1)}, {"ksize": [2, 2], "global_pooling": True}, "Out") == (-1, 3, 1, 1)
    assert _inferred("pool2d", {"X": (-1, 3, -1, 9)}, {"ksize": [2, 2], "strides": [2, 2]}, "Out") == (-1, 3, -1, 4)
    assert _inferred("pool2d", {"X": (-1, 3, -1, -1)}, {"ksize": [2, 5], "adaptive": True}, "Out") == (-1, 3, 2, 5)


# --- build errors ----------------------------------------------------------------------------------
def _x(*shape, dtype="float32"):
    return np.zeros(shape, dtype)


CONV_ERRORS = [
    ("conv2d", {"Input": _x(2, 3, 5), "Filter": _x(4, 3, 3, 3)}, {}, ShapeError, "rank 4"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 3, 3)}, {}, ShapeError, "input `Filter`"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 3, 3, 3, dtype="float64")}, {}, DTypeError, "float64"),
    ("conv2d", {"Input": _x(2, 3, 5, 5, dtype="int32"), "Filter": _x(4, 3, 3, 3, dtype="int32")}, {},
     DTypeError, "floating"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 2, 3, 3)}, {}, ShapeError, "dim 1"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 1, 3, 3)}, {"groups": 2}, ShapeError, "divisible by groups=2"),
    ("conv2d", {"Input": _x(2, 4, 5, 5), "Filter": _x(3, 2, 3, 3)}, {"groups": 2}, ShapeError, "dim 0"),
    ("conv2d", {"Input": _x(2, 4, 5, 5), "Filter": _x(4, 4, 3, 3)}, {"groups": 0}, AttrError, "groups"),
    ("conv2d", {"Input": _x(2, 3, 2, 5), "Filter": _x(4, 3, 3, 3)}, {}, ShapeError, "output size"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 3, 3, 3)}, {"dilations": [3, 1]}, ShapeError, "output size"),
    ("conv2d", {"Input": _x(2, 5, 5, 3), "Filter": _x(4, 3, 3, 3)}, {}, ShapeError, "dim 1"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 3, 3, 3)}, {"data_format": "NCWH"}, AttrError, "data_format"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 3, 3, 3)}, {"padding_algorithm": "FULL"}, AttrError,
     "padding_algorithm"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 3, 3, 3)}, {"paddings": [1, 1, 1]}, AttrError, "paddings"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 3, 3, 3)}, {"paddings": [-1, 0]}, AttrError, "paddings"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 3, 3, 3)}, {"strides": [0, 1]}, AttrError, "strides"),
    ("conv2d", {"Input": _x(2, 3, 5, 5), "Filter": _x(4, 3, 3, 3)}, {"dilations": [1]}, AttrError, "dilations"),
    ("depthwise_conv2d", {"Input": _x(2, 4, 5, 5), "Filter": _x(4, 2, 3, 3)}, {"groups": 2}, AttrError,
     "depthwise"),
    ("depthwise_conv2d", {"Input": _x(2, 4, 5, 5), "Filter": _x(4, 1, 3, 3)}, {}, AttrError, "groups"),
    ("pool2d", {"X": _x(2, 3, 5)}, {"ksize": [2, 2]}, ShapeError, "rank 4"),
    ("pool2d", {"X": _x(2, 3, 5, 5, dtype="int64")}, {"ksize": [2, 2]}, DTypeError, "floating"),
    ("pool2d", {"X": _x(2, 3, 5, 5)}, {}, AttrError, "ksize"),
    ("pool2d", {"X": _x(2, 3, 5, 5)}, {"ksize": [2]}, AttrError, "ksize"),
    ("pool2d", {"X": _x(2, 3, 5, 5)}, {"ksize": [2, 2], "pooling_type": "min"}, AttrError, "pooling_type"),
    ("pool2d", {"X": _x(2, 3, 5, 5)}, {"ksize": [6, 2]}, ShapeError, "output size"),
    ("pool2d", {"X": _x(2, 3, 5, 5)}, {"ksize": [2, 2], "data_format": "CHWN"}, AttrError, "data_format"),
]


@pytest.mark.parametrize("op, inputs, attrs, error, match", CONV_ERRORS,
                         ids=[f"{e[0]}-{e[4]}-{i}" for i, e in enumerate(CONV_ERRORS)])
def test_build_errors(op, inputs, attrs, error, match):
    check_build_error(op, inputs, attrs, error, match=match)


def test_filter_mismatch_message_names_shapes():
    message = check_build_error("conv2d", {"Input": _x(2, 6, 5, 5), "Filter": _x(4, 2, 3, 3)}, {"groups": 2},
                                ShapeError)
    assert "[4, 2, 3, 3]" in message and "[2, 6, 5, 5]" in message and "6 / 2" in message


# --- gradients: central differences in float64 ------------------------------------------------------
from headrace.autodiff import gradients  # noqa: E402
from headrace.ops import pool2d as pool_ops  # noqa: E402
from headrace.ops.apply import apply_op_single  # noqa: E402
from headrace.ops.registry import Meta, lookup  # noqa: E402
from tests.helpers import build_and_run as run_program  # noqa: E402
from tests.ops.gradcheck import check_grad  # noqa: E402

grng = np.random.default_rng(2024)

# (id, op, Input shape, Filter shape, attrs); every differentiated input has at most ~60 elements
CONV_GRAD_CASES = [
    ("basic", "conv2d", (2, 2, 3, 4), (2, 2, 2, 2), {}),
    ("stride2-pad1", "conv2d", (1, 2, 5, 5), (2, 2, 3, 3), {"strides": [2, 2], "paddings": [1, 1]}),
    ("pad4-asymmetric", "conv2d", (1, 2, 4, 5), (2, 2, 2, 3), {"paddings": [0, 2, 1, 3]}),
    ("dilation2", "conv2d", (1, 1, 6, 6), (2, 1, 2, 2), {"dilations": [2, 2], "paddings": [1, 1]}),
    ("dilation-rect-stride", "conv2d", (1, 1, 7, 8), (2, 1, 2, 3), {"dilations": [3, 2], "strides": [1, 2]}),
    ("stride-skips-cells", "conv2d", (1, 1, 7, 7), (2, 1, 2, 2), {"strides": [3, 3]}),
    ("groups2", "conv2d", (1, 4, 4, 3), (4, 2, 2, 2), {"groups": 2, "paddings": [1, 0]}),
    ("nhwc", "conv2d", (1, 4, 5, 2), (3, 2, 2, 2), {"data_format": "NHWC", "strides": [2, 1], "paddings": [1, 0]}),
    ("nhwc-groups", "conv2d", (1, 3, 3, 4), (2, 2, 2, 2), {"data_format": "NHWC", "groups": 2,
                                                           "paddings": [1, 0, 0, 1]}),
    ("same-stride2", "conv2d", (1, 2, 5, 6), (2, 2, 3, 3), {"padding_algorithm": "SAME", "strides": [2, 2]}),
    ("same-even-kernel", "conv2d", (1, 1, 5, 5), (2, 1, 4, 2), {"padding_algorithm": "SAME", "strides": [1, 2]}),
    ("same-resets-dilation", "conv2d", (1, 1, 5, 5), (1, 1, 3, 3), {"padding_algorithm": "SAME",
                                                                    "dilations": [2, 2]}),
    ("valid-ignores-pads", "conv2d", (1, 2, 5, 5), (2, 2, 3, 3), {"padding_algorithm": "VALID",
                                                                  "paddings": [2, 2]}),
    # stride 1, H*W <= OH*OW: Input@GRAD as a convolution with flipped filters (input_grad_as_conv)
    ("same-groups2-dx-as-conv", "conv2d", (1, 4, 3, 4), (4, 2, 3, 3), {"groups": 2, "paddings": [1, 1]}),
    ("same-even-asym-nhwc-dx-as-conv", "conv2d", (1, 3, 4, 2), (3, 2, 2, 2), {"data_format": "NHWC",
                                                                             "paddings": [0, 1, 1, 0]}),
    ("depthwise", "depthwise_conv2d", (1, 3, 4, 4), (3, 1, 3, 3), {"groups": 3, "paddings": [1, 1]}),
    ("depthwise-mult2", "depthwise_conv2d", (1, 2, 5, 5), (4, 1, 3, 3), {"groups": 2, "strides": [2, 2]}),
    ("depthwise-nhwc", "depthwise_conv2d", (1, 4, 4, 3), (3, 1, 3, 3), {"groups": 3, "data_format": "NHWC",
                                                                        "paddings": [0, 1, 1, 0]}),
]


@pytest.mark.parametrize("id, op, x_shape, w_shape, attrs", CONV_GRAD_CASES, ids=[c[0] for c in CONV_GRAD_CASES])
def test_conv_gradient(id, op, x_shape, w_shape, attrs):
    check_grad(op, {"Input": grng.standard_normal(x_shape), "Filter": grng.standard_normal(w_shape)}, attrs)


@pytest.mark.parametrize("wrt", [("Input",), ("Filter",)])
def test_conv_gradient_of_one_input(wrt):
    """The other input is data: the gradient op is asked for one output only."""
    check_grad("conv2d", {"Input": grng.standard_normal((1, 2, 4, 4)), "Filter": grng.standard_normal((3, 2, 2, 2))},
               {"strides": [2, 1], "paddings": [1, 1], "groups": 1}, wrt=wrt)


def test_conv_grad_kernel_computes_only_wanted_and_reads_input_only_for_filter_grad():
    kernel = lookup("conv2d_grad").kernel
    attrs = {**lookup("conv2d").attrs, "paddings": [1, 1]}
    x, w = grng.standard_normal((2, 3, 4, 4)), grng.standard_normal((2, 3, 3, 3))
    dout = grng.standard_normal((2, 2, 4, 4))
    got = kernel({"Input": Meta(x.shape, x.dtype), "Filter": w, "Output@GRAD": dout}, attrs,
                 context({"Input@GRAD"}))
    assert set(got) == {"Input@GRAD"}
    got_w = kernel({"Input": x, "Filter": w, "Output@GRAD": dout}, attrs, context({"Filter@GRAD"}))
    assert set(got_w) == {"Filter@GRAD"}
    # hand-written check of one filter gradient entry: sum over batch and positions of x_pad * dout
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    np.testing.assert_allclose(got_w["Filter@GRAD"][1, 2, 0, 2], np.sum(xp[:, 2, 0:4, 2:6] * dout[:, 1]), rtol=1e-12)


# (id, X shape, attrs)
MAX_POOL_GRAD_CASES = [
    ("max2x2", (1, 2, 4, 4), {"ksize": [2, 2], "strides": [2, 2]}),
    ("max-overlap-pad", (1, 2, 4, 4), {"ksize": [3, 3], "paddings": [1, 1]}),
    ("max-pad4", (1, 2, 5, 6), {"ksize": [3, 2], "strides": [2, 2], "paddings": [1, 0, 0, 1]}),
    ("max-ceil", (1, 2, 5, 5), {"ksize": [2, 2], "strides": [2, 2], "ceil_mode": True}),
    ("max-global", (2, 2, 3, 4), {"ksize": [1, 1], "global_pooling": True}),
    ("max-global-5x5", (1, 2, 5, 5), {"ksize": [1, 1], "global_pooling": True}),
    ("max-adaptive", (1, 2, 5, 5), {"ksize": [2, 3], "adaptive": True}),
    ("max-nhwc", (1, 4, 5, 2), {"ksize": [2, 3], "strides": [2, 1], "paddings": [1, 1], "data_format": "NHWC"}),
    ("max-same", (1, 2, 5, 6), {"ksize": [2, 3], "strides": [2, 2], "padding_algorithm": "SAME"}),
]
AVG_POOL_GRAD_CASES = [
    ("avg-exclusive", (1, 2, 5, 5), {"pooling_type": "avg", "ksize": [3, 3], "paddings": [1, 1]}),
    ("avg-inclusive", (1, 2, 5, 5), {"pooling_type": "avg", "ksize": [3, 3], "paddings": [1, 1],
                                     "exclusive": False}),
    ("avg-rect-stride", (1, 2, 7, 4), {"pooling_type": "avg", "ksize": [3, 2], "strides": [2, 3]}),
    ("avg-ceil-exclusive", (1, 1, 7, 7), {"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2],
                                          "ceil_mode": True, "paddings": [1, 1]}),
    ("avg-ceil-inclusive", (1, 1, 7, 7), {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2],
                                          "ceil_mode": True, "exclusive": False}),
    ("avg-global", (2, 2, 3, 4), {"pooling_type": "avg", "ksize": [2, 2], "global_pooling": True}),
    ("avg-adaptive", (1, 2, 5, 5), {"pooling_type": "avg", "ksize": [2, 3], "adaptive": True}),
    ("avg-nhwc", (1, 4, 5, 2), {"pooling_type": "avg", "ksize": [2, 2], "paddings": [0, 1, 1, 0],
                                "data_format": "NHWC", "exclusive": False}),
    ("avg-valid", (1, 2, 5, 5), {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2], "paddings": [1, 1],
                                 "padding_algorithm": "VALID"}),
    ("avg-window-in-padding", (1, 1, 3, 3), {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2],
                                             "paddings": [2, 2]}),
]


@pytest.fixture(params=["strided", "gather"])
def max_pool_path(request, monkeypatch):
    """Max-pool gradients have two implementations (a loop over window offsets for small regular
    windows, a gather + scatter-add otherwise); the max-pool tests run through both."""
    if request.param == "gather":
        monkeypatch.setattr(pool_ops, "_STRIDED_MAX_CELLS", 0)
    return request.param


def _check_pool_grad(x_shape, attrs):
    x = grng.permutation(np.arange(np.prod(x_shape), dtype=np.float64)).reshape(x_shape) * 0.1  # no ties
    check_grad("pool2d", {"X": x}, attrs)


@pytest.mark.parametrize("id, x_shape, attrs", MAX_POOL_GRAD_CASES, ids=[c[0] for c in MAX_POOL_GRAD_CASES])
def test_max_pool_gradient(id, x_shape, attrs, max_pool_path):
    _check_pool_grad(x_shape, attrs)


@pytest.mark.parametrize("id, x_shape, attrs", AVG_POOL_GRAD_CASES, ids=[c[0] for c in AVG_POOL_GRAD_CASES])
def test_avg_pool_gradient(id, x_shape, attrs):
    _check_pool_grad(x_shape, attrs)


def _pool_grads(x, attrs, dout):
    def build(x, dout):
        x.stop_gradient = False
        out = apply_op_single("pool2d", {"X": x}, attrs)
        return gradients([out], [x], target_gradients=[dout])
    return run_program(build, {"x": x, "dout": dout})[0][0]


def test_max_pool_ties_go_to_the_first_maximum_in_row_major_order(max_pool_path):
    x = np.array([[[[1.0, 1.0, 2.0, 0.0],
                    [1.0, 1.0, 2.0, 1.0]]]])
    dx = _pool_grads(x, {"ksize": [2, 2], "strides": [2, 2]}, np.array([[[[3.0, 5.0]]]]))
    np.testing.assert_array_equal(dx, [[[[3.0, 0.0, 5.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]])


def test_max_pool_overlapping_windows_add_up_at_a_shared_maximum(max_pool_path):
    x = np.array([[[[0.0, 5.0, 1.0, 7.0]]]])
    dx = _pool_grads(x, {"ksize": [1, 2], "strides": [1, 1]}, np.array([[[[1.0, 2.0, 4.0]]]]))
    np.testing.assert_array_equal(dx, [[[[0.0, 3.0, 0.0, 4.0]]]])


def test_max_pool_window_wholly_in_padding_sends_nothing(max_pool_path):
    """ksize 2, stride 2, pads 2 on 3x3: the first row/column of windows lies in the padding."""
    kernel = lookup("pool2d_grad").kernel
    attrs = {**lookup("pool2d").attrs, "ksize": [2, 2], "strides": [2, 2], "paddings": [2, 2]}
    x = np.arange(9.0).reshape(1, 1, 3, 3)
    dx = kernel({"X": x, "Out@GRAD": np.ones((1, 1, 3, 3))}, attrs, context({"X@GRAD"}))["X@GRAD"]
    expected = np.zeros((1, 1, 3, 3))
    expected[0, 0, [1, 1, 2, 2], [1, 2, 1, 2]] = 1.0  # windows {0..1}x{0..1}, {0..1}x{2}, {2}x{0..1}, {2}x{2}
    np.testing.assert_array_equal(dx, expected)
    assert kernel({"X": x, "Out@GRAD": np.ones((1, 1, 3, 3))}, attrs, context()) == {}


def test_float32_gradients_stay_float32_and_match_float64():
    """Check mode verifies each gradient kernel's dtype against its inferred float32."""
    x64, w64 = grng.standard_normal((2, 3, 6, 6)), grng.standard_normal((4, 3, 3, 3))

    def build(x, w):
        x.stop_gradient = w.stop_gradient = False
        y = apply_op_single("conv2d", {"Input": x, "Filter": w}, {"paddings": [1, 1], "strides": [2, 2]},
                            out_slot="Output")
        y = apply_op_single("pool2d", {"X": y}, {"ksize": [2, 2], "pooling_type": "avg"})
        y = apply_op_single("pool2d", {"X": y}, {"ksize": [2, 2], "strides": [1, 1]})
        return gradients([y], [x, w])

    g64, _ = run_program(build, {"x": x64, "w": w64})
    g32, _ = run_program(build, {"x": x64.astype(np.float32), "w": w64.astype(np.float32)})
    for a, b in zip(g32, g64):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
