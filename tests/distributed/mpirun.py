"""Running a worker script on N ranks for the multi-process tests."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKERS = Path(__file__).resolve().parent / "workers"

pytest.importorskip("mpi4py", reason="the multi-process tests need the [mpi] extra (in [test])")


def env(**extra):
    e = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    e.update({k: str(v) for k, v in extra.items()})
    return e


def launch(nprocs, script, *args, timeout=120, check=True, extra_env=None):
    """``python -m headrace.distributed.launch --nproc_per_node N workers/script args``."""
    cmd = [sys.executable, "-m", "headrace.distributed.launch", "--nproc_per_node", str(nprocs),
           str(WORKERS / script), *map(str, args)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env(**(extra_env or {})), capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc
