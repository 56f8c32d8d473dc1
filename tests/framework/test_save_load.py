"""paddle.save/load, static save/load, inference models, fluid.io, and the checks on loaded values."""
import collections
import os
import pickle

import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core import context
from headrace.core.errors import CheckpointError, DTypeError, ShapeError
from headrace.runtime import Executor, Scope, global_scope


@pytest.fixture
def eager():
    with context.static_mode_guard(False):
        yield


def test_layer_and_optimizer_state_round_trip(eager, tmp_path):
    paddle.seed(1)
    net = paddle.nn.Linear(3, 2)
    schedule = paddle.optimizer.lr.StepDecay(0.1, 1)
    opt = paddle.optimizer.Adam(schedule, parameters=net.parameters())
    paddle.mean(net(paddle.ones([4, 3])) ** 2).backward()
    opt.step()
    schedule.step()
    paddle.save(net.state_dict(), tmp_path / "net.pdparams")
    paddle.save(opt.state_dict(), tmp_path / "opt.pdopt")
    loaded = paddle.load(tmp_path / "net.pdparams")
    assert list(loaded) == list(net.state_dict())
    assert all(isinstance(v, paddle.Tensor) for v in loaded.values())
    state = paddle.load(tmp_path / "opt.pdopt")
    assert state["LR_Scheduler"] == schedule.state_dict()
    other = paddle.nn.Linear(3, 2)
    other.set_state_dict(loaded)
    np.testing.assert_array_equal(other.weight.numpy(), net.weight.numpy())
    numpy_state = paddle.load(tmp_path / "net.pdparams", return_numpy=True)
    assert all(isinstance(v, np.ndarray) for v in numpy_state.values())


def test_nested_containers_numbers_and_strings(eager, tmp_path):
    obj = {"a": [paddle.to_tensor(np.arange(3.0)), (1, 2.5, "x"), None],
           "b": collections.OrderedDict(z=np.float32(2), y=np.ones((2, 2), dtype="int32")),
           3: {"nan": float("nan"), "inf": float("-inf"), "flag": True, "raw": b"\x00\x01"}}
    paddle.save(obj, tmp_path / "obj")
    got = paddle.load(tmp_path / "obj")
    assert isinstance(got["a"][0], paddle.Tensor) and got["a"][0].name == obj["a"][0].name
    np.testing.assert_array_equal(got["a"][0].numpy(), np.arange(3.0))
    assert got["a"][1] == (1, 2.5, "x") and got["a"][2] is None
    assert isinstance(got["b"], collections.OrderedDict) and list(got["b"]) == ["z", "y"]
    assert got["b"]["z"] == np.float32(2) and got["b"]["z"].dtype == np.float32
    assert got["b"]["y"].dtype == np.int32 and isinstance(got["b"]["y"], np.ndarray)
    assert np.isnan(got[3]["nan"]) and got[3]["inf"] == float("-inf") and got[3]["raw"] == b"\x00\x01"
    flat = paddle.load(tmp_path / "obj", return_numpy=True)
    assert isinstance(flat["a"][0], np.ndarray)


def test_save_rejects_what_it_cannot_store(eager, tmp_path):
    with pytest.raises(TypeError, match=r"obj\['f'\]: objects of type function"):
        paddle.save({"f": lambda: 0}, tmp_path / "x")
    with pytest.raises(ValueError, match="filename is empty"):
        paddle.save({}, str(tmp_path) + "/")
    with pytest.raises(ValueError, match="protocol"):
        paddle.save({}, tmp_path / "x", protocol=1)
    with pytest.raises(ValueError, match="not exists"):
        paddle.load(tmp_path / "missing")


def test_reference_pickles_load_without_running_code(eager, tmp_path):
    """A .pdparams written by the reference (a pickle of name -> ndarray) loads; a pickle whose
    payload would create a file is refused and the file is never created."""
    good = tmp_path / "ref.pdparams"
    good.write_bytes(pickle.dumps({"fc.w_0": np.ones((2, 2), "float32"),
                                   "StructuredToParameterName@@": {"weight": "fc.w_0"}}, protocol=4))
    loaded = paddle.load(good)
    assert list(loaded) == ["fc.w_0"] and isinstance(loaded["fc.w_0"], paddle.Tensor)
    assert "StructuredToParameterName@@" in paddle.load(good, keep_name_table=True)
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    bad = tmp_path / "evil.pdparams"
    bad.write_bytes(pickle.dumps({"w": Payload()}, protocol=4))
    with pytest.raises(CheckpointError, match=r"evil\.pdparams: refused to load: .*system"):
        paddle.load(bad)
    with pytest.raises(CheckpointError, match="refused"):
        static.load_program_state(str(tmp_path / "evil"))
    bad.write_bytes(pickle.dumps({"w": Payload()}, protocol=2))
    with pytest.raises(CheckpointError, match="refused"):
        paddle.load(bad)
    assert not marker.exists()
    obj_array = tmp_path / "objarr.pdparams"
    obj_array.write_bytes(pickle.dumps({"w": np.array([1, "a"], dtype=object)}, protocol=4))
    with pytest.raises(CheckpointError, match="dtype object"):
        paddle.load(obj_array)


def _static_model():
    x = static.data("x", [-1, 4], "float32")
    h = static.nn.fc(x, 8, activation="relu")
    h = paddle.nn.functional.dropout(h, 0.5)
    out = static.nn.fc(h, 2)
    loss = paddle.mean(out * out)
    paddle.optimizer.Adam(0.1).minimize(loss)
    exe = Executor()
    exe.run(static.default_startup_program())
    return x, out, loss, exe


def test_static_save_load_restores_params_and_optimizer_state(tmp_path):
    x, out, loss, exe = _static_model()
    main = static.default_main_program()
    feed = {"x": np.ones((3, 4), "float32")}
    exe.run(feed=feed, fetch_list=[loss])
    static.save(main, str(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path)) == ["m.pdmodel", "m.pdopt", "m.pdparams"]
    saved = {k: np.array(v) for k, v in main.state_dict().items()}
    assert any("moment1" in k for k in saved)
    exe.run(feed=feed, fetch_list=[loss])         # moves every value on
    static.load(main, str(tmp_path / "m"), exe)
    for name, value in main.state_dict().items():
        np.testing.assert_array_equal(np.array(value), saved[name])
    state = static.load_program_state(str(tmp_path / "m"))
    assert sorted(state) == sorted(saved)
    static.set_program_state(main, state)
    assert isinstance(paddle.load(str(tmp_path / "m.pdmodel")), static.Program)


def test_loaded_values_must_fit_their_variables(tmp_path):
    x, out, loss, exe = _static_model()
    main = static.default_main_program()
    state = {k: np.array(v) for k, v in main.state_dict().items()}
    bias = "fc_0.b_0"
    with pytest.raises(ShapeError, match=r"'fc_0.b_0' expects shape \[8\], the loaded value has shape \[1\]"):
        static.set_program_state(main, dict(state, **{bias: np.zeros([1], "float32")}))
    with pytest.raises(DTypeError, match="'fc_0.b_0' expects dtype float32, the loaded value has dtype float64"):
        main.set_state_dict(dict(state, **{bias: np.zeros([8])}))
    np.testing.assert_array_equal(np.array(global_scope().find_var(bias).get_tensor()), state[bias])
    tensor = global_scope().find_var(bias).get_tensor()
    with pytest.raises(ShapeError, match=r"holds shape \[8\]"):
        tensor.set(np.zeros([1], "float32"))
    with pytest.raises(DTypeError, match="dtype float32"):
        tensor.set(np.zeros([8]))
    paddle.save(dict(state, **{bias: np.zeros([1], "float32")}), tmp_path / "bad.pdparams")
    with pytest.raises(ShapeError, match="fc_0.b_0"):
        main.set_state_dict(paddle.load(tmp_path / "bad.pdparams"))


def test_set_value_and_set_state_dict_check_dtype(eager):
    net = paddle.nn.Linear(2, 2)
    with pytest.raises(DTypeError, match="float32"):
        net.weight.set_value(np.zeros((2, 2)))
    with pytest.raises(DTypeError, match="float32"):
        net.set_state_dict({"weight": np.zeros((2, 2))})
    with pytest.raises(ShapeError, match=r"\[2, 2\]"):
        net.set_state_dict({"weight": np.zeros((1, 2), "float32")})
    net.weight.set_value([[1, 2], [3, 4]])      # Python lists are converted
    assert net.weight.numpy().dtype == np.float32


def test_static_optimizer_and_layer_state_dicts(tmp_path):
    net = paddle.nn.Linear(4, 1)
    x = static.data("x", [-1, 4], "float32")
    loss = paddle.mean(net(x))
    schedule = paddle.optimizer.lr.StepDecay(0.1, 1)
    opt = paddle.optimizer.Momentum(schedule, momentum=0.9)
    opt.minimize(loss)
    exe = Executor()
    exe.run(static.default_startup_program())
    exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])
    schedule.step()
    state = opt.state_dict()
    assert state["LR_Scheduler"]["last_epoch"] == 1 and any("velocity" in k for k in state)
    paddle.save(state, tmp_path / "opt.pdopt")
    velocity = next(k for k in state if "velocity" in k)
    global_scope().find_var(velocity).get_tensor().set(np.zeros_like(state[velocity]))
    opt.set_state_dict(paddle.load(tmp_path / "opt.pdopt"))
    np.testing.assert_array_equal(np.array(global_scope().find_var(velocity).get_tensor()), state[velocity])
    net.set_state_dict({"weight": np.full((4, 1), 2, "float32")})
    np.testing.assert_array_equal(np.array(global_scope().find_var(net.weight.name).get_tensor()), 2)


def test_inference_model_is_pruned_in_test_mode_and_runs(tmp_path):
    x, out, loss, exe = _static_model()
    feed = {"x": np.random.default_rng(0).random((5, 4)).astype("float32")}
    expected = exe.run(static.default_main_program().clone(for_test=True), feed=feed, fetch_list=[out])[0]
    static.save_inference_model(str(tmp_path / "inf"), [x], [out], exe)
    with static.scope_guard(Scope()):
        program, feeds, fetches = static.load_inference_model(str(tmp_path / "inf"), Executor())
        types = [op.type for op in program.global_block().ops]
        assert feeds == ["x"] and [v.name for v in fetches] == [out.name]
        assert types == ["mul", "elementwise_add", "relu", "dropout", "mul", "elementwise_add"]
        assert program.global_block().ops[3].attr("is_test") is True
        got = Executor().run(program, feed=feed, fetch_list=fetches)[0]
    np.testing.assert_array_equal(got, expected)
    data = static.serialize_program([x], [out])
    params = static.serialize_persistables([x], [out], exe)
    static.save_to_file(str(tmp_path / "p.bin"), data)
    again = static.deserialize_program(static.load_from_file(str(tmp_path / "p.bin")))
    with static.scope_guard(Scope()):
        static.deserialize_persistables(again, params, Executor())
        got = Executor().run(again, feed=feed, fetch_list=[out.name])[0]
    np.testing.assert_array_equal(got, expected)
    assert [op.type for op in static.normalize_program(static.default_main_program(), [x], [out]).global_block().ops] == types
    params = paddle.load(str(tmp_path / "inf"))                 # a prefix: the inference model's parameters
    assert sorted(params) == sorted(p.name for p in static.default_main_program().all_parameters())
    with pytest.raises(ValueError, match=r"additional parameter \(export_for_deployment\)"):
        static.save_inference_model(str(tmp_path / "inf"), [x], [out], exe, export_for_deployment=True)


def test_fluid_io_directories(tmp_path):
    x, out, loss, exe = _static_model()
    main = static.default_main_program()
    feed = {"x": np.ones((2, 4), "float32")}
    expected = exe.run(main.clone(for_test=True), feed=feed, fetch_list=[out])[0]
    fluid.io.save_params(exe, str(tmp_path / "params"))
    assert sorted(os.listdir(tmp_path / "params")) == sorted(p.name for p in main.all_parameters())
    fluid.io.save_persistables(exe, str(tmp_path / "all"), filename="state")
    names = fluid.io.save_inference_model(str(tmp_path / "inf"), ["x"], [out], exe)
    assert names == [out.name]
    with static.scope_guard(Scope()):
        fluid.io.load_params(exe, str(tmp_path / "params"), main)
        fluid.io.load_persistables(exe, str(tmp_path / "all"), main, filename="state")
        got = Executor().run(main.clone(for_test=True), feed=feed, fetch_list=[out])[0]
        np.testing.assert_array_equal(got, expected)
    with static.scope_guard(Scope()):
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path / "inf"), Executor())
        np.testing.assert_array_equal(Executor().run(program, feed=feed, fetch_list=fetches)[0], expected)
    fluid.io.save_vars(exe, str(tmp_path / "some"), main, vars=[main.global_block().var("fc_0.w_0")])
    assert os.listdir(tmp_path / "some") == ["fc_0.w_0"]
    assert sorted(static.load_program_state(str(tmp_path / "params"))) == sorted(os.listdir(tmp_path / "params"))
    assert sorted(paddle.load(str(tmp_path / "inf"))) == sorted(p.name for p in main.all_parameters())


def test_a_corrupt_program_file_is_refused(tmp_path):
    x, out, loss, exe = _static_model()
    static.save(static.default_main_program(), str(tmp_path / "m"))
    data = bytearray((tmp_path / "m.pdmodel").read_bytes())
    data[200] ^= 4
    (tmp_path / "m.pdmodel").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"m\.pdmodel"):
        paddle.load(str(tmp_path / "m.pdmodel"))


def test_bytesio_round_trip(eager):
    import io

    buffer = io.BytesIO()
    net = paddle.nn.Linear(2, 3)
    paddle.save(net.state_dict(), buffer)
    buffer.seek(0)
    loaded = paddle.load(buffer)
    np.testing.assert_array_equal(loaded["weight"].numpy(), net.weight.numpy())
    corrupt = bytearray(buffer.getvalue())
    corrupt[-3] ^= 1
    with pytest.raises(CheckpointError, match="<buffer>: checksum mismatch"):
        paddle.load(io.BytesIO(bytes(corrupt)))
    with pytest.raises(ValueError, match="BytesIO"):
        paddle.save({}, 3)


def test_static_mode_load_gives_scope_tensors_and_saves_static_variables(tmp_path):
    from headrace.runtime.scope import LoDTensor

    net = paddle.nn.Linear(3, 2)
    Executor().run(static.default_startup_program())
    paddle.save(net.state_dict(), tmp_path / "net.pdparams")          # static Parameters: their values
    loaded = paddle.load(tmp_path / "net.pdparams")
    assert all(isinstance(v, LoDTensor) for v in loaded.values())
    weight = np.array(global_scope().find_var(net.weight.name).get_tensor())
    np.testing.assert_array_equal(np.array(loaded["weight"]), weight)
    assert isinstance(paddle.load(tmp_path / "net.pdparams", return_numpy=True)["weight"], np.ndarray)
    with static.scope_guard(Scope()):
        with pytest.raises(ValueError, match="has no value in the global scope"):
            paddle.save(net.state_dict(), tmp_path / "none.pdparams")


def test_static_load_refuses_files_that_do_not_fit(tmp_path):
    x, out, loss, exe = _static_model()
    main = static.default_main_program()
    static.save(main, str(tmp_path / "m"))
    fluid.io.save_params(exe, str(tmp_path / "dir"))
    other_main, other_startup = static.Program(), static.Program()
    with static.program_guard(other_main, other_startup):
        x2 = static.data("x", [-1, 4], "float32")
        static.nn.fc(x2, 5, weight_attr="fc_0.w_0", bias_attr="fc_0.b_0")   # same names, other shapes
        static.nn.fc(x2, 2, weight_attr="extra.w", bias_attr=False)
    with static.scope_guard(Scope()):
        Executor().run(other_startup)
        with pytest.raises(CheckpointError, match=r"m\.pdparams: has no value for \['extra.w'\]"):
            static.load(other_main, str(tmp_path / "m"))
        with pytest.raises(ShapeError, match=r"'fc_0.w_0' expects shape \[4, 5\], the loaded value has shape \[4, 8\]"):
            static.set_program_state(other_main, static.load_program_state(str(tmp_path / "m")))
    # the 1.x directory layout loads through static.load too
    before = {k: np.array(v) for k, v in main.state_dict("param").items()}
    for name in before:
        global_scope().find_var(name).get_tensor().set(np.zeros_like(before[name]))
    static.load(main, str(tmp_path / "dir"), exe, var_list=main.all_parameters())
    for name, value in main.state_dict("param").items():
        np.testing.assert_array_equal(np.array(value), before[name])


def test_values_set_by_hand_into_an_empty_scope_are_checked_when_the_program_runs():
    x = static.data("x", [-1, 4], "float32")
    out = static.nn.fc(x, 8)
    main, feed = static.default_main_program(), {"x": np.ones((2, 4), "float32")}
    good = {"fc_0.w_0": np.ones((4, 8), "float32"), "fc_0.b_0": np.ones(8, "float32")}
    for name, bad, error, message in [
            ("fc_0.b_0", np.ones(1, "float32"), ShapeError, r"'fc_0.b_0' is declared with shape \[8\] .* shape \[1\]"),
            ("fc_0.w_0", np.ones((4, 8)), DTypeError, "'fc_0.w_0' is declared with shape .* dtype float32, .* dtype float64")]:
        scope = Scope()
        for key, value in dict(good, **{name: bad}).items():
            scope.var(key).get_tensor().set(value)
        with pytest.raises(error, match=message):
            Executor().run(main, feed=feed, fetch_list=[out], scope=scope)
    scope = Scope()
    for key, value in good.items():
        scope.var(key).get_tensor().set(value)
    np.testing.assert_array_equal(Executor().run(main, feed=feed, fetch_list=[out], scope=scope)[0], 5)


def test_static_io_load_program_file(tmp_path):
    from headrace.static import io as static_io

    x, out, loss, exe = _static_model()
    static.save(static.default_main_program(), str(tmp_path / "m"))
    program = static_io.load_program_file(tmp_path / "m.pdmodel")
    assert program.to_dict() == static.default_main_program().to_dict()
    with pytest.raises(CheckpointError, match="expected a program file"):
        static_io.load_program_file(tmp_path / "m.pdparams")


def test_static_load_needs_the_pdopt_file_when_the_program_has_optimizer_state(tmp_path):
    x, out, loss, exe = _static_model()
    main = static.default_main_program()
    static.save(main, str(tmp_path / "m"))
    os.remove(tmp_path / "m.pdopt")
    with pytest.raises(CheckpointError, match=r"m\.pdopt' does not exist"):
        static.load(main, str(tmp_path / "m"))
    static.load(static.normalize_program(main, [x], [out]), str(tmp_path / "m"))   # no optimizer state


def test_reference_pickles_with_split_arrays_are_rejoined(eager, tmp_path):
    """The reference pickles big arrays (protocols 2-3) as slices plus a table; they load whole."""
    big = np.arange(24, dtype="float32").reshape(4, 6)
    flat = big.reshape(-1)
    saved = {"w@@.0": flat[:10], "w@@.1": flat[10:], "b": np.ones(2, "float32"),
             "UnpackBigParamInfor@@": {"w": {"OriginShape": (4, 6), "slices": ["w@@.0", "w@@.1"]}}}
    path = tmp_path / "split.pdparams"
    path.write_bytes(pickle.dumps(saved, protocol=2))
    loaded = paddle.load(path, return_numpy=True)
    assert sorted(loaded) == ["b", "w"]
    np.testing.assert_array_equal(loaded["w"], big)
