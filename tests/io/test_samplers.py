"""SequenceSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler (the reference's
semantics, python/paddle/io/dataloader/sampler.py and test/legacy_test/test_batch_sampler.py)."""
import numpy as np
import pytest

import headrace as paddle
from headrace.io import (BatchSampler, RandomSampler, Sampler, SequenceSampler, SubsetRandomSampler,
                         WeightedRandomSampler)


def test_sampler_base_has_no_iter():
    with pytest.raises(NotImplementedError):
        iter(Sampler(range(3)))


def test_sequence_sampler():
    s = SequenceSampler(list("abcde"))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5


def test_random_sampler_is_a_permutation_that_follows_numpy_seed():
    s = RandomSampler(range(50))
    np.random.seed(1)
    first = list(s)
    assert sorted(first) == list(range(50)) and len(s) == 50
    assert first != list(range(50))
    np.random.seed(1)
    assert list(s) == first


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(10), num_samples=4)
    drawn = list(s)
    assert len(drawn) == 4 == len(s) and len(set(drawn)) == 4
    s = RandomSampler(range(3), replacement=True, num_samples=40)
    drawn = list(s)
    assert len(drawn) == 40 and set(drawn) <= {0, 1, 2} and len(set(drawn)) == 3


def test_random_sampler_generator_is_an_index_iterator():
    s = RandomSampler(range(10), num_samples=3, generator=iter([9, 8, 7, 6]))
    assert list(s) == [9, 8, 7]
    s = RandomSampler(range(10), num_samples=5, generator=iter([1, 2]))
    assert list(s) == [1, 2]      # a short generator ends the sampler early


def test_random_sampler_errors():
    with pytest.raises(TypeError, match="replacement should be a bool"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match=r"num_samples \(5\) should not exceed the length of data_source \(3\)"):
        RandomSampler(range(3), num_samples=5)
    with pytest.raises(ValueError, match="positive int, got 0"):
        RandomSampler(range(3), num_samples=0)


def test_subset_random_sampler_permutes_the_indices():
    paddle.seed(5)
    s = SubsetRandomSampler([1, 3, 5, 7, 9])
    order = list(s)
    assert sorted(order) == [1, 3, 5, 7, 9] and len(s) == 5
    paddle.seed(5)
    assert list(s) == order
    with pytest.raises(ValueError, match="should not be empty"):
        SubsetRandomSampler([])


def test_weighted_sampler_follows_the_weights():
    np.random.seed(0)
    s = WeightedRandomSampler([0.0, 1.0, 3.0], num_samples=4000)
    counts = np.bincount(list(s), minlength=3)
    assert counts[0] == 0
    assert abs(counts[2] / counts[1] - 3.0) < 0.4
    assert len(s) == 4000


def test_weighted_sampler_without_replacement_and_2d():
    s = WeightedRandomSampler(np.array([1.0, 1.0, 0.0, 1.0]), num_samples=3, replacement=False)
    assert sorted(s) == [0, 1, 3]
    s2 = WeightedRandomSampler(np.array([[1.0, 0.0], [0.0, 1.0]]), num_samples=3)
    assert list(s2) == [0, 0, 0, 1, 1, 1] and len(s2) == 6


def test_weighted_sampler_errors():
    with pytest.raises(ValueError, match="num_samples should be a positive int"):
        WeightedRandomSampler([1.0], num_samples=0)
    with pytest.raises(ValueError, match="replacement should be a bool"):
        WeightedRandomSampler([1.0], num_samples=1, replacement="yes")
    with pytest.raises(ValueError, match="finite and non-negative"):
        list(WeightedRandomSampler([1.0, -1.0], num_samples=1))
    with pytest.raises(ValueError, match="positive value"):
        list(WeightedRandomSampler([0.0, 0.0], num_samples=1))
    with pytest.raises(ValueError, match=r"num_samples \(3\) should not exceed the number of positive weights \(2\)"):
        list(WeightedRandomSampler([1.0, 1.0, 0.0], num_samples=3, replacement=False))
    with pytest.raises(TypeError, match="weights should be"):
        list(WeightedRandomSampler("abc", num_samples=1))


def test_batch_sampler_over_a_sampler():
    bs = BatchSampler(sampler=SequenceSampler(range(7)), batch_size=3)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6]] and len(bs) == 3
    bs = BatchSampler(sampler=SubsetRandomSampler([2, 4, 6]), batch_size=2, drop_last=True)
    batches = list(bs)
    assert len(batches) == 1 == len(bs) and set(batches[0]) <= {2, 4, 6}
