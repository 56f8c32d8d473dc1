import json

import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core import names
from headrace.core.errors import AttrError, ShapeError, SlotError
from headrace.core.roles import OpRole
from headrace.runtime import Executor, Scope


def _mlp():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4], "float32")
        h = static.nn.fc(x, 8, activation="relu")
        h = fluid.layers.dropout(h, 0.5)
        h = static.nn.batch_norm(h)
        out = static.nn.fc(h, 3, activation="softmax")
    return main, startup, out


def test_ops_record_the_users_line():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 3], "float32")
        y = x * 2.0  # this line
    op = main.global_block().ops[-1]
    path, line = op.callsite.rsplit(":", 1)
    assert path.endswith("test_program.py")
    with open(path) as f:
        assert "# this line" in f.read().splitlines()[int(line) - 1]
    assert y.op is op


def test_blocks_vars_and_ops():
    main = static.Program()
    block = main.global_block()
    assert main.block(0) is block and main.current_block() is block and main.num_blocks == 1
    with pytest.raises(IndexError):
        main.block(1)
    x = block.create_var(name="x", shape=[-1, 3], dtype="float32")
    assert block.has_var("x") and block.var("x") is x
    with pytest.raises(ValueError, match="'nope' is not in block 0"):
        block.var("nope")
    assert block.create_var(name="x", shape=[-1, 3], dtype="float32") is x
    with pytest.raises(ValueError, match="already exists with shape"):
        block.create_var(name="x", shape=[3], dtype="float32")
    y = block.create_var(name="y")
    block.append_op("scale", {"X": x}, {"Out": y}, {"scale": 3.0})
    assert y.shape == (-1, 3) and y.dtype == "float32"
    block._insert_op(0, "fill_constant", outputs={"Out": block.create_var(name="c")},
                     attrs={"shape": [2], "value": 1.0})
    assert [op.type for op in block.ops] == ["fill_constant", "scale"]
    assert block.ops[1].idx == 1
    block._remove_op(0)
    assert [op.type for op in block.ops] == ["scale"]


def test_every_edit_bumps_the_version():
    main = static.Program()
    v0 = main._version
    block = main.global_block()
    x = block.create_var(name="x", shape=[2], dtype="float32")
    v1 = main._version
    op = block.append_op("scale", {"X": x}, {"Out": block.create_var(name="y")})
    v2 = main._version
    op._set_attr("scale", 2.0)
    v3 = main._version
    assert v0 < v1 < v2 < v3


def test_op_attrs_get_defaults_and_unknown_attrs_are_rejected():
    main = static.Program()
    block = main.global_block()
    x = block.create_var(name="x", shape=[2], dtype="float32")
    op = block.append_op("scale", {"X": x}, {"Out": block.create_var(name="y")})
    assert op.attr("scale") == 1.0 and op.attr("bias") == 0.0 and op.attr("op_role") == 0
    with pytest.raises(AttrError, match="unknown attribute 'scal'"):
        block.append_op("scale", {"X": x}, {"Out": block.create_var(name="z")}, {"scal": 2.0})
    with pytest.raises(SlotError, match="input `X` is required"):
        block.append_op("scale", {}, {"Out": block.create_var(name="w")})
    with pytest.raises(SlotError, match="unknown input slot `Y`"):
        block.append_op("scale", {"X": x, "Y": x}, {"Out": block.create_var(name="v")})
    with pytest.raises(AttrError, match="not registered"):
        block.append_op("no_such_op", {"X": x}, {"Out": block.create_var(name="u")})


def test_roles_and_role_guard():
    main = static.Program()
    block = main.global_block()
    x = block.create_var(name="x", shape=[2], dtype="float32")
    with main.role_guard(OpRole.Backward, ["p", "p@GRAD"]):
        op = block.append_op("scale", {"X": x}, {"Out": block.create_var(name="y")})
    assert op.role == OpRole.Backward and op.attr("op_role_var") == ["p", "p@GRAD"]
    assert int(OpRole.Loss | OpRole.Forward) == 256 and int(OpRole.Backward | OpRole.Loss) == 257


def test_unique_names_and_guard():
    assert names.generate("fc") == "fc_0" and names.generate("fc") == "fc_1"
    with names.guard():
        assert names.generate("fc") == "fc_0"
    with names.guard("pre_"):
        assert names.generate("fc") == "pre_fc_0"
    assert names.generate("fc") == "fc_2"
    assert fluid.unique_name.generate("fc") == "fc_3"


def test_name_scope_is_recorded_on_ops():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 3])
        with static.name_scope("encoder"):
            with static.name_scope("block1"):
                y = x * 2.0
        z = y * 2.0
    assert y.op.attr("op_namescope") == "/encoder/block1/"
    assert z.op.attr("op_namescope") == "/"


def test_layer_names_follow_the_reference():
    main, _, out = _mlp()
    names_ = [v.name for v in main.global_block().vars.values()]
    for expected in ["x", "fc_0.w_0", "fc_0.b_0", "fc_0.tmp_0", "fc_0.tmp_1", "fc_0.tmp_2",
                     "fc_1.w_0", "fc_1.b_0", "fc_1.tmp_2", "batch_norm_0.w_0", "batch_norm_0.b_0",
                     "batch_norm_0.w_1", "batch_norm_0.w_2"]:
        assert expected in names_, expected
    assert out.name == "fc_1.tmp_2"
    assert [op.type for op in main.global_block().ops] == [
        "mul", "elementwise_add", "relu", "dropout", "batch_norm", "mul", "elementwise_add", "softmax"]


def test_clone_is_deep_and_for_test_drops_training_ops():
    main, startup, out = _mlp()
    block = main.global_block()
    grad = block.create_var(name="fc_1.tmp_2@GRAD", shape=[-1, 3], dtype="float32")
    with main.role_guard(OpRole.Backward):
        block.append_op("scale", {"X": out}, {"Out": grad})
    with main.role_guard(OpRole.Optimize):
        block.append_op("scale", {"X": block.var("fc_1.b_0")}, {"Out": block.var("fc_1.b_0")})
    copy = main.clone()
    assert len(copy.global_block().ops) == len(block.ops)
    copy.global_block().ops[0]._set_attr("x_num_col_dims", 1)
    assert copy.global_block().ops[0] is not block.ops[0]
    test_prog = main.clone(for_test=True)
    types = [op.type for op in test_prog.global_block().ops]
    assert types == ["mul", "elementwise_add", "relu", "dropout", "batch_norm", "mul", "elementwise_add", "softmax"]
    for op in test_prog.global_block().ops:
        if op.type in ("dropout", "batch_norm"):
            assert op.attr("is_test") is True
    for op in block.ops:
        if op.type in ("dropout", "batch_norm"):
            assert op.attr("is_test") is False
    assert not test_prog.global_block().has_var("fc_1.tmp_2@GRAD")
    assert test_prog.global_block().has_var("fc_1.b_0")


def test_to_dict_round_trip_is_lossless_and_json_safe():
    main, startup, out = _mlp()
    main.random_seed = 7
    spec = main.to_dict()
    text = json.dumps(spec)
    again = static.Program.from_dict(json.loads(text))
    assert again.to_dict() == spec
    assert again.random_seed == 7
    param = again.global_block().var("fc_0.w_0")
    assert isinstance(param, static.Parameter) and param.trainable
    assert again.global_block().var("batch_norm_0.w_1").trainable is False
    # the copy computes the same thing
    scope = Scope()
    exe = Executor()
    exe.run(startup, scope=scope)
    feed = {"x": np.random.default_rng(0).random((5, 4)).astype("float32")}
    test_main = main.clone(for_test=True)
    test_again = again.clone(for_test=True)
    a = exe.run(test_main, feed=feed, fetch_list=[out.name], scope=scope)[0]
    b = exe.run(test_again, feed=feed, fetch_list=[out.name], scope=scope)[0]
    np.testing.assert_array_equal(a, b)


def test_to_dict_keeps_array_attrs():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        v = paddle.assign(np.arange(6, dtype="int64").reshape(2, 3))
    spec = json.loads(json.dumps(main.to_dict()))
    again = static.Program.from_dict(spec)
    got = Executor().run(again, fetch_list=[v.name], scope=Scope())[0]
    np.testing.assert_array_equal(got, np.arange(6).reshape(2, 3))


def test_text_form_lists_vars_and_ops():
    main, _, _ = _mlp()
    text = str(main)
    assert "var x : LOD_TENSOR.shape(-1, 4).dtype(float32).stop_gradient(True)" in text
    assert "persist trainable param fc_0.w_0 : LOD_TENSOR.shape(4, 8).dtype(float32)" in text
    assert "{Out=['fc_0.tmp_0']} = mul(inputs={X=['x'], Y=['fc_0.w_0']}" in text
    assert main.to_string() == text


def test_random_seed_must_be_an_int():
    main = static.Program()
    with pytest.raises(TypeError, match="random_seed must be an int"):
        main.random_seed = "1"


def test_program_guard_checks_its_arguments():
    with pytest.raises(TypeError, match="main_program must be a Program"):
        with static.program_guard("main"):
            pass


def test_parameters_need_positive_shapes():
    block = static.Program().global_block()
    with pytest.raises(ValueError, match="every dimension must be positive"):
        block.create_parameter("w", [3, -1], "float32")


def test_shape_errors_at_build_time_point_at_the_user_line():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 10], "float32")
        y = static.data("y", [3], "float32")
        with pytest.raises(ShapeError) as info:
            paddle.add(x, y)
    message = str(info.value)
    assert "op `elementwise_add`" in message and "test_program.py" in message
    assert "[-1, 10]" in message and "got [3]" in message
