"""How a worker's exception reaches the main process: in its own type where the reference
re-raises it so (``except KeyError`` keeps working), and never as a ``StopIteration`` that would
end the caller's loop, or a map-style dataset's epoch, silently."""
import multiprocessing

import numpy as np
import pytest

from headrace.io import DataLoader, Dataset
from headrace.io.multiprocess import DataLoaderWorkerError

pytestmark = pytest.mark.slow


class Lookup(Dataset):
    def __getitem__(self, i):
        return np.array([{0: 0, 1: 1}[i]])

    def __len__(self):
        return 4


def test_key_error_keeps_its_type_and_a_readable_message(dygraph):
    it = iter(DataLoader(Lookup(), batch_size=2, num_workers=2))
    assert next(it).numpy().ravel().tolist() == [0, 1]
    with pytest.raises(KeyError) as info:
        next(it)
    text = str(info.value)
    # the message is printed as it is (not quoted on one line as KeyError's own str would)
    assert text.startswith("DataLoader worker 1 (pid ") and "\nTraceback (most recent call last)" in text
    assert "KeyError: 2" in text and "while loading batch 1 (dataset indices [2, 3])" in text
    assert multiprocessing.active_children() == []


class StopsAtTwo(Dataset):
    """A map-style dataset whose ``__getitem__`` lets a StopIteration escape at index 2."""

    def __getitem__(self, i):
        if i == 2:
            next(iter([]))
        return np.array([i])

    def __len__(self):
        return 12


def test_stop_iteration_in_a_map_dataset_is_an_error_not_lost_batches(dygraph):
    got = []
    with pytest.raises(DataLoaderWorkerError,
                       match=r"(?s)caught StopIteration while loading batch 1 \(dataset indices \[2, 3\]\)"):
        for batch in DataLoader(StopsAtTwo(), batch_size=2, num_workers=2):
            got.append(batch.numpy().ravel().tolist())
    assert got == [[0, 1]]         # before: [[0, 1], [4, 5], [8, 9], [10, 11]], no error
    assert multiprocessing.active_children() == []


def test_sigint_while_workers_start_does_not_kill_them(dygraph):
    """Ctrl-C is the main process's to handle, also while a worker is still starting (before its
    body ignores SIGINT, in multiprocessing's bootstrap); such a worker used to die with a
    KeyboardInterrupt traceback and the loop failed with "exited unexpectedly with exit code 1"."""
    import os
    import signal

    for _ in range(30):        # a race: repeated so that it is met (about 1 in 5 tries before)
        it = iter(DataLoader(Lookup(), batch_size=1, num_workers=2))
        for proc in it._workers:
            os.kill(proc.pid, signal.SIGINT)
        assert next(it).numpy().ravel().tolist() == [0]
        assert next(it).numpy().ravel().tolist() == [1]
        it.shutdown()
        assert [p.exitcode for p in it._workers] == [0, 0]
