"""conv3d, conv3d_transpose and pool3d: forward against loop references written here, shape
inference with an unknown batch, float64 gradient checks; the 3-D layers in both modes."""
import itertools
import math

import numpy as np
import pytest

import headrace as paddle
import headrace.nn.functional as F
from headrace.core import context
from headrace.core.errors import AttrError
from tests.nn.layer_checks import both_modes
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(17)
nn = paddle.nn


def _six(p):
    return [v for v in p for _ in range(2)] if len(p) == 3 else list(p)


def np_conv3d(x, w, s, p, d, g):
    p = _six(p)
    n, c = x.shape[:2]
    m, cg, *k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[1]), (p[2], p[3]), (p[4], p[5])))
    out_sizes = [(x.shape[2 + i] + p[2 * i] + p[2 * i + 1] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(3)]
    out = np.zeros((n, m, *out_sizes))
    for o in range(m):
        gi = o // (m // g)
        for pos in itertools.product(*(range(v) for v in out_sizes)):
            window = xp[(slice(None), slice(gi * cg, (gi + 1) * cg)) + tuple(
                slice(pos[i] * s[i], pos[i] * s[i] + d[i] * (k[i] - 1) + 1, d[i]) for i in range(3))]
            out[(slice(None), o) + pos] = np.einsum("ncijk,cijk->n", window, w[o])
    return out


def np_conv3d_transpose(x, w, s, p, d, g, extra=(0, 0, 0)):
    p = _six(p)
    n, c = x.shape[:2]
    _, mg, *k = w.shape
    cg = c // g
    full = [(x.shape[2 + i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + extra[i] for i in range(3)]
    out = np.zeros((n, mg * g) + tuple(f + p[2 * i + 1] for i, f in enumerate(full)))
    for ic in range(c):
        gi = ic // cg
        for pos in itertools.product(*(range(v) for v in x.shape[2:])):
            for tap in itertools.product(*(range(v) for v in k)):
                at = tuple(pos[i] * s[i] + tap[i] * d[i] for i in range(3))
                out[(slice(None), slice(gi * mg, (gi + 1) * mg)) + at] += \
                    x[(slice(None), ic) + pos][:, None] * w[(ic, slice(None)) + tap][None, :]
    sizes = [full[i] - p[2 * i] - p[2 * i + 1] for i in range(3)]
    return out[(slice(None), slice(None)) + tuple(slice(p[2 * i], p[2 * i] + sizes[i]) for i in range(3))]


def _conv_ref(transposed, nd=False):
    def reference(ins, attrs):
        x = np.moveaxis(ins["Input"], -1, 1) if nd else ins["Input"]
        s, p, d = attrs.get("strides", [1] * 3), attrs.get("paddings", [0] * 3), attrs.get("dilations", [1] * 3)
        g = attrs.get("groups", 1)
        out = (np_conv3d_transpose(x, ins["Filter"], s, p, d, g, attrs.get("output_padding") or (0, 0, 0))
               if transposed else np_conv3d(x, ins["Filter"], s, p, d, g))
        return {"Output": (np.moveaxis(out, 1, -1) if nd else out).astype(x.dtype)}
    return reference


CONV = [
    Case("conv3d", {"Input": rng.standard_normal((2, 4, 4, 3, 5)), "Filter": rng.standard_normal((6, 2, 2, 2, 3))},
         _conv_ref(False), {"strides": [1, 2, 1], "paddings": [1, 0, 1, 1, 0, 1], "dilations": [1, 1, 2], "groups": 2},
         rtol=1e-10, id="conv3d"),
    Case("conv3d", {"Input": rng.standard_normal((1, 3, 4, 3, 2)), "Filter": rng.standard_normal((2, 2, 2, 2, 2))},
         _conv_ref(False, nd=True), {"data_format": "NDHWC", "paddings": [1, 0, 0]}, rtol=1e-10, id="conv3d-ndhwc"),
    Case("conv3d_transpose", {"Input": rng.standard_normal((2, 4, 2, 3, 2)),
                              "Filter": rng.standard_normal((4, 1, 2, 3, 2))},
         _conv_ref(True), {"strides": [2, 1, 2], "paddings": [1, 1, 0], "dilations": [1, 2, 1], "groups": 2,
                           "output_padding": [1, 0, 1]}, rtol=1e-10, id="conv3d-transpose"),
]


@pytest.mark.parametrize("case", CONV, ids=[c.id for c in CONV])
def test_conv3d_ops(case):
    check_forward(case)
    check_infer_batch(Case(case.op, case.inputs, case.reference, case.attrs, batch_slots=("Input",), rtol=1e-10))
    check_grad(case.op, case.inputs, case.attrs)


def test_conv3d_errors():
    check_build_error("conv3d", {"Input": np.zeros((1, 4, 3, 3, 3)), "Filter": np.zeros((2, 3, 2, 2, 2))}, {},
                      Exception, match="Filter")
    check_build_error("conv3d_transpose", {"Input": np.zeros((1, 2, 3, 3, 3)), "Filter": np.zeros((2, 2, 2, 2, 2))},
                      {"output_padding": [1, 0, 0]}, AttrError, match="output_padding")


def _pool_ref(ins, attrs):
    x = ins["X"]
    k, s = attrs["ksize"], attrs.get("strides", [1, 1, 1])
    p = _six(attrs.get("paddings", [0, 0, 0]))
    adaptive, ceil_mode = attrs.get("adaptive", False), attrs.get("ceil_mode", False)
    windows = []
    for i, size in enumerate(x.shape[2:]):
        if adaptive:
            windows.append([((o * size) // k[i], math.ceil((o + 1) * size / k[i])) for o in range(k[i])])
            continue
        count = (size + p[2 * i] + p[2 * i + 1] - k[i] + (s[i] - 1 if ceil_mode else 0)) // s[i] + 1
        windows.append([(max(o * s[i] - p[2 * i], 0), min(o * s[i] - p[2 * i] + k[i], size)) for o in range(count)])
    out = np.zeros(x.shape[:2] + tuple(len(w) for w in windows))
    for pos in itertools.product(*(range(len(w)) for w in windows)):
        cells = x[(slice(None), slice(None)) + tuple(slice(*windows[i][pos[i]]) for i in range(3))]
        if attrs.get("pooling_type", "max") == "max":
            value = cells.max(axis=(2, 3, 4))
        else:
            inclusive = not attrs.get("exclusive", True) and not adaptive
            value = cells.sum(axis=(2, 3, 4)) / (np.prod(k) if inclusive else cells[0, 0].size)
        out[(slice(None), slice(None)) + pos] = value
    return {"Out": out.astype(x.dtype)}


POOL = [
    Case("pool3d", {"X": rng.standard_normal((2, 2, 4, 5, 4))}, _pool_ref, {"ksize": [2, 3, 2], "strides": [2, 1, 2]},
         id="max"),
    Case("pool3d", {"X": rng.standard_normal((1, 2, 5, 4, 4))}, _pool_ref,
         {"pooling_type": "avg", "ksize": [3, 2, 2], "strides": [2, 2, 1], "paddings": [1, 0, 1, 1, 0, 1],
          "ceil_mode": True}, id="avg-exclusive-ceil"),
    Case("pool3d", {"X": rng.standard_normal((1, 2, 4, 4, 4))}, _pool_ref,
         {"pooling_type": "avg", "ksize": [2, 2, 2], "strides": [2, 2, 2], "paddings": [1, 1, 1], "exclusive": False},
         id="avg-inclusive"),
    Case("pool3d", {"X": rng.standard_normal((2, 2, 5, 3, 4))}, _pool_ref,
         {"pooling_type": "avg", "ksize": [2, 2, 3], "adaptive": True}, id="adaptive-avg"),
    Case("pool3d", {"X": rng.standard_normal((2, 2, 5, 3, 4))}, _pool_ref, {"ksize": [3, 2, 2], "adaptive": True},
         id="adaptive-max"),
]


@pytest.mark.parametrize("case", POOL, ids=[c.id for c in POOL])
def test_pool3d_op(case):
    check_forward(case)
    check_infer_batch(case)
    check_grad("pool3d", case.inputs, case.attrs)


LAYERS = {
    "conv3d": (lambda: nn.Conv3D(2, 3, 2, padding=1, stride=[1, 2, 1]), (2, 2, 3, 4, 3),
               lambda x, p: np_conv3d(x, p[0], [1, 2, 1], [1, 1, 1], [1, 1, 1], 1) + p[1].reshape(1, 3, 1, 1, 1)),
    "conv3d_transpose": (lambda: nn.Conv3DTranspose(2, 2, 2, stride=2), (1, 2, 2, 3, 2),
                         lambda x, p: np_conv3d_transpose(x, p[0], [2] * 3, [0] * 3, [1] * 3, 1)
                         + p[1].reshape(1, 2, 1, 1, 1)),
    "max_pool3d": (lambda: nn.MaxPool3D(2), (2, 2, 4, 4, 4),
                   lambda x, p: _pool_ref({"X": x}, {"ksize": [2] * 3, "strides": [2] * 3})["Out"]),
    "avg_pool3d": (lambda: nn.AvgPool3D(3, 2, 1), (1, 2, 5, 4, 4),
                   lambda x, p: _pool_ref({"X": x}, {"ksize": [3] * 3, "strides": [2] * 3, "paddings": [1] * 3,
                                                     "pooling_type": "avg"})["Out"]),
    "adaptive_avg_pool3d": (lambda: nn.AdaptiveAvgPool3D([2, None, 3]), (1, 2, 5, 3, 4),
                            lambda x, p: _pool_ref({"X": x}, {"ksize": [2, 3, 3], "adaptive": True,
                                                              "pooling_type": "avg"})["Out"]),
    "adaptive_max_pool3d": (lambda: nn.AdaptiveMaxPool3D(2), (1, 2, 5, 3, 4),
                            lambda x, p: _pool_ref({"X": x}, {"ksize": [2] * 3, "adaptive": True})["Out"]),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_3d_layers_both_modes(name):
    make, shape, reference = LAYERS[name]
    both_modes(make, rng.standard_normal(shape), reference, rtol=1e-4, atol=1e-5)


def test_3d_forms():
    x = rng.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
    with context.static_mode_guard(False):
        a = F.avg_pool3d(paddle.to_tensor(x), 2, divisor_override=4).numpy()
        b = F.avg_pool3d(paddle.to_tensor(x), 2).numpy()
        np.testing.assert_allclose(a, b * 2, rtol=1e-6)
        nd = F.max_pool3d(paddle.to_tensor(np.moveaxis(x, 1, -1)), 2, data_format="NDHWC").numpy()
        np.testing.assert_array_equal(np.moveaxis(nd, -1, 1), F.max_pool3d(paddle.to_tensor(x), 2).numpy())
        with pytest.raises(AttrError, match="return_mask"):
            F.max_pool3d(paddle.to_tensor(np.moveaxis(x, 1, -1)), 2, return_mask=True, data_format="NDHWC")
        same = F.conv3d(paddle.to_tensor(x), paddle.to_tensor(np.ones((1, 2, 3, 3, 3), np.float32)), padding="SAME")
        assert same.shape == [1, 1, 4, 4, 4]


def _mask_ref(ins, attrs):
    """Window maxima and the flat index of the first maximum (row-major) in each window."""
    x = ins["X"]
    k, s, p = attrs["ksize"], attrs.get("strides", [1, 1, 1]), _six(attrs.get("paddings", [0, 0, 0]))
    adaptive = attrs.get("adaptive", False)
    windows = []
    for i, size in enumerate(x.shape[2:]):
        if adaptive:
            windows.append([((o * size) // k[i], math.ceil((o + 1) * size / k[i])) for o in range(k[i])])
        else:
            count = (size + p[2 * i] + p[2 * i + 1] - k[i]) // s[i] + 1
            windows.append([(max(o * s[i] - p[2 * i], 0), min(o * s[i] - p[2 * i] + k[i], size))
                            for o in range(count)])
    out = np.zeros(x.shape[:2] + tuple(len(w) for w in windows), x.dtype)
    mask = np.zeros(out.shape, np.int32)
    d, h, w = x.shape[2:]
    for b, ch in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for pos in itertools.product(*(range(len(w_)) for w_ in windows)):
            best = None
            for cell in itertools.product(*(range(*windows[i][pos[i]]) for i in range(3))):
                if best is None or x[(b, ch) + cell] > x[(b, ch) + best]:
                    best = cell
            out[(b, ch) + pos] = x[(b, ch) + best]
            mask[(b, ch) + pos] = (best[0] * h + best[1]) * w + best[2]
    return {"Out": out, "Mask": mask}


MASK_CASES = [
    Case("max_pool3d_with_index", {"X": rng.standard_normal((2, 2, 4, 5, 4))}, _mask_ref,
         {"ksize": [2, 3, 2], "strides": [2, 1, 2], "paddings": [1, 0, 1]}, id="padded"),
    Case("max_pool3d_with_index", {"X": rng.standard_normal((1, 2, 5, 3, 4))}, _mask_ref,
         {"ksize": [2, 2, 3], "adaptive": True}, id="adaptive"),
]


@pytest.mark.parametrize("case", MASK_CASES, ids=[c.id for c in MASK_CASES])
def test_max_pool3d_with_index(case):
    check_forward(case)
    check_infer_batch(case)
    check_grad("max_pool3d_with_index", case.inputs, case.attrs, out_slots=("Out",))


def test_unpool3d_round_trip():
    x = rng.standard_normal((2, 2, 4, 4, 6))
    want = _mask_ref({"X": x}, {"ksize": [2, 2, 2], "strides": [2, 2, 2]})
    with context.static_mode_guard(False):
        out, mask = F.max_pool3d(paddle.to_tensor(x), 2, return_mask=True)
        np.testing.assert_array_equal(mask.numpy(), want["Mask"])
        back = nn.MaxUnPool3D(2)(out, mask).numpy()
    expect = np.zeros(x.shape)
    for b, ch in itertools.product(range(2), range(2)):
        expect[b, ch].reshape(-1)[want["Mask"][b, ch].ravel()] = want["Out"][b, ch].ravel()
    np.testing.assert_array_equal(back, expect)
    idx = want["Mask"].astype("int64")
    check_grad("unpool3d", {"X": want["Out"], "Indices": idx}, {"output_size": [4, 4, 6]}, wrt=("X",))
