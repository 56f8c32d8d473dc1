"""fluid.DataFeeder: a minibatch of sample tuples becomes the Executor's feed dict
(reference: python/paddle/base/data_feeder.py, DataFeeder and DataToLoDTensorConverter)."""
import numpy as np
import pytest

import headrace.fluid as fluid
from headrace.core.errors import FeedError


def test_feed_stacks_fields_with_the_variables_dtypes_and_shapes():
    img = fluid.data(name="img", shape=[None, 1, 2, 3], dtype="float32")
    label = fluid.layers.data(name="label", shape=[1], dtype="int64")
    feeder = fluid.DataFeeder(feed_list=[img, label], place=fluid.CPUPlace())
    rng = np.random.default_rng(0)
    samples = [(rng.random(6), i) for i in range(4)]          # flat float64 vectors, python ints
    feed = feeder.feed(samples)
    assert set(feed) == {"img", "label"}
    assert feed["img"].shape == (4, 1, 2, 3) and feed["img"].dtype == np.float32
    np.testing.assert_array_equal(feed["img"], np.stack([s[0] for s in samples]).reshape(4, 1, 2, 3).astype("float32"))
    assert feed["label"].shape == (4, 1) and feed["label"].dtype == np.int64
    assert feed["label"][:, 0].tolist() == [0, 1, 2, 3]


def test_feed_by_names_and_runs_in_the_executor():
    x = fluid.data(name="x", shape=[None, 3], dtype="float32")
    y = fluid.layers.reduce_sum(x, dim=1)
    feeder = fluid.DataFeeder(["x"], fluid.CPUPlace())
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    samples = [([1, 2, 3],), ([4, 5, 6],)]
    (out,) = exe.run(feed=feeder.feed(samples), fetch_list=[y])
    np.testing.assert_allclose(out, [6, 15])


def test_a_batch_of_13_scalars_does_not_spill_into_one_row():
    # the reference reshapes to [-1, 13] and would make one row of 13 samples; we keep one per row
    x = fluid.data(name="x", shape=[None, 13], dtype="float32")
    feeder = fluid.DataFeeder([x], fluid.CPUPlace())
    with pytest.raises(FeedError, match="'x'.*reshape error"):
        feeder.feed([(float(i),) for i in range(13)])


def test_errors_name_the_variable():
    x = fluid.data(name="x", shape=[None, 3], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    feeder = fluid.DataFeeder([x, label], fluid.CPUPlace())
    with pytest.raises(FeedError, match=r"sample 1 has 1 fields.*\['x', 'label'\]"):
        feeder.feed([([1, 2, 3], 0), ([1, 2, 3],)])
    with pytest.raises(FeedError, match=r"'x'.*shape not match.*\[-1, 3\].*\[2, 4\]"):
        feeder.feed([([1, 2, 3, 4], 0), ([1, 2, 3, 4], 1)])
    with pytest.raises(FeedError, match="'x'.*cannot be stacked"):
        feeder.feed([([1, 2, 3], 0), ([1, 2], 1)])
    with pytest.raises(FeedError, match="empty"):
        feeder.feed([])
    with pytest.raises(ValueError, match="no variable named 'nope'"):
        fluid.DataFeeder(["nope"], fluid.CPUPlace())
    with pytest.raises(TypeError, match="list of variable"):
        fluid.DataFeeder([3], fluid.CPUPlace())


def test_lod_level_feeds_are_not_supported():
    words = fluid.layers.data(name="words", shape=[1], dtype="int64", lod_level=1)
    with pytest.raises(NotImplementedError, match="'words' has lod_level=1.*not supported"):
        fluid.DataFeeder([words], fluid.CPUPlace())


def test_feed_parallel_gives_one_dict_per_minibatch():
    x = fluid.data(name="x", shape=[None, 2], dtype="float32")
    feeder = fluid.DataFeeder([x], fluid.CPUPlace())
    dicts = list(feeder.feed_parallel([[([1, 2],)], [([3, 4],), ([5, 6],)]], num_places=2))
    assert [d["x"].shape for d in dicts] == [(1, 2), (2, 2)]
    with pytest.raises(ValueError, match="2 minibatches for 3 places"):
        list(feeder.feed_parallel([[([1, 2],)], [([3, 4],)]], num_places=3))


def test_decorate_reader_single_and_multi_device():
    x = fluid.data(name="x", shape=[None, 2], dtype="float32")
    feeder = fluid.DataFeeder([x], fluid.CPUPlace())
    minibatches = [[([i, i],)] * (i + 1) for i in range(5)]
    single = list(feeder.decorate_reader(lambda: iter(minibatches), multi_devices=False)())
    assert [d["x"].shape for d in single] == [(1, 2), (2, 2), (3, 2), (4, 2), (5, 2)]
    multi = list(feeder.decorate_reader(lambda: iter(minibatches), multi_devices=True, num_places=2)())
    assert [[d["x"].shape[0] for d in group] for group in multi] == [[1, 2], [3, 4]]     # the 5th is dropped
    with pytest.raises(ValueError, match="last 1 minibatches do not fill 2 places"):
        list(feeder.decorate_reader(lambda: iter(minibatches), True, num_places=2, drop_last=False)())
