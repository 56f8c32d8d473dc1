"""Running a data-parallel ``CompiledProgram`` when the process is one rank of an MPI job.

``with_data_parallel`` then means: this process is place ``rank`` of ``world size`` places.  The
program is rewritten exactly as for that many in-process places (``passes/data_parallel.py``:
loss gradient scaled by 1/places, gradients all-reduced, or bucketed with
``fuse_all_reduce_ops``), and runs here with the MPI communicator installed, so its collectives
go to the other processes.  Differences from in-process places, as in the reference's
multi-process (collective) mode:
- each process feeds its own batch (the feed is not split); fetches are this process's values;
- ``places`` does not multiply: each process is one place;
- on the first run of a plan, rank 0's value of every persistable the plan reads (parameters,
  optimizer state, statistics) is broadcast to every rank, so all ranks start identical even if
  their startup programs drew different random numbers.  Later changes to the scope outside
  these runs (e.g. loading a checkpoint) must be made on every rank.
"""
from __future__ import annotations

from ..ops.collective import using
from .scope import LoDTensor, global_scope


class ProcessRunner:
    def __init__(self, comm):
        self.comm = comm
        self._synced = set()  # id(plan) of plans whose persistables were broadcast

    def run(self, compiled, executor, feed, fetch_list, scope, return_numpy, return_merged):
        scope = scope if scope is not None else global_scope()
        feed = {} if feed is None else feed
        if not isinstance(feed, dict):
            raise TypeError("Executor.run: in a multi-process run each process feeds its own batch as "
                            f"one dict, got {type(feed).__name__}")
        if getattr(compiled.program, "_fleet_ranks", 1) > 1:
            raise ValueError("with_data_parallel: this program was already made data parallel by "
                             "fleet.distributed_optimizer(...).minimize; run it with exe.run(program) "
                             "instead of a CompiledProgram with data parallel")
        comm = self.comm
        fetch_names = executor._fetch_names(compiled.program, fetch_list)
        arrays = executor._check_feed(compiled.program, feed)
        program = compiled._compile(tuple(sorted(arrays)), fetch_names,
                                    group=(comm.world_size, comm.rank))[0]
        plan = executor._plan(program, tuple(arrays), fetch_names)
        with using(comm):
            if id(plan) not in self._synced:
                self._broadcast_persistables(plan, scope)
                self._synced.add(id(plan))
            results = executor._run_plan(plan, scope, arrays)
        if return_numpy:
            return results
        return [LoDTensor._untracked(r) for r in results]

    def _broadcast_persistables(self, plan, scope) -> None:
        names = sorted(plan.persist_reads)
        missing = [n for n in names if scope._get_array(n) is None]
        if missing:
            from ..core.errors import UninitializedError

            raise UninitializedError(f"rank {self.comm.rank}: persistable(s) {missing[:4]} are not in the "
                                     "scope: run the startup program on every rank first")
        values = self.comm.broadcast([scope._get_array(n) for n in names], [0] * len(names))
        if self.comm.rank != 0:
            for name, value in zip(names, values):
                scope._set_array(name, value)


def process_runner(compiled):
    """A ``ProcessRunner`` when this process is one rank of several, else None."""
    from .mpi_world import launched_rank

    if launched_rank()[1] <= 1:
        return None
    from .mpi_comm import communicator

    comm = communicator()
    return ProcessRunner(comm) if comm is not None and comm.world_size > 1 else None
