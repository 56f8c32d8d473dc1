"""The process group of a multi-process run: joining it, and failing loudly instead of hanging.

A rank knows it runs under an MPI launcher (``mpiexec`` of the ``mpich`` wheel, or our
``headrace.distributed.launch`` which calls it) from the environment the launcher sets
(``PMI_RANK`` / ``PMI_SIZE``, ``OMPI_COMM_WORLD_RANK`` / ``_SIZE``).  Without one, the world is
one process and MPI is never imported.

Joining (``join()``, called by ``init_parallel_env`` / ``fleet.init`` / a data-parallel run):

1. Rendezvous before ``MPI_Init``.  ``MPI_Init`` blocks until every rank calls it, so a rank that
   never starts would hang the others in it with no message.  Each rank first writes a marker
   file in a directory shared by the ranks of its host (named after the launcher's proxy process,
   or ``HEADRACE_DIST_DIR``) and waits until the markers of every rank of the host are there; after
   ``timeout`` seconds it raises ``JoinTimeoutError`` naming the ranks that never joined.
2. ``mpi4py`` is imported (``MPI_Init``).
3. Fault handling is installed: an exception no one catches in a rank (``sys.excepthook``), and
   SIGTERM, print ``headrace.distributed: rank R of N failed: ...`` and mark the rank failed in the
   group's shared control block, so peers waiting in a collective raise ``PeerFailedError``
   naming it (they also notice a peer process that died, e.g. killed); then ``MPI_Abort`` ends
   every rank of the job.

``timeout`` defaults to ``HEADRACE_DIST_TIMEOUT`` (seconds, default 60) and bounds both the
rendezvous and every wait inside a collective.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

from ..core.errors import HeadraceError

_RANK_VARS = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"))


class DistributedError(HeadraceError, RuntimeError):
    """A multi-process run cannot go on (a peer failed, never joined, or timed out)."""


class JoinTimeoutError(DistributedError):
    """Some ranks never joined the group within the timeout."""


class PeerFailedError(DistributedError):
    """Another rank failed (raised, was killed, or exited) while this one waited for it."""


class CollectiveTimeoutError(DistributedError):
    """A collective waited longer than the timeout for some ranks."""


def launched_rank() -> tuple:
    """(rank, world size) the launcher gave this process, or (0, 1) when there is none."""
    for rank_var, size_var in _RANK_VARS:
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def default_timeout() -> float:
    value = os.environ.get("HEADRACE_DIST_TIMEOUT", "60")
    try:
        timeout = float(value)
    except ValueError:
        raise ValueError(f"HEADRACE_DIST_TIMEOUT must be a number of seconds, got {value!r}") from None
    if timeout <= 0:
        raise ValueError(f"HEADRACE_DIST_TIMEOUT must be positive, got {value!r}")
    return timeout


def _local_ranks(rank: int, size: int) -> list:
    """Global ranks that share this host, as far as the launcher tells (all, if it does not)."""
    local_n = os.environ.get("MPI_LOCALNRANKS") or os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE")
    if local_n is None or int(local_n) == size:
        return list(range(size))
    return None  # several hosts: only MPI knows who is where


def _rendezvous_dir() -> str:
    explicit = os.environ.get("HEADRACE_DIST_DIR")
    if explicit:
        return explicit
    return os.path.join(tempfile.gettempdir(), f"headrace-dist-{os.getuid()}-{_launcher_pid()}")


def _launcher_pid() -> int:
    """The MPI launcher's process on this host (hydra's proxy, Open MPI's daemon), found up the
    parent chain (a rank may be started through a shell); the parent if none is found."""
    pid = os.getppid()
    for _ in range(8):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            break
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name.startswith(("hydra_pmi_proxy", "orted", "prted")):
            return pid
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
        if pid <= 1:
            break
    return os.getppid()


def rendezvous(rank: int, size: int, timeout: float) -> None:
    """Step 1 above: wait for the marker of every rank of this host (or raise naming the absent)."""
    ranks = _local_ranks(rank, size)
    if ranks is None:
        return
    folder = _rendezvous_dir()
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"joined.{rank}"), "w") as f:
        f.write(str(os.getpid()))
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        missing = [r for r in ranks if not os.path.exists(os.path.join(folder, f"joined.{r}"))]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise JoinTimeoutError(
                f"headrace.distributed: rank(s) {missing} of {size} never joined the group within "
                f"{timeout:g} s (this is rank {rank}; HEADRACE_DIST_TIMEOUT sets the limit)")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _leave_rendezvous(rank: int) -> None:
    """After MPI_Init every rank has passed the rendezvous: remove this rank's marker (and the
    folder, once empty) so a later job never sees it."""
    folder = _rendezvous_dir()
    try:
        os.remove(os.path.join(folder, f"joined.{rank}"))
        if not os.environ.get("HEADRACE_DIST_DIR"):  # the launcher's folder is the launcher's to remove
            os.rmdir(folder)
    except OSError:
        pass


def _whole_lines() -> None:
    """The MPI launcher runs ranks unbuffered and merges their output as it arrives, so one print
    (written piece by piece) could be cut by another rank's: write whole lines instead."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(line_buffering=True, write_through=False)
        except (AttributeError, ValueError):
            pass


def _record_pid(rank: int) -> None:
    """Under ``headrace.distributed.launch``: leave ``rank.<rank>`` (this pid) in its job folder, so
    the launcher can name the rank of a process the MPI launcher reports by pid only."""
    folder = os.environ.get("HEADRACE_DIST_DIR")
    if folder:
        try:
            with open(os.path.join(folder, f"rank.{rank}"), "w") as f:
                f.write(str(os.getpid()))
        except OSError:
            pass


def _launcher_abort(code: int = 1) -> None:
    """Ask the MPI launcher to end the job, before MPI_Init (the PMI-1 ``abort`` command on the
    launcher's socket, ``PMI_FD``): without it a launcher whose ranks never all reach MPI_Init
    waits for the absent ones forever."""
    fd = os.environ.get("PMI_FD")
    if fd is None:
        return
    import socket

    try:
        with socket.socket(fileno=os.dup(int(fd))) as sock:
            sock.sendall(f"cmd=abort exitcode={code}\n".encode())
        time.sleep(2.0)   # the launcher ends this process too
    except OSError:
        pass


class World:
    """The joined group: ``rank``, ``size``, the MPI communicator and the shared control block."""

    def __init__(self, rank: int, size: int, timeout: float):
        self.rank = rank
        self.size = size
        self.timeout = timeout
        self.mpi = None
        self.comm = None
        self.control = None       # mpi_shm.Control when every rank shares this host
        self.communicator = None  # mpi_comm.MPICommunicator, made on first use

    def fail(self, message: str) -> None:
        """Report this rank's failure and end the job (never returns when MPI is up)."""
        self.report(message)
        if self.control is not None:
            self.control.mark_failed(self.rank)
        self.abort()

    def report(self, message: str) -> None:
        report(self.rank, message)

    def abort(self) -> None:
        """End every rank of the job (``MPI_Abort``); waits 0.3 s first, so peers waiting in a
        collective can name a rank marked failed and the launcher can forward what was printed."""
        if self.comm is not None:
            time.sleep(0.3)
            self.comm.Abort(1)
        os._exit(1)


def report(rank: int, message: str) -> None:
    """Print ``message`` and, under ``headrace.distributed.launch``, leave it in the job folder
    too (``note.<rank>``): an abort can end the MPI launcher before it forwarded the last lines a
    rank wrote, and the launcher then prints the notes whose lines it did not all see."""
    message = message if message.endswith("\n") else message + "\n"
    sys.stderr.write(message)
    sys.stderr.flush()
    folder = os.environ.get("HEADRACE_DIST_DIR")
    if folder:
        try:
            with open(os.path.join(folder, f"note.{rank}"), "w") as f:
                f.write(message)
        except OSError:
            pass


_world: World | None = None


def world() -> World | None:
    """The joined group, or None (not joined, or a world of one process)."""
    return _world


def join(timeout: float | None = None) -> World | None:
    """Join the group the launcher started (idempotent); None when there is no launcher."""
    global _world
    if _world is not None:
        return _world
    rank, size = launched_rank()
    if size <= 1:
        return None
    timeout = default_timeout() if timeout is None else float(timeout)
    try:
        rendezvous(rank, size, timeout)
    except JoinTimeoutError as err:
        report(rank, str(err))
        _launcher_abort()
        raise
    try:
        from mpi4py import MPI
    except ImportError as err:
        message = (f"headrace.distributed: rank {rank} was started by an MPI launcher but cannot import "
                   f"mpi4py ({err}); pip install 'headrace[mpi]'")
        report(rank, message)
        _launcher_abort()   # the other ranks would wait for this one in MPI_Init
        raise DistributedError(message) from err
    _leave_rendezvous(rank)
    w = World(MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size(), timeout)
    _record_pid(w.rank)
    _whole_lines()
    w.mpi, w.comm = MPI, MPI.COMM_WORLD
    from . import mpi_faults, mpi_shm

    w.control = mpi_shm.Control.create(w)
    _world = w
    mpi_faults.install(w)
    return w
