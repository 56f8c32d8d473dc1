"""fused_conv2d_add_act: Output = conv2d(Input, Filter) + Bias, the one op eager F.conv2d runs for a
convolution with a bias.

Its arithmetic must be that of conv2d followed by elementwise_add (axis=1, or 3 for NHWC),
gradients too, bit for bit: eager and static training (which keeps the two ops, as the reference's
programs do) then give the same numbers (tests/test_zoo_modes.py trains LeNet both ways)."""
import numpy as np
import pytest

import headrace as paddle
from headrace.core.errors import AttrError, DTypeError, ShapeError
from headrace.ops import conv_gemm, parallel
from headrace.ops.gradrule import grad_slot as G
from headrace.ops.kernel import context
from headrace.ops.registry import lookup
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, ids
from tests.ops.test_conv import conv_reference

rng = np.random.default_rng(11)

# (input shape, filter shape, attrs)
SHAPES = [((3, 2, 6, 5), (4, 2, 3, 3), {"paddings": [1, 1]}),
          ((2, 4, 7, 6), (6, 2, 3, 2), {"groups": 2, "paddings": [1, 2, 0, 1], "strides": [2, 1]}),
          ((2, 2, 9, 8), (3, 2, 2, 2), {"dilations": [2, 1]}),
          ((3, 5, 4, 2), (4, 2, 3, 3), {"data_format": "NHWC", "paddings": [1, 1]})]


def _reference(ins, attrs):
    out = conv_reference(ins, attrs)["Output"]
    axis = 3 if attrs.get("data_format") == "NHWC" else 1
    return {"Output": out + ins["Bias"].reshape([-1 if i == axis else 1 for i in range(4)])}


def _inputs(xs, ws, dtype):
    return {"Input": rng.uniform(-1, 1, xs).astype(dtype), "Filter": rng.uniform(-1, 1, ws).astype(dtype),
            "Bias": rng.uniform(-1, 1, ws[:1]).astype(dtype)}


CASES = [Case("fused_conv2d_add_act", _inputs(xs, ws, dtype), _reference, attrs=attrs, id=f"{xs}-{ws}-{dtype}",
              rtol=1e-5 if dtype == "float32" else 1e-10, atol=1e-5 if dtype == "float32" else 1e-12)
         for xs, ws, attrs in SHAPES for dtype in ("float32", "float64")]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward_matches_a_loop_reference(case):
    check_forward(case)


@pytest.mark.parametrize("xs,ws,attrs", SHAPES)
def test_gradients_match_central_differences(xs, ws, attrs):
    check_grad("fused_conv2d_add_act", _inputs(xs, ws, "float64"), attrs)


def _run(op, ins, attrs=None, wanted=()):
    opdef = lookup(op)
    return opdef.kernel(ins, dict(opdef.attrs, **(attrs or {})), context(wanted))


@pytest.mark.parametrize("xs,ws,attrs", SHAPES + [((1, 3, 40, 40), (4, 3, 3, 3), {"paddings": [1, 1]})])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("side_by_side", [False, True])
def test_bits_equal_conv2d_then_elementwise_add(xs, ws, attrs, threads, side_by_side, monkeypatch):
    """Forward and every gradient, bit for bit, with one sample a product or several side by side,
    with and without the intra-op pool (a batch of one large image splits its product)."""
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 4)
    monkeypatch.setattr(conv_gemm, "PRODUCT_COLUMNS", 1 << 16 if side_by_side else 1)
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    paddle.set_flags({"FLAGS_paddle_num_threads": threads})
    try:
        _compare_with_two_ops(_inputs(xs, ws, "float32"), attrs)
    finally:
        paddle.set_flags(old)


def _compare_with_two_ops(ins, attrs):
    axis = 3 if attrs.get("data_format") == "NHWC" else 1
    fused = _run("fused_conv2d_add_act", ins, attrs)["Output"]
    conv = _run("conv2d", {"Input": ins["Input"], "Filter": ins["Filter"]}, attrs)["Output"]
    plain = _run("elementwise_add", {"X": conv, "Y": ins["Bias"]}, {"axis": axis})["Out"]
    np.testing.assert_array_equal(fused, plain)
    dout = rng.uniform(-1, 1, fused.shape).astype("float32")
    grads = _run("fused_conv2d_add_act_grad", dict(ins, **{G("Output"): dout}), attrs,
                 (G("Input"), G("Filter"), G("Bias")))
    cg = _run("conv2d_grad", {"Input": ins["Input"], "Filter": ins["Filter"], G("Output"): dout}, attrs,
              (G("Input"), G("Filter")))
    add = _run("elementwise_add_grad", {"X": conv, "Y": ins["Bias"], G("Out"): dout}, {"axis": axis}, (G("Y"),))
    np.testing.assert_array_equal(grads[G("Input")], cg[G("Input")])
    np.testing.assert_array_equal(grads[G("Filter")], cg[G("Filter")])
    np.testing.assert_array_equal(grads[G("Bias")], add[G("Y")])


def test_only_the_wanted_gradients_are_computed():
    ins = _inputs((2, 2, 5, 5), (3, 2, 3, 3), "float64")
    got = _run("fused_conv2d_add_act_grad", dict(ins, **{G("Output"): np.ones((2, 3, 3, 3))}), {}, (G("Bias"),))
    assert set(got) == {G("Bias")}
    np.testing.assert_array_equal(got[G("Bias")], np.full(3, 18.0))


def test_bad_inputs_are_build_errors_naming_the_slot():
    ins = _inputs((2, 2, 5, 5), (3, 2, 3, 3), "float32")
    assert "Bias" in check_build_error("fused_conv2d_add_act", dict(ins, Bias=np.ones(4, "float32")), {}, ShapeError)
    assert "Bias" in check_build_error("fused_conv2d_add_act", dict(ins, Bias=np.ones((1, 3), "float32")), {},
                                       ShapeError)
    check_build_error("fused_conv2d_add_act", dict(ins, Bias=np.ones(3, "float64")), {}, DTypeError)
    message = check_build_error("fused_conv2d_add_act", ins, {"activation": "relu"}, AttrError)
    assert "not supported yet" in message


def _eager_conv(x, w, b, **kwargs):
    out = paddle.nn.functional.conv2d(x, w, b, **kwargs)
    return out, (out._node.plan.op_type if out._node is not None else None)


def test_eager_conv2d_runs_one_op_and_trains_like_two():
    paddle.disable_static()
    x = paddle.to_tensor(rng.uniform(-1, 1, (3, 2, 6, 6)).astype("float32"), stop_gradient=False)
    w = paddle.to_tensor(rng.uniform(-1, 1, (4, 2, 3, 3)).astype("float32"), stop_gradient=False)
    b = paddle.to_tensor(rng.uniform(-1, 1, (4,)).astype("float32"), stop_gradient=False)
    out, kind = _eager_conv(x, w, b, padding=1)
    assert kind == "fused_conv2d_add_act"
    conv = paddle.nn.functional.conv2d(x.detach(), w.detach(), padding=1).numpy()
    np.testing.assert_array_equal(out.numpy(), conv + b.numpy().reshape(1, 4, 1, 1))
    out.sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), np.full(4, 3 * 36.0, "float32"))
    layer = paddle.nn.Conv2D(2, 4, 3)
    assert _eager_conv(x, layer.weight, layer.bias)[1] == "fused_conv2d_add_act"


def test_eager_conv2d_keeps_the_two_ops_where_the_fused_op_would_differ():
    """A broadcasting bias ([1]), a bias of another dtype, a bias-only gradient (frozen input and
    filter) and depthwise convolutions keep conv2d + elementwise_add."""
    paddle.disable_static()
    x = paddle.to_tensor(np.ones((2, 2, 4, 4), "float32"))
    w = paddle.to_tensor(np.ones((3, 2, 3, 3), "float32"), stop_gradient=False)
    out, kind = _eager_conv(x, w, paddle.to_tensor(np.array([0.5], "float32")))
    assert kind == "elementwise_add"
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3, 2, 2), 18.5, "float32"))
    bias = paddle.to_tensor(np.zeros(3, "float32"), stop_gradient=False)
    out, kind = _eager_conv(x, paddle.to_tensor(np.ones((3, 2, 3, 3), "float32")), bias)
    assert kind == "elementwise_add"
    out.sum().backward()
    np.testing.assert_array_equal(bias.grad.numpy(), np.full(3, 8.0, "float32"))
    depthwise = paddle.to_tensor(np.ones((4, 1, 3, 3), "float32"), stop_gradient=False)
    assert _eager_conv(x, depthwise, paddle.to_tensor(np.zeros(4, "float32")), groups=2)[1] == "elementwise_add"


@pytest.mark.parametrize("xs, ws", [((0, 2, 5, 5), (3, 2, 3, 3)), ((3, 0, 4, 4), (5, 0, 3, 3))])
def test_empty_batches_and_channels(xs, ws):
    """An empty batch, or no input channels (the output is the bias alone), forward and gradients
    (review: the side-by-side columns and the bias sums could not infer a length from an empty
    array)."""
    ins = _inputs(xs, ws, "float32")
    out = _run("fused_conv2d_add_act", ins)["Output"]
    np.testing.assert_array_equal(out, _reference(ins, {})["Output"])
    dout = np.ones(out.shape, "float32")
    grads = _run("fused_conv2d_add_act_grad", dict(ins, **{G("Output"): dout}), {},
                 (G("Input"), G("Filter"), G("Bias")))
    assert grads[G("Input")].shape == xs and grads[G("Filter")].shape == ws
    np.testing.assert_array_equal(grads[G("Bias")], np.full(ws[:1], out[:, 0].size, "float32"))
    np.testing.assert_array_equal(_run("conv2d", {"Input": ins["Input"], "Filter": ins["Filter"]})["Output"],
                                  out - ins["Bias"].reshape(1, -1, 1, 1))
