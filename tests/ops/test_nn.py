"""dropout (deterministic modes, mask statistics, seeding) and the embedding lookups."""
import math

import numpy as np
import pytest

from headrace.core.context import program_guard
from headrace.core.errors import AttrError, DTypeError, KernelError, ShapeError
from headrace.core.program import Program
from headrace.ops.apply import apply_op
from headrace.ops.kernel import context
from headrace.ops.registry import Meta, lookup
from headrace.runtime import Executor, Scope
from tests.ops.harness import Case, build_and_run, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(5)


# --- dropout: deterministic cases --------------------------------------------------------------
def dropout_reference(ins, attrs):
    """Only the modes whose result does not depend on random draws (test mode, p = 0, p = 1)."""
    x = ins["X"]
    p = attrs.get("dropout_prob", 0.5)
    upscale = attrs.get("dropout_implementation", "downgrade_in_infer") == "upscale_in_train"
    if attrs.get("is_test", False):
        return {"Out": x if upscale else (x * x.dtype.type(1 - p)).astype(x.dtype),
                "Mask": np.ones(x.shape, np.uint8)}
    keep = np.full(x.shape, 1 if p == 0 else 0, np.uint8)
    return {"Out": x * keep if not upscale or p == 1 else x * keep / x.dtype.type(1 - p), "Mask": keep}


def _dropout_case(id, shape, dtype="float64", **attrs):
    x = rng.standard_normal(shape).astype(dtype)
    return Case("dropout", {"X": x}, dropout_reference, attrs=attrs, id=f"dropout-{id}-{dtype}",
                batch_slots=("X",), batch_outputs=("Out", "Mask"), seed=3)


DROPOUT_CASES = [
    _dropout_case("test-downgrade", (4, 5), is_test=True, dropout_prob=0.3),
    _dropout_case("test-downgrade", (4, 5), dtype="float32", is_test=True, dropout_prob=0.3),
    _dropout_case("test-upscale", (3, 2, 4), is_test=True, dropout_prob=0.7, dropout_implementation="upscale_in_train"),
    _dropout_case("p0-downgrade", (4, 5), dropout_prob=0.0),
    _dropout_case("p0-upscale", (4, 5), dtype="float32", dropout_prob=0.0, dropout_implementation="upscale_in_train"),
    _dropout_case("p1-downgrade", (4, 5), dropout_prob=1.0),
    _dropout_case("p1-upscale", (4, 5), dropout_prob=1.0, dropout_implementation="upscale_in_train"),
]


# --- lookup tables -----------------------------------------------------------------------------
def lookup_reference(ins, attrs, v1=False):
    w, ids = ins["W"], ins["Ids"]
    if v1:
        ids = ids[..., 0]
    pad = attrs.get("padding_idx", -1)
    if pad < -1:
        pad += w.shape[0]
    out = np.zeros(ids.shape + (w.shape[1],), w.dtype)
    for index in np.ndindex(*ids.shape):
        if ids[index] != pad:
            out[index] = w[ids[index]]
    return {"Out": out}


def _lookup_case(id, rows, dim, ids_shape, ids_dtype="int64", dtype="float64", v1=False, **attrs):
    w = rng.standard_normal((rows, dim)).astype(dtype)
    ids = rng.integers(0, rows, ids_shape).astype(ids_dtype)
    op = "lookup_table" if v1 else "lookup_table_v2"
    return Case(op, {"W": w, "Ids": ids}, lambda ins, a: lookup_reference(ins, a, v1), attrs=attrs,
                id=f"{op}-{id}-{ids_dtype}-{dtype}", batch_slots=("Ids",), batch_outputs=("Out",))


LOOKUP_CASES = [
    _lookup_case("1d", 10, 4, (7,)),
    _lookup_case("2d", 10, 3, (4, 6), ids_dtype="int32", dtype="float32"),
    _lookup_case("3d", 6, 2, (2, 3, 4)),
    _lookup_case("padding", 5, 3, (6, 5), padding_idx=2),
    _lookup_case("padding-zero", 4, 3, (8,), ids_dtype="int32", padding_idx=0),
    _lookup_case("padding-negative", 5, 3, (4, 6), padding_idx=-2),
    _lookup_case("padding-none", 3, 2, (9,), padding_idx=-1),
    _lookup_case("v1-2d", 10, 4, (7, 1), v1=True),
    _lookup_case("v1-3d", 8, 3, (2, 5, 1), v1=True, dtype="float32", padding_idx=1),
    _lookup_case("v1-padding-negative", 6, 2, (12, 1), v1=True, padding_idx=-6),
]
CASES = DROPOUT_CASES + LOOKUP_CASES


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_infer_with_unknown_batch(case):
    check_infer_batch(case)


# --- dropout: random training mode -------------------------------------------------------------
def _dropout_program(shape, attrs, seed_input=None, random_seed=0, dtype="float32"):
    main = Program()
    main.random_seed = random_seed
    with program_guard(main, Program()):
        block = main.global_block()
        ins = {"X": block.create_var(name="x", shape=list(shape), dtype=dtype, is_data=True)}
        if seed_input is not None:
            ins["Seed"] = block.create_var(name="seed", shape=[1], dtype="int32", is_data=True)
        outs = apply_op("dropout", ins, attrs)
    return main, [outs["Out"][0], outs["Mask"][0]]


def _run(program, fetch, x, seed_input=None, exe=None):
    feed = {"x": x}
    if seed_input is not None:
        feed["seed"] = np.array([seed_input], np.int32)
    return (exe or Executor()).run(program, feed=feed, fetch_list=fetch, scope=Scope())


@pytest.mark.parametrize("implementation", ["downgrade_in_infer", "upscale_in_train"])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_mask_statistics_and_output(p, implementation):
    shape = (200, 250)
    n = shape[0] * shape[1]
    x = rng.uniform(0.5, 1.5, shape).astype("float32")
    program, fetch = _dropout_program(shape, {"dropout_prob": p, "dropout_implementation": implementation},
                                      random_seed=17)
    out, mask = _run(program, fetch, x)
    assert mask.dtype == np.uint8 and set(np.unique(mask)) <= {0, 1}
    kept = mask.mean()
    assert abs(kept - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n), kept  # five binomial standard deviations
    scale = np.float32(1 - p) if implementation == "upscale_in_train" else np.float32(1)
    np.testing.assert_allclose(out, np.where(mask == 1, x / scale, 0), rtol=1e-6)


def _masks(program, fetch, x, runs, exe, seed_input=None):
    return [_run(program, fetch, x, seed_input, exe)[1] for _ in range(runs)]


def test_dropout_fixed_seed_attr_repeats_its_mask():
    x = np.ones((40, 50), "float32")
    exe = Executor()
    program, fetch = _dropout_program(x.shape, {"fix_seed": True, "seed": 123})
    a, b = _masks(program, fetch, x, 2, exe)
    np.testing.assert_array_equal(a, b)
    other, fetch2 = _dropout_program(x.shape, {"fix_seed": True, "seed": 124})
    assert not np.array_equal(a, _masks(other, fetch2, x, 1, exe)[0])


def test_dropout_seed_input_repeats_its_mask_and_wins_over_the_program_generator():
    x = np.ones((40, 50), "float32")
    exe = Executor()
    program, fetch = _dropout_program(x.shape, {}, seed_input=True, random_seed=99)
    a, b = _masks(program, fetch, x, 2, exe, seed_input=7)
    np.testing.assert_array_equal(a, b)
    c = _masks(program, fetch, x, 1, exe, seed_input=8)[0]
    assert not np.array_equal(a, c)


def test_dropout_without_seed_draws_fresh_masks():
    x = np.ones((40, 50), "float32")
    exe = Executor()
    program, fetch = _dropout_program(x.shape, {})
    a, b = _masks(program, fetch, x, 2, exe)
    assert not np.array_equal(a, b)
    program, fetch = _dropout_program(x.shape, {}, random_seed=5)
    a, b = _masks(program, fetch, x, 2, exe)
    assert not np.array_equal(a, b)


def test_dropout_program_random_seed_reproduces_across_fresh_programs():
    x = np.ones((40, 50), "float32")
    runs = []
    for _ in range(2):
        program, fetch = _dropout_program(x.shape, {}, random_seed=2024)
        runs.append(_masks(program, fetch, x, 3, Executor()))
    for first, second in zip(*runs):
        np.testing.assert_array_equal(first, second)
    program, fetch = _dropout_program(x.shape, {}, random_seed=2025)
    assert not np.array_equal(runs[0][0], _masks(program, fetch, x, 1, Executor())[0])


def test_dropout_is_a_random_op():
    assert lookup("dropout").random


# --- lookup: run-time id errors ----------------------------------------------------------------
@pytest.mark.parametrize("op, bad", [("lookup_table_v2", 10), ("lookup_table_v2", -1), ("lookup_table", 12)])
def test_lookup_out_of_range_id_raises_index_error(op, bad):
    ids = np.array([1, 2, bad, 3], "int64")
    if op == "lookup_table":
        ids = ids[:, None]
    case = Case(op, {"W": np.ones((10, 3)), "Ids": ids}, lambda ins, attrs: {})
    with pytest.raises(KernelError) as info:
        build_and_run(case)
    assert isinstance(info.value.__cause__, IndexError)
    assert f"id {bad}" in str(info.value) and "[0, 10)" in str(info.value)


# --- build errors ------------------------------------------------------------------------------
def _f(*shape, dtype="float32"):
    return np.zeros(shape, dtype)


NN_ERRORS = [
    ("dropout", {"X": _f(3, 4)}, {"dropout_prob": 1.5}, AttrError, "dropout_prob"),
    ("dropout", {"X": _f(3, 4)}, {"dropout_prob": -0.1}, AttrError, "dropout_prob"),
    ("dropout", {"X": _f(3, 4)}, {"dropout_implementation": "upscale"}, AttrError, "dropout_implementation"),
    ("dropout", {"X": _f(3, 4, dtype="int64")}, {}, DTypeError, "floating"),
    ("dropout", {"X": _f(3, 4), "Seed": _f(1)}, {}, DTypeError, "input `Seed`"),
    ("dropout", {"X": _f(3, 4), "Seed": _f(2, dtype="int32")}, {}, ShapeError, "shape [1]"),
    ("lookup_table_v2", {"W": _f(10), "Ids": _f(3, dtype="int64")}, {}, ShapeError, "rank 2"),
    ("lookup_table_v2", {"W": _f(10, 4), "Ids": _f(3)}, {}, DTypeError, "input `Ids`"),
    ("lookup_table_v2", {"W": _f(10, 4), "Ids": _f(3, dtype="int64")}, {"padding_idx": 10}, AttrError, "padding_idx"),
    ("lookup_table_v2", {"W": _f(10, 4), "Ids": _f(3, dtype="int64")}, {"padding_idx": -11}, AttrError,
     "padding_idx"),
    ("lookup_table", {"W": _f(10, 4), "Ids": _f(3, 2, dtype="int64")}, {}, ShapeError, "[..., 1]"),
]


@pytest.mark.parametrize("op, inputs, attrs, error, match", NN_ERRORS,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(NN_ERRORS)])
def test_build_errors(op, inputs, attrs, error, match):
    check_build_error(op, inputs, attrs, error, match=match)


def test_dropout_of_a_0d_tensor():
    x = np.array(2.0)
    for impl in ("downgrade_in_infer", "upscale_in_train"):
        case = Case("dropout", {"X": x}, attrs={"dropout_prob": 0.5, "dropout_implementation": impl, "seed": 3,
                                                "fix_seed": True},
                    reference=lambda ins, attrs: {})
        _, got = build_and_run(case)
        mask = got["Mask"][0]
        assert mask.shape == () and mask.dtype == np.uint8
        scale = 2.0 if impl == "upscale_in_train" else 1.0
        assert got["Out"][0] == 2.0 * scale * mask


# --- gradients: central differences in float64 ------------------------------------------------------
from headrace.autodiff import gradients  # noqa: E402
from tests.ops.gradcheck import check_grad  # noqa: E402

grng = np.random.default_rng(21)

# a fixed seed attr makes every finite-difference run draw the same mask
DROPOUT_GRAD_CASES = [
    ("downgrade", (4, 5), {"dropout_prob": 0.4}),
    ("upscale", (3, 2, 4), {"dropout_prob": 0.3, "dropout_implementation": "upscale_in_train"}),
    ("p0-upscale", (3, 4), {"dropout_prob": 0.0, "dropout_implementation": "upscale_in_train"}),
    ("p1-upscale", (3, 4), {"dropout_prob": 1.0, "dropout_implementation": "upscale_in_train"}),
    ("p1-downgrade", (3, 4), {"dropout_prob": 1.0}),
    ("test-downgrade", (4, 5), {"dropout_prob": 0.3, "is_test": True}),
    ("test-upscale", (4, 5), {"dropout_prob": 0.3, "is_test": True, "dropout_implementation": "upscale_in_train"}),
    ("0d", (), {"dropout_prob": 0.5, "dropout_implementation": "upscale_in_train"}),
]


@pytest.mark.parametrize("name,shape,attrs", DROPOUT_GRAD_CASES, ids=[c[0] for c in DROPOUT_GRAD_CASES])
def test_dropout_gradient(name, shape, attrs):
    check_grad("dropout", {"X": grng.uniform(-1, 1, shape)}, dict(attrs, fix_seed=True, seed=41),
               out_slots=("Out",), batch_unknown=bool(shape))


def test_dropout_gradient_with_seed_input():
    check_grad("dropout", {"X": grng.uniform(-1, 1, (4, 5)), "Seed": np.array([9], "int32")},
               {"dropout_prob": 0.5, "dropout_implementation": "upscale_in_train"}, wrt=("X",), out_slots=("Out",))


def _dropout_grad(attrs, mask, dout):
    full = dict(lookup("dropout_grad").attrs, **attrs)
    return lookup("dropout_grad").kernel({"Mask": mask, "Out@GRAD": dout}, full, context({"X@GRAD"}))["X@GRAD"]


def test_dropout_grad_exact_values():
    mask = np.array([[1, 0, 1], [0, 0, 1]], np.uint8)
    dout = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "float32")
    got = _dropout_grad({"dropout_prob": 0.75, "dropout_implementation": "upscale_in_train"}, mask, dout)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [[4.0, 0.0, 12.0], [0.0, 0.0, 24.0]])
    got = _dropout_grad({"dropout_prob": 0.75}, mask, dout)
    np.testing.assert_array_equal(got, dout * mask)
    # is_test: the forward was a constant scale; the mask is not consulted
    ones = np.ones_like(mask)
    got = _dropout_grad({"dropout_prob": 0.75, "is_test": True}, ones, dout)
    np.testing.assert_array_equal(got, dout * np.float32(0.25))
    got = _dropout_grad({"dropout_prob": 0.75, "is_test": True, "dropout_implementation": "upscale_in_train"},
                        ones, dout)
    np.testing.assert_array_equal(got, dout)


def test_dropout_grad_reads_mask_not_x():
    main = Program()
    with program_guard(main, Program()):
        x = main.global_block().create_var(name="x", shape=[3, 4], dtype="float32", is_data=True,
                                           stop_gradient=False)
        out = apply_op("dropout", {"X": x}, {"dropout_prob": 0.5})["Out"][0]
        gradients([out], [x])
    grad_op = [op for op in main.global_block().ops if op.type == "dropout_grad"][0]
    assert sorted(grad_op.inputs) == ["Mask", "Out@GRAD"]
    assert not lookup("dropout_grad").random


def _lookup_grad_ids(rows, shape, v1):
    ids = grng.integers(0, rows, shape).astype("int64")
    ids.reshape(-1)[:2] = 1   # a repeated id: its gradient rows add up
    return ids[..., None] if v1 else ids


# (name, op, W shape, Ids shape without the v1 trailing 1, attrs)
LOOKUP_GRAD_CASES = [
    ("1d", "lookup_table_v2", (6, 3), (7,), {}),
    ("2d", "lookup_table_v2", (5, 4), (3, 4), {}),
    ("3d-padding", "lookup_table_v2", (6, 2), (2, 3, 4), {"padding_idx": 2}),
    ("padding-negative", "lookup_table_v2", (5, 3), (4, 5), {"padding_idx": -2}),
    ("padding-zero", "lookup_table_v2", (4, 3), (8,), {"padding_idx": 0}),
    ("v1", "lookup_table", (6, 3), (7,), {}),
    ("v1-3d-padding", "lookup_table", (5, 2), (2, 4), {"padding_idx": 1}),
]


def _check_lookup_grad(op, w, ids, attrs, eps=1e-6):
    """check_grad for the lookups, by hand: gradcheck names its seed tensors ``w_<k>``, which
    collides with its name for the input of slot ``W`` (``w_0``)."""
    weights = grng.uniform(-1, 1, ids.shape[:-1] if op == "lookup_table" else ids.shape)[..., None]
    weights = np.broadcast_to(weights, weights.shape[:-1] + (w.shape[1],)) * grng.uniform(0.5, 1.5, w.shape[1])

    def build(ids_batch, backward=True):
        main = Program()
        with program_guard(main, Program()):
            block = main.global_block()
            table = block.create_var(name="table", shape=list(w.shape), dtype="float64", is_data=True,
                                     stop_gradient=False)
            ids_shape = [-1 if ids_batch == "unknown" else ids.shape[0]] + list(ids.shape[1:])
            ids_var = block.create_var(name="ids", shape=ids_shape, dtype=ids.dtype.name, is_data=True)
            out = apply_op(op, {"W": table, "Ids": ids_var}, attrs)["Out"][0]
            if not backward:
                return main, out, None
            seed = block.create_var(name="seed", shape=list(weights.shape), dtype="float64", is_data=True)
            grad, = gradients([out], [table], target_gradients=[seed])
        return main, out, grad

    exe = Executor()
    forward, out, _ = build("known", backward=False)

    def loss(table):
        got, = exe.run(forward, feed={"table": table, "ids": ids}, fetch_list=[out], scope=Scope())
        return float(np.sum(got * weights))

    numeric = np.zeros(w.shape)
    for j in range(w.size):
        plus, minus = w.copy(), w.copy()
        plus.reshape(-1)[j] += eps
        minus.reshape(-1)[j] -= eps
        numeric.reshape(-1)[j] = (loss(plus) - loss(minus)) / (2 * eps)
    for ids_batch in ("known", "unknown"):
        program, _, grad = build(ids_batch)
        got, = exe.run(program, feed={"table": w, "ids": ids, "seed": weights}, fetch_list=[grad], scope=Scope())
        np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8, err_msg=f"{op} ({ids_batch} batch)")
    return numeric


@pytest.mark.parametrize("name,op,w_shape,ids_shape,attrs", LOOKUP_GRAD_CASES, ids=[c[0] for c in LOOKUP_GRAD_CASES])
def test_lookup_gradient(name, op, w_shape, ids_shape, attrs):
    ids = _lookup_grad_ids(w_shape[0], ids_shape, op == "lookup_table")
    numeric = _check_lookup_grad(op, grng.uniform(-1, 1, w_shape), ids, attrs)
    pad = attrs.get("padding_idx", -1)
    if pad != -1:
        assert np.all(numeric[pad] == 0)


@pytest.mark.parametrize("op", ["lookup_table_v2", "lookup_table"])
def test_lookup_grad_is_a_dense_scatter_add_with_padding_rows_zero(op):
    ids = np.array([[3, 1, 3], [0, 3, 1]], "int32")
    dout = grng.uniform(-1, 1, (2, 3, 2)).astype("float32")
    kernel = lookup(f"{op}_grad").kernel
    ins = {"W": Meta((5, 2), np.float32), "Ids": ids[..., None] if op == "lookup_table" else ids, "Out@GRAD": dout}
    got = kernel(ins, {"padding_idx": 1}, context({"W@GRAD"}))["W@GRAD"]
    want = np.zeros((5, 2), "float32")
    for index in np.ndindex(*ids.shape):
        want[ids[index]] += dout[index]
    want[1] = 0
    assert got.dtype == np.float32 and got.shape == (5, 2)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.all(got[[2, 4]] == 0) and np.all(got[1] == 0)
    assert kernel(ins, {"padding_idx": 1}, context()) == {}
    empty = {"W": Meta((5, 2), np.float32), "Ids": np.zeros((0,) + ins["Ids"].shape[1:], "int32"),
             "Out@GRAD": np.zeros((0, 3, 2), "float32")}
    np.testing.assert_array_equal(kernel(empty, {"padding_idx": -1}, context({"W@GRAD"}))["W@GRAD"], 0)


def test_lookup_grad_declares_w_shape_only():
    for op in ("lookup_table_v2_grad", "lookup_table_grad"):
        assert lookup(op).no_need_buffer == frozenset({"W"})
