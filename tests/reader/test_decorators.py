"""paddle.batch and the paddle.reader decorators, against the reference's semantics
(python/paddle/reader/decorator.py, test/legacy_test/test_reader_decorator-style checks)."""
import random
import threading
import time

import pytest

import headrace as paddle
import headrace.fluid as fluid


def reader_of(items):
    return lambda: iter(list(items))


def test_batch_groups_and_keeps_last_partial_batch():
    assert list(paddle.batch(reader_of(range(10)), batch_size=4)()) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert list(paddle.batch(reader_of(range(10)), 4, drop_last=True)()) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert list(paddle.batch(reader_of(range(4)), 2)()) == [[0, 1], [2, 3]]
    # a batch reader can be read again: each call starts a fresh pass
    r = paddle.batch(reader_of(range(3)), 2)
    assert list(r()) == list(r()) == [[0, 1], [2]]


@pytest.mark.parametrize("size", [0, -3])
def test_batch_size_must_be_positive(size):
    with pytest.raises(ValueError, match=f"batch_size={size}"):
        paddle.batch(reader_of(range(3)), size)


def test_batch_rejects_a_non_reader():
    with pytest.raises(TypeError, match="reader must be a reader"):
        paddle.batch([1, 2, 3], 2)


def test_shuffle_is_a_permutation_within_windows():
    random.seed(3)
    out = list(paddle.reader.shuffle(reader_of(range(10)), buf_size=4)())
    assert sorted(out[:4]) == [0, 1, 2, 3] and sorted(out[4:8]) == [4, 5, 6, 7] and sorted(out[8:]) == [8, 9]
    big = list(paddle.reader.shuffle(reader_of(range(200)), buf_size=200)())
    assert sorted(big) == list(range(200)) and big != list(range(200))
    with pytest.raises(ValueError, match="buf_size"):
        paddle.reader.shuffle(reader_of(range(3)), 0)


def test_chain_and_map_readers_and_firstn_and_cache():
    assert list(paddle.reader.chain(reader_of([1, 2]), reader_of([]), reader_of([3]))()) == [1, 2, 3]
    assert list(paddle.reader.map_readers(lambda a, b: a * b, reader_of([1, 2, 3]), reader_of([4, 5]))()) == [4, 10]
    assert list(paddle.reader.firstn(reader_of(range(100)), 5)()) == [0, 1, 2, 3, 4]
    calls = []

    def counted():
        calls.append(1)
        yield from range(3)

    cached = paddle.reader.cache(counted)
    assert list(cached()) == list(cached()) == [0, 1, 2] and len(calls) == 1


def test_firstn_stops_reading_the_source_early():
    seen = []

    def source():
        for i in range(100):
            seen.append(i)
            yield i

    assert list(paddle.reader.firstn(source, 3)()) == [0, 1, 2]
    assert len(seen) == 3


def test_compose_flattens_tuples_and_checks_alignment():
    composed = paddle.reader.compose(reader_of([(1, 2), (10, 20)]), reader_of([3, 30]), reader_of([(4, 5), (40, 50)]))
    assert list(composed()) == [(1, 2, 3, 4, 5), (10, 20, 30, 40, 50)]
    ragged = paddle.reader.compose(reader_of([1, 2, 3]), reader_of([1, 2]))
    with pytest.raises(paddle.reader.ComposeNotAligned, match="not aligned"):
        list(ragged())
    assert issubclass(paddle.reader.ComposeNotAligned, ValueError)
    loose = paddle.reader.compose(reader_of([1, 2, 3]), reader_of([1, 2]), check_alignment=False)
    assert list(loose()) == [(1, 1), (2, 2)]
    # a None sample is a sample, not a missing one
    assert list(paddle.reader.compose(reader_of([None]), reader_of([1]))()) == [(None, 1)]


def test_buffered_reads_ahead_in_a_thread_and_keeps_order():
    ahead = []

    def source():
        for i in range(5):
            ahead.append(i)
            yield i

    it = paddle.reader.buffered(source, 10)()
    assert next(it) == 0
    deadline = time.time() + 5
    while len(ahead) < 5 and time.time() < deadline:
        time.sleep(0.01)
    assert ahead == [0, 1, 2, 3, 4]            # the thread filled the buffer before we asked
    assert list(it) == [1, 2, 3, 4]


def test_buffered_reraises_the_source_error_in_the_consumer():
    def broken():
        yield 1
        raise OSError("disk gone")

    it = paddle.reader.buffered(broken, 2)()
    assert next(it) == 1
    with pytest.raises(RuntimeError, match="OSError: disk gone") as info:
        next(it)
    assert isinstance(info.value.__cause__, OSError)


def _slow_square(x):
    time.sleep(0.002 * (x % 3))
    return x * x


def test_xmap_readers_maps_in_threads_with_and_without_order():
    ordered = paddle.reader.xmap_readers(_slow_square, reader_of(range(30)), 4, 8, order=True)
    assert list(ordered()) == [x * x for x in range(30)]
    unordered = list(paddle.reader.xmap_readers(_slow_square, reader_of(range(30)), 4, 8)())
    assert sorted(unordered) == [x * x for x in range(30)]
    threads = set()

    def record(x):
        threads.add(threading.get_ident())
        time.sleep(0.005)
        return x

    list(paddle.reader.xmap_readers(record, reader_of(range(20)), 3, 4)())
    assert len(threads) > 1 and threading.get_ident() not in threads


def test_xmap_readers_reraises_a_mapper_error_and_stops_its_threads():
    def mapper(x):
        if x == 5:
            raise KeyError("bad sample 5")
        return x

    before = threading.active_count()
    with pytest.raises(RuntimeError, match="KeyError") as info:
        list(paddle.reader.xmap_readers(mapper, reader_of(range(50)), 2, 2, order=True)())
    assert isinstance(info.value.__cause__, KeyError)
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.02)
    assert threading.active_count() == before


def test_xmap_readers_argument_checks():
    with pytest.raises(ValueError, match="process_num"):
        paddle.reader.xmap_readers(abs, reader_of([1]), 0, 2)
    with pytest.raises(TypeError, match="mapper must be callable"):
        paddle.reader.xmap_readers(3, reader_of([1]), 1, 2)


def test_fluid_io_exports_the_same_decorators():
    assert fluid.io.batch is paddle.batch
    assert fluid.io.shuffle is paddle.reader.shuffle and fluid.io.xmap_readers is paddle.reader.xmap_readers
