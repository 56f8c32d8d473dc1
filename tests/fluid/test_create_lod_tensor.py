"""fluid.create_lod_tensor (reference: python/paddle/base/lod_tensor.py): a LoDTensor with sequence
lengths; fed to a program it gives its rows (headrace has no sequence ops)."""
import numpy as np
import pytest

import headrace.fluid as fluid


def test_from_an_array_and_from_a_list_of_sequences():
    t = fluid.create_lod_tensor(np.array([[211], [6], [96]], "int64"), [[1, 2]], fluid.CPUPlace())
    assert t.recursive_sequence_lengths() == [[1, 2]] and t.has_valid_recursive_sequence_lengths()
    seqs = fluid.create_lod_tensor([[1, 2], [3]], [[2, 1]], fluid.CPUPlace())
    np.testing.assert_array_equal(np.array(seqs), [[1], [2], [3]])
    assert np.array(seqs).dtype == np.int64 and seqs.recursive_sequence_lengths() == [[2, 1]]


def test_invalid_lengths_and_types_are_errors():
    with pytest.raises(ValueError, match="lod info is invalid"):
        fluid.create_lod_tensor(np.zeros((3, 1)), [[1, 1]], fluid.CPUPlace())
    with pytest.raises(ValueError, match="do not match"):
        fluid.create_lod_tensor([[1, 2], [3]], [[1, 2]], fluid.CPUPlace())
    with pytest.raises(TypeError, match="Numpy array or a list"):
        fluid.create_lod_tensor("abc", [[3]], fluid.CPUPlace())


def test_fed_to_a_program_and_fetched_as_a_tensor():
    words = fluid.data(name="w", shape=[None, 1], dtype="int64")
    doubled = fluid.layers.scale(words, scale=2.0)
    exe = fluid.Executor(fluid.CPUPlace())
    lod = fluid.create_lod_tensor(np.array([[4], [5]], "int64"), [[1, 1]], fluid.CPUPlace())
    (out,) = exe.run(feed={"w": lod}, fetch_list=[doubled], return_numpy=False)
    np.testing.assert_array_equal(np.array(out), [[8], [10]])
    assert out.recursive_sequence_lengths() == []          # the LoD is not propagated (runtime/lod.py)
