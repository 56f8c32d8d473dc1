"""pad, pad3d, nearest_interp_v2, bilinear_interp_v2: forward against references written here
(index arithmetic per mode; the reference kernels' four-term bilinear formula in loops), gradients
against float64 central differences; F.pad's pad-list rules and F.interpolate in both modes; the
padding and upsampling layers."""
import numpy as np
import pytest

import headrace as paddle
import headrace.nn.functional as F
from headrace.core import context
from headrace.core.errors import AttrError, ShapeError
from tests.helpers import build_and_run
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(5)


def _source(i, n, mode):
    """The input index output index ``i`` (in input coordinates, may be out of range) copies."""
    if 0 <= i < n:
        return i
    if mode == "reflect":
        return -i if i < 0 else 2 * (n - 1) - i
    if mode == "replicate":
        return min(max(i, 0), n - 1)
    if mode == "circular":
        return i % n
    return None


def pad_ref(x, widths, mode, value=0.0):
    out_shape = [n + b + a for n, (b, a) in zip(x.shape, widths)]
    out = np.empty(out_shape, x.dtype)
    for idx in np.ndindex(*out_shape):
        src = [_source(i - b, n, mode) for i, (b, _), n in zip(idx, widths, x.shape)]
        out[idx] = value if any(s is None for s in src) else x[tuple(src)]
    return out


def _pad3d_ref(ins, attrs):
    left, right, top, bottom, front, back = attrs["paddings"]
    spatial = [(front, back), (top, bottom), (left, right)]
    nc = attrs.get("data_format", "NCDHW") == "NCDHW"
    widths = [(0, 0), (0, 0)] + spatial if nc else [(0, 0)] + spatial + [(0, 0)]
    return {"Out": pad_ref(ins["X"], widths, attrs.get("mode", "constant"), attrs.get("value", 0.0))}


def _pad_ref(ins, attrs):
    p = attrs["paddings"]
    return {"Out": pad_ref(ins["X"], [(p[2 * i], p[2 * i + 1]) for i in range(ins["X"].ndim)], "constant",
                           attrs.get("pad_value", 0.0))}


def _bilinear_ref(x, out_h, out_w, align_corners, align_mode, scale=(0, 0)):
    """The reference kernel's loops (NCHW)."""
    n, c, in_h, in_w = x.shape

    def ratio(i, o, s):
        if align_corners:
            return (i - 1) / (o - 1) if o > 1 else 0.0
        return 1 / s if s > 0 else i / o
    rh, rw = ratio(in_h, out_h, scale[0]), ratio(in_w, out_w, scale[1])
    flag = align_mode == 0 and not align_corners
    out = np.zeros((n, c, out_h, out_w))
    for k in range(out_h):
        yn = max(int(rh * (k + 0.5) - 0.5) if flag else int(rh * k), 0)
        ys = min(yn + 1, in_h - 1)
        dn = (max(rh * (k + 0.5) - 0.5, 0) - yn) if flag else rh * k - yn
        for j in range(out_w):
            xw = max(int(rw * (j + 0.5) - 0.5) if flag else int(rw * j), 0)
            xe = min(xw + 1, in_w - 1)
            dw = (max(rw * (j + 0.5) - 0.5, 0) - xw) if flag else rw * j - xw
            out[:, :, k, j] = (x[:, :, yn, xw] * (1 - dn) * (1 - dw) + x[:, :, ys, xw] * dn * (1 - dw)
                               + x[:, :, yn, xe] * (1 - dn) * dw + x[:, :, ys, xe] * dn * dw)
    return out


def _nearest_ref(x, out_h, out_w, align_corners, scale=(0, 0)):
    n, c, in_h, in_w = x.shape

    def src(i, o, s, k):
        if align_corners:
            r = (i - 1) / (o - 1) if o > 1 else 0.0
            return int(r * k + 0.5)
        return int((1 / s if s > 0 else i / o) * k)
    rows = [src(in_h, out_h, scale[0], k) for k in range(out_h)]
    cols = [src(in_w, out_w, scale[1], k) for k in range(out_w)]
    return x[:, :, rows][:, :, :, cols]


def _interp_ref(ins, attrs):
    x = ins["X"]
    nhwc = attrs.get("data_layout") == "NHWC"
    x = x.transpose(0, 3, 1, 2) if nhwc else x
    scale = attrs.get("scale") or [0, 0]
    out_h = attrs["out_h"] if attrs.get("out_h", -1) > 0 else int(x.shape[2] * scale[0])
    out_w = attrs["out_w"] if attrs.get("out_w", -1) > 0 else int(x.shape[3] * scale[1])
    if attrs["interp_method"] == "nearest":
        out = _nearest_ref(x, out_h, out_w, attrs.get("align_corners", True), scale)
    else:
        out = _bilinear_ref(x, out_h, out_w, attrs.get("align_corners", True), attrs.get("align_mode", 1), scale)
    return {"Out": out.transpose(0, 2, 3, 1) if nhwc else out}


X5 = rng.normal(size=(2, 2, 3, 4, 5))
X4 = rng.normal(size=(2, 3, 4, 5))
P6 = [1, 2, 2, 0, 1, 1]
CASES = [
    *[Case("pad3d", {"X": X5}, _pad3d_ref, attrs={"paddings": P6, "mode": m, "value": 0.5}, id=f"pad3d_{m}",
           rtol=1e-15) for m in ("constant", "reflect", "replicate", "circular")],
    Case("pad3d", {"X": X5}, _pad3d_ref, attrs={"paddings": [2, 1, 0, 2, 1, 0], "mode": "reflect",
                                               "data_format": "NDHWC"}, id="pad3d_ndhwc", rtol=1e-15),
    Case("pad", {"X": X4}, _pad_ref, attrs={"paddings": [1, 0, 0, 2, 3, 1, 0, 0], "pad_value": -1.0}, rtol=1e-15),
    *[Case(f"{m}_interp_v2", {"X": X4}, _interp_ref,
           attrs={"out_h": 7, "out_w": 3, "interp_method": m, "align_corners": ac, "align_mode": am},
           id=f"{m}_{ac}_{am}", rtol=1e-12)
      for m in ("nearest", "bilinear") for ac, am in ((False, 0), (False, 1), (True, 0))],
    Case("bilinear_interp_v2", {"X": X4}, _interp_ref,
         attrs={"scale": [1.5, 0.7], "interp_method": "bilinear", "align_corners": False, "align_mode": 0},
         id="bilinear_scale", rtol=1e-12),
    Case("nearest_interp_v2", {"X": X4.transpose(0, 2, 3, 1).copy()}, _interp_ref,
         attrs={"scale": [2.0, 2.0], "interp_method": "nearest", "align_corners": False, "data_layout": "NHWC"},
         id="nearest_nhwc", rtol=1e-12),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward(case):
    check_forward(case)
    check_infer_batch(case)


@pytest.mark.parametrize("op,attrs", [
    ("pad3d", {"paddings": [1, 2, 2, 0, 1, 1], "mode": "reflect"}),
    ("pad3d", {"paddings": [1, 2, 2, 0, 1, 1], "mode": "replicate"}),
    ("pad3d", {"paddings": [2, 1, 0, 1, 1, 1], "mode": "circular", "data_format": "NDHWC"}),
    ("pad3d", {"paddings": [1, 2, 2, 0, 1, 1], "mode": "constant", "value": 3.0}),
    ("pad", {"paddings": [1, 0, 0, 2, 3, 1, 0, 1, 2, 0]}),
    ("nearest_interp_v2", {"out_h": 5, "out_w": 7, "align_corners": False}),
    ("bilinear_interp_v2", {"out_h": 5, "out_w": 7, "align_corners": False, "align_mode": 0}),
    ("bilinear_interp_v2", {"out_h": 2, "out_w": 6, "align_corners": True}),
    ("bilinear_interp_v2", {"scale": [1.7, 0.6], "align_corners": False, "align_mode": 1}),
], ids=lambda v: v if isinstance(v, str) else "-".join(str(x) for x in v.values()))
def test_gradients(op, attrs):
    x = rng.normal(size=(2, 2, 3, 4, 5)) if op.startswith("pad") else rng.normal(size=(2, 3, 4, 5))
    check_grad(op, {"X": x}, attrs)


def test_build_errors():
    check_build_error("pad3d", {"X": X5}, {"paddings": [5, 0, 0, 0, 0, 0], "mode": "reflect"}, ShapeError,
                      match="reflect")
    check_build_error("pad3d", {"X": X5}, {"paddings": [1, 1], "mode": "constant"}, AttrError, match="paddings")
    check_build_error("pad3d", {"X": X4}, {"paddings": P6}, ShapeError)
    check_build_error("pad", {"X": X4}, {"paddings": [1, 1]}, AttrError, match="paddings")
    check_build_error("bilinear_interp_v2", {"X": X4}, {}, AttrError, match="out_w")
    check_build_error("trilinear_interp_v2", {"X": X4}, {"out_d": 2, "out_h": 2, "out_w": 2}, ShapeError)


# --- F.pad: the pad-list rules ---------------------------------------------------------------------------
def _both(fn, x, want):
    (got,), _ = build_and_run(lambda x: fn(x), {"x": x})
    np.testing.assert_array_equal(got, want)
    with context.static_mode_guard(False):
        np.testing.assert_array_equal(fn(paddle.to_tensor(x)).numpy(), want)


X3 = rng.normal(size=(2, 3, 5))
PADS = [
    # constant, 2N values from the first dim
    (X4, dict(pad=[1, 0, 0, 2, 3, 1, 0, 1]), [(1, 0), (0, 2), (3, 1), (0, 1)], "constant"),
    # constant, 2N values from the last dim
    (X4, dict(pad=[1, 0, 0, 2, 3, 1, 0, 1], pad_from_left_axis=False), [(0, 1), (3, 1), (0, 2), (1, 0)], "constant"),
    # 2(N-2) values: [left, right, top, bottom] on W, H of NCHW ...
    (X4, dict(pad=[1, 2, 3, 0], value=2.0), [(0, 0), (0, 0), (3, 0), (1, 2)], "constant"),
    # ... and of NHWC
    (X4, dict(pad=[1, 2, 3, 0], data_format="NHWC"), [(0, 0), (3, 0), (1, 2), (0, 0)], "constant"),
    # other even lengths: from the last dim
    (X4, dict(pad=[2, 1]), [(0, 0), (0, 0), (0, 0), (2, 1)], "constant"),
    (X4, dict(pad=[2, 1, 1]), [(0, 0), (0, 0), (1, 0), (2, 1)], "constant"),
    (X3, dict(pad=[2, 1], mode="reflect"), [(0, 0), (0, 0), (2, 1)], "reflect"),
    (X3, dict(pad=[2, 1], mode="replicate", data_format="NLC"), [(0, 0), (2, 1), (0, 0)], "replicate"),
    (X4, dict(pad=[1, 2, 3, 1], mode="circular"), [(0, 0), (0, 0), (3, 1), (1, 2)], "circular"),
    (X5, dict(pad=[1, 0, 2, 1, 0, 1], mode="reflect", data_format="NDHWC"),
     [(0, 0), (0, 1), (2, 1), (1, 0), (0, 0)], "reflect"),
]


@pytest.mark.parametrize("x,kw,widths,mode", PADS, ids=[str(i) for i in range(len(PADS))])
def test_pad_list_order(x, kw, widths, mode):
    _both(lambda t: F.pad(t, **kw), x, pad_ref(x, widths, mode, kw.get("value", 0.0)))


def test_pad_errors():
    with context.static_mode_guard(False):
        x = paddle.to_tensor(X4)
        with pytest.raises(ValueError, match="needs 4 pad values"):
            F.pad(x, [1, 1], mode="reflect")
        with pytest.raises(ValueError, match="mode must be"):
            F.pad(x, [1, 1, 1, 1], mode="wrap")
        with pytest.raises(ValueError, match="data_format"):
            F.pad(x, [1, 1, 1, 1], mode="reflect", data_format="NCL")


# --- layers ----------------------------------------------------------------------------------------------
LAYERS = [
    (lambda: paddle.nn.Pad2D([1, 0, 2, 1], mode="replicate"), X4, [(0, 0), (0, 0), (2, 1), (1, 0)], "replicate", 0),
    (lambda: paddle.nn.Pad1D(2, "reflect"), X3, [(0, 0), (0, 0), (2, 2)], "reflect", 0),
    (lambda: paddle.nn.Pad3D([1, 0, 0, 1, 1, 0], value=1.5), X5, [(0, 0), (0, 0), (1, 0), (0, 1), (1, 0)],
     "constant", 1.5),
    (lambda: paddle.nn.ZeroPad2D([1, 2, 0, 1]), X4, [(0, 0), (0, 0), (0, 1), (1, 2)], "constant", 0),
    (lambda: paddle.nn.ConstantPad1D(1, 2.5), X3, [(0, 0), (0, 0), (1, 1)], "constant", 2.5),
    (lambda: paddle.nn.ReflectionPad2D(1), X4, [(0, 0), (0, 0), (1, 1), (1, 1)], "reflect", 0),
    (lambda: paddle.nn.ReplicationPad3D(1, data_format="NDHWC"), X5, [(0, 0), (1, 1), (1, 1), (1, 1), (0, 0)],
     "replicate", 0),
    (lambda: paddle.nn.CircularPad2d([2, 0, 1, 1]), X4, [(0, 0), (0, 0), (1, 1), (2, 0)], "circular", 0),
]


@pytest.mark.parametrize("make,x,widths,mode,value", LAYERS, ids=[str(i) for i in range(len(LAYERS))])
def test_pad_layers(make, x, widths, mode, value):
    _both(lambda t: make()(t), x, pad_ref(x, widths, mode, value))


def test_interpolate_and_upsample_layers_both_modes():
    want = _interp_ref({"X": X4}, {"out_h": 8, "out_w": 10, "interp_method": "bilinear", "align_corners": False,
                                   "align_mode": 0})["Out"]
    (got,), _ = build_and_run(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), {"x": X4})
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with context.static_mode_guard(False):
        x = paddle.to_tensor(X4)
        np.testing.assert_allclose(paddle.nn.Upsample(size=[8, 10], mode="bilinear")(x).numpy(), want, rtol=1e-12)
        near = _interp_ref({"X": X4}, {"out_h": 8, "out_w": 10, "interp_method": "nearest", "align_corners": False})
        np.testing.assert_array_equal(paddle.nn.UpsamplingNearest2D(scale_factor=2)(x).numpy(), near["Out"])
        corners = _interp_ref({"X": X4}, {"out_h": 7, "out_w": 3, "interp_method": "bilinear", "align_corners": True})
        np.testing.assert_allclose(paddle.nn.UpsamplingBilinear2D(size=[7, 3])(x).numpy(), corners["Out"], rtol=1e-12)
        with pytest.raises(NotImplementedError, match="bicubic"):
            F.interpolate(x, size=[3, 3], mode="bicubic")
        with pytest.raises(ValueError, match="exactly one"):
            F.interpolate(x, size=[3, 3], scale_factor=2)


@pytest.mark.parametrize("fn", [
    lambda x: F.pad(x, [1, 2, 0, 1], mode="reflect"),
    lambda x: F.pad(x, [1, 0, 2, 1], mode="circular", data_format="NHWC"),
    lambda x: F.pad(x, [0, 1, 1, 0, 2, 0, 0, 1], value=0.5),
    lambda x: F.interpolate(x, size=[5, 2], mode="bilinear", align_corners=True),
    lambda x: F.interpolate(x, scale_factor=[1.5, 2.0]),
], ids=["reflect", "circular_nhwc", "constant_all_dims", "bilinear", "nearest"])
def test_eager_gradients(fn):
    from tests.nn.test_losses import _eager_gradcheck
    _eager_gradcheck(lambda x: fn(x), {"x": rng.normal(size=(2, 2, 3, 4))}, ["x"])


# --- linear (3-D) and trilinear (5-D): the reference's corner formula, 2^k terms -----------------------
def _axis_ref(i, o, s, k, align_corners, align_mode):
    """(low index, high index, weight of high) of output position k along one axis, as the kernels."""
    if align_corners:
        r = (i - 1) / (o - 1) if o > 1 else 0.0
    else:
        r = 1 / s if s > 0 else i / o
    flag = align_mode == 0 and not align_corners
    lo = max(int(r * (k + 0.5) - 0.5) if flag else int(r * k), 0)
    hi = min(lo + 1, i - 1)
    d = (max(r * (k + 0.5) - 0.5, 0) - lo) if flag else r * k - lo
    return lo, hi, d


def _linear_nd_ref(x, outs, align_corners, align_mode, scales=None):
    """Channels-first x [N, C, *spatial]; the sum over the 2^k corners of products of weights."""
    import itertools
    spatial = x.shape[2:]
    scales = scales or [0] * len(spatial)
    out = np.zeros(x.shape[:2] + tuple(outs))
    for pos in np.ndindex(*outs):
        axes = [_axis_ref(i, o, sc, k, align_corners, align_mode) for i, o, sc, k in zip(spatial, outs, scales, pos)]
        for corner in itertools.product((0, 1), repeat=len(axes)):
            idx = tuple(a[1] if c else a[0] for a, c in zip(axes, corner))
            weight = np.prod([a[2] if c else 1 - a[2] for a, c in zip(axes, corner)])
            out[(slice(None), slice(None)) + pos] += weight * x[(slice(None), slice(None)) + idx]
    return out


X3D = rng.normal(size=(2, 3, 5))
X5D = rng.normal(size=(2, 2, 3, 4, 5))


@pytest.mark.parametrize("kw,x,outs,ac,am,scales", [
    (dict(size=8, mode="linear"), X3D, [8], False, 0, None),
    (dict(scale_factor=1.6, mode="linear", align_mode=1), X3D, [8], False, 1, [1.6]),
    (dict(size=[4], mode="linear", align_corners=True, data_format="NWC"), X3D.transpose(0, 2, 1), [4], True, 0, None),
    (dict(size=[5, 3, 7], mode="trilinear"), X5D, [5, 3, 7], False, 0, None),
    (dict(scale_factor=[2.0, 0.5, 1.5], mode="trilinear", align_corners=True), X5D, [6, 2, 7], True, 0, None),
], ids=["linear", "linear_scale_mode1", "linear_nwc_corners", "trilinear", "trilinear_scale_corners"])
def test_linear_and_trilinear(kw, x, outs, ac, am, scales):
    channels_last = kw.get("data_format", "").endswith("C")
    x_cf = np.moveaxis(x, -1, 1) if channels_last else x
    want = _linear_nd_ref(x_cf, outs, ac, am, scales)
    if channels_last:
        want = np.moveaxis(want, 1, -1)
    (got,), _ = build_and_run(lambda x: F.interpolate(x, **kw), {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    with context.static_mode_guard(False):
        np.testing.assert_allclose(F.interpolate(paddle.to_tensor(x), **kw).numpy(), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("op,shape,attrs", [
    ("linear_interp_v2", (2, 3, 5), {"out_w": 7, "align_corners": False, "align_mode": 0}),
    ("trilinear_interp_v2", (1, 2, 3, 2, 4), {"out_d": 4, "out_h": 3, "out_w": 5, "align_corners": False,
                                              "align_mode": 0}),
    ("nearest_interp_v2", (2, 2, 3, 2, 4), {"scale": [2.0, 1.0, 1.5], "align_corners": False}),
    ("nearest_interp_v2", (2, 3, 5), {"out_w": 8, "align_corners": False, "data_layout": "NHWC"}),
])
def test_nd_interp_gradients(op, shape, attrs):
    check_grad(op, {"X": rng.normal(size=shape)}, attrs)


def test_interpolate_rank_errors():
    with context.static_mode_guard(False):
        with pytest.raises(ShapeError, match="'linear' needs a 3-D"):
            F.interpolate(paddle.to_tensor(X4), size=3, mode="linear")
        with pytest.raises(ShapeError, match="'trilinear' needs a 5-D"):
            F.interpolate(paddle.to_tensor(X4), size=3, mode="trilinear")
        with pytest.raises(ValueError, match="3 numbers"):
            F.interpolate(paddle.to_tensor(X5D), size=[3, 3], mode="trilinear")
