"""paddle.io.DataLoader in the main process (num_workers=0): batching, collate, samplers, errors,
and what it yields in dygraph and static mode (the reference's test_dataloader_*.py cases)."""
import numpy as np
import pytest

import headrace as paddle
from headrace.core.errors import ShapeError
from headrace.io import BatchSampler, DataLoader, Dataset, IterableDataset, default_collate_fn


class Squares(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __getitem__(self, i):
        return np.array([i, i * i], dtype="float32"), i

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield np.array([i], dtype="int64")


def _values(batches):
    return [b.numpy().tolist() for b in batches]


def test_map_dataset_batches_are_tensors(dygraph):
    loader = DataLoader(Squares(10), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert len(batches) == 3
    x, y = batches[0]
    assert isinstance(x, paddle.Tensor) and isinstance(y, paddle.Tensor)
    assert x.shape == [4, 2] and x.dtype == paddle.float32
    assert y.dtype == paddle.int64 and y.numpy().tolist() == [0, 1, 2, 3]
    np.testing.assert_array_equal(batches[2][0].numpy(), [[8, 64], [9, 81]])
    assert len(list(loader())) == 3     # calling the loader iterates too


def test_drop_last_and_len(dygraph):
    loader = DataLoader(Squares(10), batch_size=4, drop_last=True)
    assert len(loader) == 2 and len(list(loader)) == 2


def test_shuffle_is_a_permutation_repeatable_with_numpy_seed(dygraph):
    loader = DataLoader(Squares(20), batch_size=5, shuffle=True)
    np.random.seed(4)
    order = [v for _, y in loader for v in y.numpy().tolist()]
    assert sorted(order) == list(range(20)) and order != list(range(20))
    np.random.seed(4)
    assert [v for _, y in loader for v in y.numpy().tolist()] == order


def test_batch_sampler_and_no_batching(dygraph):
    sampler = BatchSampler(sampler=[4, 2, 0, 3], batch_size=3)
    loader = DataLoader(Squares(), batch_sampler=sampler)
    assert len(loader) == 2
    assert [y.numpy().tolist() for _, y in loader] == [[4, 2, 0], [3]]
    single = DataLoader(Squares(3), batch_size=None)
    assert len(single) == 3
    samples = list(single)
    assert samples[1][0].numpy().tolist() == [1.0, 1.0] and samples[1][1] == 1   # numbers stay numbers


def test_dict_string_and_nested_samples(dygraph):
    class D(Dataset):
        def __getitem__(self, i):
            return {"image": np.full((2, 2), i, "float32"), "meta": (f"s{i}", [float(i), i])}

        def __len__(self):
            return 3

    (batch,) = list(DataLoader(D(), batch_size=3))
    assert set(batch) == {"image", "meta"}
    assert batch["image"].shape == [3, 2, 2]
    names, (floats, ints) = batch["meta"]
    assert names == ["s0", "s1", "s2"]
    assert floats.dtype == paddle.float64 and ints.dtype == paddle.int64   # np.array of Python numbers
    assert floats.numpy().tolist() == [0.0, 1.0, 2.0]


def test_tensor_samples_are_stacked(dygraph):
    data = paddle.to_tensor(np.arange(6, dtype="float32").reshape(3, 2))
    out = default_collate_fn([data[0], data[2]])
    assert isinstance(out, paddle.Tensor)
    np.testing.assert_array_equal(out.numpy(), [[0, 1], [4, 5]])
    ds = paddle.io.TensorDataset([data])
    (batch,) = list(DataLoader(ds, batch_size=3))
    np.testing.assert_array_equal(batch[0].numpy(), data.numpy())


def test_custom_collate_fn(dygraph):
    def collate(samples):
        return np.stack([s[0] for s in samples]).sum(axis=0)

    batches = list(DataLoader(Squares(4), batch_size=2, collate_fn=collate))
    assert _values(batches) == [[1.0, 1.0], [5.0, 13.0]]


def test_iterable_dataset(dygraph):
    loader = DataLoader(Stream(7), batch_size=3)
    assert _values(loader) == [[[0], [1], [2]], [[3], [4], [5]], [[6]]]
    assert _values(DataLoader(Stream(7), batch_size=3, drop_last=True)) == [[[0], [1], [2]], [[3], [4], [5]]]
    assert _values(DataLoader(Stream(2), batch_size=None)) == [[0], [1]]
    with pytest.raises(ValueError, match="length of an IterableDataset"):
        len(loader)


def test_argument_errors(dygraph):
    sampler = BatchSampler(sampler=range(4), batch_size=2)
    with pytest.raises(ValueError, match="batch_size/shuffle/drop_last should not be set when batch_sampler"):
        DataLoader(Squares(), batch_sampler=sampler, batch_size=4)
    with pytest.raises(ValueError, match="num_workers should be a non-negative int, got -1"):
        DataLoader(Squares(), num_workers=-1)
    with pytest.raises(ValueError, match="num_workers should be a non-negative int, got 1.5"):
        DataLoader(Squares(), num_workers=1.5)
    with pytest.raises(ValueError, match="batch_size should be a positive int, got 0"):
        DataLoader(Squares(), batch_size=0)
    with pytest.raises(ValueError, match="cannot be shuffled"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="takes no batch_sampler"):
        DataLoader(Stream(3), batch_sampler=sampler)
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(Squares(), prefetch_factor=0)
    with pytest.raises(ValueError, match="timeout"):
        DataLoader(Squares(), timeout=-1)
    with pytest.raises(TypeError, match="collate_fn should be callable"):
        DataLoader(Squares(), collate_fn=3)


class Ragged(Dataset):
    def __getitem__(self, i):
        return np.zeros((3, 5 if i == 6 else 4), "float32"), i

    def __len__(self):
        return 8


def test_samples_of_disagreeing_shapes_name_the_index_and_shapes(dygraph):
    loader = DataLoader(Ragged(), batch_size=4)
    it = iter(loader)
    next(it)
    with pytest.raises(ShapeError, match=r"field \[0\]: sample 2 of the batch has shape \[3, 5\], but sample 0 "
                                         r"has shape \[3, 4\].*dataset index 6, sample 0 is dataset index 4 \(the batch's indices: \[4, 5, 6, 7\]\)"):
        next(it)


def test_field_count_mismatch(dygraph):
    class D(Dataset):
        def __getitem__(self, i):
            return (1, 2) if i != 1 else (1,)

        def __len__(self):
            return 2

    with pytest.raises(ShapeError, match=r"sample 1 of the batch has 1 fields, but sample 0 has 2.*dataset index 1"):
        list(DataLoader(D(), batch_size=2))


def test_error_in_getitem_names_the_sample(dygraph):
    class D(Dataset):
        def __getitem__(self, i):
            if i == 3:
                raise KeyError("no such record")
            return np.zeros(1)

        def __len__(self):
            return 5

    with pytest.raises(KeyError) as info:
        list(DataLoader(D(), batch_size=2))
    assert "while reading sample 3 of the dataset" in "".join(info.value.__notes__)


def test_unsupported_sample_type(dygraph):
    with pytest.raises(TypeError, match="got object"):
        default_collate_fn([object(), object()])


# --- static mode ------------------------------------------------------------------------------------
def test_static_return_list_gives_numpy_batches():
    loader = DataLoader(Squares(5), batch_size=2)
    x, y = next(iter(loader))
    assert isinstance(x, np.ndarray) and x.shape == (2, 2) and y.tolist() == [0, 1]


def test_static_feed_list_batches_feed_the_executor():
    import headrace.static as static

    x = static.data("x", [None, 2], "float32")
    y = static.data("y", [None, 1], "float32")
    pred = static.nn.fc(x, 1)
    loss = paddle.mean(paddle.square(pred - y))
    paddle.optimizer.SGD(learning_rate=0.3).minimize(loss)
    exe = static.Executor(paddle.CPUPlace())
    exe.run(static.default_startup_program())

    class Linear(Dataset):
        def __getitem__(self, i):
            a = np.array([i % 3, (i * 7) % 5], "float32") / 4
            return a, np.array([a @ [2.0, -1.0] + 0.5], "float32")

        def __len__(self):
            return 32

    loader = DataLoader(Linear(), feed_list=[x, y], return_list=False, batch_size=8, places=paddle.CPUPlace())
    first = next(iter(loader))
    assert isinstance(first, list) and len(first) == 1 and set(first[0]) == {"x", "y"}
    losses = []
    for _ in range(60):
        for data in loader():
            (value,) = exe.run(static.default_main_program(), feed=data, fetch_list=[loss])
            losses.append(float(value))
    assert losses[-1] < 1e-3 and losses[-1] < 0.01 * losses[0]


def test_static_feed_list_errors():
    import headrace.static as static

    with pytest.raises(ValueError, match="feed_list should be set when return_list=False"):
        DataLoader(Squares(), return_list=False)
    x = static.data("x", [None, 2], "float32")
    loader = DataLoader(Squares(4), feed_list=[x], return_list=False, batch_size=2)
    with pytest.raises(ValueError, match=r"a batch holds 2 arrays but feed_list names 1 variables \(\['x'\]\)"):
        next(iter(loader))


def test_executor_takes_one_feed_dict_per_place_list():
    import headrace.static as static

    x = static.data("x", [None, 2], "float32")
    total = paddle.sum(x)
    exe = static.Executor(paddle.CPUPlace())
    feed = {"x": np.ones((3, 2), "float32")}
    assert float(exe.run(feed=[feed], fetch_list=[total])[0]) == 6.0
    with pytest.raises(TypeError, match=r"feed must be a dict .*got a list of 2: a Program runs on one "
                                        r"place;.*with_data_parallel"):
        exe.run(feed=[feed, feed], fetch_list=[total])   # two places need a CompiledProgram
    with pytest.raises(TypeError, match=r"got a list of 0"):
        exe.run(feed=[], fetch_list=[total])


def test_static_places_list_groups_batches():
    import headrace.static as static

    x = static.data("x", [None, 2], "float32")
    y = static.data("y", [None], "int64")
    loader = DataLoader(Squares(10), feed_list=[x, y], return_list=False, batch_size=2,
                        places=[paddle.CPUPlace(), paddle.CPUPlace()])
    steps = list(loader)
    assert len(steps) == 2 and all(len(step) == 2 for step in steps)   # 5 batches: the fifth is dropped
    assert [d["y"].tolist() for d in steps[1]] == [[4, 5], [6, 7]]


def test_distributed_batch_sampler_feeds_this_ranks_share(dygraph):
    ds = Squares(10)
    shares = []
    for rank in range(2):
        sampler = paddle.io.DistributedBatchSampler(ds, batch_size=2, num_replicas=2, rank=rank)
        loader = DataLoader(ds, batch_sampler=sampler)
        assert len(loader) == 3
        shares.append([v for _, y in loader for v in y.numpy().tolist()])
    assert shares == [[0, 1, 4, 5, 8], [2, 3, 6, 7, 9]]
