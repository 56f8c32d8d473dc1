"""Program transformations, one module each (see docs/architecture.md), and the pass manager.

Every pipeline pass is ``apply(program, ctx) -> program``: it edits the Program it is given (the
pipeline hands it a private copy) and returns it.  ``PASSES`` maps a pass name to its function;
``passes/strategy.py`` maps ``BuildStrategy`` flags to ordered pass names.  ``run_passes`` runs a
list of names, checks the program with ``verify.check_program`` after each one, and on failure
raises ``PassError`` naming the pass that broke it.

``recompute.py`` is a Program transformation outside that pipeline: ``append_backward(loss,
checkpoints=...)`` applies it to the user's program right after the plain backward (it takes the
checkpoints and the backward's record, not a ``PassContext``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.errors import HeadraceError
from . import data_parallel, fuse_elementwise_act, fuse_relu_depthwise_conv, inplace, memory_reuse, sync_batch_norm
from . import validate_loaded  # noqa: F401  (installs Program.from_dict's validator)
from . import fuse_all_reduce, fuse_optimizer

# pass name -> the function that applies it
PASSES = {
    "sync_batch_norm_pass": sync_batch_norm.apply,
    "fuse_elewise_add_act_pass": fuse_elementwise_act.apply,
    "fuse_relu_depthwise_conv_pass": fuse_relu_depthwise_conv.apply,
    "all_reduce_mode_multi_devices_pass": data_parallel.apply_all_reduce,
    "reduce_mode_multi_devices_pass": data_parallel.apply_reduce,
    "fuse_broadcast_ops_pass": data_parallel.fuse_broadcasts,
    "fuse_all_reduce_op_pass": fuse_all_reduce.apply,
    "fuse_all_optimizer_ops_pass": fuse_optimizer.apply,
    "sequential_execution_pass": memory_reuse.apply_sequential,
    "buffer_shared_inplace_pass": inplace.apply,
    "memory_optimize_pass": memory_reuse.apply,
}


class PassError(HeadraceError, RuntimeError):
    """A pass failed or left the program malformed; the message names the pass."""


@dataclass
class PassContext:
    """What passes may know besides the Program."""

    num_places: int = 1
    place_index: int = 0
    loss_name: str | None = None
    gradient_scale: int = 0          # GradientScaleStrategy value
    feeds: tuple = ()                # names fed at run time
    keep: frozenset = frozenset()    # names that must survive (fetch targets)
    log: list = field(default_factory=list)  # (pass name, message) notes, e.g. "fused 2 pairs"
    fuse_grad_bytes: int = 0         # bucket size of fuse_all_reduce_ops (0: 32 MiB, the reference's)


def lookup_pass(name: str):
    fn = PASSES.get(name)
    if fn is None:
        raise PassError(f"unknown pass {name!r}; registered passes: {', '.join(sorted(PASSES))}")
    return fn


def run_passes(program, names, ctx: PassContext):
    """Run the named passes in order on ``program`` (edited in place); verify after each."""
    from .verify import ProgramError, check_program

    for name in names:
        fn = lookup_pass(name)
        try:
            result = fn(program, ctx)
        except HeadraceError as exc:
            raise PassError(f"pass `{name}` failed: {exc}") from exc
        program = result if result is not None else program
        try:
            check_program(program, feeds=ctx.feeds)
        except ProgramError as exc:
            raise PassError(f"pass `{name}` left the program malformed: {exc}") from exc
    return program
