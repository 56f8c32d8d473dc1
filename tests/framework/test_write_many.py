"""container.write_many: many files, each atomic, one directory fsync per directory (issue 17: a
ResNet's save_inference_model wrote ~180 files with two serial fsyncs each)."""
import os

import numpy as np
import pytest

from headrace.framework import container, io as fio


def test_files_read_back_and_the_directory_is_synced_once(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(container, "_fsync_dir", synced.append)
    arrays = {f"v{i}": np.arange(i + 1, dtype="float32") for i in range(20)}
    (tmp_path / "v3").write_bytes(b"old content")            # replaced, not appended to
    fio.write_states({str(tmp_path / name): {name: value} for name, value in arrays.items()})
    assert synced == [str(tmp_path)]
    for name, value in arrays.items():
        state, _ = fio.read_state(str(tmp_path / name))
        np.testing.assert_array_equal(state[name], value)
    assert sorted(os.listdir(tmp_path)) == sorted(arrays)     # no temporary files left


def test_a_failing_file_leaves_no_temporaries_and_keeps_the_old_targets(tmp_path):
    (tmp_path / "a").write_bytes(b"old a")
    bad = {"b": np.array([1], dtype=object)}                  # no dtype the container can hold
    with pytest.raises(Exception, match="dtype"):
        container.write_many([(tmp_path / "a", {"a": np.ones(2)}, {}, "state"), (tmp_path / "b", bad, {}, "state")])
    assert sorted(os.listdir(tmp_path)) == ["a"] and (tmp_path / "a").read_bytes() == b"old a"
