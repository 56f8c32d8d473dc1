import pytest

import headrace as paddle


class _Map(paddle.io.Dataset):
    pass


class _Stream(paddle.io.IterableDataset):
    pass


def test_map_dataset_base_methods_name_the_subclass():
    with pytest.raises(NotImplementedError, match="__getitem__.*_Map"):
        _Map()[0]
    with pytest.raises(NotImplementedError, match="__len__.*_Map"):
        len(_Map())


def test_iterable_dataset_refuses_index_and_len():
    with pytest.raises(NotImplementedError, match="__iter__.*_Stream"):
        iter(_Stream())
    with pytest.raises(RuntimeError, match="_Stream is an IterableDataset"):
        _Stream()[0]
    with pytest.raises(RuntimeError, match="__len__"):
        len(_Stream())
