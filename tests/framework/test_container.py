"""The checkpoint container: safetensors layout, CRC-32, atomic writes."""
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from headrace.core.errors import CheckpointError
from headrace.framework import container

ARRAYS = {
    "w": np.arange(12, dtype="float32").reshape(3, 4) / 7,
    "step": np.array(3, dtype="int64"),
    "half": np.array([1.5, -2], dtype="float16"),
    "mask": np.array([True, False, True]),
    "empty": np.zeros((0, 2), dtype="float64"),
    "bytes": np.arange(5, dtype="uint8"),
    "i32": np.array([[-1, 2]], dtype="int32"),
}


def _same(a, b):
    assert sorted(a) == sorted(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        np.testing.assert_array_equal(a[k], b[k])


def test_round_trip_every_dtype_and_shape(tmp_path):
    path = tmp_path / "f.safetensors"
    container.write(path, ARRAYS, {"note": "hi"})
    arrays, meta = container.read(path)
    _same(arrays, ARRAYS)
    assert meta["note"] == "hi" and meta[container.KIND_KEY] == "tensors"
    assert all(a.flags.writeable and a.flags.owndata for a in arrays.values())
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_files_are_standard_safetensors_both_ways(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "ours.safetensors"
    container.write(path, ARRAYS)
    _same(st.load_file(str(path)), ARRAYS)
    theirs = tmp_path / "theirs.safetensors"
    st.save_file(ARRAYS, str(theirs))
    _same(container.read(theirs)[0], ARRAYS)


def test_every_flipped_bit_and_every_truncation_is_a_clear_error(tmp_path):
    path = tmp_path / "f.safetensors"
    container.write(path, {"w": ARRAYS["w"], "step": ARRAYS["step"]})
    data = path.read_bytes()
    assert container.from_bytes(data, "bad.safetensors")[0]["w"].shape == (3, 4)
    for i in range(len(data)):
        for bit in range(8):
            corrupt = bytearray(data)
            corrupt[i] ^= 1 << bit
            with pytest.raises(CheckpointError, match="bad.safetensors"):
                container.from_bytes(bytes(corrupt), "bad.safetensors")
    for n in range(len(data)):
        with pytest.raises(CheckpointError, match="bad.safetensors"):
            container.from_bytes(data[:n], "bad.safetensors")


def test_checksum_message_names_the_file_and_what_failed(tmp_path):
    path = tmp_path / "model.pdparams"
    container.write(path, {"w": np.ones(1000, dtype="float32")})
    data = bytearray(path.read_bytes())
    data[-10] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"model\.pdparams: checksum mismatch"):
        container.read(path)
    path.write_bytes(bytes(data[:-100]))
    with pytest.raises(CheckpointError, match=r"model\.pdparams: truncated"):
        container.read(path)


def test_unsupported_dtype_is_refused():
    with pytest.raises(CheckpointError, match="complex64"):
        container.to_bytes({"c": np.zeros(2, dtype="complex64")})


_WRITER = r"""
import sys
import numpy as np
from headrace.framework import container
path = sys.argv[1]
print("ready", flush=True)
k = 1
while True:
    container.write(path, {"a": np.full((512, 1024), k, dtype="float64"), "k": np.array(k)})
    k += 1
"""


@pytest.mark.slow
def test_a_save_killed_at_any_moment_leaves_a_whole_file(tmp_path):
    """SIGKILL a process that saves over and over, at random moments: the file always loads and
    equals one of the saved states (never torn), in a few seconds."""
    path = tmp_path / "ckpt.safetensors"
    container.write(path, {"a": np.full((512, 1024), 0, dtype="float64"), "k": np.array(0)})
    rng = random.Random(1)
    seen = set()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for _ in range(6):
        child = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, env=env)
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.25))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        child.stdout.close()
        arrays, _ = container.read(path)
        k = int(arrays["k"])
        assert arrays["a"].shape == (512, 1024) and np.all(arrays["a"] == k)
        seen.add(k)
    assert len(seen) > 1          # the kills really landed while saves were going on


def test_large_files_are_memory_mapped_copy_on_write_and_still_verified(tmp_path):
    path = tmp_path / "big.pdparams"
    big = {"w": np.arange(1 << 19, dtype="float32"), "b": np.ones(3, dtype="float64")}
    container.write(path, big)
    assert path.stat().st_size >= container._MMAP_FROM
    arrays, _ = container.read(path)
    _same(arrays, big)
    arrays["w"][:] = -1                       # writable, and writing leaves the file alone
    _same(container.read(path)[0], big)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="big.pdparams: checksum mismatch"):
        container.read(path)
    path.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(CheckpointError, match="big.pdparams: truncated"):
        container.read(path)


def test_a_newer_layout_version_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(container, "LAYOUT_VERSION", "2")
    path = tmp_path / "future.safetensors"
    container.write(path, {"w": np.ones(2, "float32")})
    monkeypatch.undo()
    with pytest.raises(CheckpointError, match=r"future.safetensors: file layout version '2' was written by a newer headrace"):
        container.read(path)
