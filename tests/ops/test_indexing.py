"""Indexing ops (ops/indexing.py): references written with explicit loops, gradient checks (with
duplicate indices), both modes, errors; getitem/setitem against NumPy indexing for many indices."""
import numpy as np
import pytest

from headrace.core.errors import DTypeError, ShapeError
from headrace.core.context import program_guard
from headrace.core.program import Program
from headrace.ops.apply import apply_op
from tests.ops.eager_check import check_both_modes
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, build_and_run, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(13)


def test_gather():
    x = rng.standard_normal((4, 3))
    index = np.array([2, 0, 2], dtype=np.int64)    # a duplicate: its gradient accumulates
    rows = np.array([x[i] for i in index])
    check_forward(Case("gather", {"X": x, "Index": index}, lambda i, a: {"Out": rows}))
    cols = np.stack([x[:, i] for i in [1, 1, 0]], axis=1)
    case = Case("gather", {"X": x, "Index": np.array([1, 1, 0], np.int32)}, lambda i, a: {"Out": cols},
                attrs={"axis": 1}, batch_slots=("X",))
    check_forward(case)
    check_infer_batch(case)
    check_forward(Case("gather", {"X": x, "Index": np.array(3, np.int64)}, lambda i, a: {"Out": x[3]}))
    check_grad("gather", {"X": x, "Index": index})
    check_grad("gather", {"X": x, "Index": np.array([1, 1, 0], np.int32)}, {"axis": 1})
    check_both_modes("gather", {"X": x, "Index": index})
    check_build_error("gather", {"X": x, "Index": np.zeros(2)}, {}, DTypeError)


def test_gather_nd_and_scatter_nd_add():
    x = rng.standard_normal((3, 4, 2))
    index = np.array([[0, 1], [2, 3], [0, 1]], dtype=np.int64)
    out = np.stack([x[i, j] for i, j in index])
    check_forward(Case("gather_nd", {"X": x, "Index": index}, lambda i, a: {"Out": out}))
    check_grad("gather_nd", {"X": x, "Index": index})
    check_both_modes("gather_nd", {"X": x, "Index": index})
    upd = rng.standard_normal((3, 2))
    want = x.copy()
    for (i, j), u in zip(index, upd):
        want[i, j] += u
    check_forward(Case("scatter_nd_add", {"X": x, "Index": index, "Updates": upd}, lambda i, a: {"Out": want}))
    check_grad("scatter_nd_add", {"X": x, "Index": index, "Updates": upd})
    check_both_modes("scatter_nd_add", {"X": x, "Index": index, "Updates": upd})
    check_build_error("scatter_nd_add", {"X": x, "Index": index, "Updates": np.zeros((3, 3))}, {}, ShapeError)


@pytest.mark.parametrize("overwrite", [True, False])
def test_scatter(overwrite):
    x = rng.standard_normal((5, 3))
    ids = np.array([3, 1, 3], dtype=np.int64)     # row 3 twice
    upd = rng.standard_normal((3, 3))
    want = x.copy()
    if overwrite:
        for i, u in zip(ids, upd):
            want[i] = u            # the last one wins
    else:
        for i in set(ids.tolist()):
            want[i] = 0
        for i, u in zip(ids, upd):
            want[i] += u
    check_forward(Case("scatter", {"X": x, "Ids": ids, "Updates": upd}, lambda i, a: {"Out": want},
                       attrs={"overwrite": overwrite}))
    check_grad("scatter", {"X": x, "Ids": ids, "Updates": upd}, {"overwrite": overwrite})
    check_both_modes("scatter", {"X": x, "Ids": ids, "Updates": upd}, {"overwrite": overwrite})


def test_scatter_out_of_range_is_an_index_error():
    case = Case("scatter", {"X": np.zeros((2, 2)), "Ids": np.array([5]), "Updates": np.zeros((1, 2))},
                lambda i, a: {})
    with pytest.raises(IndexError, match="scatter"):
        build_and_run(case)


def test_take_along_axis():
    x = rng.standard_normal((3, 4))
    index = np.array([[0, 0], [3, 1], [2, 2]], dtype=np.int64)
    want = np.array([[x[i, index[i, j]] for j in range(2)] for i in range(3)])
    check_forward(Case("take_along_axis", {"Input": x, "Index": index}, lambda i, a: {"Result": want},
                       attrs={"Axis": 1}))
    check_grad("take_along_axis", {"Input": x, "Index": index}, {"Axis": 1})
    check_both_modes("take_along_axis", {"Input": x, "Index": index}, {"Axis": 1})


def test_one_hot():
    labels = np.array([[1], [0], [3]], dtype=np.int64)
    want = np.zeros((3, 1, 4), np.float32)
    for i, v in enumerate(labels[:, 0]):
        want[i, 0, v] = 1
    check_forward(Case("one_hot_v2", {"X": labels}, lambda i, a: {"Out": want}, attrs={"depth": 4}))
    check_both_modes("one_hot_v2", {"X": labels}, {"depth": 4})
    with pytest.raises(IndexError, match="one_hot"):
        build_and_run(Case("one_hot_v2", {"X": np.array([4])}, lambda i, a: {}, attrs={"depth": 4}))


# --- getitem / setitem against NumPy --------------------------------------------------------------
A = np.arange(60, dtype=np.float64).reshape(3, 4, 5) / 7.0
MASK = A[:, :, 0] > 2.0
INDICES = [
    (slice(None, None, 2),), (slice(None, None, -1), 1), (Ellipsis, slice(4, 0, -2)), (None, 1),
    (1, None, slice(None), None), (Ellipsis, None), (np.array([2, 0, 2]),), (slice(None), np.array([[1, 3], [0, 0]])),
    (np.array([0, 2]), slice(None), np.array([1, 4])), (0, slice(None), np.array([4, 1])),
    (np.array([1, 2]), np.array([3, 0])), (MASK,), (0, MASK[0]),
    (A > 4.0,), (slice(1, None), np.array([True, False, True, True])), (-1, -2, -3),
]


def _encode(index):
    from headrace.nn.tensor_index import _encode as encode   # the facade's encoder, on arrays
    spec, tensors = [], []
    for item in index:
        if isinstance(item, np.ndarray):
            tensors.append(item.astype(np.bool_ if item.dtype == bool else np.int64))
            spec.append(["t", len(tensors) - 1])
        else:
            spec.extend(encode((item,), None)[0])
    return spec, tensors


@pytest.mark.parametrize("index", INDICES, ids=[str(i)[:40] for i in INDICES])
def test_getitem_matches_numpy(index):
    spec, tensors = _encode(index)
    inputs = {"X": A, "Indices": tensors} if tensors else {"X": A}
    want = A[index]
    case = Case("getitem", inputs, lambda i, a: {"Out": want}, attrs={"index": spec}, batch_slots=())
    check_infer_batch(case)
    if not any(t.dtype == bool for t in tensors):
        check_forward(case)
    check_grad("getitem", inputs, {"index": spec}, batch_unknown=False)
    check_both_modes("getitem", inputs, {"index": spec})


@pytest.mark.parametrize("index", INDICES, ids=[str(i)[:40] for i in INDICES])
def test_setitem_matches_numpy(index):
    spec, tensors = _encode(index)
    target_shape = A[index].shape
    value = rng.standard_normal(target_shape[-1:] if target_shape else ())
    want = A.copy()
    want[index] = value
    inputs = {"X": A, "Value": value}
    if tensors:
        inputs["Indices"] = tensors
    check_infer_batch(Case("setitem", inputs, lambda i, a: {"Out": want}, attrs={"index": spec}, batch_slots=()))
    check_grad("setitem", inputs, {"index": spec}, batch_unknown=False)
    check_both_modes("setitem", inputs, {"index": spec})


def test_setitem_duplicates_the_last_write_wins_and_gets_the_gradient():
    x = np.zeros((4, 2))
    index = np.array([1, 3, 1])
    value = rng.standard_normal((3, 2))
    inputs = {"X": x, "Value": value, "Indices": [index]}
    want = x.copy()
    want[1], want[3] = value[2], value[1]
    check_forward(Case("setitem", inputs, lambda i, a: {"Out": want}, attrs={"index": [["t", 0]]}))
    check_grad("setitem", inputs, {"index": [["t", 0]]}, batch_unknown=False)


def test_setitem_scalar_value_and_errors():
    want = A.copy()
    want[0, ::2] = 9.5
    spec = [["i", 0], ["s", None, None, 2]]
    check_forward(Case("setitem", {"X": A}, lambda i, a: {"Out": want}, attrs={"index": spec, "value": 9.5}))
    check_grad("setitem", {"X": A}, {"index": spec, "value": 9.5})
    check_build_error("setitem", {"X": A, "Value": np.zeros(3)}, {"index": spec}, ShapeError, match="Value")
    check_build_error("getitem", {"X": A}, {"index": [["i", 5]]}, ShapeError, match="out of bounds")
    main = Program()
    with program_guard(main, Program()):
        x = main.global_block().create_var(name="x", shape=[3, 4], dtype="float64", is_data=True)
        with pytest.raises(ShapeError, match="too many indices"):
            apply_op("getitem", {"X": x}, {"index": [["i", 0], ["i", 0], ["i", 0]]})
