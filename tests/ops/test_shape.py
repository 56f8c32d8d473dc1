"""Shape ops: references move elements by explicit index arithmetic; shape rules are re-derived here."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from headrace.core.errors import AttrError, DTypeError, ShapeError
from headrace.ops.concat_slice import slice_bounds
from headrace.ops.kernel import context
from headrace.ops.shape import reshape_shape
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch, ids, infer_shapes

rng = np.random.default_rng(2)
DTYPES = ["float32", "float64", "int64"]


def _data(shape, dtype="float64"):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-100, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _refill(x, shape):
    """X's elements, in row-major order, laid out in a new array of ``shape``, one by one."""
    flat = [x[i] for i in np.ndindex(*x.shape)]
    out = np.empty(shape, dtype=x.dtype)
    assert len(flat) == out.size
    for value, j in zip(flat, np.ndindex(*shape)):
        out[j] = value
    return out


def _xshape(x):
    return np.empty((0,) + x.shape, dtype=x.dtype)


def _count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


_infer = infer_shapes


# --- reshape2 ------------------------------------------------------------------------------------
def ref_reshape(ins, attrs):
    x = ins["X"]
    target = [x.shape[i] if s == 0 else s for i, s in enumerate(attrs["shape"])]
    if -1 in target:
        known = _count(d for d in target if d != -1)
        target[target.index(-1)] = x.size // known
    return {"Out": _refill(x, tuple(target)), "XShape": _xshape(x)}


RESHAPES = [  # (x shape, shape attr, out dim 0 stays unknown with unknown batch)
    ((2, 4, 3), [-1, 12], True), ((2, 4, 3), [0, -1], True), ((2, 4, 3), [2, 12], False),
    ((2, 4, 3), [0, 3, 4], True), ((2, 4, 3), [24], False), ((2, 4, 3), [4, -1, 2], False),
    ((2, 4, 3), [0, 0, 3, 1], True), ((6,), [2, 3], False), ((1, 1), [], False), ((6, 2), [3, 0, -1], False),
]
RESHAPE_CASES = [Case("reshape2", {"X": _data(xs, dt)}, ref_reshape, attrs={"shape": shape},
                      id=f"reshape2-{xs}-{shape}-{dt}", batch_outputs=("Out",) if keep else ())
                 for xs, shape, keep in RESHAPES for dt in DTYPES]


# --- transpose2 ----------------------------------------------------------------------------------
def ref_transpose(ins, attrs):
    x, axis = ins["X"], [a % max(ins["X"].ndim, 1) for a in attrs["axis"]]
    out = np.empty(tuple(x.shape[a] for a in axis), dtype=x.dtype)
    for i in np.ndindex(*out.shape):
        j = [0] * x.ndim
        for k, a in enumerate(axis):
            j[a] = i[k]
        out[i] = x[tuple(j)]
    return {"Out": out, "XShape": _xshape(x)}


TRANSPOSES = [((3, 4), [1, 0]), ((2, 3, 4), [0, 2, 1]), ((2, 3, 4), [2, 0, 1]), ((2, 3, 4, 5), [3, 1, 0, 2]),
              ((2, 3, 4), [-1, 0, -2]), ((5,), [0])]
TRANSPOSE_CASES = [Case("transpose2", {"X": _data(xs, dt)}, ref_transpose, attrs={"axis": axis},
                        id=f"transpose2-{xs}-{axis}-{dt}", batch_outputs=("Out",) if axis[0] == 0 else ())
                   for xs, axis in TRANSPOSES for dt in DTYPES]


# --- concat / split ------------------------------------------------------------------------------
def _along(ndim, axis, start, stop):
    return (slice(None),) * (axis % ndim) + (slice(start, stop),)


def ref_concat(ins, attrs):
    xs, axis = ins["X"], attrs["axis"] % ins["X"][0].ndim
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = np.empty(shape, dtype=xs[0].dtype)
    offset = 0
    for x in xs:
        out[_along(x.ndim, axis, offset, offset + x.shape[axis])] = x
        offset += x.shape[axis]
    assert offset == shape[axis]
    return {"Out": out}


CONCATS = [([(2, 3), (4, 3)], 0), ([(2, 3), (2, 1), (2, 5)], 1), ([(2, 3, 4), (2, 3, 1)], -1),
           ([(2, 3, 4)], 1), ([(2, 1, 4), (2, 2, 4), (2, 3, 4)], -2)]
CONCAT_CASES = [Case("concat", {"X": [_data(s, dt) for s in shapes]}, ref_concat, attrs={"axis": axis},
                     id=f"concat-{shapes}-{axis}-{dt}", batch_outputs=("Out",))
                for shapes, axis in CONCATS for dt in DTYPES]


def ref_split(ins, attrs):
    x, axis = ins["X"], attrs.get("axis", 0) % ins["X"].ndim
    dim, num, sections = x.shape[axis], attrs.get("num", 0), list(attrs.get("sections", []))
    sizes = [dim // num] * num if num else [dim - (sum(sections) + 1) if s == -1 else s for s in sections]
    pieces, offset = [], 0
    for size in sizes:
        pieces.append(x[_along(x.ndim, axis, offset, offset + size)].copy())
        offset += size
    return {"Out": pieces}


SPLITS = [((6, 4), {"num": 3}), ((6, 4), {"axis": 1, "num": 2}), ((2, 5, 3), {"axis": 1, "sections": [1, 4]}),
          ((2, 5, 3), {"axis": -2, "sections": [2, -1, 1]}), ((2, 6), {"axis": -1, "sections": [-1, 2, 0]}),
          ((4, 3), {"sections": [1, 3]}), ((3, 2), {"num": 1})]
SPLIT_CASES = [Case("split", {"X": _data(xs, dt)}, ref_split, attrs=attrs,
                    outputs={"Out": attrs.get("num") or len(attrs["sections"])},
                    id=f"split-{xs}-{attrs}-{dt}",
                    batch_outputs=("Out",) if attrs.get("axis", 0) % len(xs) else ())
               for xs, attrs in SPLITS for dt in DTYPES]


# --- slice ---------------------------------------------------------------------------------------
def ref_slice(ins, attrs):
    x = ins["Input"]
    out = x
    for axis, start, end in zip(attrs["axes"], attrs["starts"], attrs["ends"]):
        positions = list(range(x.shape[axis]))[start:end]  # Python's own slice rules
        out = np.take(out, np.asarray(positions, dtype=np.int64), axis=axis)
    drop = [a % x.ndim for a in attrs.get("decrease_axis", [])]
    return {"Out": out.reshape(tuple(d for i, d in enumerate(out.shape) if i not in drop))}


SLICES = [  # (x shape, axes, starts, ends, decrease_axis, out dim 0 stays unknown)
    ((4, 5), [1], [1], [3], [], True), ((4, 5), [0, 1], [-3, 0], [-1, 100], [], False),
    ((3, 4, 5), [2], [-2], [10 ** 9], [], True), ((3, 4, 5), [1, 2], [2, 1], [3, 4], [1], True),
    ((3, 4, 5), [1], [3], [1], [], True), ((3, 4, 5), [-1], [-100], [2], [], True),
    ((3, 4, 5), [1, 2], [0, 4], [1, 5], [1, 2], True), ((4,), [0], [2], [3], [0], False),
    ((2, 3), [0, 1], [1, 2], [2, 3], [0, 1], False), ((3, 4), [0], [2], [2], [], False),
]
SLICE_CASES = [Case("slice", {"Input": _data(xs, dt)}, ref_slice,
                    attrs={"axes": axes, "starts": starts, "ends": ends, "decrease_axis": dec},
                    id=f"slice-{xs}-{axes}-{starts}-{ends}-{dec}-{dt}", batch_outputs=("Out",) if keep else ())
               for xs, axes, starts, ends, dec, keep in SLICES for dt in DTYPES]


# --- squeeze2 / unsqueeze2 / flatten_contiguous_range --------------------------------------------
def ref_squeeze(ins, attrs):
    x, axes = ins["X"], attrs.get("axes", [])
    listed = [a + x.ndim if a < 0 else a for a in axes] if axes else range(x.ndim)
    shape = tuple(d for i, d in enumerate(x.shape) if not (i in listed and d == 1))
    return {"Out": _refill(x, shape), "XShape": _xshape(x)}


SQUEEZES = [((3, 1, 4, 1), []), ((3, 1, 4, 1), [1]), ((3, 1, 4, 1), [-1, 1]), ((3, 1, 4), [2]),
            ((3, 1, 4), [0, 1]), ((3, 1), [1, 1]), ((1, 1), [])]
# Listing an unknown dim assumes it is 1 (as the reference does at build time), so a batch of 3 would not
# match: the cases that squeeze axis 0 keep their batch known.
SQUEEZE_CASES = [Case("squeeze2", {"X": _data(xs, dt)}, ref_squeeze, attrs={"axes": axes},
                      id=f"squeeze2-{xs}-{axes}-{dt}", batch_slots=() if 0 in axes else None,
                      batch_outputs=("Out",) if 0 not in axes else ())
                 for xs, axes in SQUEEZES for dt in DTYPES]


def ref_unsqueeze(ins, attrs):
    """The reference's marker algorithm: mark inserted 1s, shift marks right, fill the rest with X's dims."""
    x, axes = ins["X"], attrs["axes"]
    marks = [0] * (x.ndim + len(axes) + 1)
    rank = x.ndim
    for axis in axes:
        cur = axis + rank + 1 if axis < 0 else axis
        for i in range(rank, cur - 1, -1):
            if marks[i] == 1:
                marks[i + 1], marks[i] = 1, 0
        marks[cur] = 1
        rank += 1
    dims, shape = iter(x.shape), []
    for m in marks[:x.ndim + len(axes)]:
        shape.append(1 if m else next(dims))
    return {"Out": _refill(x, tuple(shape)), "XShape": _xshape(x)}


UNSQUEEZES = [((3, 4), [0]), ((3, 4), [1]), ((3, 4), [2]), ((3, 4), [-1]), ((3, 4), [0, 2]),
              ((3, 4), [2, 0]), ((3, 4), [-1, -1]), ((3, 4), [1, 1, -4]), ((5,), [0, -1, 1])]
UNSQUEEZE_CASES = [Case("unsqueeze2", {"X": _data(xs, dt)}, ref_unsqueeze, attrs={"axes": axes},
                        id=f"unsqueeze2-{xs}-{axes}-{dt}") for xs, axes in UNSQUEEZES for dt in DTYPES]


def ref_flatten(ins, attrs):
    x = ins["X"]
    if x.ndim == 0:
        return {"Out": x.reshape(1), "XShape": _xshape(x)}
    start, stop = attrs.get("start_axis", 1) % x.ndim, attrs.get("stop_axis", -1) % x.ndim
    shape = x.shape[:start] + (_count(x.shape[start:stop + 1]),) + x.shape[stop + 1:]
    return {"Out": _refill(x, shape), "XShape": _xshape(x)}


FLATTENS = [((2, 3, 4), {}), ((2, 3, 4), {"start_axis": 0}), ((2, 3, 4, 5), {"start_axis": 1, "stop_axis": 2}),
            ((2, 3, 4), {"start_axis": -1}), ((2, 3, 4), {"start_axis": 0, "stop_axis": -2}), ((2, 3), {"start_axis": 1})]
FLATTEN_CASES = [Case("flatten_contiguous_range", {"X": _data(xs, dt)}, ref_flatten, attrs=attrs,
                      id=f"flatten-{xs}-{attrs}-{dt}", batch_outputs=("Out",) if attrs.get("start_axis", 1) else ())
                 for xs, attrs in FLATTENS for dt in DTYPES]
FLATTEN_CASES.append(Case("flatten_contiguous_range", {"X": np.array(3.5)}, ref_flatten, id="flatten-0d"))

ALL_CASES = (RESHAPE_CASES + TRANSPOSE_CASES + CONCAT_CASES + SPLIT_CASES + SLICE_CASES + SQUEEZE_CASES
             + UNSQUEEZE_CASES + FLATTEN_CASES)


@pytest.mark.parametrize("case", ALL_CASES, ids=ids(ALL_CASES))
def test_forward(case):
    check_forward(case)


def _batch_of_one(case):
    first = next(iter(case.inputs.values()))
    return np.shape(first[0] if isinstance(first, list) else first)[:1] == (1,)


@pytest.mark.parametrize("case", [c for c in ALL_CASES if not _batch_of_one(c)], ids=str)
def test_infer_with_unknown_batch(case):
    check_infer_batch(case)


def test_reshape_returns_a_view_and_0d_flatten():
    from headrace.ops.registry import lookup
    x = np.arange(24.0).reshape(2, 3, 4)
    out = lookup("reshape2").kernel({"X": x}, {"shape": [0, -1]}, context())["Out"]
    assert out.shape == (2, 12) and np.shares_memory(out, x)
    out = lookup("flatten_contiguous_range").kernel({"X": np.array(3.0)}, {"start_axis": 1, "stop_axis": -1}, context())
    assert out["Out"].shape == (1,) and out["XShape"].shape == (0,)


# --- inference with unknown dims -----------------------------------------------------------------
@pytest.mark.parametrize("op,shapes,attrs,outputs,want", [
    ("reshape2", {"X": (-1, 4, 3)}, {"shape": [-1, 12]}, None, [(-1, 12)]),
    ("reshape2", {"X": (-1, 4, 3)}, {"shape": [0, -1]}, None, [(-1, 12)]),
    ("reshape2", {"X": (-1, 4, 3)}, {"shape": [0, 2, -1]}, None, [(-1, 2, 6)]),
    ("reshape2", {"X": (4, -1, 3)}, {"shape": [-1, 3]}, None, [(-1, 3)]),
    ("reshape2", {"X": (4, -1)}, {"shape": [2, 0, 2]}, None, [(2, -1, 2)]),
    ("transpose2", {"X": (-1, 3, 4)}, {"axis": [2, 0, 1]}, None, [(4, -1, 3)]),
    ("concat", {"X": [(-1, 3), (-1, 3)]}, {"axis": 1}, None, [(-1, 6)]),
    ("concat", {"X": [(-1, 3), (2, 3)]}, {"axis": 0}, None, [(-1, 3)]),
    ("concat", {"X": [(-1, 3), (2, 3)]}, {"axis": 1}, None, [(2, 6)]),
    ("split", {"X": (-1, 6)}, {"num": 2, "axis": 1}, {"Out": 2}, [(-1, 3), (-1, 3)]),
    ("split", {"X": (-1, 6)}, {"num": 2, "axis": 0}, {"Out": 2}, [(-1, 6), (-1, 6)]),
    ("split", {"X": (-1, 6)}, {"sections": [1, -1]}, {"Out": 2}, [(1, 6), (-1, 6)]),
    ("slice", {"Input": (-1, 6)}, {"axes": [1], "starts": [1], "ends": [-1]}, None, [(-1, 4)]),
    ("slice", {"Input": (-1, 6)}, {"axes": [0], "starts": [0], "ends": [2]}, None, [(-1, 6)]),
    ("slice", {"Input": (-1, 6)}, {"axes": [0], "starts": [-1], "ends": [-3]}, None, [(0, 6)]),
    ("slice", {"Input": (-1, 6)}, {"axes": [0, 1], "starts": [0, 2], "ends": [1, 3],
                                   "decrease_axis": [0, 1]}, None, [()]),
    ("squeeze2", {"X": (-1, 1, 4)}, {"axes": []}, None, [(-1, 4)]),
    ("squeeze2", {"X": (-1, 1, 4)}, {"axes": [0, 1]}, None, [(4,)]),
    ("unsqueeze2", {"X": (-1, 4)}, {"axes": [0, -1]}, None, [(1, -1, 4, 1)]),
    ("flatten_contiguous_range", {"X": (-1, 3, 4)}, {"start_axis": 0, "stop_axis": 1}, None, [(-1, 4)]),
])
def test_infer_propagates_unknown_dims(op, shapes, attrs, outputs, want):
    got = _infer(op, shapes, attrs, outputs=outputs)
    assert got["Out"] == want
    if "XShape" in got:
        assert got["XShape"] == [(0,) + shapes["X"]]


# --- build errors --------------------------------------------------------------------------------
X243 = {"X": np.ones((2, 4, 3))}


@pytest.mark.parametrize("op,inputs,attrs,error,mentions", [
    ("reshape2", X243, {"shape": [-1, -1]}, AttrError, ["`shape`", "[-1, -1]"]),
    ("reshape2", X243, {"shape": [5, 5]}, ShapeError, ["[2, 4, 3]", "[5, 5]"]),
    ("reshape2", X243, {"shape": [5, -1]}, ShapeError, ["[2, 4, 3]", "[5, -1]"]),
    ("reshape2", X243, {"shape": [0, 5]}, ShapeError, ["[2, 4, 3]", "[0, 5]"]),
    ("reshape2", X243, {"shape": [2, 3, 2, 0]}, AttrError, ["`shape`", "[2, 4, 3]", "[2, 3, 2, 0]"]),
    ("reshape2", X243, {"shape": [-2, 12]}, AttrError, ["`shape`", "[-2, 12]"]),
    ("transpose2", X243, {"axis": [0, 0, 1]}, AttrError, ["`axis`", "[2, 4, 3]", "[0, 0, 1]"]),
    ("transpose2", X243, {"axis": [1, 0]}, AttrError, ["`axis`", "[1, 0]"]),
    ("transpose2", X243, {"axis": [0, 1, 3]}, AttrError, ["`axis`", "[0, 1, 3]"]),
    ("concat", {"X": [np.ones((2, 3)), np.ones((2, 4))]}, {"axis": 0}, ShapeError, ["[2, 3]", "[2, 4]"]),
    ("concat", {"X": [np.ones((2, 3)), np.ones((2, 3, 1))]}, {"axis": 1}, ShapeError, ["[2, 3, 1]", "rank 2"]),
    ("concat", {"X": [np.ones((2, 3)), np.ones((2, 3), "float32")]}, {}, DTypeError, ["float64", "float32"]),
    ("concat", {"X": [np.ones((2, 3)), np.ones((2, 3))]}, {"axis": 2}, AttrError, ["`axis`", "[2, 3]"]),
    ("concat", {"X": [np.ones(()), np.ones(())]}, {}, ShapeError, ["rank >= 1"]),
    ("split", {"X": np.ones((5, 4))}, {"num": 2}, AttrError, ["`num`", "5"]),
    ("split", {"X": np.ones((5, 4))}, {"sections": [2, 2]}, AttrError, ["`sections`", "[2, 2]", "5"]),
    ("split", {"X": np.ones((5, 4))}, {"sections": [4, -1, 3]}, AttrError, ["`sections`", "[4, -1, 3]"]),
    ("split", {"X": np.ones((5, 4))}, {"sections": [-1, -1]}, AttrError, ["`sections`", "[-1, -1]"]),
    ("split", {"X": np.ones((5, 4))}, {"axis": 2, "num": 1}, AttrError, ["`axis`", "[5, 4]"]),
    ("split", {"X": np.ones((5, 4))}, {}, AttrError, ["`num`"]),
    ("split", {"X": np.ones((4, 4))}, {"num": 2, "axis": 1}, ShapeError, ["2 variable(s)"]),
    ("slice", {"Input": np.ones((3, 4))}, {"axes": [2], "starts": [0], "ends": [1]}, AttrError, ["`axes`", "[3, 4]"]),
    ("slice", {"Input": np.ones((3, 4))}, {"axes": [0, 1], "starts": [0], "ends": [1, 2]}, AttrError, ["`starts`"]),
    ("slice", {"Input": np.ones((3, 4))}, {"axes": [1], "starts": [0], "ends": [2], "decrease_axis": [1]},
     AttrError, ["`decrease_axis`", "[3, 4]", "[3, 2]"]),
    ("squeeze2", {"X": np.ones((3, 1))}, {"axes": [2]}, AttrError, ["`axes`", "[3, 1]"]),
    ("squeeze2", {"X": np.ones((3, 1))}, {"axes": [-3]}, AttrError, ["`axes`", "-3"]),
    ("unsqueeze2", {"X": np.ones((3, 4))}, {"axes": [3]}, AttrError, ["`axes`", "[3, 4]"]),
    ("unsqueeze2", {"X": np.ones((3, 4))}, {"axes": [0, -5]}, AttrError, ["`axes`", "[1, 3, 4]", "[3, 4]", "-5"]),
    ("flatten_contiguous_range", X243, {"start_axis": 2, "stop_axis": 1}, AttrError, ["`stop_axis`", "[2, 4, 3]"]),
    ("flatten_contiguous_range", X243, {"start_axis": 3}, AttrError, ["`start_axis`", "[2, 4, 3]"]),
])
def test_build_errors(op, inputs, attrs, error, mentions):
    outputs = {"Out": ["piece_0", "piece_1", "piece_2"]} if op == "split" else None
    message = check_build_error(op, inputs, attrs, error, outputs=outputs)
    assert all(m in message for m in mentions), message


@pytest.mark.parametrize("op,shapes,attrs,error,mentions", [
    ("reshape2", {"X": (-1, 4, 3)}, {"shape": [5, 7]}, ShapeError, ["[-1, 4, 3]", "[5, 7]"]),
    ("reshape2", {"X": (-1, 4, 3)}, {"shape": [0, 5]}, ShapeError, ["[-1, 4, 3]", "[0, 5]"]),
    ("reshape2", {"X": (-1, 4, 3)}, {"shape": [0, 5, -1]}, ShapeError, ["[-1, 4, 3]"]),
    ("concat", {"X": [(-1, 3), (-1, 4)]}, {"axis": 0}, ShapeError, ["[-1, 3]", "[-1, 4]"]),
    ("split", {"X": (-1, 5)}, {"num": 2, "axis": 1}, AttrError, ["`num`", "5"]),
    ("slice", {"Input": (-1, 4)}, {"axes": [1], "starts": [0], "ends": [2], "decrease_axis": [1]},
     AttrError, ["`decrease_axis`"]),
])
def test_certain_mismatch_with_unknown_batch_is_a_build_error(op, shapes, attrs, error, mentions):
    outputs = {"Out": 2} if op == "split" else None
    with pytest.raises(error) as info:
        _infer(op, shapes, attrs, outputs=outputs)
    assert all(m in str(info.value) for m in mentions), str(info.value)


# --- properties: build-time rules agree with run-time shapes -------------------------------------
def _compatible(inferred, actual):
    return len(inferred) == len(actual) and all(d in (-1, a) for d, a in zip(inferred, actual))


@st.composite
def _reshapes(draw):
    """(x shape, a valid `shape` attr using 0 and -1, the concrete target it means)."""
    x_shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    remaining, target = _count(x_shape), []
    while remaining > 1 or not target:
        divisors = [d for d in range(1, remaining + 1) if remaining % d == 0]
        d = draw(st.sampled_from(divisors))
        target.append(d)
        remaining //= d
    attr = [0 if i < len(x_shape) and d == x_shape[i] and draw(st.booleans()) else d for i, d in enumerate(target)]
    if draw(st.booleans()):
        attr[draw(st.integers(0, len(attr) - 1))] = -1
    return x_shape, attr, tuple(target)


@given(_reshapes())
def test_reshape_rule_is_consistent_with_unknown_dims(example):
    x_shape, attr, target = example
    assert reshape_shape(x_shape, attr) == target
    for i in range(len(x_shape)):
        unknown = x_shape[:i] + (-1,) + x_shape[i + 1:]
        assert _compatible(reshape_shape(unknown, attr), target), (unknown, attr, target)


@given(st.integers(0, 6), st.integers(-9, 9), st.integers(-9, 9))
def test_slice_rule_matches_python_and_unknown_dims(dim, start, end):
    lo, hi = slice_bounds(dim, start, end)
    assert list(range(dim))[start:end] == list(range(lo, hi))
    got = _infer("slice", {"Input": (-1, 2)}, {"axes": [0], "starts": [start], "ends": [end]})["Out"][0]
    assert got[1] == 2 and got[0] in (-1, hi - lo)


# --- gradients: central differences in float64 ------------------------------------------------------
from tests.ops.gradcheck import check_grad  # noqa: E402

grng = np.random.default_rng(7)


def _g(*shape):
    return grng.standard_normal(shape)


VIEW_GRADS = [  # (op, X shape, attrs): X -> Out, XShape ops
    ("reshape2", (2, 3, 4), {"shape": [6, 4]}),
    ("reshape2", (2, 3, 4), {"shape": [0, -1]}),
    ("reshape2", (2, 3, 4), {"shape": [4, -1, 2]}),
    ("reshape2", (), {"shape": [1, 1]}),
    ("transpose2", (2, 3, 4), {"axis": [2, 0, 1]}),
    ("transpose2", (2, 3, 4), {"axis": [1, -1, 0]}),
    ("transpose2", (3, 4), {"axis": [1, 0]}),
    ("transpose2", (3,), {"axis": [0]}),
    ("squeeze2", (2, 1, 3, 1), {"axes": []}),
    ("squeeze2", (2, 1, 3, 1), {"axes": [1]}),
    ("squeeze2", (2, 1, 3, 1), {"axes": [-1, 1]}),
    ("squeeze2", (2, 3), {"axes": [1]}),                  # a listed dim of size != 1 is kept
    ("unsqueeze2", (2, 3), {"axes": [0, 3]}),
    ("unsqueeze2", (2, 3), {"axes": [-1]}),
    ("unsqueeze2", (2, 3), {"axes": [1, 1]}),
    ("unsqueeze2", (), {"axes": [0]}),
    ("flatten_contiguous_range", (2, 3, 4), {}),
    ("flatten_contiguous_range", (2, 3, 4), {"start_axis": 0, "stop_axis": 1}),
    ("flatten_contiguous_range", (2, 3, 2, 2), {"start_axis": 1, "stop_axis": -2}),
    ("flatten_contiguous_range", (2, 3), {"start_axis": 1, "stop_axis": 1}),
    ("flatten_contiguous_range", (), {"start_axis": 0, "stop_axis": -1}),
]


@pytest.mark.parametrize("op,shape,attrs", VIEW_GRADS, ids=[f"{o}-{s}-{a}" for o, s, a in VIEW_GRADS])
def test_view_op_gradient(op, shape, attrs):
    check_grad(op, {"X": _g(*shape)}, attrs, out_slots=("Out",))


CONCAT_GRADS = [
    ([(2, 3), (4, 3), (1, 3)], 0),
    ([(2, 3, 2), (2, 1, 2)], 1),
    ([(2, 2), (2, 3)], -1),
    ([(3, 2, 2), (3, 2, 1), (3, 2, 2)], -1),
    ([(2, 3)], 0),
]


@pytest.mark.parametrize("shapes,axis", CONCAT_GRADS, ids=[f"{s}-axis{a}" for s, a in CONCAT_GRADS])
def test_concat_gradient(shapes, axis):
    check_grad("concat", {"X": [_g(*s) for s in shapes]}, {"axis": axis})


SPLIT_GRADS = [
    ((4, 6), {"num": 2, "axis": 1}, 2),
    ((5, 3), {"sections": [1, -1, 2], "axis": 0}, 3),
    ((2, 3, 3), {"num": 3, "axis": -1}, 3),
    ((4, 2), {"sections": [4], "axis": 0}, 1),
    ((3, 4), {"sections": [0, 4], "axis": 1}, 2),          # an empty piece
]


@pytest.mark.parametrize("shape,attrs,n", SPLIT_GRADS, ids=[f"{s}-{a}" for s, a, _ in SPLIT_GRADS])
def test_split_gradient(shape, attrs, n):
    check_grad("split", {"X": _g(*shape)}, attrs, outputs={"Out": n})


SLICE_GRADS = [
    ((3, 4, 5), {"axes": [0, 2], "starts": [1, -3], "ends": [3, 10000]}),
    ((3, 4, 5), {"axes": [1], "starts": [2], "ends": [3], "decrease_axis": [1]}),
    ((3, 4), {"axes": [0, 1], "starts": [-2, 0], "ends": [-1, -1], "decrease_axis": [0]}),
    ((3, 4), {"axes": [-1], "starts": [-100], "ends": [2]}),
    ((2, 3), {"axes": [0, 1], "starts": [1, 2], "ends": [2, 3], "decrease_axis": [0, 1]}),  # to 0-D
    ((3, 4), {"axes": [1], "starts": [3], "ends": [1]}),                    # empty: zero gradient
    ((4, 3), {"axes": [0], "starts": [1], "ends": [3]}),                    # the (unknown) batch axis
]


@pytest.mark.parametrize("shape,attrs", SLICE_GRADS, ids=[str(a) for _, a in SLICE_GRADS])
def test_slice_gradient(shape, attrs):
    check_grad("slice", {"Input": _g(*shape)}, attrs)


def test_split_gradient_zero_fills_unused_pieces():
    """Only the middle piece reaches the target: the others' gradients are zero-filled and the
    `concat` that forms X@GRAD puts Out@GRAD exactly where the middle piece came from."""
    from headrace.autodiff import gradients
    from headrace.nn.tensor import split
    from tests.helpers import build_and_run

    def build(x, w):
        x.stop_gradient = False
        return gradients([split(x, 3, axis=1)[1]], [x], target_gradients=[w])

    w = _g(2, 2)
    (dx,), _ = build_and_run(build, {"x": _g(2, 6), "w": w})
    want = np.zeros((2, 6))
    want[:, 2:4] = w
    np.testing.assert_array_equal(dx, want)


def test_concat_gradient_of_one_input_only():
    """Inputs that need no gradient are `@EMPTY@` positions; the one wanted gets its piece."""
    from headrace.autodiff import gradients
    from headrace.ops.apply import apply_op_single
    from tests.helpers import build_and_run

    def build(a, b, c, w):
        b.stop_gradient = False
        out = apply_op_single("concat", {"X": [a, b, c]}, {"axis": 1})
        return gradients([out], [b], target_gradients=[w])

    w = _g(2, 6)
    (db,), _ = build_and_run(build, {"a": _g(2, 1), "b": _g(2, 3), "c": _g(2, 2), "w": w})
    np.testing.assert_array_equal(db, w[:, 1:4])


def test_view_grad_kernels_read_shapes_only_and_return_views():
    """reshape2_grad/transpose2_grad/concat_grad kernels work from shapes (Meta), compute nothing
    that is not wanted, and hand back views of Out@GRAD."""
    from headrace.ops.registry import Meta, lookup

    dout = _g(6, 4)
    reshape = lookup("reshape2_grad").kernel
    ins = {"XShape": Meta((0, 2, 3, 4), "float64"), "Out@GRAD": dout}
    assert reshape(ins, {"shape": [6, 4]}, context()) == {}
    dx = reshape(ins, {"shape": [6, 4]}, context({"X@GRAD"}))["X@GRAD"]
    assert dx.shape == (2, 3, 4) and np.shares_memory(dx, dout)

    dout = _g(4, 2, 3)
    dx = lookup("transpose2_grad").kernel({"Out@GRAD": dout}, {"axis": [2, 0, 1]},
                                           context({"X@GRAD"}))["X@GRAD"]
    np.testing.assert_array_equal(dx, np.transpose(dout, (1, 2, 0)))

    dout = _g(2, 5)
    pieces = lookup("concat_grad").kernel({"X": [Meta((2, 2), "float64"), Meta((2, 3), "float64")],
                                           "Out@GRAD": dout}, {"axis": -1}, context({"X@GRAD"}))["X@GRAD"]
    assert [p.shape for p in pieces] == [(2, 2), (2, 3)] and all(np.shares_memory(p, dout) for p in pieces)
    np.testing.assert_array_equal(np.concatenate(pieces, axis=1), dout)


def test_slice_grad_places_out_grad_and_keeps_dtype():
    from headrace.ops.registry import Meta, lookup

    kernel = lookup("slice_grad").kernel
    attrs = {"axes": [0, 1], "starts": [-2, 1], "ends": [-1, 3], "decrease_axis": [0], "infer_flags": []}
    dout = np.array([5.0, 7.0], dtype="float32")
    dx = kernel({"Input": Meta((3, 4), "float32"), "Out@GRAD": dout}, attrs, context({"Input@GRAD"}))
    want = np.zeros((3, 4), dtype="float32")
    want[1, 1:3] = [5.0, 7.0]
    assert dx["Input@GRAD"].dtype == np.float32
    np.testing.assert_array_equal(dx["Input@GRAD"], want)
    with pytest.raises(ShapeError, match="slice_grad"):
        kernel({"Input": Meta((3, 4), "float32"), "Out@GRAD": np.ones(3, "float32")}, attrs,
               context({"Input@GRAD"}))
