"""batch_norm and layer_norm against references written with explicit per-channel / per-row loops."""
import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError, ShapeError
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
