"""Loss and metric ops: references loop over rows with the math module."""
import dataclasses
import math

import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError, KernelError, ShapeError
from headrace.ops.kernel import context
from tests.ops.harness import Case, build_and_run, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(3)
BIG = 1e20  # the reference's clamp of -log(0)


def _probs(shape, dtype="float64"):
    p = rng.uniform(0.05, 1.0, shape)
    return (p / p.sum(axis=-1, keepdims=True)).astype(dtype)


def _labels(lead, depth):
    return rng.integers(0, depth, tuple(lead) + (1,)).astype("int64")


def _rows(a, axis=-1):
    """(moved array, list of rows along ``axis``) for per-row Python references."""
    moved = np.moveaxis(a, axis, -1)
    return moved, list(moved.reshape(-1, moved.shape[-1]))


def _neg_log(p):
    return BIG if p == 0.0 else min(-math.log(p), BIG)


# --- cross_entropy -----------------------------------------------------------------------------------
def _cross_entropy_reference(ins, attrs):
    x, label = ins["X"], ins["Label"]
    moved, rows = _rows(x.astype(np.float64))
    if attrs.get("soft_label", False):
        _, label_rows = _rows(label.astype(np.float64))
        values = [math.fsum(l * _neg_log(p) for p, l in zip(row, lrow))
                  for row, lrow in zip(rows, label_rows)]
    else:
        ignore = attrs.get("ignore_index", -100)
        values = [0.0 if int(l) == ignore else _neg_log(row[int(l)]) for row, l in zip(rows, label.ravel())]
    return {"Y": np.array(values).reshape(moved.shape[:-1] + (1,)).astype(x.dtype)}


def _ce_case(shape, dtype="float64", soft=False, attrs=None, x=None, label=None, id=""):
    x = _probs(shape, dtype) if x is None else x
    if label is None:
        label = _probs(shape, dtype) if soft else _labels(shape[:-1], shape[-1])
    attrs = dict(attrs or {}, **({"soft_label": True} if soft else {}))
    return Case("cross_entropy", {"X": x, "Label": label}, attrs=attrs, reference=_cross_entropy_reference,
                rtol=1e-6 if x.dtype == np.float32 else 1e-13, id=id or f"ce-{shape}-{dtype}-soft{soft}")


_with_ignored = _labels((6,), 4)
_with_ignored[[1, 4]] = -100
_with_custom_ignored = np.array([[0], [2], [1], [2]], dtype="int64")
_zero_probs = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]], dtype="float32")
CE_CASES = [
    _ce_case((4, 5)),
    _ce_case((2, 3, 5)),
    _ce_case((7,)),                               # rank 1: one row of 7 classes
    _ce_case((4, 5), "float32"),
    _ce_case((4, 5), soft=True),
    _ce_case((2, 3, 4), "float32", soft=True),
    _ce_case((6, 4), label=_with_ignored, id="ce-ignore-default"),
    _ce_case((4, 3), attrs={"ignore_index": 2}, label=_with_custom_ignored, id="ce-ignore-2"),
    _ce_case((2, 3), x=_zero_probs, label=np.array([[0], [1]], "int64"), id="ce-zero-prob-hard"),
    _ce_case((2, 3), x=_zero_probs, label=np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]], "float32"),
             soft=True, id="ce-zero-prob-soft"),
]


# --- softmax_with_cross_entropy ------------------------------------------------------------------
def _log_softmax_row(row):
    top = max(row)
    lse = top + math.log(math.fsum(math.exp(v - top) for v in row))
    return [v - lse for v in row]


def _swce_reference(ins, attrs):
    logits, label = ins["Logits"], ins["Label"]
    axis = attrs.get("axis", -1) % logits.ndim
    moved, rows = _rows(logits.astype(np.float64), axis)
    if attrs.get("use_softmax", True):
        log_rows = [_log_softmax_row(list(r)) for r in rows]
        soft_rows = [[math.exp(v) for v in r] for r in log_rows]
    else:
        log_rows = [[-_neg_log(v) for v in r] for r in rows]
        soft_rows = [list(r) for r in rows]
    if attrs.get("soft_label", False):
        _, label_rows = _rows(label.astype(np.float64), axis)
        loss = [-math.fsum(lv * v for lv, v in zip(lr, r)) for lr, r in zip(label_rows, log_rows)]
    else:
        ignore = attrs.get("ignore_index", -100)
        flat_labels = np.moveaxis(label, axis, -1).ravel()
        loss = [0.0 if int(l) == ignore else -r[int(l)] for r, l in zip(log_rows, flat_labels)]
    softmax = np.moveaxis(np.array(soft_rows).reshape(moved.shape), -1, axis)
    loss = np.moveaxis(np.array(loss).reshape(moved.shape[:-1] + (1,)), -1, axis)
    return {"Softmax": softmax.astype(logits.dtype), "Loss": loss.astype(logits.dtype)}


def _swce_case(shape, axis=-1, dtype="float64", soft=False, attrs=None, logits=None, label=None, id=""):
    logits = rng.uniform(-3, 3, shape).astype(dtype) if logits is None else logits
    ax = axis % len(shape)
    label_shape = shape[:ax] + (1,) + shape[ax + 1:]
    if label is None:
        if soft:
            label = np.moveaxis(_probs(np.moveaxis(np.empty(shape), ax, -1).shape, dtype), -1, ax)
        else:
            label = rng.integers(0, shape[ax], label_shape).astype("int64")
    attrs = dict(attrs or {}, axis=axis, soft_label=soft)
    return Case("softmax_with_cross_entropy", {"Logits": logits, "Label": label}, attrs=attrs,
                reference=_swce_reference, rtol=1e-6 if dtype == "float32" else 1e-12,
                atol=1e-7 if dtype == "float32" else 0.0,   # float32 losses near 0: an absolute ulp
                id=id or f"swce-{shape}-axis{axis}-{dtype}-soft{soft}-{attrs}")


_swce_ignored = rng.integers(0, 5, (6, 1)).astype("int64")
_swce_ignored[[0, 3]] = 7
_big_logits = rng.uniform(-3, 3, (4, 6)) + np.array([[1000.0], [-1000.0], [800.0], [0.0]])
_tiny_softmax = np.array([[0.0, -800.0, 5.0], [-1000.0, 0.0, 1.0]])
SWCE_CASES = [
    _swce_case((4, 5)),
    _swce_case((4, 5), dtype="float32"),
    _swce_case((2, 3, 4), axis=1),
    _swce_case((2, 3, 4), axis=0),
    _swce_case((2, 3, 4), axis=-2, dtype="float32"),
    _swce_case((4, 5), soft=True),
    _swce_case((2, 5, 3), axis=1, soft=True),
    _swce_case((6, 5), attrs={"ignore_index": 7}, label=_swce_ignored, id="swce-ignore-7"),
    _swce_case((4, 6), logits=_big_logits, id="swce-huge-logits-stable"),
    # the labelled class's softmax underflows to 0: only log-sum-exp gives the finite loss (~800)
    _swce_case((2, 3), logits=_tiny_softmax, label=np.array([[1], [0]], "int64"), id="swce-underflow-hard"),
    _swce_case((2, 3), logits=_tiny_softmax, label=np.array([[0.2, 0.8, 0.0], [0.5, 0.0, 0.5]]), soft=True,
               id="swce-underflow-soft"),
    _swce_case((4, 5), logits=_probs((4, 5)), attrs={"use_softmax": False}, id="swce-no-softmax"),
    _swce_case((4, 5), logits=_probs((4, 5)), soft=True, attrs={"use_softmax": False}, id="swce-no-softmax-soft"),
    _swce_case((3, 4), attrs={"numeric_stable_mode": False}, id="swce-numeric-stable-off"),
]


# --- accuracy --------------------------------------------------------------------------------------
def _accuracy_reference(ins, attrs):
    scores, label = ins["Out"], ins["Label"]
    k = attrs.get("k", 1)
    correct = 0
    for row, l in zip(scores.tolist(), label.ravel().tolist()):
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))   # stable descending
        correct += l in order[:k]
    n = len(scores)
    return {"Accuracy": np.array(correct / n if n else 0.0, dtype="float32"),
            "Correct": np.array(correct, dtype="int32"), "Total": np.array(n, dtype="int32")}


def _acc_case(n, depth, k, dtype="float64", ties=False):
    scores = (rng.integers(0, 3, (n, depth)) if ties else rng.uniform(0, 1, (n, depth))).astype(dtype)
    label = rng.integers(0, depth, (n, 1)).astype("int64")
    return Case("accuracy", {"Out": scores, "Label": label}, attrs={"k": k}, reference=_accuracy_reference,
                id=f"acc-{n}x{depth}-k{k}-{dtype}-ties{ties}")


ACC_CASES = [_acc_case(20, 5, k) for k in (1, 2, 5)]
ACC_CASES += [_acc_case(30, 4, k, ties=True) for k in (1, 2, 3)]
ACC_CASES += [_acc_case(16, 6, 3, "float32"), _acc_case(16, 3, 1, "float32", ties=True)]
ALL = CE_CASES + SWCE_CASES + ACC_CASES


@pytest.mark.parametrize("case", ALL, ids=ids(ALL))
@pytest.mark.filterwarnings("error")   # no divide-by-zero / overflow warnings, even for p = 0
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in ALL if min(np.ndim(v) for v in c.inputs.values()) >= 2], ids=str)
def test_infer_with_unknown_batch(case):
    """Outputs keep the unknown batch dim, except a loss reduced over axis 0 and accuracy's scalars."""
    batch_outputs = {"cross_entropy": ("Y",), "softmax_with_cross_entropy": ("Softmax", "Loss")}.get(case.op, ())
    if case.attrs.get("axis", -1) == 0:
        batch_outputs = ("Softmax",)
    check_infer_batch(dataclasses.replace(case, batch_outputs=batch_outputs))


def test_known_label_dims_fill_unknown_score_dims():
    case = _ce_case((4, 5))
    out_vars, _ = build_and_run(dataclasses.replace(case, batch_slots=("X",)), batch_unknown=True)
    assert tuple(out_vars["Y"][0].shape) == (4, 1)


def test_example_values():
    """A hand-checked instance: -log(0.25) and -log(1/3)."""
    x = np.array([[0.25, 0.75], [1 / 3, 2 / 3]])
    got = build_and_run(Case("cross_entropy", {"X": x, "Label": np.array([[0], [0]], "int64")},
                             reference=None))[1]["Y"][0]
    np.testing.assert_allclose(got, [[math.log(4.0)], [math.log(3.0)]], rtol=1e-15)


# --- run-time label errors ---------------------------------------------------------------------------
def _bad_label_case(op, label, attrs=None):
    scores_slot = {"cross_entropy": "X", "softmax_with_cross_entropy": "Logits", "accuracy": "Out"}[op]
    return Case(op, {scores_slot: _probs((3, 4)), "Label": label}, attrs=attrs or {}, reference=None)


@pytest.mark.parametrize("op", ["cross_entropy", "softmax_with_cross_entropy", "accuracy"])
@pytest.mark.parametrize("bad", [4, 9, -1, -100])
def test_label_out_of_range_is_a_kernel_error(op, bad):
    label = np.array([[0], [bad], [3]], dtype="int64")
    attrs = {"ignore_index": 7} if op != "accuracy" else {}
    with pytest.raises(KernelError) as info:
        build_and_run(_bad_label_case(op, label, attrs))
    message = str(info.value)
    assert f"op `{op}`" in message and "built at" in message
    assert "IndexError" in message and f"label {bad}" in message and "[0, 4)" in message


def test_ignore_index_is_not_an_error_outside_the_range():
    label = np.array([[0], [-5], [3]], dtype="int64")
    values = build_and_run(_bad_label_case("cross_entropy", label, {"ignore_index": -5}))[1]["Y"][0]
    assert values[1, 0] == 0.0 and values[0, 0] > 0.0


# --- build-time errors ----------------------------------------------------------------------------
P45, L4 = np.ones((4, 5)), np.zeros((4, 1), "int64")

BUILD_ERRORS = [
    ("cross_entropy", {"X": P45.astype("int64"), "Label": L4}, {}, DTypeError, "input `X`"),
    ("cross_entropy", {"X": P45, "Label": L4.astype("float64")}, {}, DTypeError, "int64"),
    ("cross_entropy", {"X": P45, "Label": L4.astype("int32")}, {}, DTypeError, "int32"),
    ("cross_entropy", {"X": P45, "Label": np.zeros((4, 2), "int64")}, {}, ShapeError, "[4, 1]"),
    ("cross_entropy", {"X": P45, "Label": np.zeros((3, 1), "int64")}, {}, ShapeError, "got [3, 1]"),
    ("cross_entropy", {"X": np.ones((2, 3, 5)), "Label": np.zeros((6, 1), "int64")}, {}, ShapeError, "[2, 3, 1]"),
    ("cross_entropy", {"X": np.array(1.0), "Label": np.zeros((1,), "int64")}, {}, ShapeError, "rank"),
    ("cross_entropy", {"X": P45, "Label": np.ones((4, 4))}, {"soft_label": True}, ShapeError, "[4, 5]"),
    ("cross_entropy", {"X": P45, "Label": np.ones((4, 5), "float32")}, {"soft_label": True}, DTypeError,
     "float32"),
    ("softmax_with_cross_entropy", {"Logits": P45, "Label": L4}, {"axis": 2}, AttrError, "attribute `axis`"),
    ("softmax_with_cross_entropy", {"Logits": np.ones((2, 3, 4)), "Label": np.zeros((2, 3, 1), "int64")},
     {"axis": 1}, ShapeError, "[2, 1, 4]"),
    ("softmax_with_cross_entropy", {"Logits": P45, "Label": L4.astype("float64")}, {}, DTypeError, "Label"),
    ("softmax_with_cross_entropy", {"Logits": P45.astype("float16"), "Label": L4}, {}, DTypeError, "float16"),
    ("accuracy", {"Out": np.ones((4, 5, 2)), "Label": L4}, {}, ShapeError, "rank 2"),
    ("accuracy", {"Out": P45, "Label": np.zeros((4, 2), "int64")}, {}, ShapeError, "[4, 1]"),
    ("accuracy", {"Out": P45, "Label": np.zeros((5, 1), "int64")}, {}, ShapeError, "got [5, 1]"),
    ("accuracy", {"Out": P45, "Label": L4.astype("float32")}, {}, DTypeError, "Label"),
    ("accuracy", {"Out": P45, "Label": L4}, {"k": 0}, AttrError, "attribute `k`"),
    ("accuracy", {"Out": P45, "Label": L4}, {"k": 6}, AttrError, "[1, 5]"),
]


@pytest.mark.parametrize("op, inputs, attrs, error, match", BUILD_ERRORS,
                         ids=[f"{e[0]}-{e[3].__name__}-{i}" for i, e in enumerate(BUILD_ERRORS)])
def test_build_errors(op, inputs, attrs, error, match):
    check_build_error(op, inputs, attrs, error, match=match)


def test_accuracy_doc_says_it_folds_top_k():
    from headrace.ops.registry import lookup
    assert "top_k" in lookup("accuracy").doc


# --- gradients: central differences in float64 ------------------------------------------------------
from headrace.autodiff import gradients  # noqa: E402
from headrace.core.context import program_guard  # noqa: E402
from headrace.core.program import Program  # noqa: E402
from headrace.ops.apply import apply_op  # noqa: E402
from headrace.ops.gradrule import NO_GRADIENT  # noqa: E402
from headrace.ops.registry import lookup  # noqa: E402
from tests.ops.gradcheck import check_grad  # noqa: E402

grng = np.random.default_rng(31)


def _grad_probs(shape):
    return grng.uniform(0.1, 1.0, shape)   # away from 0, where -log has no finite slope


def _grad_labels(shape, axis, depth):
    label_shape = list(shape)
    label_shape[axis] = 1
    return grng.integers(0, depth, label_shape).astype("int64")


_ce_ignored = np.array([[0], [-100], [3], [1], [-100]], "int64")
_ce_ignored_2 = np.array([[[0], [2]], [[1], [2]]], "int64")
CE_GRAD_CASES = [
    ("hard-2d", _grad_probs((4, 5)), _grad_labels((4, 5), -1, 5), {}),
    ("hard-3d", _grad_probs((2, 3, 4)), _grad_labels((2, 3, 4), -1, 4), {}),
    ("hard-1d", _grad_probs((6,)), np.array([4], "int64"), {}),
    ("soft", _grad_probs((3, 5)), _grad_probs((3, 5)), {"soft_label": True}),
    ("soft-3d-zero-labels", _grad_probs((2, 2, 4)), np.where(grng.random((2, 2, 4)) < 0.4, 0.0, 0.5),
     {"soft_label": True}),
    ("ignore-default", _grad_probs((5, 4)), _ce_ignored, {}),
    ("ignore-2", _grad_probs((2, 2, 3)), _ce_ignored_2, {"ignore_index": 2}),
]


@pytest.mark.parametrize("name,x,label,attrs", CE_GRAD_CASES, ids=[c[0] for c in CE_GRAD_CASES])
def test_cross_entropy_gradient(name, x, label, attrs):
    check_grad("cross_entropy", {"X": x, "Label": label}, attrs, wrt=("X",))


def _swce_logits(shape):
    return grng.uniform(-2, 2, shape)


def _soft(shape, axis, normalized=True):
    p = grng.uniform(0.05, 1.0, shape)
    return p / p.sum(axis=axis, keepdims=True) if normalized else p


_swce_ign = np.array([[1], [7], [0], [7], [4]], "int64")
SWCE_GRAD_CASES = [
    ("hard", (4, 5), {}, _grad_labels((4, 5), -1, 5)),
    ("hard-axis1", (2, 4, 3), {"axis": 1}, _grad_labels((2, 4, 3), 1, 4)),
    ("hard-axis0", (3, 2, 2), {"axis": 0}, _grad_labels((3, 2, 2), 0, 3)),
    ("hard-rank1", (5,), {}, np.array([2], "int64")),
    ("soft", (3, 5), {"soft_label": True}, _soft((3, 5), -1)),
    ("soft-axis-neg2", (2, 4, 3), {"soft_label": True, "axis": -2}, _soft((2, 4, 3), 1)),
    ("soft-unnormalized", (3, 4), {"soft_label": True}, _soft((3, 4), -1, normalized=False)),
    ("ignore-7", (5, 6), {"ignore_index": 7}, _swce_ign),
    ("numeric-stable-off", (3, 4), {"numeric_stable_mode": False}, _grad_labels((3, 4), -1, 4)),
]


@pytest.mark.parametrize("name,shape,attrs,label", SWCE_GRAD_CASES, ids=[c[0] for c in SWCE_GRAD_CASES])
def test_softmax_with_cross_entropy_gradient(name, shape, attrs, label):
    check_grad("softmax_with_cross_entropy", {"Logits": _swce_logits(shape), "Label": label}, attrs,
               wrt=("Logits",), out_slots=("Loss",))


@pytest.mark.parametrize("soft", [False, True])
def test_softmax_with_cross_entropy_gradient_without_softmax(soft):
    """use_softmax=False: Logits are probabilities and the loss is -log p (clamped)."""
    label = _grad_probs((3, 4)) if soft else np.array([[0], [3], [-100]], "int64")
    check_grad("softmax_with_cross_entropy", {"Logits": _grad_probs((3, 4)), "Label": label},
               {"use_softmax": False, "soft_label": soft}, wrt=("Logits",), out_slots=("Loss",))


def _grad_program(op, scores_slot, scores, label, attrs, loss_slot):
    main = Program()
    with program_guard(main, Program()):
        block = main.global_block()
        s = block.create_var(name="s", shape=list(scores.shape), dtype="float64", is_data=True,
                             stop_gradient=False)
        lab = block.create_var(name="label", shape=list(label.shape), dtype=label.dtype.name, is_data=True)
        out = apply_op(op, {scores_slot: s, "Label": lab}, attrs)[loss_slot][0]
        grad, = gradients([out], [s])
    return main, grad


def test_softmax_with_cross_entropy_grad_reads_softmax_not_logits():
    main, _ = _grad_program("softmax_with_cross_entropy", "Logits", np.zeros((2, 3)),
                            np.zeros((2, 1), "int64"), {}, "Loss")
    grad_op = [op for op in main.global_block().ops if op.type == "softmax_with_cross_entropy_grad"][0]
    assert sorted(grad_op.inputs) == ["Label", "Loss@GRAD", "Softmax"]


@pytest.mark.parametrize("op,slot,loss_slot", [("cross_entropy", "X", "Y"),
                                               ("softmax_with_cross_entropy", "Logits", "Loss")])
def test_ignored_rows_get_exactly_zero_gradient(op, slot, loss_slot):
    from headrace.runtime import Executor, Scope
    scores = _grad_probs((4, 3))
    label = np.array([[1], [5], [0], [5]], "int64")
    main, grad = _grad_program(op, slot, scores, label, {"ignore_index": 5}, loss_slot)
    got, = Executor().run(main, feed={"s": scores, "label": label}, fetch_list=[grad], scope=Scope())
    assert np.all(got[[1, 3]] == 0.0)
    if op == "cross_entropy":   # hard labels: only the label's entry, -1 / p
        want = np.zeros((4, 3))
        want[0, 1], want[2, 0] = -1 / scores[0, 1], -1 / scores[2, 0]
        np.testing.assert_allclose(got, want, rtol=1e-14)
    else:                       # softmax - onehot in the kept rows
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        softmax = e / e.sum(axis=1, keepdims=True)
        for row, lab in ((0, 1), (2, 0)):
            want = softmax[row].copy()
            want[lab] -= 1
            np.testing.assert_allclose(got[row], want, rtol=1e-12)


def test_grad_kernels_compute_only_what_is_wanted_and_keep_float32():
    softmax = _soft((3, 4), -1).astype("float32")
    ins = {"Softmax": softmax, "Label": np.array([[0], [1], [2]], "int64"),
           "Loss@GRAD": np.ones((3, 1), "float32")}
    attrs = dict(lookup("softmax_with_cross_entropy_grad").attrs)
    kernel = lookup("softmax_with_cross_entropy_grad").kernel
    assert kernel(ins, attrs, context()) == {}
    got = kernel(ins, attrs, context({"Logits@GRAD"}))["Logits@GRAD"]
    assert got.dtype == np.float32
    ce = lookup("cross_entropy_grad").kernel(
        {"X": softmax, "Label": ins["Label"], "Y@GRAD": ins["Loss@GRAD"]},
        {"soft_label": False, "ignore_index": -100}, context({"X@GRAD"}))["X@GRAD"]
    assert ce.dtype == np.float32


def test_soft_label_zero_at_zero_probability_gives_zero_gradient():
    x = np.array([[0.0, 0.4, 0.6]])
    label = np.array([[0.0, 0.5, 0.5]])
    got = lookup("cross_entropy_grad").kernel({"X": x, "Label": label, "Y@GRAD": np.array([[2.0]])},
                                              {"soft_label": True, "ignore_index": -100},
                                              context({"X@GRAD"}))["X@GRAD"]
    np.testing.assert_allclose(got, [[0.0, -2 * 0.5 / 0.4, -2 * 0.5 / 0.6]], rtol=1e-15)


def test_accuracy_has_no_gradient():
    assert lookup("accuracy").grad is NO_GRADIENT
