from headrace.core.operator import Operator
from headrace.passes.liveness import analyze


def _op(type, ins, outs):
    return Operator(None, type, {"X": ins}, {"Out": outs})


def _free_points(ops, nnb=lambda op: (), keep=(), never=()):
    live = analyze(ops, nnb, keep=frozenset(keep), never_free=frozenset(never))
    frees = {n: i for i, names in enumerate(live.free_after) for n in names}
    strips = {n: i for i, names in enumerate(live.strip_after) for n in names}
    return frees, strips


def test_values_die_after_their_last_reader():
    ops = [_op("a", ["x"], ["h1"]), _op("b", ["h1"], ["h2"]), _op("c", ["h1", "h2"], ["h3"]), _op("d", ["h3"], ["y"])]
    frees, strips = _free_points(ops, keep={"y"})
    assert frees == {"x": 0, "h1": 2, "h2": 2, "h3": 3}
    assert strips == {}


def test_unread_outputs_die_at_once_and_kept_or_persistable_names_never():
    ops = [_op("a", ["x", "w"], ["h", "mask"]), _op("b", ["h"], ["y"])]
    frees, _ = _free_points(ops, keep={"y"}, never={"w"})
    assert frees == {"x": 0, "mask": 0, "h": 1}


def test_shape_only_reads_strip_the_data_early():
    ops = [_op("a", ["x"], ["big"]), _op("b", ["big"], ["h"]), _op("c", ["h"], ["h2"]),
           Operator(None, "shape_user", {"X": ["big"], "G": ["h2"]}, {"Out": ["y"]})]
    frees, strips = _free_points(ops, nnb=lambda op: ("X",) if op.type == "shape_user" else (), keep={"y"})
    assert strips == {"big": 1} and frees["big"] == 3


def test_a_rewritten_name_has_two_lifetimes():
    ops = [_op("a", ["x"], ["v"]), _op("b", ["v"], ["u"]), _op("c", ["u"], ["w"]),
           _op("d", ["w"], ["v"]), _op("e", ["v"], ["y"])]
    live = analyze(ops, lambda op: (), keep=frozenset({"y"}))
    assert [sorted(names) for names in live.free_after] == [["x"], ["v"], ["u"], ["w"], ["v"]]


def test_an_in_place_op_does_not_free_its_own_output():
    ops = [_op("a", ["x"], ["v"]), _op("inplace", ["v"], ["v"]), _op("b", ["v"], ["y"])]
    frees, _ = _free_points(ops, keep={"y"})
    live = analyze(ops, lambda op: (), keep=frozenset({"y"}))
    assert "v" not in live.free_after[1]
    assert frees["v"] == 2
