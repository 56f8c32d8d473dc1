"""FLAGS_cpu_memory_keep_mb: glibc keeps freed memory for the next arrays (core/allocator.py)."""
import os
import platform
import subprocess
import sys
import textwrap

import pytest

import headrace as paddle
from headrace.core import allocator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_FAULTS = textwrap.dedent("""
    import resource
    import numpy as np
    import headrace

    def step():   # a step's temporaries: 4 arrays of 8 MiB, freed at its end
        arrays = [np.ones(2 << 20, np.float32) for _ in range(4)]
        del arrays

    step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        step()
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5)
""")

glibc_only = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="the setting is glibc's mallopt")


def _faults_per_step(keep_mb):
    env = dict(os.environ, PYTHONPATH=ROOT)
    if keep_mb is not None:
        env["FLAGS_cpu_memory_keep_mb"] = str(keep_mb)
    done = subprocess.run([sys.executable, "-c", _FAULTS], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.split()[-1])


@glibc_only
def test_freed_arrays_are_reused_without_page_faults():
    # 8 MiB is one 4 KiB-page fault per 4 KiB: 2,048 per array when its memory is fresh
    assert _faults_per_step(None) < 100
    assert _faults_per_step(0) > 1000      # glibc's defaults trim the 32 MiB freed at the top


class _FakeMallopt:
    def __init__(self):
        self.calls = []

    def __call__(self, param, value):
        self.calls.append((param, value))
        return 1


def test_apply_sets_threshold_once_then_top_pad(monkeypatch):
    fake = _FakeMallopt()
    monkeypatch.setattr(allocator, "_state", {"libc": fake, "threshold_set": False})
    assert allocator.apply(0) is False and fake.calls == []        # 0 first: untouched
    assert allocator.apply(16) is True
    assert fake.calls == [(allocator.M_MMAP_THRESHOLD, 32 << 20), (allocator.M_TOP_PAD, 16 << 20)]
    assert allocator.apply(0) is True
    assert fake.calls[-1] == (allocator.M_TOP_PAD, 0) and len(fake.calls) == 3


def test_no_glibc_leaves_the_allocator_alone(monkeypatch):
    monkeypatch.setattr(allocator, "_state", {"libc": False, "threshold_set": False})
    assert allocator.apply(64) is False


def test_set_flags_applies_the_value(monkeypatch):
    fake = _FakeMallopt()
    monkeypatch.setattr(allocator, "_state", {"libc": fake, "threshold_set": True})
    old = paddle.get_flags("FLAGS_cpu_memory_keep_mb")
    try:
        paddle.set_flags({"FLAGS_cpu_memory_keep_mb": 8})
        assert paddle.get_flags(["FLAGS_cpu_memory_keep_mb"]) == {"FLAGS_cpu_memory_keep_mb": 8}
        assert fake.calls == [(allocator.M_TOP_PAD, 8 << 20)]
    finally:
        paddle.set_flags(old)


@pytest.mark.parametrize("value", [-1, 1025, 1.5, True, "lots", None])
def test_bad_sizes_are_refused(value):
    with pytest.raises(ValueError, match=r"FLAGS_cpu_memory_keep_mb: expected a size in MiB \(an integer from 0 to 1024\)"):
        paddle.set_flags({"FLAGS_cpu_memory_keep_mb": value})
