"""Matrix-product ops: references written as explicit loops over output and inner indices."""
import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError, ShapeError
from headrace.ops.kernel import context
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch, ids, infer_shapes

rng = np.random.default_rng(1)


def _data(shape, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.uniform(0.5, 2.0, shape).astype(dtype)


def _row_major_index(flat, shape):
    """The multi-index of element ``flat`` of a row-major array of ``shape``, by divmod."""
    index = []
    for dim in reversed(shape):
        flat, i = divmod(flat, dim)
        index.append(i)
    return tuple(reversed(index))


def _row_major_offset(index, shape):
    offset = 0
    for i, dim in zip(index, shape):
        offset = offset * dim + i
    return offset


def _mm(a, b):
    """2-D matrix product by loops, accumulated in Python numbers."""
    out = np.zeros((a.shape[0], b.shape[1]), dtype=a.dtype)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            out[i, j] = sum(a[i, k].item() * b[k, j].item() for k in range(a.shape[1]))
    return out


# --- mul -----------------------------------------------------------------------------------------
def ref_mul(ins, attrs):
    x, y = ins["X"], ins["Y"]
    xn, yn = attrs.get("x_num_col_dims", 1), attrs.get("y_num_col_dims", 1)
    out = np.zeros(x.shape[:xn] + y.shape[yn:], dtype=x.dtype)
    for i in np.ndindex(*x.shape[:xn]):
        for j in np.ndindex(*y.shape[yn:]):
            total = 0
            for kx in np.ndindex(*x.shape[xn:]):
                ky = _row_major_index(_row_major_offset(kx, x.shape[xn:]), y.shape[:yn])
                total += x[i + kx].item() * y[ky + j].item()
            out[i + j] = total
    return {"Out": out}


def _mul_case(xs, ys, xn=1, yn=1, dtype="float64", batch_outputs=("Out",)):
    attrs = {"x_num_col_dims": xn, "y_num_col_dims": yn}
    return Case("mul", {"X": _data(xs, dtype), "Y": _data(ys, dtype)}, ref_mul, attrs=attrs,
                id=f"mul-{xs}-{ys}-{xn}-{yn}-{dtype}", batch_slots=("X",), batch_outputs=batch_outputs,
                rtol=1e-5 if dtype == "float32" else 1e-7)


MUL_CASES = [
    _mul_case((3, 4), (4, 5)),
    _mul_case((3, 4), (4, 5), dtype="float32"),
    _mul_case((3, 4), (4, 5), dtype="int64"),
    _mul_case((2, 3, 4), (12, 5)),
    _mul_case((2, 3, 4), (4, 5), xn=2),
    _mul_case((2, 3, 4), (3, 4, 2, 2), xn=1, yn=2),
    _mul_case((2, 6), (2, 3, 5), xn=1, yn=2, dtype="float32"),
]


@pytest.mark.parametrize("case", MUL_CASES, ids=ids(MUL_CASES))
def test_mul_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", MUL_CASES, ids=ids(MUL_CASES))
def test_mul_infer_with_unknown_batch(case):
    check_infer_batch(case)


def test_mul_inner_mismatch_is_a_build_error():
    message = check_build_error("mul", {"X": np.ones((2, 3, 4)), "Y": np.ones((10, 5))}, {}, ShapeError)
    assert "[2, 3, 4]" in message and "[10, 5]" in message and "input `Y`" in message


@pytest.mark.parametrize("attrs,name", [({"x_num_col_dims": 2}, "x_num_col_dims"),
                                        ({"x_num_col_dims": 0}, "x_num_col_dims"),
                                        ({"y_num_col_dims": 2}, "y_num_col_dims")])
def test_mul_num_col_dims_out_of_range(attrs, name):
    message = check_build_error("mul", {"X": np.ones((3, 4)), "Y": np.ones((4, 5))}, attrs, AttrError)
    assert f"`{name}`" in message


def test_mul_dtype_mismatch():
    message = check_build_error("mul", {"X": np.ones((3, 4), "float32"), "Y": np.ones((4, 5), "float64")},
                                {}, DTypeError)
    assert "float32" in message and "float64" in message


# --- matmul_v2 / matmul ----------------------------------------------------------------------------
def ref_matmul(x, y, trans_x, trans_y):
    """NumPy matmul semantics spelled out: 1-D promotion, batch broadcasting by index, 2-D loops."""
    x_vec, y_vec = x.ndim == 1, y.ndim == 1
    x = x.reshape(1, -1) if x_vec else x
    y = y.reshape(-1, 1) if y_vec else y
    rank = max(x.ndim, y.ndim)
    xb = (1,) * (rank - x.ndim) + x.shape[:-2]
    yb = (1,) * (rank - y.ndim) + y.shape[:-2]
    x = x.reshape(xb + x.shape[-2:])
    y = y.reshape(yb + y.shape[-2:])
    batch = tuple(max(a, b) for a, b in zip(xb, yb))
    rows = x.shape[-1] if trans_x and not x_vec else x.shape[-2]
    cols = y.shape[-2] if trans_y and not y_vec else y.shape[-1]
    out = np.zeros(batch + (rows, cols), dtype=x.dtype)
    for b in np.ndindex(*batch):
        xm = x[tuple(i if d > 1 else 0 for i, d in zip(b, xb))]
        ym = y[tuple(i if d > 1 else 0 for i, d in zip(b, yb))]
        out[b] = _mm(xm.T if trans_x and not x_vec else xm, ym.T if trans_y and not y_vec else ym)
    if y_vec:
        out = out[..., 0]
    if x_vec:
        out = out[..., 0, :] if not y_vec else out[..., 0]
    return out


def ref_matmul_v2(ins, attrs):
    return {"Out": ref_matmul(ins["X"], ins["Y"], attrs.get("trans_x", False), attrs.get("trans_y", False))}


def ref_matmul_v1(ins, attrs):
    out = ref_matmul(ins["X"], ins["Y"], attrs.get("transpose_X", False), attrs.get("transpose_Y", False))
    return {"Out": (out * attrs.get("alpha", 1.0)).astype(out.dtype)}


# (x shape, y shape, trans_x, trans_y, inputs with unknown dim 0, out dim 0 stays unknown)
MATMUL_SHAPES = [
    ((3, 4), (4, 5), False, False, "X", True),
    ((4, 3), (4, 5), True, False, "Y", False),
    ((3, 4), (5, 4), False, True, "X", True),
    ((4, 3), (5, 4), True, True, "Y", False),
    ((2, 3, 4), (4, 5), False, False, "X", True),
    ((2, 3, 4), (2, 4, 5), False, False, "XY", True),
    ((2, 1, 3, 4), (3, 4, 2), False, False, "X", True),
    ((3, 4, 2), (2, 1, 2, 5), False, False, "Y", True),
    ((2, 4, 3), (2, 5, 4), True, True, "XY", True),
    ((2, 4, 3), (2, 5, 4), True, True, "Y", False),  # -1 meets 2: the batch dim is 2
    ((4,), (4, 5), False, False, "Y", False),
    ((2, 3, 4), (4,), False, False, "X", True),
    ((4,), (2, 4, 5), True, False, "Y", True),
    ((4,), (4,), False, False, "", False),
]


def _matmul_cases(op, dtype, alpha=None):
    cases = []
    for xs, ys, tx, ty, slot, keeps_batch in MATMUL_SHAPES:
        if op == "matmul_v2":
            attrs, ref = {"trans_x": tx, "trans_y": ty}, ref_matmul_v2
        else:
            attrs, ref = {"transpose_X": tx, "transpose_Y": ty, "alpha": alpha}, ref_matmul_v1
        cases.append(Case(op, {"X": _data(xs, dtype), "Y": _data(ys, dtype)}, ref, attrs=attrs,
                          id=f"{op}-{xs}-{ys}-{tx}-{ty}-{dtype}", batch_slots=tuple(slot),
                          batch_outputs=("Out",) if keeps_batch else (),
                          rtol=1e-5 if dtype == "float32" else 1e-7))
    return cases


MATMUL_CASES = (_matmul_cases("matmul_v2", "float64") + _matmul_cases("matmul_v2", "float32")
                + _matmul_cases("matmul_v2", "int64") + _matmul_cases("matmul", "float64", alpha=2.5)
                + _matmul_cases("matmul", "float32", alpha=-0.5) + _matmul_cases("matmul", "int64", alpha=1.0))


@pytest.mark.parametrize("case", MATMUL_CASES, ids=ids(MATMUL_CASES))
def test_matmul_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", [c for c in MATMUL_CASES if c.batch_slots], ids=str)
def test_matmul_infer_with_unknown_batch(case):
    check_infer_batch(case)


@pytest.mark.parametrize("op,attrs", [("matmul_v2", {}), ("matmul_v2", {"trans_y": True}),
                                      ("matmul", {"alpha": 3.0})])
def test_matmul_inner_mismatch_is_a_build_error(op, attrs):
    message = check_build_error(op, {"X": np.ones((3, 4)), "Y": np.ones((5, 6))}, attrs, ShapeError)
    assert "[3, 4]" in message and "[5, 6]" in message


def test_matmul_batch_mismatch_is_a_build_error():
    message = check_build_error("matmul_v2", {"X": np.ones((2, 3, 4)), "Y": np.ones((3, 4, 5))}, {}, ShapeError)
    assert "[2, 3, 4]" in message and "[3, 4, 5]" in message


def test_matmul_rank0_and_dtype_errors():
    message = check_build_error("matmul_v2", {"X": np.ones(()), "Y": np.ones((3,))}, {}, ShapeError)
    assert "input `X`" in message and "rank 0" in message
    message = check_build_error("matmul", {"X": np.ones((3, 4), "float64"), "Y": np.ones((4, 2), "int64")},
                                {}, DTypeError)
    assert "float64" in message and "int64" in message


# --- inference with unknown dims, checked without running ------------------------------------------
_infer = infer_shapes


@pytest.mark.parametrize("op,shapes,attrs,want", [
    ("mul", {"X": (-1, 3, 4), "Y": (12, 5)}, {}, (-1, 5)),
    ("mul", {"X": (-1, 3, 4), "Y": (4, 5)}, {"x_num_col_dims": 2}, (-1, 3, 5)),
    ("mul", {"X": (2, -1), "Y": (7, 5)}, {}, (2, 5)),            # unknown inner dim: no false error
    ("matmul_v2", {"X": (-1, 3, 4), "Y": (4, 5)}, {}, (-1, 3, 5)),
    ("matmul_v2", {"X": (3, -1), "Y": (-1, 5)}, {}, (3, 5)),
    ("matmul_v2", {"X": (-1, 1, 3, 4), "Y": (6, 4, 2)}, {}, (-1, 6, 3, 2)),
    ("matmul_v2", {"X": (1, 3, 4), "Y": (-1, 4, 2)}, {}, (-1, 3, 2)),
    ("matmul", {"X": (-1, 4), "Y": (-1, 4)}, {"transpose_Y": True}, (-1, -1)),
])
def test_infer_propagates_unknown_dims(op, shapes, attrs, want):
    assert _infer(op, shapes, attrs)["Out"] == [want]


@pytest.mark.parametrize("op,shapes,attrs,mentions", [
    ("mul", {"X": (-1, 12), "Y": (10, 5)}, {}, ["[-1, 12]", "[10, 5]"]),
    ("mul", {"X": (-1, 3, 4), "Y": (5, 5)}, {"x_num_col_dims": 2}, ["[-1, 3, 4]", "[5, 5]"]),
    ("matmul_v2", {"X": (-1, 3, 4), "Y": (5, 6)}, {}, ["[-1, 3, 4]", "[5, 6]"]),
    ("matmul_v2", {"X": (-1, 2, 3, 4), "Y": (3, 4, 5)}, {}, ["[-1, 2, 3, 4]", "[3, 4, 5]"]),
])
def test_certain_mismatch_with_unknown_batch_is_a_build_error(op, shapes, attrs, mentions):
    with pytest.raises(ShapeError) as info:
        _infer(op, shapes, attrs)
    assert all(m in str(info.value) for m in mentions), str(info.value)


# --- gradients: central differences in float64 ------------------------------------------------------
from headrace.ops.registry import Meta, lookup  # noqa: E402
from tests.ops.gradcheck import check_grad  # noqa: E402

grng = np.random.default_rng(11)

# (x shape, y shape, x_num_col_dims, y_num_col_dims)
MUL_GRAD_SHAPES = [((3, 4), (4, 5), 1, 1), ((2, 3, 4), (12, 2), 1, 1), ((2, 3, 4), (4, 3), 2, 1),
                   ((2, 3, 4), (3, 4, 2), 1, 2), ((2, 6), (2, 3, 2, 2), 1, 2)]


@pytest.mark.parametrize("xs,ys,xn,yn", MUL_GRAD_SHAPES, ids=[str(s) for s in MUL_GRAD_SHAPES])
def test_mul_gradient(xs, ys, xn, yn):
    check_grad("mul", {"X": grng.uniform(-1, 1, xs), "Y": grng.uniform(-1, 1, ys)},
               {"x_num_col_dims": xn, "y_num_col_dims": yn})


# MATMUL_SHAPES covers 1-D operands, trans flags, batch broadcasting ((2, 1, 3, 4) x (3, 4, 2)) and
# a batched operand against a 2-D one (the folded single-product path), in both directions
GRAD_MATMUL = [(xs, ys, tx, ty) for xs, ys, tx, ty, _, _ in MATMUL_SHAPES] + [
    ((2, 4, 3), (4, 5), True, False),     # trans_x with a 2-D Y: the general batched path
    ((3, 4), (2, 5, 4), False, True),     # 2-D X against batched Y: dX sums over the batch
    ((4, 3), (2, 1, 4, 2), True, False),
    ((1, 3, 4), (2, 4, 2), False, False),  # a batch dim of 1 broadcast
]


@pytest.mark.parametrize("op", ["matmul_v2", "matmul"])
@pytest.mark.parametrize("xs,ys,tx,ty", GRAD_MATMUL, ids=[f"{a}-{b}-{c}-{d}" for a, b, c, d in GRAD_MATMUL])
def test_matmul_gradient(op, xs, ys, tx, ty):
    if op == "matmul_v2":
        attrs = {"trans_x": tx, "trans_y": ty}
    else:
        attrs = {"transpose_X": tx, "transpose_Y": ty, "alpha": -1.5}
    check_grad(op, {"X": grng.uniform(-1, 1, xs), "Y": grng.uniform(-1, 1, ys)}, attrs)


@pytest.mark.parametrize("op,wrt", [("mul", ("X",)), ("mul", ("Y",)), ("matmul_v2", ("Y",)), ("matmul", ("X",))])
def test_gradient_of_one_operand(op, wrt):
    """The other operand is data: autodiff asks only for the wanted gradient."""
    check_grad(op, {"X": grng.uniform(-1, 1, (2, 3, 4)), "Y": grng.uniform(-1, 1, (4, 2))},
               {"x_num_col_dims": 2} if op == "mul" else {}, wrt=wrt)


def test_grad_kernels_compute_only_what_is_wanted():
    """dX needs Y and dOut only: with X handed as shape-only the kernel still works, gives no dY."""
    x, y = grng.uniform(-1, 1, (2, 3, 4)), grng.uniform(-1, 1, (4, 5))
    dout = grng.uniform(-1, 1, (2, 3, 5))
    wanted = frozenset({"X@GRAD"})
    for op, attrs in (("mul_grad", {"x_num_col_dims": 2, "y_num_col_dims": 1}),
                      ("matmul_v2_grad", {"trans_x": False, "trans_y": False}),
                      ("matmul_grad", {"transpose_X": False, "transpose_Y": False, "alpha": 2.0})):
        got = lookup(op).kernel({"X": Meta(x.shape, x.dtype), "Y": y, "Out@GRAD": dout}, attrs, context(wanted))
        assert set(got) == {"X@GRAD"}, op
        scale = attrs.get("alpha", 1.0)
        want = np.einsum("bmn,kn->bmk", dout, y) * scale
        np.testing.assert_allclose(got["X@GRAD"], want, rtol=1e-12, err_msg=op)
    got = lookup("matmul_v2_grad").kernel({"X": x, "Y": Meta(y.shape, y.dtype), "Out@GRAD": dout},
                                         {"trans_x": False, "trans_y": False}, context({"Y@GRAD"}))
    assert set(got) == {"Y@GRAD"}
    np.testing.assert_allclose(got["Y@GRAD"], np.einsum("bmk,bmn->kn", x, dout), rtol=1e-12)


@pytest.mark.parametrize("op,attrs", [("mul_grad", {"x_num_col_dims": 1, "y_num_col_dims": 1}),
                                      ("matmul_v2_grad", {"trans_x": True, "trans_y": True}),
                                      ("matmul_grad", {"transpose_X": False, "transpose_Y": True, "alpha": 0.5})])
def test_grad_kernels_keep_float32(op, attrs):
    x = grng.uniform(-1, 1, (2, 4, 4)).astype("float32")
    y = grng.uniform(-1, 1, (4, 4)).astype("float32")
    dout = grng.uniform(-1, 1, (2, 4, 4) if op != "mul_grad" else (2, 4)).astype("float32")
    if op == "mul_grad":
        y = grng.uniform(-1, 1, (16, 4)).astype("float32")
    got = lookup(op).kernel({"X": x, "Y": y, "Out@GRAD": dout}, attrs, context({"X@GRAD", "Y@GRAD"}))
    assert got["X@GRAD"].dtype == np.float32 and got["Y@GRAD"].dtype == np.float32
    assert got["X@GRAD"].shape == x.shape and got["Y@GRAD"].shape == y.shape
