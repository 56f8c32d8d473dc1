"""``python -m headrace.distributed.run script.py [args]``: what every rank of a launched job runs.

Joins the process group first (rendezvous with a timeout, MPI, fault handling: see
``runtime/mpi_world.py``), then runs the script as ``__main__`` with its arguments.
"""
from __future__ import annotations

import runpy
import sys


def main() -> None:
    if len(sys.argv) < 2:
        sys.stderr.write("usage: python -m headrace.distributed.run script.py [args]\n")
        sys.exit(2)
    from .env import init_parallel_env

    init_parallel_env()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
