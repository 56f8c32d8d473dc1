"""``paddle.distributed.spawn(func, args=(), nprocs=-1, join=True)``: run ``func(*args)`` on
``nprocs`` new processes, one rank each (started through ``mpiexec``, like ``launch``).

As with ``multiprocessing``'s spawn start method, ``func`` and ``args`` are pickled, so ``func``
must be importable: a module-level function of a module, or of the main script (which each rank
then imports under the name ``__mp_main__``, so its ``if __name__ == "__main__":`` block does not
run again).  Each rank joins the group (``init_parallel_env``) before ``func`` runs.  ``spawn``
returns when every rank finished; if one failed it raises ``RuntimeError`` (every rank stops).
"""
from __future__ import annotations

import os
import pickle
import sys
import tempfile

from .launcher import mpiexec_command, run_job


def spawn(func, args=(), nprocs=-1, join=True, daemon=False, **options):
    if nprocs == -1:
        nprocs = os.cpu_count() or 1
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"spawn: nprocs must be a positive int (or -1: one per CPU), got {nprocs!r}")
    if not join:
        raise NotImplementedError("spawn(join=False) is not supported; spawn returns when every rank finished")
    main = sys.modules.get("__main__")
    main_path = getattr(main, "__file__", None) if getattr(func, "__module__", None) == "__main__" else None
    with tempfile.TemporaryDirectory(prefix="headrace-spawn-") as folder:
        payload = os.path.join(folder, "payload.pkl")
        with open(payload, "wb") as f:
            pickle.dump((func, tuple(args)), f)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")])
        cmd = mpiexec_command(nprocs, [sys.executable, "-m", "headrace.distributed.spawn_worker", payload,
                                       main_path or ""])
        code = run_job(cmd, env)
    if code != 0:
        raise RuntimeError(f"paddle.distributed.spawn: the job of {nprocs} processes failed (exit code {code}); "
                           "the failing rank is named above")
