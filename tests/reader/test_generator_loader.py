"""DataLoader.from_generator / fluid.io.PyReader (reference: python/paddle/base/reader.py,
GeneratorLoader and DygraphGeneratorLoader; test/legacy_test/test_generator_dataloader.py,
test_py_reader_*), reached as ``fluid.io.DataLoader.from_generator`` (``paddle.io.DataLoader``'s
static method, which delegates to ``headrace/io/generator_loader.py``) and ``fluid.io.PyReader``."""
import threading

import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid

from_generator = fluid.io.DataLoader.from_generator
from_dataset = fluid.io.DataLoader.from_dataset


def _net():
    image = fluid.data(name="image", shape=[None, 4], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    total = fluid.layers.reduce_sum(image) + fluid.layers.cast(fluid.layers.reduce_sum(label), "float32")
    return image, label, total


def _samples(n=10):
    def reader():
        for i in range(n):
            yield np.full(4, i, "float64"), i      # float64 and a python int: converted per the feed vars
    return reader


def _sums(loader, total):
    exe = fluid.Executor(fluid.CPUPlace())
    return [float(exe.run(feed=data, fetch_list=[total])[0]) for data in loader()]


def test_sample_generator_batches_and_converts_like_the_data_feeder():
    image, label, total = _net()
    loader = from_generator(feed_list=[image, label], capacity=4)
    loader.set_sample_generator(_samples(10), batch_size=4, drop_last=True, places=fluid.CPUPlace())
    steps = list(loader())
    assert len(steps) == 2 and all(isinstance(s, list) and len(s) == 1 for s in steps)
    first = steps[0][0]
    assert set(first) == {"image", "label"}
    assert first["image"].dtype == np.float32 and first["image"].shape == (4, 4)
    assert first["label"].dtype == np.int64 and first["label"][:, 0].tolist() == [0, 1, 2, 3]
    assert _sums(loader, total) == [4 * (0 + 1 + 2 + 3) + 6, 4 * (4 + 5 + 6 + 7) + 22]
    loader.set_sample_generator(_samples(10), batch_size=4, drop_last=False, places=fluid.CPUPlace())
    assert [s[0]["image"].shape[0] for s in loader()] == [4, 4, 2]


def test_sample_list_and_batch_generators_and_return_list():
    image, label, total = _net()
    loader = from_generator(feed_list=[image, label], capacity=2, return_list=True)
    loader.set_sample_list_generator(paddle.batch(_samples(6), 3), places=[fluid.CPUPlace()])
    steps = list(loader())
    assert len(steps) == 2 and isinstance(steps[0][0], list) and steps[0][0][0].shape == (3, 4)

    def batches():
        for i in range(3):
            yield np.full((2, 4), i, "float32"), np.full((2, 1), i, "int64")

    loader = from_generator(feed_list=[image, label], capacity=2)
    loader.set_batch_generator(batches, places=fluid.CPUPlace())
    assert _sums(loader, total) == [0.0, 8.0 + 2, 16.0 + 4]
    assert _sums(loader, total) == [0.0, 8.0 + 2, 16.0 + 4]          # a second epoch starts over


def test_several_places_take_one_batch_each_per_step():
    image, label, _ = _net()
    loader = from_generator(feed_list=[image, label], capacity=4, drop_last=True)
    loader.set_sample_generator(_samples(10), batch_size=2, places=fluid.cpu_places(2))
    steps = list(loader())
    assert len(steps) == 2 and all(len(s) == 2 for s in steps)        # 5 batches: the 5th is dropped
    assert [d["label"][:, 0].tolist() for d in steps[1]] == [[4, 5], [6, 7]]
    loader = from_generator(feed_list=[image, label], capacity=4, drop_last=False)
    loader.set_sample_generator(_samples(10), batch_size=2, places=[fluid.CPUPlace(), fluid.CPUPlace()])
    with pytest.raises(ValueError, match="1 batches for 2 places"):
        list(loader())


def test_a_generator_error_reaches_the_loop():
    image, label, _ = _net()

    def broken():
        yield np.zeros(4, "float32"), 0
        raise OSError("cannot read shard 3")

    loader = from_generator(feed_list=[image, label], capacity=2)
    loader.set_sample_generator(broken, batch_size=1, places=fluid.CPUPlace())
    with pytest.raises(RuntimeError, match="DataLoader.*OSError: cannot read shard 3") as info:
        list(loader())
    assert isinstance(info.value.__cause__, OSError)


def test_reads_ahead_in_a_thread_up_to_capacity():
    image, label, _ = _net()
    produced = []

    def batches():
        for i in range(10):
            produced.append(threading.get_ident())
            yield np.zeros((1, 4), "float32"), np.zeros((1, 1), "int64")

    loader = from_generator(feed_list=[image, label], capacity=3)
    loader.set_batch_generator(batches, places=fluid.CPUPlace())
    assert len(list(loader())) == 10
    assert produced and threading.get_ident() not in set(produced)


def test_argument_errors_and_unsupported_modes():
    image, label, _ = _net()
    with pytest.raises(ValueError, match="capacity"):
        from_generator(feed_list=[image, label])
    with pytest.raises(ValueError, match="Feed list must be given"):
        from_generator(capacity=2)
    with pytest.raises(NotImplementedError, match="iterable=False.*not supported"):
        from_generator(feed_list=[image, label], capacity=2, iterable=False)
    with pytest.raises(NotImplementedError, match="use_multiprocess"):
        from_generator(feed_list=[image, label], capacity=2, use_multiprocess=True)
    with pytest.raises(NotImplementedError, match="from_dataset is not supported"):
        from_dataset(None, fluid.CPUPlace())
    loader = from_generator(feed_list=[image, label], capacity=2)
    with pytest.raises(RuntimeError, match="has not set yet"):
        list(loader())
    with pytest.raises(ValueError, match="Places cannot be None"):
        loader.set_sample_generator(_samples(), batch_size=2)
    with pytest.raises(ValueError, match="batch_size must be larger than 0"):
        loader.set_sample_generator(_samples(), batch_size=0, places=fluid.CPUPlace())
    loader.set_batch_generator(lambda: iter([(np.zeros((1, 4), "float32"),)]), places=fluid.CPUPlace())
    with pytest.raises(ValueError, match=r"1 arrays, but feed_list has 2 variables \['image', 'label'\]"):
        list(loader())
    loader.set_batch_generator(lambda: iter([([[1, 2], [3]], [0])]), places=fluid.CPUPlace())
    with pytest.raises(TypeError, match="nested lists with different lengths"):
        list(loader())


def test_the_2x_and_1x_names_are_one_loader():
    assert fluid.io.DataLoader is paddle.io.DataLoader
    image, label, _ = _net()
    loader = paddle.io.DataLoader.from_generator(feed_list=[image, label], capacity=2)
    assert type(loader).__module__ == "headrace.io.generator_loader"


def test_pyreader_is_the_same_loader_under_the_1x_names():
    image, label, total = _net()
    reader = fluid.io.PyReader(feed_list=[image, label], capacity=4, iterable=True)
    reader.decorate_sample_list_generator(paddle.batch(_samples(4), batch_size=2), fluid.CPUPlace())
    assert _sums(reader, total) == [4 * 1.0 + 1, 4 * 5.0 + 5]


def test_eager_mode_yields_lists_of_tensors():
    with fluid.dygraph.guard():
        with pytest.warns(UserWarning, match="returning as list only"):
            loader = from_generator(capacity=2)
        loader.set_sample_generator(_samples(4), batch_size=2)
        steps = list(loader())
        assert len(steps) == 2 and isinstance(steps[0][0], paddle.Tensor)
        np.testing.assert_array_equal(steps[1][0].numpy(), np.full((2, 4), [[2], [3]], "float64"))
        assert steps[1][1].numpy().tolist() == [2, 3]
