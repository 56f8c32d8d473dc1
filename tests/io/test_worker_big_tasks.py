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
