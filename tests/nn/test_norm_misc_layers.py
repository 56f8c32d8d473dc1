"""Norm, activation, dropout, shuffle and container layers of issue 16: both modes against NumPy
references written here, gradients against central differences, the group_norm op's checks."""
import numpy as np
import pytest

import headrace as paddle
import headrace.nn.functional as F
from headrace.core import context
from headrace.core.errors import AttrError, ShapeError
from tests.nn.layer_checks import both_modes, fd_grad
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(11)
nn = paddle.nn


def np_group_norm(x, groups, eps=1e-5, scale=None, bias=None):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if scale is not None:
        y = y * scale.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def np_lrn(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    sq = np.square(x)
    out = np.empty_like(x)
    for ch in range(c):
        lo, hi = max(ch - size // 2, 0), min(ch + (size - 1) // 2, c - 1)
        out[:, ch] = x[:, ch] / (k + alpha * sq[:, lo:hi + 1].sum(axis=1) / size) ** beta
    return out


def np_pixel_shuffle(x, r):
    n, c, h, w = x.shape
    out = np.empty((n, c // (r * r), h * r, w * r))
    for ch in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[:, ch, i::r, j::r] = x[:, ch * r * r + i * r + j]
    return out


def np_channel_shuffle(x, groups):
    c = x.shape[1]
    out = np.empty_like(x)
    for g in range(groups):
        for i in range(c // groups):
            out[:, i * groups + g] = x[:, g * (c // groups) + i]
    return out


def np_selu(x):
    return 1.0507009873554804934193349852946 * np.where(x > 0, x, 1.6732632423543772848170429916717 * np.expm1(x))


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


LAYERS = {
    "group_norm": (lambda: nn.GroupNorm(2, 4), (2, 4, 3, 3), lambda x, p: np_group_norm(x, 2, scale=p[0], bias=p[1])),
    "group_norm_nhwc": (lambda: nn.GroupNorm(3, 6, data_format="NHWC"), (2, 2, 3, 6),
                        lambda x, p: np_group_norm(x.transpose(0, 3, 1, 2), 3, scale=p[0], bias=p[1]).transpose(0, 2, 3, 1)),
    "instance_norm_2d": (lambda: nn.InstanceNorm2D(3), (2, 3, 4, 4), lambda x, p: np_group_norm(x, 3, scale=p[0], bias=p[1])),
    "instance_norm_1d": (lambda: nn.InstanceNorm1D(3, weight_attr=False, bias_attr=False), (2, 3, 5),
                         lambda x, p: np_group_norm(x, 3)),
    "lrn": (lambda: nn.LocalResponseNorm(3, alpha=0.5, beta=0.8, k=2.0), (2, 5, 2, 3),
            lambda x, p: np_lrn(x, 3, 0.5, 0.8, 2.0)),
    "lrn_even": (lambda: nn.LocalResponseNorm(4, alpha=0.3), (1, 6, 3), lambda x, p: np_lrn(x, 4, 0.3)),
    "pixel_shuffle": (lambda: nn.PixelShuffle(2), (2, 8, 2, 3), lambda x, p: np_pixel_shuffle(x, 2)),
    "pixel_unshuffle": (lambda: nn.PixelUnshuffle(2), (2, 2, 4, 6),
                        lambda x, p: _unshuffle_ref(x, 2)),
    "channel_shuffle": (lambda: nn.ChannelShuffle(3), (2, 6, 2, 2), lambda x, p: np_channel_shuffle(x, 3)),
    "glu": (lambda: nn.GLU(axis=1), (3, 6), lambda x, p: x[:, :3] * np_sigmoid(x[:, 3:])),
    "maxout": (lambda: nn.Maxout(2), (2, 6, 2, 3), lambda x, p: x.reshape(2, 3, 2, 2, 3).max(axis=2)),
    "maxout_nhwc": (lambda: nn.Maxout(3, axis=-1), (2, 2, 3, 6), lambda x, p: x.reshape(2, 2, 3, 2, 3).max(axis=4)),
    "prelu_channel": (lambda: nn.PReLU(3, 0.2), (2, 3, 4), lambda x, p: np.where(x > 0, x, p[0][None, :, None] * x)),
    "prelu_all": (lambda: nn.PReLU(), (2, 3, 4), lambda x, p: np.where(x > 0, x, p[0][0] * x)),
    "selu": (lambda: nn.SELU(), (3, 4), lambda x, p: np_selu(x)),
    "silu": (lambda: nn.SiLU(), (3, 4), lambda x, p: x * np_sigmoid(x)),
    "hardtanh": (lambda: nn.Hardtanh(-0.5, 0.7), (3, 4), lambda x, p: np.clip(x, -0.5, 0.7)),
    "hardsigmoid": (lambda: nn.Hardsigmoid(), (3, 4), lambda x, p: np.clip(x * 0.1666667 + 0.5, 0, 1)),
    "log_softmax": (lambda: nn.LogSoftmax(0), (3, 4),
                    lambda x, p: x - np.log(np.exp(x).sum(axis=0, keepdims=True))),
    "softmax2d": (lambda: nn.Softmax2D(), (2, 3, 2, 2), lambda x, p: np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)),
    "rrelu_eval": (lambda: nn.RReLU(0.1, 0.3).eval(), (3, 4), lambda x, p: np.where(x >= 0, x, 0.2 * x)),
    "identity": (lambda: nn.Identity(3, unused=True), (3, 4), lambda x, p: x),
    "unflatten": (lambda: nn.Unflatten(1, [2, 3]), (4, 6, 2), lambda x, p: x.reshape(4, 2, 3, 2)),
    "bilinear": None,   # two inputs: see test_bilinear
    "batch_norm_3d": (lambda: nn.BatchNorm3D(2).eval(), (2, 2, 2, 2, 3), 
                      lambda x, p: ((x - p[2].reshape(1, 2, 1, 1, 1)) / np.sqrt(p[3].reshape(1, 2, 1, 1, 1) + 1e-5)
                                    * p[0].reshape(1, 2, 1, 1, 1) + p[1].reshape(1, 2, 1, 1, 1))),
}
del LAYERS["bilinear"]


def _unshuffle_ref(x, r):
    n, c, h, w = x.shape
    out = np.empty((n, c * r * r, h // r, w // r))
    for ch in range(c):
        for i in range(r):
            for j in range(r):
                out[:, ch * r * r + i * r + j] = x[:, ch, i::r, j::r]
    return out


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers(name):
    make, shape, reference = LAYERS[name]
    both_modes(make, rng.standard_normal(shape), reference)


def test_pixel_unshuffle_inverts_shuffle_nhwc():
    x = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    with context.static_mode_guard(False):
        up = F.pixel_shuffle(paddle.to_tensor(x), 2, "NHWC")
        back = F.pixel_unshuffle(up, 2, "NHWC")
    want = np_pixel_shuffle(x.transpose(0, 3, 1, 2), 2).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(up.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(back.numpy(), x)


def test_bilinear():
    x1, x2 = rng.standard_normal((3, 4)), rng.standard_normal((3, 5))
    w, b = rng.standard_normal((2, 4, 5)), rng.standard_normal((1, 2))
    fd_grad(F.bilinear, [x1, x2, w, b])
    with context.static_mode_guard(False):
        layer = nn.Bilinear(4, 5, 2)
        layer.weight.set_value(w.astype(np.float32))
        layer.bias.set_value(b.astype(np.float32))
        got = layer(paddle.to_tensor(x1.astype(np.float32)), paddle.to_tensor(x2.astype(np.float32))).numpy()
    np.testing.assert_allclose(got, np.einsum("ni,oij,nj->no", x1, w, x2) + b, rtol=1e-5, atol=1e-5)


def test_composite_gradients_against_differences():
    fd_grad(lambda x: F.glu(x, axis=-1), [rng.standard_normal((2, 3, 4))])
    fd_grad(lambda x: F.maxout(x, 3), [rng.standard_normal((1, 6, 2, 2))])
    fd_grad(lambda x: F.local_response_norm(x, 3, alpha=0.4), [rng.standard_normal((2, 4, 3))])
    fd_grad(lambda x: F.pixel_shuffle(x, 2), [rng.standard_normal((1, 8, 2, 2))])
    fd_grad(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
            [rng.standard_normal((2, 3, 4)), rng.standard_normal(3), rng.standard_normal(3)])


def test_dropout2d_drops_whole_channels_and_scales():
    x = rng.uniform(1, 2, (8, 16, 3, 3)).astype(np.float32)
    with context.static_mode_guard(False):
        paddle.seed(3)
        layer = nn.Dropout2D(0.5)
        out = layer(paddle.to_tensor(x)).numpy()
        kept = out.reshape(8, 16, -1)
        dropped = np.all(kept == 0, axis=2)
        assert 0.2 < dropped.mean() < 0.8
        np.testing.assert_allclose(kept[~dropped], (x.reshape(8, 16, -1) * 2)[~dropped], rtol=1e-6)
        layer.eval()
        np.testing.assert_array_equal(layer(paddle.to_tensor(x)).numpy(), x)
        out3 = F.dropout3d(paddle.to_tensor(x[:, :, None]), 0.5).numpy().reshape(8, 16, -1)
        assert np.all(np.all(out3 == 0, axis=2) | np.all(out3 != 0, axis=2))


def test_alpha_dropout_keeps_selu_statistics():
    x = rng.standard_normal((200, 200)).astype(np.float32)
    x = np_selu(x).astype(np.float32)
    with context.static_mode_guard(False):
        paddle.seed(1)
        out = F.alpha_dropout(paddle.to_tensor(x), 0.2).numpy()
        assert abs(out.mean() - x.mean()) < 0.02 and abs(out.std() - x.std()) < 0.02
        np.testing.assert_array_equal(nn.AlphaDropout(0.2).eval()(paddle.to_tensor(x)).numpy(), x)
        feat = F.feature_alpha_dropout(paddle.to_tensor(x.reshape(20, 10, 200)), 0.3).numpy()
        values_per_channel = [np.unique(np.round(c, 5)).size for c in feat.reshape(200, 200)]
        assert min(values_per_channel) == 1 or max(values_per_channel) > 1


def test_errors():
    with context.static_mode_guard(False):
        x = paddle.to_tensor(np.zeros((2, 6, 3, 3), np.float32))
        with pytest.raises(ShapeError, match="divisible"):
            F.pixel_shuffle(x, 2)
        with pytest.raises(ValueError, match="groups"):
            F.maxout(x, 4)
        with pytest.raises(ValueError, match="divisible"):
            nn.GroupNorm(4, 6)
        with pytest.raises(ValueError, match="p must be"):
            nn.Dropout2D(1.5)
        with pytest.raises(NotImplementedError, match="running statistics"):
            F.instance_norm(x, use_input_stats=False)


# --- the group_norm op ----------------------------------------------------------------------------------
def _gn_ref(groups, nhwc=False):
    def reference(ins, attrs):
        x = ins["X"]
        xc = np.moveaxis(x, -1, 1) if nhwc else x
        y = np_group_norm(xc, groups, attrs.get("epsilon", 1e-5), ins.get("Scale"), ins.get("Bias"))
        n = x.shape[0]
        g = xc.reshape(n, groups, -1)
        return {"Y": (np.moveaxis(y, 1, -1) if nhwc else y).astype(x.dtype), "Mean": g.mean(-1).astype(x.dtype),
                "Variance": g.var(-1).astype(x.dtype)}
    return reference


GN = [
    Case("group_norm", {"X": rng.standard_normal((2, 4, 3, 2)), "Scale": rng.standard_normal(4),
                        "Bias": rng.standard_normal(4)}, _gn_ref(2), {"groups": 2}, rtol=1e-10, atol=1e-12, id="4d"),
    Case("group_norm", {"X": rng.standard_normal((3, 6, 5))}, _gn_ref(3), {"groups": 3, "epsilon": 0.1},
         rtol=1e-10, atol=1e-12, id="3d-no-affine"),
    Case("group_norm", {"X": rng.standard_normal((2, 3, 4)), "Scale": rng.standard_normal(4)}, _gn_ref(4, True),
         {"groups": 4, "data_layout": "NHWC"}, rtol=1e-10, atol=1e-12, id="nhwc-instance"),
    Case("group_norm", {"X": rng.standard_normal((2, 4)).astype("float32"), "Bias": np.ones(4, "float32")},
         _gn_ref(2), {"groups": 2}, rtol=1e-5, atol=1e-6, id="2d-float32"),
]


@pytest.mark.parametrize("case", GN, ids=[c.id for c in GN])
def test_group_norm_op(case):
    check_forward(case)
    check_infer_batch(Case(case.op, case.inputs, case.reference, case.attrs, batch_slots=("X",), rtol=case.rtol,
                           atol=case.atol))
    if case.inputs["X"].dtype == np.float64:
        check_grad("group_norm", case.inputs, case.attrs, out_slots=("Y",))


def test_group_norm_op_errors():
    check_build_error("group_norm", {"X": np.zeros((2, 6, 3))}, {"groups": 4}, AttrError, match="groups")
    check_build_error("group_norm", {"X": np.zeros((2, 6, 3)), "Scale": np.zeros(4)}, {"groups": 2}, ShapeError,
                      match="Scale")


def test_argument_errors_are_typed_and_name_the_callers_line():
    from headrace.core.errors import ArgTypeError, AttrError, ShapeError
    with context.static_mode_guard(False):
        x = paddle.to_tensor(np.zeros((2, 6, 3, 3), np.float32))
        for call, error in ((lambda: nn.GroupNorm(4, 6), AttrError), (lambda: F.pixel_shuffle(x, 2), ShapeError),
                            (lambda: nn.LayerList([3]), ArgTypeError), (lambda: nn.LSTM(3, 2, direction="up"), AttrError),
                            (lambda: F.max_pool1d(x, 2), ShapeError), (lambda: nn.MultiHeadAttention(5, 2), AttrError)):
            with pytest.raises(error, match=r"\(at .*test_norm_misc_layers\.py:\d+\)"):
                call()
