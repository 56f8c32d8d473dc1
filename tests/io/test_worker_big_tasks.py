"""Tasks larger than a pipe's buffer (a batch of ~50,000 indices pickles to ~250 KB, the buffer is
64 KB on Linux): the main process used to block sending the second task to a worker still busy
with its first, so with a stuck worker ``timeout`` never fired and the loop hung for ever."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent("""
    import multiprocessing, time
    import numpy as np
    from headrace.io import DataLoader, Dataset

    class Stuck(Dataset):
        def __getitem__(self, i):
            if i == 0:
                time.sleep(600)          # worker 0 never finishes its first batch
            return np.array([i])

        def __len__(self):
            return 200000

    start = time.monotonic()
    try:
        for _ in DataLoader(Stuck(), batch_size=50000, num_workers=2, timeout=1):
            pass
    except Exception as exc:
        print(type(exc).__name__, str(exc).splitlines()[0])
    print("seconds", round(time.monotonic() - start), "left", len(multiprocessing.active_children()))
""")


def test_timeout_fires_with_tasks_larger_than_the_pipe_buffer():
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("the DataLoader hung: timeout=1 did not fire within 30 s")
    assert "DataLoaderWorkerError DataLoader: timed out after 1 s waiting for batch 0 from worker 0" in out, out + err
    assert out.strip().endswith("left 0"), out + err


DEAD_SCRIPT = textwrap.dedent("""
    import multiprocessing, os, signal, threading, time
    from headrace.io import DataLoader, Dataset

    class DiesWhenIdle(Dataset):
        def __getitem__(self, i):
            if i == 2 * 50000 - 1:       # worker 1, last sample of batch 1: killed (as by OOM) once idle
                threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGKILL)).start()
            return i

        def __len__(self):
            return 6 * 50000

    try:
        loader = DataLoader(DiesWhenIdle(), batch_size=50000, num_workers=2, prefetch_factor=1, collate_fn=len)
        for k, _ in enumerate(loader):
            if k == 0:
                time.sleep(1.5)          # worker 1 delivers batch 1 and dies meanwhile
    except Exception as exc:
        print(type(exc).__name__, str(exc).splitlines()[0])
    print("left", len(multiprocessing.active_children()))
""")



def test_a_task_larger_than_the_pipe_buffer_sent_to_a_dead_worker_is_an_error_not_a_hang():
    """Every worker used to inherit every task pipe's read end, so a send to a dead worker never
    broke: it blocked on the full pipe.  Now only worker w holds pipe w's read end."""
    proc = subprocess.Popen([sys.executable, "-c", DEAD_SCRIPT], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("the DataLoader hung sending a task to a dead worker")
    assert "DataLoaderWorkerError DataLoader worker 1 " in out and "SIGKILL" in out, out + err
    assert out.strip().endswith("left 0"), out + err
