"""ops/gemm.py: matrix products split over the intra-op pool with BLAS at one thread are the
product, give the same bits whether the pool is free or busy, restore BLAS's thread count, and
run whole where they should."""
import threading

import weakref

import numpy as np
import pytest

import headrace as paddle
from headrace.ops import gemm, parallel

pytestmark = pytest.mark.skipif(not gemm.available(), reason="NumPy's BLAS is not an OpenBLAS whose threads can be set")


@pytest.fixture
def threads():
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    paddle.set_flags({"FLAGS_paddle_num_threads": 2})
    yield lambda count: paddle.set_flags({"FLAGS_paddle_num_threads": count})
    paddle.set_flags(old)


@pytest.fixture
def blas_two():
    """OpenBLAS at 2 threads for one test (restored after): what headrace must restore."""
    get, put = gemm._blas
    before = get()
    put(2)
    yield get
    put(before)


def _operands(a_shape, b_shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(a_shape).astype(dtype), rng.standard_normal(b_shape).astype(dtype)


def _one_blas_thread(fn, *args):
    get, put = gemm._blas
    before = get()
    put(1)
    try:
        return fn(*args)
    finally:
        put(before)


# (a shape, b shape): the zoo's products (encoder, embed, LSTM, LeNet/ResNet convolutions) and
# ragged ones (sizes not multiples of the piece alignment)
SHAPES = [
    ((2048, 256), (256, 1024)),          # rows
    ((2048, 1024), (1024, 256)),
    ((32, 256), (256, 1024)),            # columns
    ((64, 15488), (15488, 288)),         # columns, long K
    ((1001, 300), (300, 77)),            # ragged rows
    ((70, 300), (300, 1003)),            # ragged columns
    ((64, 128, 64), (64, 64, 128)),      # batched
    ((1, 64, 288), (128, 1, 288, 121)),  # broadcast batch (a convolution's filters over samples)
    ((1, 288, 64), (1, 64, 15488)),      # a batch of one: its matrix, split by columns
    ((3, 400, 200), (200, 300)),         # 2-D b against a batch
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape,b_shape", SHAPES)
def test_split_products_are_the_product_and_the_same_bits_when_the_pool_is_busy(threads, a_shape, b_shape, dtype):
    a, b = _operands(a_shape, b_shape, dtype)
    pieces = []
    original = parallel.run_pieces
    parallel.run_pieces = lambda fn, p: (pieces.append(len(p)), original(fn, p))
    try:
        got = gemm.matmul(a, b)
        out = np.full_like(got, np.nan)
        holder = parallel._Token()    # another kernel holds the pool: the same pieces, one by one
        assert parallel._take_pool(weakref.ref(holder))
        try:
            returned = gemm.matmul(a, b, out=out)
        finally:
            parallel._free_pool(parallel._holder[0])
    finally:
        parallel.run_pieces = original
    assert pieces == [2, 2], "the product should have been split over two threads"
    assert returned is out
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.dtype == dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-3 if dtype == np.float32 else 1e-10)
    assert np.array_equal(out, got)


def test_transposed_views_and_strided_out(threads):
    a, b = _operands((512, 300), (700, 300), np.float32)
    out = np.zeros((512, 700), np.float32)
    gemm.matmul(a, b.T, out=out)
    assert np.array_equal(out, a @ b.T)
    at, bt = _operands((300, 900), (300, 128), np.float32, seed=1)   # X^T @ dOut, as in a weight gradient
    assert np.array_equal(gemm.matmul(at.T, bt), at.T @ bt)


def test_blas_threads_are_one_during_a_product_and_restored_after(threads, blas_two, monkeypatch):
    seen = []
    original = gemm._piece

    def spy(a, b, out):
        seen.append(blas_two())
        original(a, b, out)
    monkeypatch.setattr(gemm, "_piece", spy)
    gemm.matmul(*_operands((1024, 512), (512, 512), np.float32))
    assert seen and set(seen) == {1}
    assert blas_two() == 2


def test_small_products_and_one_thread_run_whole(threads):
    calls = []
    original = parallel.run_pieces
    parallel.run_pieces = lambda fn, p: (calls.append(len(p)), original(fn, p))
    try:
        a, b = _operands((8, 16), (16, 16), np.float32)
        assert np.array_equal(gemm.matmul(a, b), a @ b)              # below BLAS's own threading size
        threads(1)
        a, b = _operands((1024, 512), (512, 512), np.float32)
        assert np.array_equal(gemm.matmul(a, b), _one_blas_thread(np.matmul, a, b))
    finally:
        parallel.run_pieces = original
    assert calls == []


def test_products_from_several_threads_at_once_restore_blas(threads, blas_two):
    """Data-parallel places run kernels in threads: whoever gets the pool, the same pieces and bits."""
    a, b = _operands((1024, 512), (512, 768), np.float32)
    expected = gemm.matmul(a, b)
    results, errors = [None] * 6, []

    def work(i):
        try:
            for _ in range(5):
                results[i] = gemm.matmul(a, b)
        except BaseException as exc:   # noqa: BLE001 - reported below
            errors.append(exc)
    workers = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    assert all(np.array_equal(r, expected) for r in results)
    assert blas_two() == 2 and not gemm._active


def test_an_error_in_a_product_restores_blas(threads, blas_two):
    a, _ = _operands((1024, 512), (512, 512), np.float32)
    with pytest.raises(ValueError):
        gemm.matmul(a, np.ones((512, 512), np.float32), out=np.empty((1024, 500), np.float32))
    assert blas_two() == 2 and not gemm._active


def _child_product(conn):
    a, b = _operands((1024, 512), (512, 512), np.float32)
    conn.send((len(gemm._active), gemm._blas[0](), np.allclose(gemm.matmul(a, b), a @ b, rtol=1e-4, atol=1e-3),
               len(gemm._active)))
    conn.close()


def test_a_child_forked_during_a_product_starts_clean(threads, blas_two):
    import multiprocessing
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    token = gemm._Token()
    gemm._enter(token)            # a product of another thread is running while we fork
    try:
        process = context.Process(target=_child_product, args=(child,))
        process.start()
    finally:
        gemm._leave(token)
    depth_at_start, blas_threads, ok, depth_after = parent.recv()
    process.join(30)
    assert (depth_at_start, blas_threads, ok, depth_after) == (0, 2, True, 0)
    assert blas_two() == 2


def test_an_out_overlapping_an_operand_is_numpys_product(threads):
    square, _ = _operands((2048, 2048), (1, 1), np.float32)
    want = square @ square
    got = gemm.matmul(square, square, out=square)   # np.matmul copies the operand first
    assert got is square and np.array_equal(got, want)


def test_mismatched_shapes_raise_numpys_own_error(threads):
    a, b = _operands((3, 256, 256), (4, 256, 256), np.float32)
    with pytest.raises(ValueError) as ours:
        gemm.matmul(a, b)
    with pytest.raises(ValueError) as numpys:
        np.matmul(a, b)
    assert str(ours.value) == str(numpys.value)


def test_a_count_the_user_sets_during_a_product_stays(threads, blas_two, monkeypatch):
    original = gemm._piece

    def user_sets_three(a, b, out):
        gemm._blas[1](3)      # e.g. threadpoolctl in another thread, while the product runs
        original(a, b, out)
    monkeypatch.setattr(gemm, "_piece", user_sets_three)
    gemm.matmul(*_operands((1024, 512), (512, 512), np.float32))
    assert blas_two() == 3 and not gemm._active
