"""Program.from_dict validates what it loads (issue 15, item 5): every fault is a ProgramError
naming the block, the op (or variable) index and the field, raised before anything runs."""
import copy
import json

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core.errors import ProgramError
from headrace.core.program_format import FORMAT_VERSION
from headrace.runtime import Executor, Scope


def _spec():
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [-1, 4], "float32")
        h = static.nn.fc(x, size=3, activation="relu")
        out = paddle.scale(h, scale=2.0)
        paddle.mean(out)
    return json.loads(json.dumps(main.to_dict()))


def _op_index(spec, op_type):
    return next(i for i, o in enumerate(spec["blocks"][0]["ops"]) if o["type"] == op_type)


def _load_error(spec) -> str:
    with pytest.raises(ProgramError) as info:
        static.Program.from_dict(spec)
    return str(info.value)


def test_a_valid_description_loads_and_runs():
    spec = _spec()
    program = static.Program.from_dict(spec)
    assert program.to_dict() == spec


def test_unknown_op_type_names_op_index_and_type():
    spec = _spec()
    i = _op_index(spec, "relu")
    spec["blocks"][0]["ops"][i]["type"] = "relu_but_not"
    message = _load_error(spec)
    assert f"block 0 op {i}" in message and "unknown op type `relu_but_not`" in message


def test_unknown_attribute():
    spec = _spec()
    i = _op_index(spec, "scale")
    spec["blocks"][0]["ops"][i]["attrs"]["sclae"] = 3.0
    message = _load_error(spec)
    assert f"block 0 op {i} (`scale`), attribute `sclae`" in message


def test_mistyped_attribute():
    spec = _spec()
    i = _op_index(spec, "scale")
    spec["blocks"][0]["ops"][i]["attrs"]["scale"] = "2.0"
    message = _load_error(spec)
    assert f"op {i} (`scale`), attribute `scale`: expected a number, got str" in message
    spec = _spec()
    spec["blocks"][0]["ops"][i]["attrs"]["bias_after_scale"] = 1
    assert "attribute `bias_after_scale`: expected a bool" in _load_error(spec)


def test_missing_required_attribute_is_an_error_and_optional_one_gets_its_default():
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [4, 6], "float32")
        paddle.scale(x[:, 1:3], scale=3.0)
    spec = json.loads(json.dumps(main.to_dict()))
    i = _op_index(spec, "slice")
    broken = copy.deepcopy(spec)
    del broken["blocks"][0]["ops"][i]["attrs"]["starts"]
    assert f"op {i} (`slice`), attribute `starts`: missing, and the op requires it" in _load_error(broken)
    j = _op_index(spec, "scale")
    del spec["blocks"][0]["ops"][j]["attrs"]["bias"]
    program = static.Program.from_dict(spec)
    assert program.global_block().ops[j].attr("bias") == 0.0
    value = np.arange(24, dtype="float32").reshape(4, 6)
    out = program.global_block().ops[j].output("Out")[0]
    got = Executor().run(program, feed={"x": value}, fetch_list=[out], scope=Scope())[0]
    np.testing.assert_array_equal(got, value[:, 1:3] * 3)


def test_dangling_variable():
    spec = _spec()
    i = _op_index(spec, "relu")
    spec["blocks"][0]["ops"][i]["inputs"]["X"] = ["no_such_var"]
    message = _load_error(spec)
    assert f"op {i}" in message and "'no_such_var'" in message and "does not exist" in message


def test_cycle_an_op_reads_what_a_later_op_writes():
    spec = _spec()
    ops = spec["blocks"][0]["ops"]
    i, j = _op_index(spec, "relu"), _op_index(spec, "scale")
    ops[i]["inputs"]["X"] = list(ops[j]["outputs"]["Out"])   # relu now reads scale's output
    message = _load_error(spec)
    assert f"op {i}" in message and "read before any op writes it" in message


def test_block_parents_may_not_form_a_cycle():
    spec = _spec()
    spec["blocks"].append({"idx": 1, "parent_idx": 2, "vars": [], "ops": []})
    spec["blocks"].append({"idx": 2, "parent_idx": 1, "vars": [], "ops": []})
    assert "block 1, field `parent_idx`" in _load_error(spec)


def test_newer_format_version_is_a_clear_error():
    spec = _spec()
    assert spec["version"] == FORMAT_VERSION
    spec["version"] = FORMAT_VERSION + 1
    message = _load_error(spec)
    assert "newer headrace" in message and f"version {FORMAT_VERSION + 1}" in message
    del spec["version"]
    assert "field `version` is missing" in _load_error(spec)


@pytest.mark.parametrize("edit, expected", [
    (lambda s: s["blocks"][0]["vars"][0].__setitem__("shape", "abc"), "variable 0 ('x'), field `shape`"),
    (lambda s: s["blocks"][0]["vars"][0].__setitem__("dtype", "float33"), "variable 0 ('x'), field `dtype`"),
    (lambda s: s["blocks"][0]["vars"][1].__setitem__("persistable", "yes"), "field `persistable`"),
    (lambda s: s["blocks"][0]["vars"].append(dict(s["blocks"][0]["vars"][0])), "'x' is declared twice"),
    (lambda s: s["blocks"][0]["ops"][0].__setitem__("inputs", ["x"]), "op 0 (`mul`), field `inputs`"),
    (lambda s: s["blocks"][0]["ops"][0]["outputs"].__setitem__("Out", "fc"), "op 0 (`mul`), field `outputs.Out`"),
    (lambda s: s["blocks"][0]["ops"][0].pop("attrs"), "op 0 (`mul`): field `attrs` is missing"),
    (lambda s: s["blocks"][0]["ops"][0].__setitem__("type", 7), "op 0, field `type`"),
    (lambda s: s["blocks"][0].__setitem__("idx", 3), "block 0, field `idx`"),
    (lambda s: s.__setitem__("blocks", []), "field `blocks`"),
    (lambda s: s["blocks"][0]["ops"][0]["inputs"].__setitem__("Z", ["x"]), "unknown input slot `Z`"),
])
def test_malformed_fields_name_where(edit, expected):
    spec = _spec()
    edit(spec)
    assert expected in _load_error(spec)


def test_not_a_dict():
    assert "expected a dict" in _load_error([1, 2])


def _mutations(spec, rng):
    """Paths into ``spec`` and values to put there (or delete), for a bounded random search."""
    paths = []

    def walk(obj, prefix):
        paths.append(prefix)
        children = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
        for key, value in children:
            walk(value, prefix + (key,))

    walk(spec, ())
    values = [None, 0, -1, 1.5, "", "x", [], {}, [1], ["x"], True, 10**20, {"a": 1}, [[1]], "float32"]
    return [(rng.choice(paths[1:]), rng.choice(values + ["<delete>"])) for _ in range(rng.randint(1, 3))]


def test_randomly_corrupted_descriptions_raise_program_error_or_load():
    """Any corruption of a valid description (a training program with dropout, slicing and Adam)
    is a ProgramError or loads; never another exception type."""
    import random

    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [-1, 4], "float32")
        h = paddle.nn.functional.dropout(static.nn.fc(x, 3, activation="relu"), 0.3)
        paddle.optimizer.Adam(0.1).minimize(paddle.mean(paddle.scale(h[:, 1:2], scale=2.0)))
    base = json.loads(json.dumps(main.to_dict()))
    rng = random.Random(0)
    for _ in range(600):
        spec = copy.deepcopy(base)
        for path, value in _mutations(spec, rng):
            parent = spec
            try:
                for key in path[:-1]:
                    parent = parent[key]
                if value == "<delete>":
                    del parent[path[-1]]
                else:
                    parent[path[-1]] = value
            except (KeyError, IndexError, TypeError):
                continue
        try:
            static.Program.from_dict(spec)
        except ProgramError:
            pass
