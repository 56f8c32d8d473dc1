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
    import ctypes, resource
    # 4 KiB pages only: with transparent huge pages a fresh 8 MiB array faults a handful of times
    ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)   # PR_SET_THP_DISABLE
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


def _faults_per_step(**env_vars):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FLAGS_", "MALLOC_")) and k != "GLIBC_TUNABLES"}
    env.update(PYTHONPATH=ROOT, NUMPY_MADVISE_HUGEPAGE="0", **env_vars)
    done = subprocess.run([sys.executable, "-c", _FAULTS], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.split()[-1])


@glibc_only
def test_freed_arrays_are_reused_without_page_faults():
    untouched = _faults_per_step(FLAGS_cpu_memory_keep_mb="0")   # glibc trims the 32 MiB freed at the top
    kept = _faults_per_step()
    # 32 MiB of fresh memory a step: 8,192 faults with 4 KiB pages (512 with 64 KiB pages)
    assert untouched >= 256, untouched
    assert kept * 10 <= untouched, (kept, untouched)


@glibc_only
def test_the_users_own_malloc_settings_are_left_alone():
    assert _faults_per_step(MALLOC_TRIM_THRESHOLD_="0") >= 256


class _FakeMallopt:
    def __init__(self):
        self.calls = []

    def __call__(self, param, value):
        self.calls.append((param, value))
        return 1


@pytest.fixture
def no_user_settings(monkeypatch):
    for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_MMAP_MAX_",
                 "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)


def test_apply_sets_the_mmap_threshold_once_then_the_trim_threshold(monkeypatch, no_user_settings):
    fake = _FakeMallopt()
    monkeypatch.setattr(allocator, "_state", {"libc": fake, "threshold_set": False})
    assert allocator.apply(0) is False and fake.calls == []        # 0 first: untouched
    assert allocator.apply(16) is True
    assert fake.calls == [(allocator.M_MMAP_THRESHOLD, 32 << 20), (allocator.M_TRIM_THRESHOLD, 16 << 20)]
    assert allocator.apply(0) is True
    assert fake.calls[-1] == (allocator.M_TRIM_THRESHOLD, 0) and len(fake.calls) == 3


@pytest.mark.parametrize("name, value", [("MALLOC_TOP_PAD_", "0"), ("MALLOC_MMAP_THRESHOLD_", "131072"),
                                         ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0")])
def test_user_settings_leave_the_allocator_alone(monkeypatch, no_user_settings, name, value):
    fake = _FakeMallopt()
    monkeypatch.setattr(allocator, "_state", {"libc": fake, "threshold_set": False})
    monkeypatch.setenv(name, value)
    assert allocator.apply(64) is False and fake.calls == []


def test_no_glibc_leaves_the_allocator_alone(monkeypatch):
    monkeypatch.setattr(allocator, "_state", {"libc": False, "threshold_set": False})
    assert allocator.apply(64) is False


def test_set_flags_applies_the_value(monkeypatch, no_user_settings):
    fake = _FakeMallopt()
    monkeypatch.setattr(allocator, "_state", {"libc": fake, "threshold_set": True})
    old = paddle.get_flags("FLAGS_cpu_memory_keep_mb")
    try:
        paddle.set_flags({"FLAGS_cpu_memory_keep_mb": 8})
        assert paddle.get_flags(["FLAGS_cpu_memory_keep_mb"]) == {"FLAGS_cpu_memory_keep_mb": 8}
        assert fake.calls == [(allocator.M_TRIM_THRESHOLD, 8 << 20)]
    finally:
        paddle.set_flags(old)


@pytest.mark.parametrize("value", [-1, 1025, 1.5, True, "lots", None])
def test_bad_sizes_are_refused(value):
    with pytest.raises(ValueError, match=r"FLAGS_cpu_memory_keep_mb: expected a size in MiB \(an integer from 0 to 1024\)"):
        paddle.set_flags({"FLAGS_cpu_memory_keep_mb": value})
