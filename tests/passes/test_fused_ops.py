"""Fused ops (ops/fused.py): forward against the unfused NumPy arithmetic (bit for bit), gradients
against float64 central differences, and the ``out=`` buffer protocol."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static

from headrace.ops.kernel import context
from headrace.ops.registry import lookup

from ..ops.gradcheck import check_grad


def _shift_from_kinks(a):
    return np.where(np.abs(a) < 0.05, a + 0.2, a)   # relu is not differentiable at 0


CASES = [
    (["relu", "elementwise_add"], (4, 5), (5,), -1),
    (["tanh", "elementwise_add"], (2, 3, 4), (3,), 1),
    (["elementwise_add", "relu"], (4, 5), (4, 5), -1),
    (["elementwise_add", "tanh"], (3, 4), (4,), -1),
]


@pytest.mark.parametrize("functors,xs,ys,axis", CASES)
def test_forward_matches_the_unfused_ops(functors, xs, ys, axis):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(xs).astype("float32"), rng.standard_normal(ys).astype("float32")
    outs = lookup("fused_elemwise_add_activation").kernel({"X": x, "Y": y}, {"functor_list": functors, "axis": axis}, context())
    add = lookup("elementwise_add").kernel
    if functors[1] == "elementwise_add":
        act = lookup(functors[0]).kernel
        expected = act({"X": add({"X": x, "Y": y}, {"axis": axis}, context())["Out"]}, {}, context())["Out"]
    else:
        inter = lookup(functors[1]).kernel({"X": y}, {}, context())["Out"]
        expected = add({"X": x, "Y": inter}, {"axis": axis}, context())["Out"]
        np.testing.assert_array_equal(outs["IntermediateOut"], inter)
    np.testing.assert_array_equal(outs["Out"], expected)


@pytest.mark.parametrize("functors,xs,ys,axis", CASES)
def test_gradient(functors, xs, ys, axis):
    rng = np.random.default_rng(1)
    x, y = _shift_from_kinks(rng.standard_normal(xs)), _shift_from_kinks(rng.standard_normal(ys))
    if functors[1] == "elementwise_add":
        y = np.abs(y) + 0.3 if functors[0] == "relu" else y  # keep x + y away from relu's kink
        x = np.abs(x) + 0.3 if functors[0] == "relu" else x
    outputs = {"Out": 1} if functors[1] == "elementwise_add" else {"Out": 1, "IntermediateOut": 1}
    check_grad("fused_elemwise_add_activation", {"X": x, "Y": y},
               {"functor_list": functors, "axis": axis}, out_slots=["Out"], outputs=outputs)


def test_bad_functor_list_is_a_build_error():
    from headrace.core.program import Program
    block = Program().global_block()
    for name in ("x", "y"):
        block.create_var(name=name, shape=[2], dtype="float32", is_data=True)
    with pytest.raises(Exception, match="functor_list"):
        block.append_op("fused_elemwise_add_activation", {"X": ["x"], "Y": ["y"]}, {"Out": ["o"]},
                        {"functor_list": ["sigmoid", "elementwise_add"]})


def test_out_buffer_is_written_when_it_fits():
    x, y = np.ones((3, 4), "float32"), np.full((4,), -2.0, "float32")
    kernel = lookup("fused_elemwise_add_activation").kernel
    attrs = {"functor_list": ["relu", "elementwise_add"], "axis": -1}
    buf = np.empty((3, 4), "float32")
    assert kernel({"X": x, "Y": y}, attrs, context((), {"Out": buf}))["Out"] is buf
    wrong = np.empty((4, 3), "float32")
    assert kernel({"X": x, "Y": y}, attrs, context((), {"Out": wrong}))["Out"] is not wrong


def test_fused_relu_depthwise_conv_matches_and_differentiates():
    rng = np.random.default_rng(2)
    x = _shift_from_kinks(rng.standard_normal((2, 3, 5, 5)))
    w = rng.standard_normal((3, 1, 3, 3))
    attrs = {"groups": 3, "paddings": [1, 1]}
    fused = lookup("fused_relu_depthwise_conv2d")
    full = dict(fused.attrs, **attrs)
    out = fused.kernel({"Input": x, "Filter": w}, full, context())["Output"]
    expected = lookup("depthwise_conv2d").kernel({"Input": np.maximum(x, 0), "Filter": w}, full, context())["Output"]
    np.testing.assert_array_equal(out, expected)
    check_grad("fused_relu_depthwise_conv2d", {"Input": x, "Filter": w}, attrs)


def test_fused_activation_gradients_may_write_into_the_incoming_gradient():
    """X@GRAD may be handed Out@GRAD's own buffer (inplace): the result must not change."""
    from headrace.ops.fused import ACTIVATIONS
    out = np.tanh(np.linspace(-2.0, 2.0, 9))
    dout = np.linspace(1.0, 3.0, 9)
    for name, (_, grad) in ACTIVATIONS.items():
        o = out if name == "tanh" else np.maximum(out, 0)
        want = grad(o, dout.copy(), None)
        shared = dout.copy()
        got = grad(o, shared, shared)
        assert got is shared and np.array_equal(got, want), name


def test_fusing_a_plus_act_of_b_trains_like_the_unfused_program():
    """``a + relu(b)``: the fused gradient op is built without ``Out`` (the activation is inside),
    which its declaration must allow."""
    def build():
        main, startup = static.Program(), static.Program()
        main.random_seed = startup.random_seed = 4
        with static.program_guard(main, startup):
            x = static.data("x", [-1, 3], "float32")
            a = static.nn.fc(x, size=3, bias_attr=False)
            b = static.nn.fc(x, size=3, bias_attr=False)
            loss = paddle.mean(a + paddle.nn.functional.relu(b))
            paddle.optimizer.SGD(0.1).minimize(loss)
        return main, startup, loss

    feeds = [{"x": np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3) * (k + 1)} for k in range(3)]
    losses = []
    for fuse in (False, True):
        main, startup, loss = build()
        strategy = static.BuildStrategy()
        strategy.fuse_elewise_add_act_ops = fuse
        program = static.CompiledProgram(main, build_strategy=strategy)
        scope, exe = static.Scope(), static.Executor()
        exe.run(startup, scope=scope)
        losses.append([exe.run(program, feed=f, fetch_list=[loss], scope=scope)[0].tobytes() for f in feeds])
        if fuse:
            (compiled,), = program._compiled.values()
            assert "fused_elemwise_add_activation_grad" in [op.type for op in compiled.global_block().ops]
    assert losses[0] == losses[1]
