"""Search and sort ops (ops/search.py): references written with Python's sorted/max over each line,
gradient checks, both modes, errors.  Ops whose output size depends on the data infer -1 there, so
they are checked with ``check_infer_batch`` (compatible shapes) rather than exact shapes."""
import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError, ShapeError
from tests.ops.eager_check import check_both_modes
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(11)


def _lines(x, axis):
    """(index tuples, values) of every 1-D line of x along axis."""
    moved = np.moveaxis(x, axis, -1)
    for idx in np.ndindex(*moved.shape[:-1]):
        yield idx, [v.item() for v in moved[idx]]


def _per_line(x, axis, fn, out_len, dtype):
    moved_shape = np.moveaxis(x, axis, -1).shape[:-1] + (out_len,)
    out = np.empty(moved_shape, dtype=dtype)
    for idx, line in _lines(x, axis):
        out[idx] = fn(line)
    return np.moveaxis(out, -1, axis)


def _argsort_ref(descending):
    def ref(ins, attrs):
        x, axis = ins["X"], attrs.get("axis", -1)
        key = (lambda line: sorted(range(len(line)), key=lambda i: -line[i])) if descending else \
            (lambda line: sorted(range(len(line)), key=lambda i: line[i]))
        idx = _per_line(x, axis, key, x.shape[axis], np.int64)
        vals = _per_line(x, axis, lambda line: [line[i] for i in key(line)], x.shape[axis], x.dtype)
        return {"Out": vals, "Indices": idx}
    return ref


def _ties(shape):
    return rng.integers(0, 4, shape).astype(np.float64)   # many ties: stability matters


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_argsort_is_stable(descending, axis):
    x = _ties((4, 5, 3))
    case = Case("argsort", {"X": x}, _argsort_ref(descending), attrs={"axis": axis, "descending": descending})
    check_forward(case)
    check_infer_batch(case)
    check_both_modes("argsort", {"X": x}, {"axis": axis, "descending": descending}, out_slots=("Out",))


def test_argsort_gradient():
    check_grad("argsort", {"X": rng.standard_normal((3, 4))}, {"axis": 1}, out_slots=("Out",))
    check_grad("argsort", {"X": rng.standard_normal((3, 4))}, {"axis": 0, "descending": True}, out_slots=("Out",))


@pytest.mark.parametrize("largest", [True, False])
def test_top_k(largest):
    x = rng.standard_normal((3, 6))

    def ref(ins, attrs):
        order = _argsort_ref(largest)(ins, {"axis": 1})
        return {"Out": order["Out"][:, :2], "Indices": order["Indices"][:, :2]}
    case = Case("top_k_v2", {"X": x}, ref, attrs={"k": 2, "axis": 1, "largest": largest})
    check_forward(case)
    check_infer_batch(case)
    check_grad("top_k_v2", {"X": x}, {"k": 2, "axis": 1, "largest": largest}, out_slots=("Out",))
    check_both_modes("top_k_v2", {"X": x}, {"k": 2, "axis": 1, "largest": largest}, out_slots=("Out",))


def test_top_k_bad_k():
    check_build_error("top_k_v2", {"X": np.zeros((2, 3))}, {"k": 4}, AttrError, match="k")


@pytest.mark.parametrize("op, pick", [("arg_max", max), ("arg_min", min)])
def test_arg_max_min(op, pick):
    x = _ties((3, 4, 5))
    first = lambda line: [line.index(pick(line))]   # noqa: E731  (the first extreme)
    for axis in (0, 1, -1):
        for keep in (False, True):
            ref = _per_line(x, axis, first, 1, np.int64)
            want = ref if keep else np.squeeze(ref, axis)
            check_forward(Case(op, {"X": x}, lambda i, a, w=want: {"Out": w}, attrs={"axis": axis, "keepdims": keep}))
    flat = np.array(first(list(x.ravel()))[0])
    check_forward(Case(op, {"X": x}, lambda i, a: {"Out": flat}, attrs={"flatten": True}))
    check_both_modes(op, {"X": x}, {"axis": 1})


def test_where():
    cond = rng.random((3, 4)) > 0.5
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((4,))

    def ref(ins, attrs):
        out = np.empty((3, 4))
        for i in range(3):
            for j in range(4):
                out[i, j] = ins["X"][i, j] if ins["Condition"][i, j] else ins["Y"][j]
        return {"Out": out}
    case = Case("where", {"Condition": cond, "X": x, "Y": y}, ref, batch_slots=("Condition", "X"))
    check_forward(case)
    check_infer_batch(case)
    check_grad("where", {"Condition": cond, "X": x, "Y": y})
    check_both_modes("where", {"Condition": cond, "X": x, "Y": y})
    check_build_error("where", {"Condition": np.ones(3), "X": x, "Y": y}, {}, DTypeError)


def test_where_index_and_masked_select():
    cond = np.array([[True, False, True], [False, False, True]])
    coords = np.array([[i, j] for i in range(2) for j in range(3) if cond[i, j]], dtype=np.int64)
    check_infer_batch(Case("where_index", {"Condition": cond}, lambda i, a: {"Out": coords}))
    check_both_modes("where_index", {"Condition": cond})
    x = rng.standard_normal((2, 3))
    picked = np.array([x[i, j] for i in range(2) for j in range(3) if cond[i, j]])
    check_infer_batch(Case("masked_select", {"X": x, "Mask": cond}, lambda i, a: {"Y": picked}))
    check_grad("masked_select", {"X": x, "Mask": cond})
    row_mask = np.array([True, False, True])     # broadcast over the rows
    check_grad("masked_select", {"X": x, "Mask": row_mask})
    check_both_modes("masked_select", {"X": x, "Mask": row_mask})
    check_build_error("masked_select", {"X": x, "Mask": np.ones((4,), bool)}, {}, ShapeError)


def test_unique():
    x = np.array([[3, 1, 3], [2, 1, 5]], dtype=np.int64)
    values = sorted(set(x.ravel().tolist()))
    flat = x.ravel().tolist()
    first = [flat.index(v) for v in values]
    inverse = [values.index(v) for v in flat]
    counts = [flat.count(v) for v in values]
    check_infer_batch(Case("unique", {"X": x}, lambda i, a: {
        "Out": np.array(values), "Indices": np.array(first), "Index": np.array(inverse), "Counts": np.array(counts)}))
    rows = np.array([[1, 2], [0, 5], [1, 2]], dtype=np.int64)
    check_infer_batch(Case("unique", {"X": rows}, lambda i, a: {"Out": np.array([[0, 5], [1, 2]]),
                                                           "Counts": np.array([1, 2])}, attrs={"axis": [0]}))
    check_both_modes("unique", {"X": x})
