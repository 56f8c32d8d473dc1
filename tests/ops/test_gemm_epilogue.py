"""fused_gemm_epilogue: Out = op(X) @ op(Y) + Bias, the one op eager F.linear runs for x @ w + b.

Its arithmetic must be that of matmul_v2 followed by elementwise_add (axis=-1), gradients too, bit
for bit: eager and static training (which keeps the two ops, as the reference's programs do) then
give the same numbers (tests/test_zoo_modes.py trains Linear layers both ways)."""
import numpy as np
import pytest

import headrace as paddle
from headrace.core.errors import AttrError, DTypeError, ShapeError
from headrace.ops import parallel
from headrace.ops.gradrule import grad_slot as G
from headrace.ops.kernel import context
from headrace.ops.registry import lookup
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(7)

# (x shape, y shape, trans_x, trans_y)
SHAPES = [((3, 4), (4, 5), False, False), ((4, 3), (4, 5), True, False), ((3, 4), (5, 4), False, True),
          ((2, 3, 4), (4, 5), False, False), ((2, 4, 3), (5, 4), True, True), ((2, 2, 3, 4), (4, 6), False, False)]


def _reference(ins, attrs):
    """Loops over output elements: sum_k op(X)[..., i, k] * op(Y)[k, j] + Bias[j]."""
    x = np.swapaxes(ins["X"], -1, -2) if attrs.get("trans_x") else ins["X"]
    y = ins["Y"].T if attrs.get("trans_y") else ins["Y"]
    out = np.empty(x.shape[:-1] + (y.shape[1],), dtype=x.dtype)
    for index in np.ndindex(*out.shape):
        row = x[index[:-1]]
        out[index] = sum(row[k] * y[k, index[-1]] for k in range(y.shape[0])) + ins["Bias"][index[-1]]
    return {"Out": out}


def _inputs(xs, ys, ty, dtype):
    n = ys[0] if ty else ys[1]
    return {"X": rng.uniform(-1, 1, xs).astype(dtype), "Y": rng.uniform(-1, 1, ys).astype(dtype),
            "Bias": rng.uniform(-1, 1, (n,)).astype(dtype)}


CASES = [Case("fused_gemm_epilogue", _inputs(xs, ys, ty, dtype), _reference, attrs={"trans_x": tx, "trans_y": ty},
              id=f"{xs}-{ys}-{tx}-{ty}-{dtype}", batch_slots=("X",) if not tx or len(xs) > 2 else (),
              batch_outputs=("Out",) if not tx or len(xs) > 2 else (), rtol=1e-5 if dtype == "float32" else 1e-10)
         for xs, ys, tx, ty in SHAPES for dtype in ("float32", "float64")]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward_matches_a_loop_reference(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in CASES if c.batch_slots], ids=str)
def test_infer_keeps_an_unknown_batch(case):
    check_infer_batch(case)


@pytest.mark.parametrize("xs,ys,tx,ty", SHAPES)
def test_gradients_match_central_differences(xs, ys, tx, ty):
    check_grad("fused_gemm_epilogue", _inputs(xs, ys, ty, "float64"), {"trans_x": tx, "trans_y": ty})


def _run(op, ins, attrs=None, wanted=()):
    opdef = lookup(op)
    return opdef.kernel(ins, dict(opdef.attrs, **(attrs or {})), context(wanted))


@pytest.mark.parametrize("xs,ys,tx,ty", SHAPES + [((64, 96, 48), (48, 80), False, False)])
@pytest.mark.parametrize("threads", [1, 2])
def test_bits_equal_matmul_v2_then_elementwise_add(xs, ys, tx, ty, threads, monkeypatch):
    """Forward and every gradient, bit for bit, with and without the intra-op pool (small pieces:
    every shape's bias add splits; the large one splits its products too)."""
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 4)
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    paddle.set_flags({"FLAGS_paddle_num_threads": threads})
    try:
        _compare_with_two_ops(xs, ys, tx, ty)
    finally:
        paddle.set_flags(old)


def _compare_with_two_ops(xs, ys, tx, ty):
    ins = _inputs(xs, ys, ty, "float32")
    attrs = {"trans_x": tx, "trans_y": ty}
    fused = _run("fused_gemm_epilogue", ins, attrs)["Out"]
    product = _run("matmul_v2", {"X": ins["X"], "Y": ins["Y"]}, attrs)["Out"]
    plain = _run("elementwise_add", {"X": product, "Y": ins["Bias"]}, {"axis": -1})["Out"]
    np.testing.assert_array_equal(fused, plain)
    dout = rng.uniform(-1, 1, fused.shape).astype("float32")
    grads = _run("fused_gemm_epilogue_grad", dict(ins, **{G("Out"): dout}), attrs, (G("X"), G("Y"), G("Bias")))
    mm = _run("matmul_v2_grad", {"X": ins["X"], "Y": ins["Y"], G("Out"): dout}, attrs, (G("X"), G("Y")))
    add = _run("elementwise_add_grad", {"X": product, "Y": ins["Bias"], G("Out"): dout}, {"axis": -1}, (G("Y"),))
    np.testing.assert_array_equal(grads[G("X")], mm[G("X")])
    np.testing.assert_array_equal(grads[G("Y")], mm[G("Y")])
    np.testing.assert_array_equal(grads[G("Bias")], add[G("Y")])


def test_only_the_wanted_gradients_are_computed():
    ins = _inputs((3, 4), (4, 5), False, "float64")
    dout = np.ones((3, 5))
    got = _run("fused_gemm_epilogue_grad", dict(ins, **{G("Out"): dout}), {}, (G("Bias"),))
    assert set(got) == {G("Bias")}
    np.testing.assert_array_equal(got[G("Bias")], np.full(5, 3.0))


def test_bad_inputs_are_build_errors_naming_the_slot():
    ins = _inputs((3, 4), (4, 5), False, "float32")
    assert "Bias" in check_build_error("fused_gemm_epilogue", dict(ins, Bias=np.ones(6, "float32")), {}, ShapeError)
    assert "[5, 6]" in check_build_error("fused_gemm_epilogue", dict(ins, Y=np.ones((5, 6), "float32")), {},
                                         ShapeError)
    assert "rank >= 2" in check_build_error("fused_gemm_epilogue", dict(ins, X=np.ones(4, "float32")), {},
                                            ShapeError)
    check_build_error("fused_gemm_epilogue", dict(ins, Bias=np.ones(5, "float64")), {}, DTypeError)
    message = check_build_error("fused_gemm_epilogue", ins, {"activation": "relu"}, AttrError)
    assert "not supported yet" in message


def test_eager_linear_runs_one_op_and_trains_like_two():
    """Eager ``F.linear`` with a bias is one fused op; without a bias, or on a 1-D input, the
    matmul_v2 path; the values are those of x @ w + b either way."""
    paddle.disable_static()
    x = paddle.to_tensor(rng.uniform(-1, 1, (6, 4)).astype("float32"), stop_gradient=False)
    w = paddle.to_tensor(rng.uniform(-1, 1, (4, 3)).astype("float32"), stop_gradient=False)
    b = paddle.to_tensor(rng.uniform(-1, 1, (3,)).astype("float32"), stop_gradient=False)
    out = paddle.nn.functional.linear(x, w, b)
    assert out._node is not None and out._node.plan.op_type == "fused_gemm_epilogue"
    want = x.numpy() @ w.numpy() + b.numpy()
    np.testing.assert_array_equal(out.numpy(), want)
    out.sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), np.full(3, 6.0, "float32"))
    np.testing.assert_array_equal(w.grad.numpy(), x.numpy().T @ np.ones((6, 3), "float32"))
    vec = paddle.nn.functional.linear(paddle.to_tensor(np.ones(4, "float32")), w, b)
    np.testing.assert_array_equal(vec.numpy(), np.ones(4, "float32") @ w.numpy() + b.numpy())


def _eager_linear_node_type(x, w, b):
    out = paddle.nn.functional.linear(x, w, b)
    return out, (out._node.plan.op_type if out._node is not None else None)


def test_eager_linear_keeps_the_two_ops_where_the_fused_op_would_differ():
    """A broadcasting bias ([1], or [N] against a weight of one column) keeps elementwise_add's
    rules (static mode's result); a bias-only gradient (frozen x and weight) keeps the two ops,
    whose gradients need no arrays (so x is not kept alive for backward)."""
    paddle.disable_static()
    x = paddle.to_tensor(np.ones((4, 3), "float32"))
    w = paddle.to_tensor(np.ones((3, 5), "float32"), stop_gradient=False)
    out, kind = _eager_linear_node_type(x, w, paddle.to_tensor(np.array([0.5], "float32")))
    np.testing.assert_array_equal(out.numpy(), np.full((4, 5), 3.5, "float32"))
    assert kind == "elementwise_add"
    out, kind = _eager_linear_node_type(x, paddle.to_tensor(np.ones((3, 1), "float32"), stop_gradient=False),
                                        paddle.to_tensor(np.arange(5, dtype="float32")))
    np.testing.assert_array_equal(out.numpy(), np.arange(5, dtype="float32") + np.full((4, 5), 3.0, "float32"))
    frozen = paddle.to_tensor(np.ones((3, 5), "float32"))
    bias = paddle.to_tensor(np.zeros(5, "float32"), stop_gradient=False)
    out, kind = _eager_linear_node_type(x, frozen, bias)
    assert kind == "elementwise_add"
    out.sum().backward()
    np.testing.assert_array_equal(bias.grad.numpy(), np.full(5, 4.0, "float32"))


def test_eager_linear_on_non_tensors_is_the_ops_type_error():
    paddle.disable_static()
    x = paddle.to_tensor(np.ones((4, 3), "float32"))
    w = paddle.to_tensor(np.ones((3, 5), "float32"))
    with pytest.raises(TypeError, match="expected a Tensor in dygraph mode") as info:
        paddle.nn.functional.linear(x, w, 0.5)
    assert "test_gemm_epilogue.py" in str(info.value)
