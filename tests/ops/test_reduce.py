"""Reduction ops: the reference moves the reduced axes last and folds each row with Python."""
import dataclasses
import math

import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError
from headrace.ops.kernel import context
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(2)


def _axes(rank, attrs):
    """The reduced axes, by the op's documented rule (written out here, not via infer_helpers)."""
    dims = attrs.get("dim", [0])
    dims = [dims] if isinstance(dims, int) else dims
    if attrs.get("reduce_all", False) or not dims or rank == 0:
        return list(range(rank))
    return sorted(d + rank if d < 0 else d for d in dims)


def _fold(fn, out_dtype=None):
    """A reference: ``fn(list of Python numbers) -> number`` over the reduced axes of X."""
    def reference(ins, attrs):
        x = ins["X"]
        axes = _axes(x.ndim, attrs)
        kept = [i for i in range(x.ndim) if i not in axes]
        moved = np.transpose(x, kept + axes)
        kept_shape = [x.shape[i] for i in kept]
        rows = moved.reshape(int(np.prod(kept_shape, dtype=np.int64)), -1)
        values = [fn([v.item() for v in row]) for row in rows]
        out = np.array(values, dtype=out_dtype or x.dtype).reshape(kept_shape)
        if attrs.get("keep_dim", False):
            out = out.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
        if attrs.get("rank1_result", False) and out.ndim == 0:   # fluid 1.x: [1] instead of 0-D
            out = out.reshape(1)
        return {"Out": out}
    return reference


def _sum(values):
    return math.fsum(values) if values and isinstance(values[0], float) else sum(values)


REFS = {
    "reduce_sum": _sum,
    "reduce_mean": lambda values: math.fsum(values) / len(values),
    "reduce_max": max,
    "reduce_min": min,
}
ATTRS = [
    {},                                           # dim=[0] by default
    {"dim": [1]},
    {"dim": [-1]},
    {"dim": [0, 2]},
    {"dim": [-1, -3]},
    {"dim": [2, 0], "keep_dim": True},
    {"dim": [1], "keep_dim": True},
    {"dim": []},                                  # empty dim: every axis
    {"dim": [1], "reduce_all": True},             # reduce_all wins over dim
    {"dim": [0], "reduce_all": True, "keep_dim": True},
    {"dim": 1},                                   # a bare int is one axis
]


def _data(shape, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-20, 20, shape).astype(dtype)
    return rng.uniform(-2.0, 2.0, shape).astype(dtype)


def _case(op, attrs, shape=(2, 3, 4), dtype="float64"):
    # float32: the kernel accumulates in float64 and rounds once, as the fsum reference does
    return Case(op, {"X": _data(shape, dtype)}, attrs=attrs, reference=_fold(REFS[op]),
                rtol=1e-6 if dtype == "float32" else 1e-13, id=f"{op}-{shape}-{dtype}-{attrs}")


CASES = [_case(op, attrs) for op in REFS for attrs in ATTRS]
CASES += [_case(op, {"dim": [0, 1]}, (3, 5, 2), "float32") for op in REFS]
CASES += [_case(op, {"dim": [-2]}, (4, 3), dtype) for op in ("reduce_sum", "reduce_max", "reduce_min")
          for dtype in ("int32", "int64")]
CASES += [
    _case("reduce_sum", {"dim": [0]}, (7,)),                     # rank 1 -> 0-D
    _case("reduce_mean", {"dim": [0], "keep_dim": True}, (7,)),
    _case("reduce_max", {"reduce_all": True}, ()),               # 0-D input
    _case("reduce_sum", {"dim": [1, 3]}, (2, 3, 2, 4), "float32"),
    _case("reduce_sum", {"dim": [0]}, (1000, 3), "float32"),     # long float32 sums stay accurate
    _case("reduce_mean", {"dim": [0, 1]}, (3000, 2, 3), "float32"),
]
RANK1_ATTRS = [{"reduce_all": True, "rank1_result": True}, {"dim": [0], "rank1_result": True},
               {"dim": [1], "rank1_result": True}]   # the last keeps a dim: rank1_result changes nothing
CASES += [_case(op, attrs, shape) for op in REFS for attrs, shape in zip(RANK1_ATTRS, [(2, 3), (7,), (2, 3)])]
MEAN_CASES = [
    Case("mean", {"X": _data(shape, dtype)}, id=f"mean-{shape}-{dtype}",
         reference=lambda ins, attrs: {"Out": np.array(math.fsum(ins["X"].astype(float).ravel().tolist())
                                                       / ins["X"].size, dtype=ins["X"].dtype)},
         rtol=1e-6 if dtype == "float32" else 1e-13)
    for shape, dtype in [((3, 4), "float64"), ((2, 3, 4), "float32"), ((5,), "float64"), ((), "float64")]
]
MEAN_CASES += [
    Case("mean", {"X": _data((3, 4), "float64")}, attrs={"rank1_result": True}, id="mean-rank1_result",
         reference=lambda ins, attrs: {"Out": np.array([math.fsum(ins["X"].ravel().tolist()) / ins["X"].size])},
         rtol=1e-13)
]
ALL = CASES + MEAN_CASES


@pytest.mark.parametrize("case", ALL, ids=ids(ALL))
def test_forward(case):
    check_forward(case)


def _keeps_batch(case):
    x = case.inputs["X"]
    if case.op == "mean":
        return False
    return 0 not in _axes(np.ndim(x), case.attrs)


@pytest.mark.parametrize("case", [c for c in ALL if np.ndim(c.inputs["X"]) >= 1], ids=str)
def test_infer_with_unknown_batch(case):
    """When dim 0 is not reduced the output keeps the unknown batch dim (-1)."""
    outputs = ("Out",) if _keeps_batch(case) else ()
    check_infer_batch(dataclasses.replace(case, batch_outputs=outputs))


def test_inferred_shapes():
    """Spot checks of the shape rule itself, independent of any kernel run."""
    from headrace.core.program import Program
    from headrace.core.context import program_guard
    from headrace.ops.apply import apply_op_single

    expected = [({"dim": [1]}, (-1, 4)), ({"dim": [1], "keep_dim": True}, (-1, 1, 4)),
                ({"dim": [0, 1, 2]}, ()), ({"reduce_all": True, "keep_dim": True}, (1, 1, 1)),
                ({"dim": []}, ()), ({"dim": [-1]}, (-1, 3))]
    main = Program()
    with program_guard(main, Program()):
        x = main.global_block().create_var(name="x", shape=[-1, 3, 4], dtype="float32", is_data=True)
        for attrs, shape in expected:
            out = apply_op_single("reduce_sum", {"X": x}, attrs)
            assert tuple(out.shape) == shape, (attrs, out.shape)
            assert out.dtype == "float32"


@pytest.mark.parametrize("op", list(REFS))
@pytest.mark.parametrize("dim", [[3], [-4], [0, -3], [1, 1]])
def test_bad_dim_is_a_build_error(op, dim):
    message = check_build_error(op, {"X": np.ones((2, 3, 4))}, {"dim": dim}, AttrError)
    assert "attribute `dim`" in message and "[2, 3, 4]" in message and str(dim) in message


@pytest.mark.parametrize("op, dtype", [("reduce_mean", "int64"), ("mean", "int32"), ("reduce_sum", "bool"),
                                       ("reduce_max", "bool"), ("mean", "float16")])
def test_unsupported_dtype_is_a_build_error(op, dtype):
    message = check_build_error(op, {"X": np.ones((2, 3), dtype)}, {}, DTypeError)
    assert "input `X`" in message and dtype in message


# --- gradients: central differences in float64 ------------------------------------------------------
from tests.ops.gradcheck import check_grad  # noqa: E402

grng = np.random.default_rng(11)


def _distinct(shape):
    """Values at least 0.05 apart, so max/min have no ties and finite differences cannot flip them."""
    n = int(np.prod(shape, dtype=np.int64))
    return (grng.permutation(n) * 0.1 - 1.0 + grng.uniform(0.0, 0.05, n)).reshape(shape)


GRAD_CASES = [(op, (2, 3, 4), attrs) for op in REFS for attrs in ATTRS]
GRAD_CASES += [(op, shape, attrs) for op in REFS for shape, attrs in [
    ((5,), {"dim": [0]}),                      # rank 1 -> 0-D
    ((5,), {"dim": [0], "keep_dim": True}),
    ((), {"reduce_all": True}),                # 0-D input
    ((2, 3, 2, 2), {"dim": [1, 3]}),
    ((3, 1, 2), {"dim": [1]}),                 # reducing a size-1 axis: the identity
    ((2, 3), {"reduce_all": True, "rank1_result": True}),   # fluid 1.x: Out of shape [1]
    ((5,), {"dim": [0], "rank1_result": True}),
]]


@pytest.mark.parametrize("op,shape,attrs", GRAD_CASES, ids=[f"{o}-{s}-{a}" for o, s, a in GRAD_CASES])
def test_gradient(op, shape, attrs):
    check_grad(op, {"X": _distinct(shape)}, attrs)


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (5,), (1,), ()])
def test_mean_gradient(shape):
    check_grad("mean", {"X": _distinct(shape)})


def test_mean_gradient_with_rank1_result():
    check_grad("mean", {"X": _distinct((3, 4))}, {"rank1_result": True})


@pytest.mark.parametrize("op,x,dim,want", [
    ("reduce_max", [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], [1], [[0.0, 1.0, 1.0], [1.0, 1.0, 0.0]]),
    ("reduce_min", [[1.0, 3.0, 1.0], [0.0, 2.0, 0.0]], [1], [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]]),
    ("reduce_max", [[5.0, 1.0], [5.0, 5.0]], [], [[1.0, 0.0], [1.0, 1.0]]),
])
def test_max_min_ties_send_the_full_gradient_to_every_extreme(op, x, dim, want):
    """The reference's rule for max/min (not amax/amin): each tied element gets all of Out@GRAD."""
    from headrace.autodiff import gradients
    from headrace.ops.apply import apply_op_single
    from tests.helpers import build_and_run

    x = np.array(x)
    dout = np.array([2.0, -3.0]) if dim else np.array(4.0)

    def build(x, w):
        x.stop_gradient = False
        return gradients([apply_op_single(op, {"X": x}, {"dim": dim})], [x], target_gradients=[w])

    (dx,), _ = build_and_run(build, {"x": x, "w": dout})
    scale = dout[:, None] if dim else dout
    np.testing.assert_array_equal(dx, np.array(want) * scale)


def test_grad_kernels_compute_only_what_is_wanted_and_keep_dtype():
    from headrace.ops.registry import Meta, lookup

    attrs = {"dim": [0, 2], "keep_dim": False, "reduce_all": False}
    dout = np.array([1.0, 2.0, 3.0], dtype="float32")
    x_meta = Meta((2, 3, 4), "float32")
    for op in ("reduce_sum_grad", "reduce_mean_grad"):
        kernel = lookup(op).kernel
        assert kernel({"X": x_meta, "Out@GRAD": dout}, attrs, context()) == {}
        dx = kernel({"X": x_meta, "Out@GRAD": dout}, attrs, context({"X@GRAD"}))["X@GRAD"]
        scale = 1.0 if op == "reduce_sum_grad" else 1.0 / 8
        assert dx.dtype == np.float32 and dx.shape == (2, 3, 4)
        np.testing.assert_allclose(dx, np.broadcast_to(dout[None, :, None] * scale, (2, 3, 4)), rtol=1e-7)
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    max_grad = lookup("reduce_max_grad").kernel
    ins = {"X": x, "Out": x.max(axis=(0, 2)), "Out@GRAD": dout}
    assert max_grad(ins, attrs, context()) == {}
    dx = max_grad(ins, attrs, context({"X@GRAD"}))["X@GRAD"]
    assert dx.dtype == np.float32 and dx.sum() == dout.sum() and np.all(dx[1, :, 3] == dout)
    dx = lookup("mean_grad").kernel({"X": Meta((2, 5), "float32"), "Out@GRAD": np.array(3.0, "float32")},
                                    {}, context({"X@GRAD"}))["X@GRAD"]
    assert dx.dtype == np.float32
    np.testing.assert_allclose(dx, np.full((2, 5), 0.3), rtol=1e-7)


def test_grad_kernel_rejects_a_mis_shaped_out_grad():
    from headrace.core.errors import ShapeError
    from headrace.ops.registry import Meta, lookup

    attrs = {"dim": [1], "keep_dim": False, "reduce_all": False}
    with pytest.raises(ShapeError, match="reduce_sum_grad.*Out@GRAD.*\\[2, 4\\]"):
        lookup("reduce_sum_grad").kernel({"X": Meta((2, 3, 4), "float64"), "Out@GRAD": np.ones((2, 3))},
                                         attrs, context({"X@GRAD"}))
