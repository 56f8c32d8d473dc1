"""``CompiledProgram``: a Program plus a ``BuildStrategy``, optionally data parallel over places.

Compiling (on the first ``Executor.run``, again when the program, the feed names or the fetch
names change) copies the program and runs the strategy's pass pipeline on the copy
(``passes.strategy.pipeline``): fusions once, then the data-parallel rewrite and the memory
passes once per place.  ``debug_graphviz_path`` dumps the graph after the original, fused and
multi-devices stages.  The user's Program is never modified.

Running is ``runtime/parallel.py``: one thread per place, each on its slice of the batch; or, when
the process was started by an MPI launcher with several ranks, ``runtime/mpi_runner.py``: one
place per process, each process feeding its own batch.
"""
from __future__ import annotations

import dataclasses
import weakref

from ..core.program import Program
from ..core.variable import Variable
from ..passes import PassContext, graphviz, run_passes
from ..passes.strategy import BuildStrategy, ExecutionStrategy, GradientScaleStrategy, pipeline
from .places import check_runnable, cpu_places


class CompiledProgram:
    """``CompiledProgram(program, build_strategy=None)``; ``.with_data_parallel(...)`` for places."""

    def __init__(self, program_or_graph, build_strategy=None):
        if isinstance(program_or_graph, CompiledProgram):
            raise TypeError("CompiledProgram: the program is already compiled")
        if not isinstance(program_or_graph, Program):
            raise TypeError(f"CompiledProgram expects a Program, got {type(program_or_graph).__name__}")
        if build_strategy is not None and not isinstance(build_strategy, BuildStrategy):
            raise TypeError(f"CompiledProgram: build_strategy must be a BuildStrategy, got "
                            f"{type(build_strategy).__name__}")
        self._program = program_or_graph
        self._build_strategy = build_strategy
        self._exec_strategy = None
        self._loss_name = None
        self._places = None
        self._share_vars_from = None
        self._data_parallel = False
        self._compiled = {}   # (version, feeds, fetches) -> list of place programs
        self._runner = None

    @property
    def program(self) -> Program:
        return self._program

    def with_data_parallel(self, loss_name=None, build_strategy=None, exec_strategy=None,
                           share_vars_from=None, places=None):
        """Run on several places: each takes a slice of the batch (dim 0); gradients of
        ``loss_name`` are combined per ``build_strategy``.  ``places`` defaults to
        ``cpu_places()`` (the ``CPU_NUM`` environment variable)."""
        if self._data_parallel:
            raise RuntimeError("with_data_parallel has already been called on this CompiledProgram")
        if isinstance(loss_name, Variable):
            loss_name = loss_name.name
        if loss_name is not None and not isinstance(loss_name, str):
            raise TypeError(f"with_data_parallel: loss_name must be a variable name, got {loss_name!r}")
        if loss_name is not None and self._program.global_block()._find_var_recursive(loss_name) is None:
            raise ValueError(f"with_data_parallel: loss_name {loss_name!r} is not a variable of the program")
        if build_strategy is not None:
            if not isinstance(build_strategy, BuildStrategy):
                raise TypeError(f"with_data_parallel: build_strategy must be a BuildStrategy, got "
                                f"{type(build_strategy).__name__}")
            self._build_strategy = build_strategy
        if exec_strategy is not None and not isinstance(exec_strategy, ExecutionStrategy):
            raise TypeError(f"with_data_parallel: exec_strategy must be an ExecutionStrategy, got "
                            f"{type(exec_strategy).__name__}")
        if share_vars_from is not None and not isinstance(share_vars_from, CompiledProgram):
            raise TypeError("with_data_parallel: share_vars_from must be a CompiledProgram")
        if places is None:
            places = cpu_places()
        elif not isinstance(places, (list, tuple)):
            places = [places]
        places = list(places)
        if not places:
            raise ValueError("with_data_parallel: places is empty")
        for place in places:
            check_runnable(place)
        self._loss_name = loss_name
        self._exec_strategy = exec_strategy or ExecutionStrategy()
        self._share_vars_from = share_vars_from
        self._places = places
        self._data_parallel = True
        return self

    # --- compile -------------------------------------------------------------------------------
    @property
    def _num_places(self) -> int:
        return len(self._places) if self._places else 1

    def _strategy(self) -> BuildStrategy:
        if self._build_strategy is None:
            self._build_strategy = BuildStrategy()
        return self._build_strategy

    def _compile(self, feed_names, fetch_names, group=None) -> list:
        """The place programs; ``group`` = (world size, rank) of a multi-process run: only this
        rank's program is built (the rewrite is the same as for ``world size`` places)."""
        key = (self._program._version, tuple(sorted(feed_names)), tuple(fetch_names), group)
        programs = self._compiled.get(key)
        if programs is not None:
            return programs
        strategy = self._strategy()
        strategy._finalize()
        n = self._num_places if group is None else group[0]
        stages = dict(pipeline(strategy, n))
        ctx = PassContext(num_places=n, loss_name=self._loss_name,
                          gradient_scale=int(strategy.gradient_scale_strategy),
                          fuse_grad_bytes=int(strategy.fuse_grad_size_in_MB * (1 << 20)) or 1,
                          feeds=tuple(feed_names), keep=frozenset(fetch_names))
        if ctx.gradient_scale == GradientScaleStrategy.Customized and self._loss_name is not None:
            ctx.feeds = tuple(set(ctx.feeds) | {_grad_name(self._loss_name)})
        path = strategy.debug_graphviz_path
        base = self._program.clone()
        if path:
            graphviz.dump(path, "original", base)
        base = run_passes(base, stages["fused"], ctx)
        if path:
            graphviz.dump(path, "fused", base)
        programs = []
        for k in (range(n) if group is None else [group[1]]):
            place_ctx = dataclasses.replace(ctx, place_index=k, log=[])
            program = run_passes(base.clone(), stages["multi_devices"], place_ctx)
            program = run_passes(program, stages["memory"], place_ctx)
            program._lineage = self._program._lineage
            programs.append(program)
            ctx.log.extend(place_ctx.log)
        if path:
            graphviz.dump(path, "multi_devices", programs)
        _track_place_generators(self._program, programs)
        self.pass_log = list(ctx.log)
        self._compiled.clear()
        self._compiled[key] = programs
        return programs

    # --- run (called by Executor.run) -------------------------------------------------------------
    def _run_with_executor(self, executor, feed=None, fetch_list=None, scope=None, return_numpy=True,
                           return_merged=True):
        from .parallel import ParallelRunner

        if self._runner is None and self._data_parallel:
            from .mpi_runner import process_runner

            self._runner = process_runner(self)
        if self._runner is None:
            self._runner = ParallelRunner(self._num_places, self._shared_runner())
        return self._runner.run(self, executor, feed, fetch_list, scope, return_numpy, return_merged)

    def _shared_runner(self):
        """The runner whose place scopes ``share_vars_from`` gives this program (checked as the
        reference checks when compiling: it must be data parallel, have run, on as many places)."""
        source = self._share_vars_from
        if source is None:
            return None
        if not source._data_parallel:
            raise ValueError("with_data_parallel: share_vars_from is not data parallel (call "
                             "with_data_parallel on it); cannot share variables from it")
        if source._runner is None:
            raise ValueError("with_data_parallel: share_vars_from has not been compiled and run yet, so "
                             "there are no variables to share; run it first")
        if source._num_places != self._num_places:
            raise ValueError(f"with_data_parallel: share_vars_from runs on {source._num_places} places, "
                             f"this program on {self._num_places}; sharing variables needs the same places")
        return source._runner


def _grad_name(name: str) -> str:
    from ..core.names import grad_name

    return grad_name(name)


def _track_place_generators(program, places) -> None:
    """Each place's program copy draws from a generator of its own (seeded like ``program``'s).
    ``program`` keeps weak references to the copies, so a checkpoint saves their states
    (framework/static_io.py); states loaded before this compile are applied here."""
    program._place_programs = [weakref.ref(p) for p in places]
    pending = getattr(program, "_pending_place_rng", None)
    if pending is not None and len(pending) == len(places):
        for place_program, state in zip(places, pending):
            generator = place_program.random_generator()
            if generator is not None:
                generator.set_state(state)
        program._pending_place_rng = None

