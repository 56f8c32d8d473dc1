"""Row blocks (ops/rowblocks.py) in softmax, layer_norm and batch_norm: the same bits for any
thread count and input layout, row-wise results independent of the blocks, column sums added in
block order; softmax's unshifted rows and the rows it shifts by their max; odd and empty shapes."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops import parallel, rowblocks
from headrace.ops.gradrule import grad_slot as G
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

RNG = np.random.default_rng(18)


def _kernel(op, ins, attrs=None, wanted=(), out=None):
    opdef = lookup(op)
    result = opdef.kernel(ins, dict(opdef.attrs, **(attrs or {})), context(wanted, out=out))
    return {k: np.array(v, copy=True) for k, v in result.items()}


def _bits(result):
    return {k: (v.dtype, v.shape, v.tobytes()) for k, v in result.items()}


@pytest.fixture
def settings(monkeypatch):
    """``set(threads, block_elements)``: the intra-op thread count and the block size."""
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 16)
    old = paddle.get_flags("FLAGS_paddle_num_threads")

    def set_(threads, block_elements):
        paddle.set_flags({"FLAGS_paddle_num_threads": threads})
        monkeypatch.setattr(rowblocks, "BLOCK_ELEMENTS", block_elements)
    yield set_
    paddle.set_flags(old)


def _ln(shape, axis, dtype="float32"):
    x = (RNG.standard_normal(shape) * 3 + 1).astype(dtype)
    width = int(np.prod(shape[axis:]))
    stat = "float32" if dtype == "float16" else dtype
    ins = {"X": x, "Scale": RNG.uniform(0.5, 1.5, width).astype(stat), "Bias": RNG.standard_normal(width).astype(stat)}
    fwd = _kernel("layer_norm", ins, {"begin_norm_axis": axis})
    grad = {**ins, "Mean": fwd["Mean"], "Variance": fwd["Variance"], G("Y"): RNG.standard_normal(shape).astype(dtype)}
    return [("layer_norm", ins, {"begin_norm_axis": axis}, ()),
            ("layer_norm_grad", grad, {"begin_norm_axis": axis}, (G("X"), G("Scale"), G("Bias")))]


def _softmax(shape, dtype="float32", scale=3.0):
    x = (RNG.standard_normal(shape) * scale).astype(dtype)
    out = _kernel("softmax", {"X": x})["Out"]
    return [("softmax", {"X": x}, {}, ()),
            ("softmax_grad", {"Out": out, G("Out"): RNG.standard_normal(shape).astype(dtype)}, {}, (G("X"),))]


def _bn(shape, dtype="float32"):
    x = (RNG.standard_normal(shape) * 2 + 0.5).astype(dtype)
    c = shape[1]
    ins = {"X": x, "Scale": RNG.uniform(0.5, 1.5, c).astype(dtype), "Bias": RNG.standard_normal(c).astype(dtype),
           "Mean": np.zeros(c, dtype), "Variance": np.ones(c, dtype)}
    fwd = _kernel("batch_norm", ins)
    grad = {"X": x, "Scale": ins["Scale"], "SavedMean": fwd["SavedMean"], "SavedVariance": fwd["SavedVariance"],
            G("Y"): RNG.standard_normal(shape).astype(dtype)}
    return [("batch_norm", ins, {}, ()), ("batch_norm_grad", grad, {}, (G("X"), G("Scale"), G("Bias")))]


CASES = (_ln((13, 33), 1) + _ln((100, 33), 1) + _ln((3, 5, 7, 9), 2) + _ln((6, 40), 1, "float64") + _ln((5, 24), 1, "float16")
         + _softmax((7, 5, 33)) + _softmax((9, 64), "float64") + _softmax((4, 3, 17), scale=40.0)
         + _bn((6, 3, 5, 7)) + _bn((5, 4, 9), "float64"))
COLUMN_SUMS = {G("Scale"), G("Bias")}   # sums across rows: their bits depend on the blocks


def _id(case):
    first = next(iter(case[1].values()))
    return f"{case[0]}-{first.dtype}-{'x'.join(map(str, first.shape))}"


@pytest.mark.parametrize("op, ins, attrs, wanted", CASES, ids=[_id(c) for c in CASES])
def test_blocks_and_threads(settings, op, ins, attrs, wanted):
    """Many small blocks: the same bits on 1, 2 and 3 threads; row-wise outputs equal to one
    block's; column sums within rounding of one block's."""
    settings(1, 1 << 30)
    whole = _kernel(op, ins, attrs, wanted)
    settings(1, 40)
    blocked = _kernel(op, ins, attrs, wanted)
    for threads in (2, 3):
        settings(threads, 40)
        assert _bits(_kernel(op, ins, attrs, wanted)) == _bits(blocked), f"{threads} threads"
    for slot, value in whole.items():
        if slot in COLUMN_SUMS and op.startswith("layer_norm"):
            tol = 1e-2 if value.dtype == np.float16 else 1e-5 if value.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(blocked[slot], value, rtol=tol, atol=tol)
        else:
            assert _bits({slot: blocked[slot]}) == _bits({slot: value}), slot


def test_blocks_cover_the_rows_from_the_shape_alone(monkeypatch):
    monkeypatch.setattr(rowblocks, "BLOCK_ELEMENTS", 100)
    assert rowblocks.blocks(10, 30) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert rowblocks.blocks(2, 500) == [(0, 1), (1, 2)]          # a row wider than a block: one row each
    assert rowblocks.blocks(0, 30) == []
    assert rowblocks.block_count(10, 30) == 4 and rowblocks.block_count(0, 30) == 0
    assert rowblocks.blocks(10, 30, max_blocks=3) == [(0, 4), (4, 8), (8, 10)]   # larger blocks, at most 3
    assert rowblocks.blocks(10, 30, max_blocks=8) == rowblocks.blocks(10, 30)
    assert rowblocks.block_count(64, 1 << 20, 16) == 16    # layer_norm_grad's partials: 16 rows, not 64
    partial = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(rowblocks.combine(partial), [9.0, 12.0])
    np.testing.assert_array_equal(rowblocks.combine(np.zeros((0, 2))), [0.0, 0.0])


def test_layouts_give_the_same_bits():
    """A transposed (non-contiguous) input gives the bits of its contiguous copy."""
    x = RNG.standard_normal((40, 30)).astype(np.float32).T
    dy = RNG.standard_normal((40, 30)).astype(np.float32).T
    for op, ins, wanted in (("softmax", {"X": x}, ()), ("softmax_grad", {"Out": x, G("Out"): dy}, (G("X"),))):
        copied = {k: np.ascontiguousarray(v) for k, v in ins.items()}
        assert _bits(_kernel(op, ins, {}, wanted)) == _bits(_kernel(op, copied, {}, wanted)), op
    ln = {"X": x, "Scale": np.ones(40, np.float32), "Bias": np.zeros(40, np.float32)}
    fwd = _kernel("layer_norm", ln)
    assert _bits(fwd) == _bits(_kernel("layer_norm", {**ln, "X": np.ascontiguousarray(x)}))
    grad = {**ln, "Mean": fwd["Mean"], "Variance": fwd["Variance"], G("Y"): dy}
    wanted = (G("X"), G("Scale"), G("Bias"))
    assert _bits(_kernel("layer_norm_grad", grad, {}, wanted)) == _bits(
        _kernel("layer_norm_grad", {k: np.ascontiguousarray(v) for k, v in grad.items()}, {}, wanted))


def _softmax_reference(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_softmax_rows_are_shifted_where_needed_and_only_there():
    """Rows whose exp overflows, whose sum is below 1 or which hold -inf/NaN next to ordinary
    rows: each row is right, equals that row computed alone, and no overflow is raised for the
    unshifted attempt (underflow in a shifted row is the user's errstate's, as before)."""
    x = RNG.standard_normal((8, 33)).astype(np.float32) * 3
    x[1] += 200.0                    # exp overflows: shifted
    x[2] -= 200.0                    # every exp underflows: shifted
    x[3] -= 6.0                      # sum below 1: shifted
    x[4, :5] = -np.inf               # masked entries: exp 0, sum still >= 1
    x[5] *= 25.0                     # a wide spread: may overflow
    with np.errstate(over="raise", invalid="raise"):
        got = _kernel("softmax", {"X": x})["Out"]
    np.testing.assert_allclose(got, _softmax_reference(x), rtol=2e-6, atol=1e-30)
    assert np.all(got[4, :5] == 0)
    for row in range(x.shape[0]):
        alone = _kernel("softmax", {"X": x[row:row + 1].copy()})["Out"]
        assert alone.tobytes() == got[row:row + 1].tobytes(), row
    x[6, 3] = np.nan
    with np.errstate(invalid="ignore"):
        got = _kernel("softmax", {"X": x})["Out"]
    assert np.isnan(got[6]).all() and not np.isnan(np.delete(got, 6, axis=0)).any()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_buffers_give_the_bits_of_fresh_outputs(dtype):
    x = RNG.standard_normal((50, 37)).astype(dtype) * 4
    fresh = _kernel("softmax", {"X": x})["Out"]
    inplace = x.copy()
    got = lookup("softmax").kernel({"X": inplace}, {"axis": -1}, context(out={"Out": inplace}))["Out"]
    assert got is inplace and got.tobytes() == fresh.tobytes()
    dout = RNG.standard_normal(x.shape).astype(dtype)
    dx = _kernel("softmax_grad", {"Out": fresh, G("Out"): dout}, {}, (G("X"),))[G("X")]
    donated = dout.copy()
    got = lookup("softmax_grad").kernel({"Out": fresh, G("Out"): donated}, {"axis": -1},
                                        context((G("X"),), out={G("X"): donated}))[G("X")]
    assert got is donated and got.tobytes() == dx.tobytes()
    np.testing.assert_allclose(dx, fresh * (dout - (dout * fresh).sum(axis=-1, keepdims=True)), rtol=1e-5, atol=1e-6)


def test_empty_shapes():
    for shape in ((0, 7), (3, 0), (2, 0, 4)):
        x = np.zeros(shape, np.float32)
        assert _kernel("softmax", {"X": x})["Out"].shape == shape
        assert _kernel("softmax_grad", {"Out": x, G("Out"): x}, {}, (G("X"),))[G("X")].shape == shape
    x = np.zeros((0, 6), np.float32)
    ln = _kernel("layer_norm", {"X": x, "Scale": np.ones(6, np.float32), "Bias": np.zeros(6, np.float32)})
    assert ln["Y"].shape == (0, 6) and ln["Mean"].shape == (0,)
    grad = _kernel("layer_norm_grad", {"X": x, "Scale": np.ones(6, np.float32), "Bias": np.zeros(6, np.float32),
                                       "Mean": ln["Mean"], "Variance": ln["Variance"], G("Y"): x}, {},
                   (G("X"), G("Scale"), G("Bias")))
    assert grad[G("X")].shape == (0, 6)
    np.testing.assert_array_equal(grad[G("Scale")], np.zeros(6))
    assert grad[G("Scale")].dtype == np.float32
    np.testing.assert_array_equal(grad[G("Bias")], np.zeros(6))


def test_for_blocks_runs_row_wise_kernels_whole_unless_split(settings):
    """Row-wise kernels (no per-block partials) run as one block on one thread; partial sums keep
    the shape's blocks on any thread count; every row is covered once."""
    for threads, rowwise, want in ((1, True, [(0, 0, 10)]), (1, False, [(0, 0, 3), (1, 3, 6), (2, 6, 9), (3, 9, 10)]),
                                   (2, True, [(0, 0, 3), (1, 3, 6), (2, 6, 9), (3, 9, 10)])):
        settings(threads, 100)
        calls = []
        count = rowblocks.for_blocks(lambda *span: calls.append(span), 10, 30, rowwise=rowwise)
        assert sorted(calls) == want and count == len(want), (threads, rowwise)
