"""A rank that fails never leaves the others hanging: the job ends within 30 s with a message
naming the failed rank (raised, killed, never joined, stalled in a collective, Ctrl-C)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from headrace.distributed.launcher import find_mpiexec

from .mpirun import ROOT, WORKERS, env, launch

pytestmark = pytest.mark.slow


def _timed(fn, *args, **kwargs):
    start = time.monotonic()
    proc = fn(*args, **kwargs)
    return proc, time.monotonic() - start


def test_a_rank_that_raises_ends_every_rank_naming_it():
    proc, took = _timed(launch, 2, "faults.py", "raise", check=False, timeout=60)
    assert proc.returncode != 0 and took < 30
    assert "rank 1 of 2 failed" in proc.stderr and "a planted failure on rank 1" in proc.stderr
    # the peer waiting in a collective names the failed rank itself
    assert "rank 0 of 2 stops: headrace.distributed: rank 1 of 2 failed while rank 0 waited" in proc.stderr


def test_a_killed_rank_is_named():
    proc, took = _timed(launch, 2, "faults.py", "kill", check=False, timeout=60)
    assert proc.returncode != 0 and took < 30
    assert "rank 1 (pid" in proc.stderr and "killed by signal 9" in proc.stderr


def test_a_rank_that_never_joins_is_a_timeout_naming_it_under_plain_mpiexec():
    cmd = [find_mpiexec(), "-n", "2", sys.executable, str(WORKERS / "faults.py"), "late"]
    proc, took = _timed(subprocess.run, cmd, cwd=ROOT, env=env(HEADRACE_DIST_TIMEOUT=2), capture_output=True,
                        text=True, timeout=60)
    assert proc.returncode != 0 and took < 30
    assert "rank(s) [1] of 2 never joined the group within 2 s" in proc.stderr


def test_a_rank_without_mpi4py_ends_the_job(tmp_path):
    """MPMD launch: rank 0 finds a broken mpi4py first on its path; rank 1 is fine and would wait
    for rank 0 in MPI_Init forever if rank 0 did not ask the launcher to abort."""
    (tmp_path / "mpi4py").mkdir()
    (tmp_path / "mpi4py" / "__init__.py").write_text("raise ImportError('planted: no MPI here')\n")
    worker = [sys.executable, str(WORKERS / "faults.py"), "raise"]
    cmd = [find_mpiexec(), "-n", "1", "-env", "PYTHONPATH", f"{tmp_path}:{ROOT}", *worker, ":", "-n", "1", *worker]
    proc, took = _timed(subprocess.run, cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and took < 30
    assert "rank 0 was started by an MPI launcher but cannot import mpi4py (planted: no MPI here)" in proc.stderr


@pytest.mark.parametrize("shm", ["1", "0"])
def test_a_stalled_rank_is_a_collective_timeout(shm):
    proc, took = _timed(launch, 2, "faults.py", "stall", check=False, timeout=60,
                        extra_env={"HEADRACE_DIST_TIMEOUT": 2, "HEADRACE_MPI_SHM": shm})
    assert proc.returncode != 0 and took < 30
    if shm == "1":   # shared memory shows who is missing
        assert "rank(s) [1] of 2 did not reach collective #2 (all_reduce_sum of 32 bytes) within 2 s" in proc.stderr
    else:
        assert "rank 0 waited more than 2 s in collective #2 (all_reduce_sum of 32 bytes)" in proc.stderr


def test_killing_the_launcher_stops_every_rank(tmp_path):
    _stop_a_running_job(tmp_path, signal.SIGKILL)


def test_ctrl_c_stops_every_rank(tmp_path):
    err = _stop_a_running_job(tmp_path, signal.SIGINT)
    assert "interrupted; every rank was stopped" in err
    assert "was interrupted (Ctrl-C)" in err


def _stop_a_running_job(tmp_path, how):
    """Start 2 ranks looping on barriers, send ``how`` to the launcher once both run; every rank
    must be gone within 10 s.  Returns the launcher's stderr."""
    cmd = [sys.executable, "-m", "headrace.distributed.launch", "--nproc_per_node", "2",
           str(WORKERS / "faults.py"), "loop", str(tmp_path)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("pid.*"))) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        pids = [int(p.read_text()) for p in tmp_path.glob("pid.*")]
        proc.send_signal(how)
        _, err = proc.communicate(timeout=30)
    finally:   # never leave the job running, whatever failed above
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    assert proc.returncode == (130 if how == signal.SIGINT else -signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, f"ranks still running: {[p for p in pids if _alive(p)]}"
        time.sleep(0.1)
    return err


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
