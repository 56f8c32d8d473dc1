"""What each rank of ``paddle.distributed.spawn`` runs: ``python -m headrace.distributed.spawn_worker
payload.pkl [main script]``."""
from __future__ import annotations

import pickle
import runpy
import sys
import types


def main(payload: str, main_path: str) -> None:
    if main_path:
        module = types.ModuleType("__mp_main__")
        module.__dict__.update(runpy.run_path(main_path, run_name="__mp_main__"))
        sys.modules["__mp_main__"] = sys.modules["__main__"] = module
    from .env import init_parallel_env

    init_parallel_env()
    with open(payload, "rb") as f:
        func, args = pickle.load(f)
    func(*args)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
