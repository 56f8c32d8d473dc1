"""append_backward / gradients: naming, accumulation, pruning, no_grad_set, callbacks, roles,
repeated calls and argument errors (the reference system's semantics, checked op by op)."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.autodiff import BackwardError
from headrace.static import append_backward, gradients
from headrace.core.context import default_main_program, default_startup_program
from headrace.core.roles import OpRole
from headrace.ops.apply import apply_op_single
from headrace.ops.registry import register
from headrace.passes.verify import check_program
from headrace.runtime import Executor, Scope


def _types(program, start=0):
    return [op.type for op in program.global_block().ops[start:]]


def _param(name, shape, value):
    return static.create_parameter(shape, "float64", attr=paddle.ParamAttr(
        name=name, initializer=fluid.initializer.Constant(value)))


def _run(fetch, feed=None):
    scope = Scope()
    exe = Executor()
    exe.run(default_startup_program(), scope=scope)
    return exe.run(default_main_program(), feed=feed or {}, fetch_list=fetch, scope=scope)


# --- naming, seed op, roles ---------------------------------------------------------------------
def test_loss_gradient_seed_and_roles():
    x = static.data("x", [4, 3], "float64")
    w = _param("w", [3], 2.0)
    loss = paddle.mean(x * w)
    n_forward = len(default_main_program().global_block().ops)
    pairs = append_backward(loss)
    ops = default_main_program().global_block().ops
    assert [(p.name, g.name) for p, g in pairs] == [("w", "w@GRAD")]
    assert loss.op.attr("op_role") == int(OpRole.Forward | OpRole.Loss)
    seed = ops[n_forward]
    assert seed.type == "fill_constant" and seed.output("Out") == [loss.name + "@GRAD"]
    assert seed.attr("shape") == [] and seed.attr("value") == 1.0
    assert seed.attr("op_role") == int(OpRole.Backward | OpRole.Loss)
    for op in ops[n_forward + 1:]:
        assert op.attr("op_role") == int(OpRole.Backward)
    writer = [op for op in ops if "w@GRAD" in op.output_arg_names][-1]
    assert writer.attr("op_role_var") == ["w", "w@GRAD"]
    check_program(default_main_program())


def test_gradient_values_and_data_gets_no_gradient():
    x = static.data("x", [4, 3], "float64")
    w = _param("w", [3], 2.0)
    loss = paddle.mean(x * w)
    append_backward(loss)
    block = default_main_program().global_block()
    assert not block.has_var("x@GRAD")  # data is stop_gradient: no gradient op writes it
    feed = np.arange(12, dtype=np.float64).reshape(4, 3)
    (gw,) = _run(["w@GRAD"], {"x": feed})
    np.testing.assert_allclose(gw, feed.mean(axis=0) * 4 / 12 * 3 / 3, rtol=1e-12)


def test_unknown_loss_dims_seed_with_fill_any_like():
    x = static.data("x", [-1, 3], "float64")
    w = _param("w", [3], 1.0)
    y = x * w  # shape [-1, 3]: not a scalar loss
    n = len(default_main_program().global_block().ops)
    append_backward(y)
    seed = default_main_program().global_block().ops[n]
    assert seed.type == "fill_any_like" and seed.attr("value") == 1.0
    (gw,) = _run(["w@GRAD"], {"x": np.ones((5, 3))})
    np.testing.assert_array_equal(gw, np.full(3, 5.0))


# --- accumulation ---------------------------------------------------------------------------
def test_shared_variable_partials_are_renamed_and_summed_before_first_reader():
    w = _param("w", [3], 1.5)
    h = w * 2.0
    a = h * h          # elementwise_mul_grad writes h@GRAD twice (X and Y)
    b = h + 1.0
    loss = paddle.sum(a + b)
    append_backward(loss)
    ops = default_main_program().global_block().ops
    writers = [op for op in ops if any(n.startswith("tmp") and "@GRAD@RENAME" in n for n in op.output_arg_names)]
    renamed = [n for op in writers for n in op.output_arg_names if "@RENAME" in n]
    base = h.name + "@GRAD"
    assert renamed == [f"{base}@RENAME@block0@{k}" for k in range(3)]
    sums = [i for i, op in enumerate(ops) if op.type == "sum" and op.output("Out") == [base]]
    assert len(sums) == 1
    readers = [i for i, op in enumerate(ops) if base in op.input_arg_names]
    assert readers and sums[0] == min(readers) - 1
    (gw,) = _run(["w@GRAD"])
    # loss = sum(4 w^2 + 2 w + 1): d/dw = 8 w + 2
    np.testing.assert_allclose(gw, 8 * 1.5 + 2, rtol=1e-12)


def test_shared_parameter_sum_carries_role_var():
    x = static.data("x", [2, 3], "float64")
    w = _param("shared_w", [3], 0.5)
    loss = paddle.sum(x * w + x * w * w)
    pairs = append_backward(loss)
    assert [(p.name, g.name) for p, g in pairs] == [("shared_w", "shared_w@GRAD")]
    ops = default_main_program().global_block().ops
    last = [op for op in ops if "shared_w@GRAD" in op.output_arg_names][-1]
    assert last.type == "sum" and last.attr("op_role_var") == ["shared_w", "shared_w@GRAD"]
    feed = np.arange(6, dtype=np.float64).reshape(2, 3)
    (gw,) = _run(["shared_w@GRAD"], {"x": feed})
    np.testing.assert_allclose(gw, feed.sum(0) * (1 + 2 * 0.5), rtol=1e-12)


# --- pruning and no-grad ---------------------------------------------------------------------
def test_ops_off_the_path_are_pruned():
    x = static.data("x", [2, 3], "float64")
    w = _param("w", [3], 1.0)
    v = _param("v", [3], 1.0)
    unused = paddle.sum(x * v)                 # does not reach the loss
    const = paddle.full([3], 2.0, "float64")   # reaches the loss but needs no gradient
    loss = paddle.sum(x * w * const)
    n = len(default_main_program().global_block().ops)
    pairs = append_backward(loss)
    assert [p.name for p, _ in pairs] == ["w"]
    backward = default_main_program().global_block().ops[n:]
    written = {name for op in backward for name in op.output_arg_names}
    assert "v@GRAD" not in written and unused.name + "@GRAD" not in written
    assert const.name + "@GRAD" not in written
    assert _types(default_main_program(), n) == [
        "fill_constant", "reduce_sum_grad", "elementwise_mul_grad", "elementwise_mul_grad"]


@pytest.mark.parametrize("how", ["no_grad_set_name", "no_grad_set_var", "stop_gradient"])
def test_no_grad_variable_stops_the_backward(how):
    x = static.data("x", [2, 3], "float64")
    w1 = _param("w1", [3], 1.0)
    w2 = _param("w2", [3], 1.0)
    h = x * w1
    loss = paddle.sum(h * w2)
    if how == "stop_gradient":
        h.stop_gradient = True
        pairs = append_backward(loss)
    else:
        pairs = append_backward(loss, no_grad_set={h.name} if how == "no_grad_set_name" else [h])
    assert [p.name for p, _ in pairs] == ["w2"]
    written = {n for op in default_main_program().global_block().ops for n in op.output_arg_names}
    assert "w1@GRAD" not in written and h.name + "@GRAD" not in written


def test_non_trainable_parameter_is_not_returned():
    x = static.data("x", [2, 3], "float64")
    w = static.create_parameter([3], "float64", attr=paddle.ParamAttr(name="frozen", trainable=False))
    b = _param("b", [3], 0.0)
    pairs = append_backward(paddle.sum(x * w + b))
    assert [p.name for p, _ in pairs] == ["b"]


def test_parameter_list_filters_the_result():
    x = static.data("x", [2, 3], "float64")
    w = _param("w", [3], 1.0)
    b = _param("b", [3], 0.0)
    loss = paddle.sum(x * w + b)
    assert [p.name for p, _ in append_backward(loss, parameter_list=["b"])] == ["b"]


def test_unproduced_output_gradient_is_zero_filled():
    w = _param("w", [4], 1.0)
    parts = paddle.split(w * 3.0, 2)
    loss = paddle.sum(parts[0])
    n = len(default_main_program().global_block().ops)
    append_backward(loss)
    backward = default_main_program().global_block().ops[n:]
    fills = [op for op in backward if op.type == "fill_any_like"]
    assert [op.output("Out") for op in fills] == [[parts[1].name + "@GRAD"]]
    (gw,) = _run(["w@GRAD"])
    np.testing.assert_array_equal(gw, [3.0, 3.0, 0.0, 0.0])


# --- op without a gradient rule ------------------------------------------------------------
register("test_opaque", inputs=["X"], outputs=["Out"],
         infer=lambda ctx: ctx.set("Out", ctx.shape("X"), ctx.dtype("X")),
         kernel=lambda ins, attrs, ctx: {"Out": ins["X"].copy()}, doc="test op with no gradient rule")


def test_op_without_gradient_rule_on_the_path_is_a_clear_error():
    w = _param("w", [3], 1.0)
    h = apply_op_single("test_opaque", {"X": w})
    loss = paddle.sum(h)
    with pytest.raises(BackwardError) as info:
        append_backward(loss)
    message = str(info.value)
    assert "`test_opaque`" in message and "test_backward.py" in message and "no gradient rule" in message


def test_op_without_gradient_rule_off_the_path_is_fine():
    w = _param("w", [3], 1.0)
    h = apply_op_single("test_opaque", {"X": w})
    h.stop_gradient = True
    assert [p.name for p, _ in append_backward(paddle.sum(h + w))] == ["w"]


# --- callbacks -------------------------------------------------------------------------------
def test_callbacks_see_each_gradient_op_with_the_context():
    x = static.data("x", [2, 3], "float64")
    w = _param("w", [3], 1.0)
    loss = paddle.mean(paddle.nn.functional.relu(x * w))
    seen = []

    def callback(block, context):
        assert block is default_main_program().global_block()
        assert context["w@GRAD"] == "w"
        seen.append(context["__current_op_desc__"].type())

    append_backward(loss, callbacks=[callback])
    assert seen == ["reduce_mean_grad", "relu_grad", "elementwise_mul_grad"] or \
        seen == ["mean_grad", "relu_grad", "elementwise_mul_grad"]


# --- repeated calls ---------------------------------------------------------------------------
def test_repeated_append_backward_is_independently_named():
    x = static.data("x", [2, 3], "float64")
    w = _param("w", [3], 2.0)
    loss = paddle.mean(x * w)
    first = append_backward(loss)
    second = append_backward(loss)
    third = append_backward(loss)
    assert first[0][1].name == "w@GRAD"
    assert second[0][1].name == "grad/w@GRAD"
    assert third[0][1].name == "grad/grad/w@GRAD"
    seeds = [op.output("Out")[0] for op in default_main_program().global_block().ops if op.type == "fill_constant"]
    assert seeds == [loss.name + "@GRAD", loss.name + "@GRAD_0", loss.name + "@GRAD_1"]
    feed = np.arange(6, dtype=np.float64).reshape(2, 3)
    g1, g2, g3 = _run([first[0][1], second[0][1], third[0][1]], {"x": feed})
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(g1, g3)


# --- gradients() ------------------------------------------------------------------------------
def test_gradients_with_target_gradients_and_unrelated_input():
    x = static.data("x", [3], "float64")
    y = static.data("y", [3], "float64")
    seed = static.data("seed", [3], "float64")
    out = x * x
    gx, gy = gradients([out], [x, y], target_gradients=[seed])
    assert gy is None
    (value,) = _run([gx], {"x": np.array([1.0, 2.0, 3.0]), "seed": np.array([1.0, 10.0, 100.0]),
                          "y": np.zeros(3)})
    np.testing.assert_array_equal(value, [2.0, 40.0, 600.0])


def test_gradients_of_an_intermediate_variable():
    x = static.data("x", [3], "float64")
    h = x * 3.0
    out = paddle.sum(h * h)
    (gh,) = gradients(out, h)
    (value,) = _run([gh], {"x": np.array([1.0, 2.0, 3.0])})
    np.testing.assert_array_equal(value, 2 * 3.0 * np.array([1.0, 2.0, 3.0]))


def test_gradients_does_not_touch_parameters_not_asked_for():
    x = static.data("x", [3], "float64")
    w = _param("w", [3], 2.0)
    out = paddle.sum(x * w)
    (gx,) = gradients([out], [x])
    written = {n for op in default_main_program().global_block().ops for n in op.output_arg_names}
    assert "w@GRAD" not in written
    (value,) = _run([gx], {"x": np.ones(3)})
    np.testing.assert_array_equal(value, [2.0, 2.0, 2.0])


# --- argument errors --------------------------------------------------------------------------
def _small_loss():
    x = static.data("x", [2, 3], "float64")
    w = _param("w", [3], 1.0)
    return x, w, paddle.mean(x * w)


@pytest.mark.parametrize("kwargs,arg", [
    ({"parameter_list": "w"}, "parameter_list"),
    ({"parameter_list": ["w", 3]}, "parameter_list"),
    ({"no_grad_set": "w"}, "no_grad_set"),
    ({"no_grad_set": ["w", 3]}, "no_grad_set"),
    ({"callbacks": print}, "callbacks"),
    ({"callbacks": [3]}, "callbacks"),
])
def test_append_backward_argument_type_errors(kwargs, arg):
    _, _, loss = _small_loss()
    with pytest.raises(TypeError, match=arg):
        append_backward(loss, **kwargs)


def test_string_loss_is_a_type_error():
    _, _, loss = _small_loss()
    with pytest.raises(TypeError, match="loss"):
        append_backward(loss.name)


def test_parameter_list_with_unknown_name_is_an_error():
    _, _, loss = _small_loss()
    with pytest.raises(ValueError, match="nope"):
        append_backward(loss, parameter_list=["nope"])


@pytest.mark.parametrize("call", [
    lambda x, w, loss: gradients(loss.name, x),
    lambda x, w, loss: gradients(loss, x.name),
    lambda x, w, loss: gradients(loss, x, target_gradients=x.name),
    lambda x, w, loss: gradients(loss, x, no_grad_set=w),
])
def test_gradients_argument_type_errors(call):
    x, w, loss = _small_loss()
    with pytest.raises(TypeError):
        call(x, w, loss)


def test_target_gradient_shape_mismatch_is_an_error():
    x = static.data("x", [3], "float64")
    seed = static.data("seed", [4], "float64")
    with pytest.raises(ValueError, match="seed"):
        gradients([x * 2.0], [x], target_gradients=[seed])


def test_checkpoints_must_be_variables_of_the_program():
    _, _, loss = _small_loss()
    with pytest.raises(TypeError, match="checkpoints"):
        append_backward(loss, checkpoints=loss)
    with pytest.raises(ValueError, match="not_a_var"):
        append_backward(loss, checkpoints=["not_a_var"])
