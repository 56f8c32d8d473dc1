"""TensorDataset, ComposeDataset, ChainDataset, ConcatDataset, Subset and random_split (the
reference's semantics, read from python/paddle/io/dataloader/dataset.py and its tests)."""
import numpy as np
import pytest

import headrace as paddle
from headrace.io import (ChainDataset, ComposeDataset, ConcatDataset, Dataset, IterableDataset, Subset,
                         TensorDataset, random_split)


class Range(Dataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __getitem__(self, i):
        return self.start + i

    def __len__(self):
        return self.stop - self.start


class Pairs(Dataset):
    def __init__(self, n, offset=0):
        self.n, self.offset = n, offset

    def __getitem__(self, i):
        return np.array([i + self.offset]), i + self.offset

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        yield from self.items


def test_tensor_dataset_rows(dygraph):
    x = np.arange(12, dtype="float32").reshape(4, 3)
    y = np.arange(4, dtype="int64").reshape(4, 1)
    ds = TensorDataset([paddle.to_tensor(x), paddle.to_tensor(y)])
    assert len(ds) == 4
    a, b = ds[2]
    np.testing.assert_array_equal(a.numpy(), x[2])
    np.testing.assert_array_equal(b.numpy(), y[2])


def test_tensor_dataset_errors(dygraph):
    with pytest.raises(ValueError, match=r"axis 0: \[4, 3\]"):
        TensorDataset([paddle.to_tensor(np.zeros((4, 2))), paddle.to_tensor(np.zeros((3, 2)))])


def test_tensor_dataset_is_dygraph_only():
    with pytest.raises(RuntimeError, match="dygraph"):
        TensorDataset([np.zeros((2, 2))])


def test_compose_concatenates_fields():
    ds = ComposeDataset([Pairs(3), Pairs(3, offset=10), Range(5, 8)])
    assert len(ds) == 3
    sample = ds[1]
    assert isinstance(sample, tuple) and len(sample) == 5
    assert sample[0].tolist() == [1] and sample[1] == 1
    assert sample[2].tolist() == [11] and sample[3] == 11 and sample[4] == 6


def test_compose_errors():
    with pytest.raises(ValueError, match="empty"):
        ComposeDataset([])
    with pytest.raises(ValueError, match=r"same length, got \[3, 4\]"):
        ComposeDataset([Pairs(3), Pairs(4)])
    with pytest.raises(TypeError, match="dataset 1 is an IterableDataset"):
        ComposeDataset([Pairs(3), Stream([1])])
    with pytest.raises(TypeError, match="dataset 0 should be a paddle.io.Dataset"):
        ComposeDataset([[1, 2, 3]])


def test_chain_runs_iterables_in_order():
    assert list(iter(ChainDataset([Stream([1, 2]), Stream([]), Stream([3])]))) == [1, 2, 3]
    with pytest.raises(TypeError, match="dataset 1 should be a paddle.io.IterableDataset"):
        ChainDataset([Stream([1]), Range(0, 2)])


def test_concat_indexes_across_datasets():
    ds = ConcatDataset([Range(0, 3), Range(10, 12), Range(20, 24)])
    assert ds.cumulative_sizes == [3, 5, 9]
    assert len(ds) == 9
    assert [ds[i] for i in range(9)] == [0, 1, 2, 10, 11, 20, 21, 22, 23]
    assert ds[-1] == 23 and ds[-9] == 0
    with pytest.raises(ValueError, match="out of range"):
        ds[-10]
    with pytest.raises(IndexError, match="out of range"):
        ds[9]
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([Range(0, 1), Stream([1])])


def test_subset_picks_indices_with_repeats():
    assert list(Subset(Range(1, 4), [0, 2])) == [1, 3]
    assert list(Subset(Range(1, 4), [1, 1])) == [2, 2]
    assert len(Subset(Range(0, 10), [3, 4, 5])) == 3


def test_random_split_lengths_partition_the_dataset():
    paddle.seed(3)
    parts = random_split(Range(0, 10), [3, 7])
    assert [len(p) for p in parts] == [3, 7]
    values = sorted(v for p in parts for v in p)
    assert values == list(range(10))
    paddle.seed(3)
    again = random_split(Range(0, 10), [3, 7])
    assert [list(p) for p in again] == [list(p) for p in parts]


def test_random_split_fractions_spread_the_remainder():
    parts = random_split(Range(0, 11), [0.5, 0.3, 0.2])
    # floor(5.5)=5, floor(3.3)=3, floor(2.2)=2; the one left goes to the first split
    assert [len(p) for p in parts] == [6, 3, 2]
    with pytest.warns(UserWarning, match="index 1 is empty"):
        parts = random_split(Range(0, 2), [0.9, 0.1])
    assert [len(p) for p in parts] == [2, 0]


def test_random_split_generator_makes_it_repeat():
    a = [list(p) for p in random_split(Range(0, 20), [5, 15], generator=7)]
    b = [list(p) for p in random_split(Range(0, 20), [5, 15], generator=np.random.default_rng(7))]
    from headrace.core.random import Generator

    c = [list(p) for p in random_split(Range(0, 20), [5, 15], generator=Generator(7))]
    assert a == b == c
    with pytest.raises(TypeError, match="generator"):
        random_split(Range(0, 4), [2, 2], generator="seed")


def test_random_split_lengths_that_do_not_add_up():
    with pytest.raises(ValueError, match=r"sum to 9, not to the length of the dataset \(10\)"):
        random_split(Range(0, 10), [4, 5])
    with pytest.raises(ValueError, match="fraction at index 0 is not between 0 and 1: 1.5"):
        random_split(Range(0, 10), [1.5, -0.5])
    with pytest.raises(ValueError, match="length at index 0"):
        random_split(Range(0, 10), [2.5, 7.5])


def test_random_split_reference_case():
    # test/legacy_test/test_dataloader_dataset.py: fractions with an empty split, over a range
    paddle.seed(1)
    with pytest.warns(UserWarning, match="index 1 is empty"):
        a, b, c = random_split(range(5), [0.3, 0.0, 0.7])
    assert (len(a), len(b), len(c)) == (2, 0, 3)
    assert sorted(list(a) + list(c)) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError):
        random_split(range(5), [-0.2, 1.2])
