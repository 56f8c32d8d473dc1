"""Starting the ranks of a job through the installed MPI launcher (``mpiexec`` of the ``mpich``
wheel, found next to the running Python first, then on ``PATH``)."""
from __future__ import annotations

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading


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


def mpiexec_command(nprocs_per_node: int, argv: list, ips=None, host_file=None, log_dir=None) -> list:
    """The command line that starts ``argv`` (a Python command) on every rank; with ``log_dir``,
    rank N writes its output to ``log_dir/workerlog.N`` (stderr: ``workerlog.N.err``)."""
    if nprocs_per_node < 1:
        raise ValueError(f"nproc_per_node must be at least 1, got {nprocs_per_node}")
    cmd = [find_mpiexec()]
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        pattern = os.path.join(os.path.abspath(log_dir), "workerlog.%r")
        cmd += ["-outfile-pattern", pattern, "-errfile-pattern", pattern + ".err"]
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
    10 s it is killed).  The launcher's output is passed through; when it reports a process that
    ended badly (by pid), a last line names that process's rank.  Returns the exit code."""
    env = dict(os.environ if env is None else env)
    env.setdefault("HEADRACE_DIST_DIR", tempfile.mkdtemp(prefix="headrace-dist-"))
    folder = env["HEADRACE_DIST_DIR"]
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
    reported, seen = [], collections.deque(maxlen=_SEEN_LINES)
    pumps = [threading.Thread(target=_pump, args=(proc.stdout, sys.stdout, reported, seen), daemon=True),
             threading.Thread(target=_pump, args=(proc.stderr, sys.stderr, reported, seen), daemon=True)]
    for pump in pumps:
        pump.start()
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        code = _interrupt(proc)
    for pump in pumps:
        pump.join(timeout=5)
    if code not in (0, 130):
        _print_lost_notes(folder, seen)
    if reported and code not in (0, 130):
        sys.stderr.write(_name_ranks(reported, folder) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    return code


def _die_with_parent() -> None:
    """In the MPI launcher's process, before it starts: if this launcher dies (even by SIGKILL),
    the kernel kills the MPI launcher too, which then ends the ranks (Linux; elsewhere a no-op)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_SEEN_LINES = 10000   # the job's last output lines, against which the rank notes are checked
_BAD = re.compile(r"PID (\d+) RUNNING AT (\S+)")
_CODE = re.compile(r"EXIT CODE: (\d+)")


def _pump(source, sink, reported, seen) -> None:
    for raw in iter(source.readline, b""):
        line = raw.decode(errors="replace")
        sink.write(line)
        sink.flush()
        seen.append(line.rstrip("\n"))
        bad = _BAD.search(line)
        if bad:
            reported.append([int(bad.group(1)), bad.group(2), None])
        code = _CODE.search(line)
        if code and reported and reported[-1][2] is None:
            reported[-1][2] = int(code.group(1))


def _print_lost_notes(folder, seen) -> None:
    """A failing rank prints its message and leaves it in ``note.<rank>`` (``World.report``); the
    MPI launcher may have ended before forwarding all of the printed copy, so print each note
    with a line that did not come through."""
    seen = set(seen)
    names = [n for n in os.listdir(folder) if n.startswith("note.")] if os.path.isdir(folder) else []
    for name in sorted(names, key=lambda n: int(n[5:]) if n[5:].isdigit() else -1):
        try:
            with open(os.path.join(folder, name)) as f:
                note = f.read()
        except OSError:
            continue
        if note and not all(line in seen for line in note.splitlines()):
            sys.stderr.write(note if note.endswith("\n") else note + "\n")
    sys.stderr.flush()


def _name_ranks(reported, folder) -> str:
    pids = {}
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        if name.startswith("rank."):
            try:
                with open(os.path.join(folder, name)) as f:
                    pids[int(f.read().strip())] = int(name[5:])
            except (OSError, ValueError):
                continue
    parts = []
    for pid, host, code in reported:
        rank = pids.get(pid)
        who = f"rank {rank}" if rank is not None else "a rank that had not joined yet"
        how = f"exit code {code}" + (" (killed by signal 9)" if code == 9 else "") if code is not None else "failed"
        parts.append(f"{who} (pid {pid} on {host}) ended with {how}")
    return "headrace.distributed: " + "; ".join(parts) + "; every other rank was stopped"


def _interrupt(proc) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    sys.stderr.write("headrace.distributed: interrupted; every rank was stopped\n")
    return 130
