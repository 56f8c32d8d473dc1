"""Wide rows in the row-block kernels (ops/rowblocks.py ``row_sums``/``row_dots``): softmax and
layer_norm over rows wider than einsum's 8192-element buffer give the same bits for any thread
count and a row alone the bits it has in a batch; sums stay pairwise-accurate; batch norm's mean
over millions of values too (review findings: einsum's sequential sums lost ~10-100x accuracy
there, and their bits depended on how many rows one call got)."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops import rowblocks
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

RNG = np.random.default_rng(8)


def _run(op, ins, attrs=None, wanted=("Out",)):
    opdef = lookup(op)
    return opdef.kernel(ins, dict(opdef.attrs, **(attrs or {})), context(wanted))


@pytest.fixture
def threads():
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    yield lambda count: paddle.set_flags({"FLAGS_paddle_num_threads": count})
    paddle.set_flags(old)


def test_wide_softmax_rows_same_bits_for_any_thread_count_and_alone(threads):
    x = RNG.standard_normal((4, 50257)).astype("float32")     # a GPT-2 vocabulary
    bits = set()
    for count in (1, 2, 3):
        threads(count)
        bits.add(_run("softmax", {"X": x})["Out"].tobytes())
    assert len(bits) == 1
    threads(1)
    alone = _run("softmax", {"X": x[:1]})["Out"]
    np.testing.assert_array_equal(alone[0], np.frombuffer(bits.pop(), "float32").reshape(x.shape)[0])


def test_wide_softmax_rows_are_accurate():
    x = (RNG.standard_normal((4, 152064)) * 0.05).astype("float32")
    out = _run("softmax", {"X": x})["Out"]
    exact = np.exp(x.astype("float64"))
    exact /= exact.sum(axis=1, keepdims=True)
    assert np.max(np.abs(out / exact - 1)) < 6e-7          # a few float32 ulps (einsum gave 1.2e-6)
    assert np.max(np.abs(out.astype("float64").sum(axis=1) - 1)) < 3e-7


def test_wide_layer_norm_rows_same_bits_for_any_thread_count_and_accurate(threads):
    x = (RNG.standard_normal((4, 65536)) + 100).astype("float32")
    bits = set()
    for count in (1, 2, 3):
        threads(count)
        y = _run("layer_norm", {"X": x}, {"begin_norm_axis": 1}, ("Y", "Mean", "Variance"))["Y"]
        bits.add(y.tobytes())
    assert len(bits) == 1
    x64 = x.astype("float64")
    exact = (x64 - x64.mean(axis=1, keepdims=True)) / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5)
    assert np.max(np.abs(y - exact)) < 2e-5                 # einsum's mean gave 8e-5


def test_batch_norm_mean_over_millions_of_values_is_accurate():
    x = (RNG.standard_normal((1, 2, 1024, 1024)) + 5).astype("float32")
    ins = {"X": x, "Scale": np.ones(2, "float32"), "Bias": np.zeros(2, "float32"),
           "Mean": np.zeros(2, "float32"), "Variance": np.ones(2, "float32")}
    saved = _run("batch_norm", ins, {"is_test": False}, ("Y", "SavedMean"))["SavedMean"]
    exact = x.astype("float64").mean(axis=(0, 2, 3))
    assert np.max(np.abs(saved / exact - 1)) < 1e-6         # einsum's sum gave 5.7e-6


@pytest.mark.parametrize("width", [1, 7, 512, 513, 9000])
def test_row_sums_and_dots_of_a_row_do_not_depend_on_the_other_rows(width):
    a, b = RNG.standard_normal((2, 5, width)).astype("float32")
    sums, dots = rowblocks.row_sums(a), rowblocks.row_dots(a, b)
    for i in range(5):
        assert rowblocks.row_sums(a[i:i + 1])[0] == sums[i]
        assert rowblocks.row_dots(a[i:i + 1], b[i:i + 1])[0] == dots[i]
    np.testing.assert_allclose(sums, a.astype("float64").sum(axis=1), rtol=1e-5, atol=1e-4)


def test_softmax_in_place_needs_no_full_size_scratch(monkeypatch):
    """Out = X (the inplace buffer): rows run block by block, each block's exp in a block-sized
    scratch array, never one as large as X."""
    x = RNG.standard_normal((64, 4096)).astype("float32")
    expected = _run("softmax", {"X": x.copy()})["Out"]
    sizes, real = [], np.empty_like
    monkeypatch.setattr(np, "empty_like", lambda a, *args, **kw: sizes.append(a.size) or real(a, *args, **kw))
    opdef = lookup("softmax")
    out = opdef.kernel({"X": x}, dict(opdef.attrs), context(("Out",), out={"Out": x}))["Out"]
    assert out is x
    np.testing.assert_array_equal(out, expected)
    assert sizes and max(sizes) <= rowblocks.BLOCK_ELEMENTS


def test_row_dots_of_wide_rows_need_no_full_size_scratch(monkeypatch):
    """A one-block layer_norm over wide rows took a product the size of X for its variance
    (review): the wide rows' products are taken a block of rows at a time."""
    a, b = RNG.standard_normal((2, 64, 4096)).astype("float32")
    expected = np.array([np.add.reduce(a[i] * b[i]) for i in range(64)], "float32")
    got = rowblocks.row_dots(a, b)
    np.testing.assert_array_equal(got, expected)
    import tracemalloc
    x = RNG.standard_normal((64, 4096)).astype("float32")          # 1 MiB
    out = np.empty(64, "float32")
    tracemalloc.start()
    try:
        rowblocks.row_dots(x, x, out=out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= rowblocks.BLOCK_ELEMENTS * 4 + (64 << 10)       # one block's products, not 1 MiB
