"""conv2d, depthwise_conv2d and pool2d against naive references that loop over output positions."""
import math

import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError, ShapeError
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
