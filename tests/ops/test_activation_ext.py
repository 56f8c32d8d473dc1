"""The activations of ops/activation_ext.py: forward against scalar references written with the
math module, shape inference with an unknown batch, gradients against float64 central
differences, handed buffers (as tests/passes/test_kernel_buffers.py), and bad attributes."""
import math

import numpy as np
import pytest

from headrace.core.errors import AttrError, ShapeError
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch, ids
from tests.passes.test_kernel_buffers import test_kernel_buffers as check_buffers

rng = np.random.default_rng(7)


def _sig(v):
    return 1.0 / (1.0 + math.exp(-v)) if v >= 0 else math.exp(v) / (1.0 + math.exp(v))


def _softplus(v, beta=1.0, threshold=20.0):
    return v if beta * v > threshold else math.log1p(math.exp(beta * v)) / beta


SELU_SCALE, SELU_ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
# op -> (scalar reference f(v, attrs), attrs, kinks to keep away from for the gradient check)
REFS = {
    "hard_swish": (lambda v, a: v * min(max(v + 3.0, 0.0), 6.0) / 6.0, {}, (-3.0, 3.0)),
    "swish": (lambda v, a: v * _sig(a.get("beta", 1.0) * v), {"beta": 1.5}, ()),
    "mish": (lambda v, a: v * math.tanh(_softplus(v)), {}, ()),
    "elu": (lambda v, a: v if v > 0 else a.get("alpha", 1.0) * (math.exp(v) - 1), {"alpha": 0.7}, (0.0,)),
    "celu": (lambda v, a: max(0.0, v) + min(0.0, a["alpha"] * (math.exp(v / a["alpha"]) - 1)), {"alpha": 1.5},
             (0.0,)),
    "selu": (lambda v, a: SELU_SCALE * (v if v > 0 else SELU_ALPHA * (math.exp(v) - 1)), {}, (0.0,)),
    "softplus": (lambda v, a: _softplus(v, a["beta"], a["threshold"]), {"beta": 2.0, "threshold": 3.0}, (1.5,)),
    "softsign": (lambda v, a: v / (1 + abs(v)), {}, (0.0,)),
    "softshrink": (lambda v, a: v - 0.4 if v > 0.4 else (v + 0.4 if v < -0.4 else 0.0), {"lambda": 0.4},
                   (-0.4, 0.4)),
    "hard_shrink": (lambda v, a: v if abs(v) > 0.5 else 0.0, {}, (-0.5, 0.5)),
    "tanh_shrink": (lambda v, a: v - math.tanh(v), {}, ()),
    "thresholded_relu": (lambda v, a: v if v > 1.0 else 0.25, {"value": 0.25}, (1.0,)),
    "hard_sigmoid": (lambda v, a: min(max(v / 6 + 0.5, 0.0), 1.0), {"slope": 1 / 6}, (-3.0, 3.0)),
    "brelu": (lambda v, a: min(max(v, -1.0), 1.0), {"t_min": -1.0, "t_max": 1.0}, (-1.0, 1.0)),
    "relu6": (lambda v, a: min(max(v, 0.0), 6.0), {}, (0.0, 6.0)),
    "logsigmoid": (lambda v, a: -_softplus(-v), {}, ()),
}


def _values(shape, kinks, low=-7.0, high=7.0):
    x = rng.uniform(low, high, shape)
    for k in kinks:   # keep finite differences off the kinks
        near = np.abs(x - k) < 0.05
        x[near] = k + 0.1
    return x


def _reference(fn):
    def reference(ins, attrs):
        x = ins["X"]
        out = np.array([fn(float(v), attrs) for v in x.ravel()]).reshape(x.shape)
        return {"Out": out.astype(x.dtype)}
    return reference


CASES = []
for _op, (_fn, _attrs, _kinks) in REFS.items():
    for _shape, _dtype in (((3, 5), "float64"), ((2, 3, 4), "float64"), ((), "float64"), ((4, 6), "float32")):
        CASES.append(Case(_op, {"X": _values(_shape, _kinks).astype(_dtype)}, _reference(_fn), dict(_attrs),
                          rtol=1e-5 if _dtype == "float32" else 1e-12, atol=1e-6 if _dtype == "float32" else 1e-14,
                          id=f"{_op}-{_shape}-{_dtype}"))
CASES.append(Case("mish", {"X": np.array([30.0, -30.0, 19.0, 21.0])}, _reference(REFS["mish"][0]), id="mish-tails"))
CASES.append(Case("softplus", {"X": np.array([800.0, -800.0, 0.0])}, _reference(lambda v, a: _softplus(v)),
                  id="softplus-no-overflow"))


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.inputs["X"].ndim >= 1],
                         ids=ids([c for c in CASES if c.inputs["X"].ndim >= 1]))
def test_infer_with_unknown_batch(case):
    check_infer_batch(case)


@pytest.mark.parametrize("op", sorted(REFS))
def test_gradient(op):
    _, attrs, kinks = REFS[op]
    check_grad(op, {"X": _values((3, 4), kinks)}, attrs)


@pytest.mark.parametrize("op", sorted(REFS))
def test_buffers(op):
    _, attrs, kinks = REFS[op]
    x = _values((6, 7), kinks).astype("float32")
    check_buffers((op, {"X": x}, attrs, None, ["Out"]))
    dout = rng.standard_normal((6, 7)).astype("float32")
    check_buffers((f"{op}_grad", {"X": x, grad_slot("Out"): dout}, attrs, [grad_slot("X")], [grad_slot("X")]))


# --- log_softmax -------------------------------------------------------------------------------------
def _log_softmax_ref(ins, attrs):
    x = ins["X"].astype(np.float64)
    moved = np.moveaxis(x, attrs.get("axis", -1), -1)
    out = np.empty_like(moved)
    for idx in np.ndindex(moved.shape[:-1]):
        row = moved[idx]
        total = sum(math.exp(v - row.max()) for v in row)
        out[idx] = [v - row.max() - math.log(total) for v in row]
    return {"Out": np.moveaxis(out, -1, attrs.get("axis", -1)).astype(ins["X"].dtype)}


LOG_SOFTMAX = [Case("log_softmax", {"X": rng.standard_normal((3, 5)) * 4}, _log_softmax_ref, {"axis": a},
                    rtol=1e-12, id=f"axis{a}") for a in (-1, 0, 1)]
LOG_SOFTMAX.append(Case("log_softmax", {"X": rng.standard_normal((2, 3, 4)).astype("float32")}, _log_softmax_ref,
                        {"axis": 1}, rtol=1e-5, id="3d-float32"))


@pytest.mark.parametrize("case", LOG_SOFTMAX, ids=ids(LOG_SOFTMAX))
def test_log_softmax_forward(case):
    check_forward(case)
    check_infer_batch(case)


@pytest.mark.parametrize("axis", [-1, 0, 2])
def test_log_softmax_gradient(axis):
    check_grad("log_softmax", {"X": rng.standard_normal((2, 3, 4))}, {"axis": axis})


def test_log_softmax_bad_axis():
    check_build_error("log_softmax", {"X": np.zeros((2, 3))}, {"axis": 2}, AttrError)


# --- prelu -------------------------------------------------------------------------------------------
def _prelu_ref(ins, attrs):
    x, alpha = ins["X"], ins["Alpha"]
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape):
        if attrs["mode"] == "all":
            a = alpha.ravel()[0]
        elif attrs["mode"] == "channel":
            a = alpha.ravel()[idx[-1] if attrs.get("data_format") == "NHWC" else idx[1]]
        else:
            a = alpha.reshape(x.shape[1:])[idx[1:]]
        out[idx] = x[idx] if x[idx] > 0 else a * x[idx]
    return {"Out": out}


PRELU = [
    Case("prelu", {"X": _values((2, 3, 4), (0.0,)), "Alpha": np.array([0.3])}, _prelu_ref, {"mode": "all"},
         id="all"),
    Case("prelu", {"X": _values((2, 3, 2, 2), (0.0,)), "Alpha": np.array([0.1, -0.2, 0.5])}, _prelu_ref,
         {"mode": "channel"}, id="channel"),
    Case("prelu", {"X": _values((2, 2, 2, 3), (0.0,)), "Alpha": np.array([0.1, -0.2, 0.5])}, _prelu_ref,
         {"mode": "channel", "data_format": "NHWC"}, id="channel-nhwc"),
    Case("prelu", {"X": _values((2, 3, 2), (0.0,)), "Alpha": rng.uniform(0, 1, (1, 3, 2))}, _prelu_ref,
         {"mode": "element"}, id="element"),
]


@pytest.mark.parametrize("case", PRELU, ids=ids(PRELU))
def test_prelu(case):
    check_forward(case)
    check_infer_batch(Case(case.op, case.inputs, case.reference, case.attrs, batch_slots=("X",)))
    check_grad("prelu", case.inputs, case.attrs, batch_unknown=False)


def test_prelu_alpha_size_is_checked():
    check_build_error("prelu", {"X": np.zeros((2, 3, 4)), "Alpha": np.zeros(2)}, {"mode": "channel"}, ShapeError)


# --- rrelu -------------------------------------------------------------------------------------------
def test_rrelu_training_draws_slopes_in_range_and_the_gradient_uses_them():
    x = _values((50, 40), (0.0,))
    out = lookup("rrelu").kernel({"X": x}, dict(lookup("rrelu").attrs), context(rng=np.random.default_rng(3)))
    noise = out["Noise"]
    assert np.all(noise[x >= 0] == 1.0)
    slopes = noise[x < 0]
    assert slopes.min() >= 1 / 8 and slopes.max() <= 1 / 3 and slopes.std() > 0.03
    np.testing.assert_array_equal(out["Out"], x * noise)
    check_grad("rrelu", {"X": x[:3, :4]}, {"fix_seed": True, "seed": 5}, out_slots=("Out",))


def test_rrelu_test_mode_is_leaky_relu_with_the_mean_slope():
    x = _values((3, 4), (0.0,))
    attrs = dict(lookup("rrelu").attrs, is_test=True, lower=0.1, upper=0.3)
    out = lookup("rrelu").kernel({"X": x}, attrs, context())["Out"]
    np.testing.assert_allclose(out, np.where(x >= 0, x, 0.2 * x), rtol=1e-15)


def test_rrelu_bounds_are_checked():
    check_build_error("rrelu", {"X": np.zeros((2, 2))}, {"lower": 0.5, "upper": 0.2}, AttrError)
