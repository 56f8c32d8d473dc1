"""Cumulative ops (ops/cumulative.py) and counting ops (ops/counting.py), and the bit shifts:
references written with Python loops, gradient checks (zeros in cumprod, ties in cummax), both modes."""
import math

import numpy as np
import pytest

from headrace.core.errors import ShapeError
from tests.ops.eager_check import check_both_modes
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch

rng = np.random.default_rng(41)


def _running(line, step):
    out, acc = [], None
    for v in line:
        acc = v if acc is None else step(acc, v)
        out.append(acc)
    return out


def _rows(x, fn, dtype=None):
    return np.array([fn(row) for row in x.tolist()], dtype=dtype or x.dtype)


def test_cumprod():
    x = rng.uniform(-2, 2, (3, 5))
    want = _rows(x, lambda r: _running(r, lambda a, b: a * b))
    case = Case("cumprod", {"X": x}, lambda i, a: {"Out": want}, attrs={"dim": 1}, rtol=1e-13)
    check_forward(case)
    check_infer_batch(case)
    x[0, 2] = 0.0
    x[1, 1] = x[1, 3] = 0.0          # zeros: the gradient has no division
    check_grad("cumprod", {"X": x}, {"dim": 1})
    check_grad("cumprod", {"X": x}, {"dim": 0})
    check_both_modes("cumprod", {"X": x}, {"dim": -1})


@pytest.mark.parametrize("op, better", [("cummax", lambda a, b: b >= a), ("cummin", lambda a, b: b <= a)])
def test_cummax_cummin(op, better):
    x = rng.integers(0, 4, (3, 6)).astype(np.float64)      # ties: the latest index wins

    def ref(ins, attrs):
        vals, idx = [], []
        for row in ins["X"].tolist():
            best, at, vs, ix = None, 0, [], []
            for k, v in enumerate(row):
                if best is None or better(best, v):
                    best, at = v, k
                vs.append(best)
                ix.append(at)
            vals.append(vs)
            idx.append(ix)
        return {"Out": np.array(vals), "Indices": np.array(idx, dtype=np.int64)}
    check_forward(Case(op, {"X": x}, ref, attrs={"axis": 1}))
    check_grad(op, {"X": rng.standard_normal((3, 5))}, {"axis": 1}, out_slots=("Out",))
    check_grad(op, {"X": rng.standard_normal((3, 5))}, {"axis": 0}, out_slots=("Out",))
    check_both_modes(op, {"X": x}, {"axis": 1}, out_slots=("Out",))


def test_logcumsumexp():
    x = rng.uniform(-3, 3, (3, 5))
    x[0, 0] = -1000.0                # no underflow to -inf
    want = _rows(x, lambda r: [math.log(sum(math.exp(v) for v in r[:k + 1])) if r[0] > -100 else
                               (r[0] if k == 0 else math.log(sum(math.exp(v) for v in r[1:k + 1])))
                               for k in range(len(r))])
    check_forward(Case("logcumsumexp", {"X": x}, lambda i, a: {"Out": want}, attrs={"axis": 1}, rtol=1e-12))
    check_grad("logcumsumexp", {"X": rng.uniform(-2, 2, (3, 4))}, {"axis": 1})
    check_grad("logcumsumexp", {"X": rng.uniform(-2, 2, (3, 4))}, {"axis": 0})
    check_both_modes("logcumsumexp", {"X": x}, {"axis": 1})


def test_searchsorted():
    seq = np.array([1.0, 2.0, 2.0, 5.0])
    values = np.array([[0.0, 2.0], [2.5, 9.0]])
    for right in (False, True):
        want = np.array([[sum(1 for s in seq if (s <= v if right else s < v)) for v in row] for row in values],
                        dtype=np.int64)
        check_forward(Case("searchsorted", {"SortedSequence": seq, "Values": values}, lambda i, a, w=want: {"Out": w},
                           attrs={"right": right}))
    rows = np.array([[1.0, 3.0], [0.0, 10.0]])
    want = np.array([[1], [1]], dtype=np.int32)
    check_forward(Case("searchsorted", {"SortedSequence": rows, "Values": np.array([[2.0], [4.0]])},
                       lambda i, a: {"Out": want}, attrs={"out_int32": True}))
    check_both_modes("searchsorted", {"SortedSequence": seq, "Values": values})


def test_bincount_and_histogram():
    x = np.array([1, 3, 1, 0, 3, 3], dtype=np.int64)
    counts = np.array([x.tolist().count(k) for k in range(6)], dtype=np.int64)
    check_infer_batch(Case("bincount", {"X": x}, lambda i, a: {"Out": counts}, attrs={"minlength": 6}))
    w = rng.standard_normal(6)
    sums = np.array([sum(wv for xv, wv in zip(x, w) if xv == k) for k in range(4)])
    check_infer_batch(Case("bincount", {"X": x, "Weights": w}, lambda i, a: {"Out": sums}))
    check_both_modes("bincount", {"X": x})
    check_build_error("bincount", {"X": np.zeros((2, 2), np.int64)}, {}, ShapeError)
    v = np.array([0.0, 0.5, 1.0, 2.0, 2.0, 4.0])
    want = np.array([2, 1, 2, 1], dtype=np.int64)     # bins [0,1) [1,2) [2,3) [3,4]
    check_forward(Case("histogram", {"X": v}, lambda i, a: {"Out": want}, attrs={"bins": 4}))
    check_forward(Case("histogram", {"X": v}, lambda i, a: {"Out": np.array([2, 3], np.int64)},   # 4.0 lies outside
                       attrs={"bins": 2, "min": 0.0, "max": 2.0}))
    check_both_modes("histogram", {"X": v}, {"bins": 3})


def test_bit_shifts():
    x = np.array([[1, -8, 5]], dtype=np.int64)
    y = np.array([2, 1, 0], dtype=np.int64)
    check_forward(Case("bitwise_left_shift", {"X": x, "Y": y},
                       lambda i, a: {"Out": np.array([[4, -16, 5]], np.int64)}))
    check_forward(Case("bitwise_right_shift", {"X": x, "Y": y},
                       lambda i, a: {"Out": np.array([[0, -4, 5]], np.int64)}))
    check_both_modes("bitwise_left_shift", {"X": x, "Y": y})


def test_unique_consecutive():
    x = np.array([1, 1, 2, 2, 2, 1, 3, 3], dtype=np.int64)
    runs, counts, inverse = [], [], []
    for v in x.tolist():
        if not runs or runs[-1] != v:
            runs.append(v)
            counts.append(0)
        counts[-1] += 1
        inverse.append(len(runs) - 1)
    check_infer_batch(Case("unique_consecutive", {"X": x}, lambda i, a: {
        "Out": np.array(runs), "Index": np.array(inverse), "Counts": np.array(counts)}))
    rows = np.array([[1, 2], [1, 2], [0, 0], [1, 2]], dtype=np.int64)
    check_infer_batch(Case("unique_consecutive", {"X": rows}, lambda i, a: {
        "Out": np.array([[1, 2], [0, 0], [1, 2]]), "Index": np.array([0, 0, 1, 2]), "Counts": np.array([2, 1, 1])},
        attrs={"axis": [0]}))
    check_both_modes("unique_consecutive", {"X": x})


def test_mode():
    x = np.array([[3.0, 1.0, 3.0, 1.0, 2.0], [5.0, 4.0, 4.0, 5.0, 5.0], [7.0, 8.0, 9.0, 6.0, 0.5]])

    def ref(ins, attrs):
        vals, idx = [], []
        for row in ins["X"].tolist():
            best = max(sorted(set(row)), key=lambda v: (row.count(v), -v))   # most frequent, smallest on ties
            vals.append(best)
            idx.append(max(i for i, v in enumerate(row) if v == best))     # its last position
        return {"Out": np.array(vals), "Indices": np.array(idx, dtype=np.int64)}
    case = Case("mode", {"X": x}, ref, attrs={"axis": 1})
    check_forward(case)
    check_infer_batch(case)
    # the mode is piecewise constant with jumps exactly where it is defined by ties, so finite
    # differences say nothing; the gradient follows the reference's convention: Out@GRAD goes to
    # the position Indices names (checked here directly, in both modes)
    check_both_modes("mode", {"X": x}, {"axis": 1}, out_slots=("Out",))
    from headrace.ops.kernel import context
    from headrace.ops.registry import lookup
    dout = np.array([0.5, -2.0, 3.0])
    got = lookup("mode_grad").kernel({"X": x, "Indices": ref({"X": x}, {})["Indices"], "Out@GRAD": dout},
                                     {"axis": 1, "keepdim": False}, context(["X@GRAD"]))["X@GRAD"]
    want = np.zeros_like(x)
    want[0, 3], want[1, 4], want[2, 4] = 0.5, -2.0, 3.0
    np.testing.assert_array_equal(got, want)
