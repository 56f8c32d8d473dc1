"""Starting the ranks of a job through the installed MPI launcher (``mpiexec`` of the ``mpich``
wheel, found next to the running Python first, then on ``PATH``)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile


class LaunchError(RuntimeError):
    pass


def find_mpiexec() -> str:
    """The ``mpiexec`` of this environment: next to ``sys.executable`` (the ``mpich`` wheel installs
    it in the virtual environment's ``bin``), else the first on ``PATH``."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise LaunchError("no mpiexec found next to this Python or on PATH; pip install 'headrace[mpi]' "
                          "(the mpich wheel provides it)")
    return found


def mpiexec_command(nprocs_per_node: int, argv: list, ips=None, host_file=None) -> list:
    """The command line that starts ``argv`` (a Python command) on every rank."""
    if nprocs_per_node < 1:
        raise ValueError(f"nproc_per_node must be at least 1, got {nprocs_per_node}")
    cmd = [find_mpiexec()]
    hosts = [h.strip() for h in ips.split(",") if h.strip()] if ips else []
    if host_file:
        cmd += ["-f", host_file, "-ppn", str(nprocs_per_node)]
        total = nprocs_per_node * _count_hosts(host_file)
    elif len(hosts) > 1:
        cmd += ["-hosts", ",".join(hosts), "-ppn", str(nprocs_per_node)]
        total = nprocs_per_node * len(hosts)
    else:
        total = nprocs_per_node
    return cmd + ["-n", str(total)] + list(argv)


def _count_hosts(path) -> int:
    with open(path) as f:
        hosts = [line.split("#")[0].strip() for line in f]
    hosts = [h for h in hosts if h]
    if not hosts:
        raise LaunchError(f"host file {path!r} names no host")
    return len(hosts)


def run_job(cmd: list, env=None) -> int:
    """Run the job; Ctrl-C (SIGINT) is passed to the MPI launcher, which stops every rank (after
    10 s it is killed).  Returns the launcher's exit code."""
    env = dict(os.environ if env is None else env)
    env.setdefault("HEADRACE_DIST_DIR", tempfile.mkdtemp(prefix="headrace-dist-"))
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        sys.stderr.write("headrace.distributed: interrupted; every rank was stopped\n")
        return 130
    finally:
        shutil.rmtree(env["HEADRACE_DIST_DIR"], ignore_errors=True)
