"""``python -m headrace.distributed.launch --nproc_per_node N train.py [args]``: start a training
script on N processes (ranks) of this machine, or N per machine with ``--ips`` / ``--host_file``.

The ranks are started by the MPI launcher of the installed ``mpich`` wheel (``mpiexec``); each
rank runs ``python -m headrace.distributed.run train.py [args]``, which joins the group before
the script runs, so a rank that fails ends the whole job with a message naming it.
``--log_dir D`` puts rank N's output in ``D/workerlog.N`` (and its stderr in ``workerlog.N.err``;
the reference writes both into one file).  ``--ips a,b`` (the reference's flag) or ``--host_file F`` (one host per line) spread the ranks
over several machines; those need the same Python environment and the script at the same path
on every machine, and ``mpiexec`` able to reach them (ssh without a password).
"""
from __future__ import annotations

import argparse
import sys

from .launcher import mpiexec_command, run_job


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m headrace.distributed.launch",
                                description="start a training script on several processes (MPI)")
    p.add_argument("--nproc_per_node", type=int, default=1, help="ranks per machine (default 1)")
    p.add_argument("--ips", default=None, help="comma-separated machines (default: this one)")
    p.add_argument("--host_file", default=None, help="file naming one machine per line")
    p.add_argument("--log_dir", default=None, help="rank N's output goes to LOG_DIR/workerlog.N "
                                                    "(stderr: workerlog.N.err) instead of this terminal")
    p.add_argument("training_script", help="the script every rank runs")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    cmd = mpiexec_command(args.nproc_per_node,
                          [sys.executable, "-m", "headrace.distributed.run", args.training_script,
                           *args.training_script_args],
                          ips=args.ips, host_file=args.host_file, log_dir=args.log_dir)
    code = run_job(cmd)
    if code not in (0, 130):
        where = f" and in {args.log_dir}/workerlog.*" if args.log_dir else ""
        sys.stderr.write(f"headrace.distributed.launch: the job failed (exit code {code}); the failing "
                         f"rank is named above{where}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
