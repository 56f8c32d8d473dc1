"""batch_norm and layer_norm against references written with explicit per-channel / per-row loops."""
import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError, ShapeError
from headrace.ops.kernel import context
from tests.ops.harness import Case, build_and_run, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(11)


# --- batch_norm reference --------------------------------------------------------------------------
def bn_reference(ins, attrs):
    x = ins["X"]
    nhwc = attrs.get("data_layout", "NCHW") == "NHWC"
    eps, momentum = attrs.get("epsilon", 1e-5), attrs.get("momentum", 0.9)
    test_mode = attrs.get("is_test", False) and not attrs.get("trainable_statistics", False)
    use_running = test_mode or attrs.get("use_global_stats", False)
    channels = x.shape[-1] if nhwc else x.shape[1]
    y = np.empty_like(x)
    stats = {k: np.empty(channels, x.dtype) for k in ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance")}
    for c in range(channels):
        index = (Ellipsis, c) if nhwc else (slice(None), c)
        values = x[index].astype(np.float64)
        if use_running:
            mu, var = float(ins["Mean"][c]), float(ins["Variance"][c])
            stats["MeanOut"][c], stats["VarianceOut"][c] = mu, var
        else:
            mu = values.sum() / values.size
            var = ((values - mu) ** 2).sum() / values.size
            stats["MeanOut"][c] = momentum * ins["Mean"][c] + (1 - momentum) * mu
            stats["VarianceOut"][c] = momentum * ins["Variance"][c] + (1 - momentum) * var
        stats["SavedMean"][c] = mu
        stats["SavedVariance"][c] = 1.0 / np.sqrt(var + eps)
        y[index] = (values - mu) / np.sqrt(var + eps) * ins["Scale"][c] + ins["Bias"][c]
    return {"Y": y, **stats}


def _bn_case(id, shape, dtype="float64", **attrs):
    nhwc = attrs.get("data_layout") == "NHWC"
    channels = shape[-1] if nhwc else shape[1]
    ins = {
        "X": (rng.standard_normal(shape) * 2 + 0.5).astype(dtype),
        "Scale": rng.uniform(0.5, 1.5, channels).astype(dtype),
        "Bias": rng.standard_normal(channels).astype(dtype),
        "Mean": rng.standard_normal(channels).astype(dtype),
        "Variance": rng.uniform(0.5, 2.0, channels).astype(dtype),
    }
    tol = 2e-5 if dtype == "float32" else 1e-10
    return Case("batch_norm", ins, bn_reference, attrs=attrs, id=f"bn-{id}-{dtype}", batch_slots=("X",),
                batch_outputs=("Y",), rtol=tol, atol=tol)


BN_CASES = [
    _bn_case("train-2d", (6, 4)),
    _bn_case("train-2d", (6, 4), dtype="float32"),
    _bn_case("train-4d", (3, 4, 5, 2)),
    _bn_case("train-4d", (3, 4, 5, 2), dtype="float32", momentum=0.7, epsilon=1e-3),
    _bn_case("train-3d", (2, 3, 7), momentum=0.5),
    _bn_case("train-5d", (2, 3, 2, 2, 3), epsilon=0.0),
    _bn_case("train-nhwc", (3, 5, 4, 4), data_layout="NHWC"),
    _bn_case("train-nhwc", (3, 5, 4, 4), dtype="float32", data_layout="NHWC", momentum=0.99),
    _bn_case("test", (3, 4, 5, 2), is_test=True),
    _bn_case("test", (3, 4), dtype="float32", is_test=True),
    _bn_case("test-nhwc", (2, 3, 3, 4), data_layout="NHWC", is_test=True),
    _bn_case("global-stats", (3, 4, 2, 2), use_global_stats=True),
    _bn_case("trainable-stats-in-test", (3, 4, 2, 2), is_test=True, trainable_statistics=True),
]


# --- layer_norm reference --------------------------------------------------------------------------
def ln_reference(ins, attrs):
    x = ins["X"]
    axis = attrs.get("begin_norm_axis", 1)
    eps = attrs.get("epsilon", 1e-5)
    left = int(np.prod(x.shape[:axis]))
    rows = x.reshape(left, -1).astype(np.float64)
    y = np.empty_like(rows)
    mean, var = np.empty(left, x.dtype), np.empty(left, x.dtype)
    for i, row in enumerate(rows):
        mu = row.sum() / row.size
        v = ((row - mu) ** 2).sum() / row.size
        out = (row - mu) / np.sqrt(v + eps)
        if "Scale" in ins:
            out = out * ins["Scale"]
        if "Bias" in ins:
            out = out + ins["Bias"]
        y[i], mean[i], var[i] = out, mu, v
    return {"Y": y.reshape(x.shape).astype(x.dtype), "Mean": mean, "Variance": var}


def _ln_case(id, shape, axis, dtype="float64", scale=True, bias=True, **attrs):
    right = int(np.prod(shape[axis:]))
    ins = {"X": (rng.standard_normal(shape) * 3 - 1).astype(dtype)}
    if scale:
        ins["Scale"] = rng.uniform(0.5, 1.5, right).astype(dtype)
    if bias:
        ins["Bias"] = rng.standard_normal(right).astype(dtype)
    tol = 2e-5 if dtype == "float32" else 1e-10
    return Case("layer_norm", ins, ln_reference, attrs={"begin_norm_axis": axis, **attrs},
                id=f"ln-{id}-axis{axis}-{dtype}", batch_slots=("X",), batch_outputs=("Y", "Mean", "Variance"),
                rtol=tol, atol=tol)


LN_CASES = [
    _ln_case("2d", (5, 6), 1),
    _ln_case("2d", (5, 6), 1, dtype="float32"),
    _ln_case("3d", (2, 3, 4), 1),
    _ln_case("3d", (2, 3, 4), 2),
    _ln_case("3d", (2, 3, 4), 2, dtype="float32", epsilon=1e-3),
    _ln_case("4d", (2, 3, 2, 5), 3),
    _ln_case("4d", (2, 3, 2, 5), 2),
    _ln_case("no-scale", (4, 6), 1, scale=False),
    _ln_case("no-bias", (2, 3, 4), 2, bias=False),
    _ln_case("neither", (2, 3, 4), 1, dtype="float32", scale=False, bias=False),
]
CASES = BN_CASES + LN_CASES


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_infer_with_unknown_batch(case):
    check_infer_batch(case)


def test_batch_norm_train_output_is_normalized_and_running_stats_move():
    """Properties independent of any reference: zero mean / unit variance per channel, and the
    running statistics move toward the batch statistics by (1 - momentum)."""
    case = _bn_case("props", (8, 3, 4, 4), momentum=0.8)
    case.inputs["Scale"] = np.ones(3)
    case.inputs["Bias"] = np.zeros(3)
    _, out = build_and_run(case)
    y = out["Y"][0]
    np.testing.assert_allclose(y.mean(axis=(0, 2, 3)), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=(0, 2, 3)), 1.0, rtol=1e-4)  # eps=1e-5 shrinks it slightly
    x = case.inputs["X"]
    batch_mean = x.mean(axis=(0, 2, 3))
    np.testing.assert_allclose(out["MeanOut"][0], 0.8 * case.inputs["Mean"] + 0.2 * batch_mean, rtol=1e-12)
    np.testing.assert_allclose(out["SavedVariance"][0], 1 / np.sqrt(x.var(axis=(0, 2, 3)) + 1e-5), rtol=1e-12)


def test_batch_norm_train_and_test_differ():
    train = _bn_case("t", (4, 3, 2, 2))
    test = Case("batch_norm", train.inputs, bn_reference, attrs={"is_test": True}, batch_slots=("X",))
    y_train = build_and_run(train)[1]["Y"][0]
    y_test = build_and_run(test)[1]["Y"][0]
    assert not np.allclose(y_train, y_test)


def test_batch_norm_declares_running_stats_inplace():
    from headrace.ops.registry import lookup
    assert lookup("batch_norm").inplace == {"MeanOut": "Mean", "VarianceOut": "Variance"}


# --- build errors ----------------------------------------------------------------------------------
def _bn_inputs(shape, channels=None, dtype="float32", stat_dtype=None, **override):
    channels = shape[1] if channels is None else channels
    ins = {"X": np.zeros(shape, dtype)}
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        ins[slot] = np.zeros(channels, stat_dtype or dtype)
    ins.update(override)
    return ins


def _ln_inputs(shape, right=None, dtype="float32"):
    right = int(np.prod(shape[1:])) if right is None else right
    return {"X": np.zeros(shape, dtype), "Scale": np.ones(right, dtype), "Bias": np.zeros(right, dtype)}


NORM_ERRORS = [
    ("batch_norm", _bn_inputs((4, 3, 2, 2), channels=4), {}, ShapeError, "input `Scale`"),
    ("batch_norm", _bn_inputs((4, 3, 2, 2), Variance=np.ones(5, "float32")), {}, ShapeError, "input `Variance`"),
    ("batch_norm", _bn_inputs((4, 3, 2, 2)), {"data_layout": "NHWC"}, ShapeError, "data_layout=NHWC"),
    ("batch_norm", _bn_inputs((4, 3, 2, 2), Mean=np.zeros((3, 1), "float32")), {}, ShapeError, "rank 1"),
    ("batch_norm", _bn_inputs((4,), channels=4), {}, ShapeError, "rank 2 or 3 or 4 or 5"),
    ("batch_norm", _bn_inputs((4, 3), stat_dtype="float64"), {}, DTypeError, "float32"),
    ("batch_norm", _bn_inputs((4, 3), dtype="int32"), {}, DTypeError, "floating"),
    ("batch_norm", _bn_inputs((4, 3)), {"data_layout": "NCDHW"}, AttrError, "data_layout"),
    ("batch_norm", _bn_inputs((4, 3)), {"epsilon": 0.1}, AttrError, "epsilon"),
    ("layer_norm", _ln_inputs((2, 3, 4), right=4), {}, ShapeError, "shape [12]"),
    ("layer_norm", _ln_inputs((2, 3, 4), right=12), {"begin_norm_axis": 2}, ShapeError, "shape [4]"),
    ("layer_norm", _ln_inputs((2, 3, 4)), {"begin_norm_axis": 3}, AttrError, "begin_norm_axis"),
    ("layer_norm", _ln_inputs((2, 3, 4)), {"begin_norm_axis": 0}, AttrError, "begin_norm_axis"),
    ("layer_norm", {"X": np.zeros((2, 3), "float32"), "Scale": np.ones(3, "float64")}, {}, DTypeError, "float32"),
    ("layer_norm", {"X": np.zeros((2, 3), "int64")}, {}, DTypeError, "floating"),
    ("layer_norm", {"X": np.zeros((2, 3), "float32")}, {"epsilon": -1e-5}, AttrError, "epsilon"),
]


@pytest.mark.parametrize("op, inputs, attrs, error, match", NORM_ERRORS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(NORM_ERRORS)])
def test_build_errors(op, inputs, attrs, error, match):
    check_build_error(op, inputs, attrs, error, match=match)


# --- gradients: central differences in float64 ------------------------------------------------------
from headrace.autodiff import gradients  # noqa: E402
from headrace.ops.apply import apply_op  # noqa: E402
from headrace.ops.registry import Meta, lookup  # noqa: E402
from tests.helpers import build_and_run as run_program  # noqa: E402
from tests.ops.gradcheck import check_grad  # noqa: E402

grng = np.random.default_rng(99)


def _bn_grad_inputs(shape, layout="NCHW"):
    channels = shape[-1] if layout == "NHWC" else shape[1]
    return {"X": grng.standard_normal(shape) * 2 + 0.5, "Scale": grng.uniform(0.5, 1.5, channels),
            "Bias": grng.standard_normal(channels), "Mean": grng.standard_normal(channels),
            "Variance": grng.uniform(0.5, 2.0, channels)}


# (id, X shape, attrs); the moving statistics Mean/Variance get no gradient (as in the reference)
BN_GRAD_CASES = [
    ("train-2d", (6, 4), {}),
    ("train-3d", (2, 3, 5), {"momentum": 0.5}),
    ("train-4d", (2, 3, 2, 3), {}),
    ("train-4d-eps", (2, 3, 2, 3), {"epsilon": 1e-3}),
    ("train-5d", (2, 2, 2, 2, 3), {"epsilon": 0.0}),
    ("train-nhwc", (2, 2, 3, 4), {"data_layout": "NHWC"}),
    ("test", (2, 3, 2, 2), {"is_test": True}),
    ("test-nhwc", (2, 2, 3, 3), {"is_test": True, "data_layout": "NHWC"}),
    ("global-stats", (3, 4, 2, 2), {"use_global_stats": True}),
    ("trainable-stats-in-test", (2, 3, 2, 3), {"is_test": True, "trainable_statistics": True}),
]


@pytest.mark.parametrize("id, shape, attrs", BN_GRAD_CASES, ids=[c[0] for c in BN_GRAD_CASES])
def test_batch_norm_gradient(id, shape, attrs):
    check_grad("batch_norm", _bn_grad_inputs(shape, attrs.get("data_layout", "NCHW")), attrs,
               wrt=("X", "Scale", "Bias"), out_slots=("Y",))


@pytest.mark.parametrize("wrt", [("X",), ("Scale",), ("Bias",), ("Scale", "Bias")])
def test_batch_norm_gradient_of_some_inputs(wrt):
    check_grad("batch_norm", _bn_grad_inputs((3, 2, 2, 2)), {}, wrt=wrt, out_slots=("Y",))


def _bn_grads(inputs, attrs, dy):
    def build(x, scale, bias, mean, variance, dy):
        x.stop_gradient = scale.stop_gradient = bias.stop_gradient = False
        y = apply_op("batch_norm", {"X": x, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": variance},
                     attrs)["Y"][0]
        return gradients([y], [x, scale, bias], target_gradients=[dy])
    return run_program(build, {**{k.lower(): v for k, v in inputs.items()}, "dy": dy})[0]


def test_batch_norm_test_mode_gradient_uses_the_moving_statistics():
    """With moving statistics Y is affine in X: dX = dY * Scale / sqrt(Variance + eps) exactly."""
    inputs = _bn_grad_inputs((3, 2, 2, 2))
    dy = grng.standard_normal((3, 2, 2, 2))
    for attrs in ({"is_test": True}, {"use_global_stats": True}):
        dx, dscale, dbias = _bn_grads(inputs, {**attrs, "epsilon": 1e-4}, dy)
        inv_std = 1 / np.sqrt(inputs["Variance"] + 1e-4)
        np.testing.assert_allclose(dx, dy * (inputs["Scale"] * inv_std)[None, :, None, None], rtol=1e-12)
        x_hat = (inputs["X"] - inputs["Mean"][None, :, None, None]) * inv_std[None, :, None, None]
        np.testing.assert_allclose(dscale, (dy * x_hat).sum(axis=(0, 2, 3)), rtol=1e-12)
        np.testing.assert_allclose(dbias, dy.sum(axis=(0, 2, 3)), rtol=1e-12)


def test_batch_norm_train_gradient_is_orthogonal_to_the_statistics():
    """Batch statistics make Y invariant to shifting or scaling a channel of X, so dX sums to zero
    per channel and is orthogonal to the normalized X (per channel)."""
    inputs = _bn_grad_inputs((4, 3, 2, 2))
    dy = grng.standard_normal((4, 3, 2, 2))
    dx = _bn_grads(inputs, {"epsilon": 0.0}, dy)[0]
    np.testing.assert_allclose(dx.sum(axis=(0, 2, 3)), 0.0, atol=1e-12)
    centered = inputs["X"] - inputs["X"].mean(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose((dx * centered).sum(axis=(0, 2, 3)), 0.0, atol=1e-11)


def test_batch_norm_grad_kernel_computes_only_wanted():
    kernel = lookup("batch_norm_grad").kernel
    attrs = dict(lookup("batch_norm").attrs)
    ins = {"X": grng.standard_normal((3, 2, 4)), "Scale": np.ones(2), "SavedMean": np.zeros(2),
           "SavedVariance": np.ones(2), "Y@GRAD": grng.standard_normal((3, 2, 4))}
    got = kernel(ins, attrs, context({"Bias@GRAD"}))
    assert set(got) == {"Bias@GRAD"}
    np.testing.assert_allclose(got["Bias@GRAD"], ins["Y@GRAD"].sum(axis=(0, 2)), rtol=1e-12)
    assert set(kernel(ins, attrs, context({"X@GRAD", "Scale@GRAD"}))) == {"X@GRAD", "Scale@GRAD"}


LN_GRAD_CASES = [
    ("2d", (5, 6), 1, {}),
    ("3d-axis1", (2, 3, 4), 1, {}),
    ("3d-axis2", (2, 3, 4), 2, {"epsilon": 1e-3}),
    ("4d-axis3", (2, 3, 2, 5), 3, {}),
    ("4d-axis2", (2, 3, 2, 5), 2, {}),
    ("no-scale", (4, 6), 1, {"scale": False}),
    ("no-bias", (2, 3, 4), 2, {"bias": False}),
    ("neither", (2, 3, 4), 1, {"scale": False, "bias": False}),
]


def _ln_grad_inputs(shape, axis, scale=True, bias=True):
    right = int(np.prod(shape[axis:]))
    ins = {"X": grng.standard_normal(shape) * 3 - 1}
    if scale:
        ins["Scale"] = grng.uniform(0.5, 1.5, right)
    if bias:
        ins["Bias"] = grng.standard_normal(right)
    return ins


@pytest.mark.parametrize("id, shape, axis, options", LN_GRAD_CASES, ids=[c[0] for c in LN_GRAD_CASES])
def test_layer_norm_gradient(id, shape, axis, options):
    attrs = {"begin_norm_axis": axis, **{k: v for k, v in options.items() if k == "epsilon"}}
    inputs = _ln_grad_inputs(shape, axis, options.get("scale", True), options.get("bias", True))
    check_grad("layer_norm", inputs, attrs, out_slots=("Y",))


@pytest.mark.parametrize("wrt", [("X",), ("Scale",), ("Bias",)])
def test_layer_norm_gradient_of_one_input(wrt):
    check_grad("layer_norm", _ln_grad_inputs((3, 2, 4), 1), {"begin_norm_axis": 1}, wrt=wrt, out_slots=("Y",))


def test_layer_norm_grad_rows_sum_to_zero_and_bias_is_shape_only():
    """Y is invariant to shifting a row of X, so each row of dX sums to zero; Bias arrives as
    shape-only (no_need_buffer) and only the wanted gradients are computed."""
    kernel = lookup("layer_norm_grad").kernel
    assert lookup("layer_norm_grad").no_need_buffer == {"Bias"}
    x, dy = grng.standard_normal((3, 2, 4)), grng.standard_normal((3, 2, 4))
    rows = x.reshape(3, 8)
    ins = {"X": x, "Scale": grng.uniform(0.5, 1.5, 8), "Bias": Meta((8,), np.float64),
           "Mean": rows.mean(axis=1), "Variance": rows.var(axis=1), "Y@GRAD": dy}
    attrs = {"begin_norm_axis": 1, "epsilon": 1e-5}
    got = kernel(ins, attrs, context({"X@GRAD", "Bias@GRAD"}))
    assert set(got) == {"X@GRAD", "Bias@GRAD"}
    np.testing.assert_allclose(got["X@GRAD"].reshape(3, 8).sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(got["Bias@GRAD"], dy.reshape(3, 8).sum(axis=0), rtol=1e-12)


@pytest.mark.parametrize("dtype, stat_dtype, tol", [("float32", "float32", 1e-4), ("float16", "float32", 2e-2)])
def test_low_precision_gradients_keep_their_dtypes(dtype, stat_dtype, tol):
    """Check mode verifies every gradient kernel's dtype: X@GRAD in X's dtype, Scale/Bias@GRAD in
    the statistics' dtype; values agree with float64."""
    bn64 = _bn_grad_inputs((4, 3, 2, 2))
    ln64 = _ln_grad_inputs((4, 3, 2, 2), 1)
    dy64 = grng.standard_normal((4, 3, 2, 2))

    def build(x, scale, bias, mean, variance, ln_scale, ln_bias, dy):
        for v in (x, scale, bias, ln_scale, ln_bias):
            v.stop_gradient = False
        y = apply_op("batch_norm", {"X": x, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": variance},
                     {})["Y"][0]
        y = apply_op("layer_norm", {"X": y, "Scale": ln_scale, "Bias": ln_bias}, {"begin_norm_axis": 1})["Y"][0]
        return gradients([y], [x, scale, bias, ln_scale, ln_bias], target_gradients=[dy])

    feeds = {**{k.lower(): v for k, v in bn64.items()}, "ln_scale": ln64["Scale"], "ln_bias": ln64["Bias"], "dy": dy64}
    want = run_program(build, feeds)[0]
    low = {k: v.astype(dtype if k in ("x", "dy") else stat_dtype) for k, v in feeds.items()}
    got = run_program(build, low)[0]
    assert [g.dtype.name for g in got] == [dtype] + [stat_dtype] * 4
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=tol, atol=tol * np.abs(w).max())
