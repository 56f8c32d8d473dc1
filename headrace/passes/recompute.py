"""Activation recompute: checkpoints -> segments -> forward ops re-run inside the backward.

A Program transformation of its own, applied by ``append_backward(loss, checkpoints=...)`` right
after the plain backward (not by the BuildStrategy pipeline: it needs the backward's targets and
record, and it edits the user's program when it is built).

Contract
--------
Input: a Program whose block 0 holds a forward and, after it, the plain backward that
``autodiff/backward.py`` appended for ``targets`` (with ``no_grad``); ``forward_of``, the
backward's record mapping ``op.id`` of each gradient op it appended to the forward op it came
from (the rule's ops, the zero-fills they need, the sums placed in front of them); and the
checkpoints (Variables or names of the program).  Output: the same Program, rewritten in place
so the backward recomputes the variables between checkpoints instead of reading the forward's:

- a ``seed`` op in front of each random op that will be recomputed, wired to its ``Seed``
  input (the only edit to the forward), so the forward op and its recomputed copy draw the same
  numbers while the random stream advances exactly as it would without recompute;
- a variable ``name.subprog_<i>`` for each freed variable, declared like the original (these
  and the seed outputs are declared after the backward's variables);
- each segment's forward copies (role Backward, writing ``name.subprog_<i>``) right before the
  segment's first gradient op, without the copies nobody reads;
- the segment's gradient ops reading the recomputed names where they need data.

Gradient names, the gradient ops and their order are unchanged, so results are bit-identical to
training without checkpoints.  Gradient ops are not rebuilt: they keep what they took from their
forward op before its seed was wired (the ``dropout`` rule takes neither the ``Seed`` input nor
the ``seed``/``fix_seed`` attributes that ``insert_seeds`` resets on the forward op).

Semantics (the reference system's, measured in ``shared/reference/paddle_behaviour.md`` §2)
------------------------------------------------------------------------------------------
1. Forward path: the ops that lead to a target, walking back from the targets through inputs
   that are not stop_gradient and not in the no-grad set, each name to its last writer before
   the reader; ops without a gradient (``NO_GRADIENT``) are left out (and end the walk through
   what they write), so their outputs are held, never recomputed.
2. Checkpoints are de-duplicated; those no forward-path op reads or writes are dropped (logged);
   the rest are ordered by the position of their last writer on the path (feeds and parameters,
   never written, first; stable otherwise).
3. Segments, in path positions: one checkpoint gives ``[0, writer + 1)`` (if the writer is not
   the first op); for each consecutive pair ``(a, b)`` the segment runs from the first op reading
   ``a`` to the last op writing ``b``; a pair that does not form a forward range (parallel
   branches) is skipped (logged).  The ops before the first segment form a segment of their
   own; ops after the last checkpoint are never recomputed.  (Overlapping ranges, which the
   reference leaves undefined, are clipped to start where the previous one ended.)
4. Inside a segment every non-persistable variable its ops write is *freed* — the backward reads
   a recomputed copy ``name.subprog_<i>`` (``i`` counts segments from the last, as the
   reference does) and the forward original dies after its last forward reader — except
   *held* variables: checkpoints, targets, variables read by a path op after the segment
   (cross-segment variables, logged so users can pick better checkpoints), variables written
   twice in the block, and outputs of random ops that cannot replay their draw (no ``Seed``
   input).  Feeds, parameters and other persistables are never renamed.
5. Each segment's forward ops are copied into the backward right before the segment's first
   gradient op; a copy writes only freed variables (other outputs become ``@EMPTY@``: a copy
   never rewrites a checkpoint or a persistable such as batch_norm's running mean).
6. Beyond the reference: gradient ops read a freed variable's *recomputed* copy only where they
   need its data; where they read only its shape (``no_need_buffer`` slots) they keep the
   forward name, whose buffer the executor has already reduced to a shape placeholder.  And a
   copy whose outputs no later op reads is not inserted at all, so e.g. the last layer of a
   segment, whose activation is the checkpoint, is not recomputed.

Algorithm (``apply``)
---------------------
1. ``checkpoint_names``: the checkpoints as names of the program, de-duplicated.
2. ``make_plan``: forward path, kept checkpoints, segments and renames (semantics 1-4; logged).
3. ``insert_seeds`` and ``create_recomputed_vars``.
4. A segment's gradient ops are the block's ops whose ``forward_of`` entry is one of the
   segment's forward ops; their data reads are renamed (``rename_data_reads``), and the first of
   them in block order is where the segment's copies go.
5. Walking the block from its end, at each segment's place: ``copied`` picks the segment's ops
   whose freed outputs a later op reads as data (closing over the copies' own reads); their
   copies (``copy_op``; other outputs ``@EMPTY@``) are inserted, role Backward, with their
   forward op's callsite.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field

from ..core import names, roles
from ..core.errors import HeadraceError
from ..core.names import EMPTY_VAR_NAME
from ..core.roles import OpRole
from ..core.variable import Parameter, Variable
from ..ops.gradrule import NO_GRADIENT, GradOp
from ..ops.registry import lookup

log = logging.getLogger("headrace.recompute")

SEED_SLOT = "Seed"


class CheckpointError(HeadraceError, ValueError):
    """A checkpoint that is not a variable of the loss's program."""


@dataclass(eq=False)
class Segment:
    index: int                # counted from the last segment: ``.subprog_<index>``
    ops: list                 # forward ops, in program order
    rename: dict = field(default_factory=dict)   # freed name -> recomputed name


@dataclass
class RecomputePlan:
    checkpoints: list         # the kept checkpoint names, sorted as described above
    segments: list            # Segments in program order
    segment_of: dict          # id(forward op) -> Segment
    cross: set                # non-checkpoint variables held because they cross a segment


def checkpoint_names(block, checkpoints) -> list:
    """Names from a list/tuple of Variables or names, de-duplicated in the given order."""
    if not isinstance(checkpoints, (list, tuple)):
        raise TypeError("checkpoints must be a list of Variables or variable names, got "
                        f"{type(checkpoints).__name__}: {checkpoints!r}")
    out = []
    for item in checkpoints:
        if isinstance(item, Variable):
            if item.block.program is not block.program:
                raise CheckpointError(f"checkpoint {item.name!r} belongs to another program than the loss")
            name = item.name
        elif isinstance(item, str):
            name = item
        else:
            raise TypeError("checkpoints must be a list of Variables or variable names, got an item "
                            f"of type {type(item).__name__}: {item!r}")
        if block._find_var_recursive(name) is None:
            raise CheckpointError(f"checkpoint {name!r} is not a variable of the loss's program")
        if name not in out:
            out.append(name)
    return out


def forward_path(block, targets, no_grad) -> list:
    """The forward ops (of block 0, up to the last target writer) that lead to a target."""
    ops = block.ops
    ends = [i for i, op in enumerate(ops) if any(t in op.output_arg_names for t in targets)]
    if not ends:
        return []
    reach = set(targets)
    path = []
    for op in reversed(ops[: max(ends) + 1]):
        reached = [n for n in op.output_arg_names if n in reach]
        if not reached:
            continue
        # this op is the last writer before the readers that reached these names: earlier
        # writers are not reached through them (an overwrite by a non-differentiable op ends it)
        reach.difference_update(reached)
        if lookup(op.type).grad is NO_GRADIENT:
            continue
        path.append(op)
        for name in op.input_arg_names:
            var = block._find_var_recursive(name)
            if name in no_grad or (var is not None and var.stop_gradient and not isinstance(var, Parameter)):
                continue
            reach.add(name)
    path.reverse()
    return path


def _ranges(path, cps, reads, writes) -> list:
    ranges = []
    if len(cps) == 1:
        last = max(writes.get(cps[0], [-1]))
        if last > 0:
            ranges.append((0, last + 1))
    for a, b in zip(cps, cps[1:]):
        lo = min(reads[a]) if reads.get(a) else None
        hi = max(writes[b]) if writes.get(b) else None
        if lo is None or hi is None or lo >= hi:
            log.info("recompute: checkpoints %r and %r do not bound a forward range (op %s to op %s); "
                     "no segment between them", a, b, lo, hi)
            continue
        ranges.append((lo, hi + 1))
    if ranges and ranges[0][0] > 0:
        ranges.insert(0, (0, ranges[0][0]))
    clipped, end = [], 0
    for lo, hi in ranges:
        if lo < end:
            log.info("recompute: op range [%d, %d) overlaps the previous segment; clipped to [%d, %d)",
                     lo, hi, end, hi)
            lo = end
        if lo < hi:
            clipped.append((lo, hi))
            end = hi
    return clipped


def _replays(op) -> bool:
    """Whether a random op can replay its draw in a recomputed copy (it has a ``Seed`` slot)."""
    return lookup(op.type).input_slot(SEED_SLOT) is not None


def held_names(block, path, checkpoints, targets) -> set:
    """Names never freed whatever the segment (semantics 4): the checkpoints, the targets, names
    written more than once in the block (a copy could not tell which of its values a reader saw)
    and the outputs of random ops on ``path`` that cannot replay their draw."""
    held = set(checkpoints) | set(targets)
    writer_count = defaultdict(int)
    for op in block.ops:
        for name in set(op.output_arg_names):
            writer_count[name] += 1
    held.update(n for n, count in writer_count.items() if count > 1)
    for op in path:
        if lookup(op.type).random and not _replays(op):
            held.update(op.output_arg_names)
    return held


def freed_names(ops, hi, held, reads, persistable) -> tuple:
    """(freed, cross): the names the segment ``ops`` (path positions ending before ``hi``) write
    that its recompute frees and renames, and those held because a path op at ``hi`` or later
    reads them (semantics 4); ``reads``: name -> path positions reading it."""
    freed, cross = {}, {}       # insertion-ordered sets
    for op in ops:
        for name in op.output_arg_names:
            if name in held or name in freed or name in cross or persistable(name):
                continue
            if any(pos >= hi for pos in reads.get(name, ())):
                cross[name] = None
            else:
                freed[name] = None
    return list(freed), list(cross)


def copied(ops, freed, live) -> list:
    """Which of a segment's forward ``ops`` the pass copies (semantics 6), as ``[(index in ops,
    outputs the copy keeps)]`` in program order: walking back, an op is copied when a ``freed``
    name it writes is in ``live`` — the freed names read as data after the copies (by the
    segment's gradient ops; ``live`` is updated with the freed inputs of each copy kept).  The
    memory planner prices checkpoint sets with this same function."""
    kept = []
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        outs = [n for n in dict.fromkeys(op.output_arg_names) if n in freed and n in live]
        if outs:
            kept.append((i, outs))
            live.update(n for n in op.input_arg_names if n in freed)
    kept.reverse()
    return kept


def make_plan(block, targets, no_grad, checkpoints) -> RecomputePlan:
    """Segments and renames for ``checkpoints`` (names); see the module docstring."""
    path = forward_path(block, targets, no_grad)
    reads, writes = defaultdict(list), defaultdict(list)
    for pos, op in enumerate(path):
        for name in op.input_arg_names:
            reads[name].append(pos)
        for name in op.output_arg_names:
            writes[name].append(pos)
    cps = []
    for name in checkpoints:
        if name in reads or name in writes:
            cps.append(name)
        else:
            log.info("recompute: checkpoint %r dropped: no op on the path to the loss reads or writes it", name)
    cps.sort(key=lambda n: max(writes[n]) if n in writes else -1)
    ranges = _ranges(path, cps, reads, writes)

    def persistable(name):
        var = block._find_var_recursive(name)
        return var is not None and var.persistable

    always_held = held_names(block, path, cps, targets)
    segments, segment_of, cross = [], {}, set()
    for k, (lo, hi) in enumerate(ranges):
        seg = Segment(len(ranges) - 1 - k, path[lo:hi])
        freed, crossing = freed_names(seg.ops, hi, always_held, reads, persistable)
        cross.update(crossing)
        seg.rename = {name: names.recompute_name(name, seg.index) for name in freed}
        segments.append(seg)
        for op in seg.ops:
            segment_of[id(op)] = seg
        log.info("recompute segment[%d]: ops %d-%d, from `%s` %s to `%s` %s", k, lo, hi - 1,
                 seg.ops[0].type, seg.ops[0].input_arg_names, seg.ops[-1].type, seg.ops[-1].input_arg_names)
    log.info("recompute: found [%d] vars which cross recompute segments: %s; better checkpoints "
             "might be set to reduce those vars", len(cross), sorted(cross))
    return RecomputePlan(cps, segments, segment_of, cross)


def insert_seeds(block, plan) -> int:
    """Put a ``seed`` op before every random op of a segment that has no ``Seed`` input yet and
    wire it in; returns how many were inserted (the plan's ops are the same objects after)."""
    count = 0
    for seg in plan.segments:
        for op in seg.ops:
            if not lookup(op.type).random or not _replays(op) or op.input(SEED_SLOT):
                continue
            if op.attrs.get("is_test") is True:
                continue
            key = names.generate("seed") + ".tmp"
            out = names.generate_with_ignorable_key(key)
            attrs = {"seed": op.attrs.get("seed", 0), "fix_seed": op.attrs.get("fix_seed", False)}
            for common in (roles.ROLE_ATTR, roles.NAMESCOPE_ATTR, roles.DEVICE_ATTR):
                if common in op.attrs:
                    attrs[common] = op.attrs[common]
            block._insert_op(op.idx, "seed", {}, {"Out": [out]}, attrs, callsite=op.callsite)
            block.var(out).stop_gradient = True
            op.inputs[SEED_SLOT] = [out]
            for attr, default in (("seed", 0), ("fix_seed", False)):
                if attr in op.attrs:
                    op._set_attr(attr, default)
            op._touch()
            count += 1
    return count


def create_recomputed_vars(block, plan) -> None:
    """Declare every ``name.subprog_<i>`` like its original (shape, dtype, stop_gradient)."""
    for seg in plan.segments:
        for name, new in seg.rename.items():
            var = block._var_recursive(name)
            block.create_var(name=new, shape=var.shape, dtype=var.dtype, lod_level=var.lod_level,
                             stop_gradient=var.stop_gradient)


def copy_op(fwd, seg, outs) -> GradOp:
    """The copy of forward op ``fwd`` of ``seg``: it reads the recomputed names and writes those
    of ``outs`` (its other outputs become ``@EMPTY@``: a copy never rewrites a checkpoint or a
    persistable such as batch_norm's running mean)."""
    skip = (roles.ROLE_ATTR, roles.ROLE_VAR_ATTR, roles.BUFFER_ATTR)
    outputs = {slot: [seg.rename[n] if n in outs else EMPTY_VAR_NAME for n in ns] for slot, ns in fwd.outputs.items()}
    inputs = {slot: [seg.rename.get(n, n) for n in ns] for slot, ns in fwd.inputs.items()}
    attrs = {k: v for k, v in fwd.attrs.items() if k not in skip}
    return GradOp(fwd.type, inputs, outputs, attrs)


def rename_data_reads(op, seg) -> None:
    """Point a gradient op of the segment at recomputed values, except in shape-only slots."""
    shape_only = lookup(op.type).no_need_buffer
    for slot, ns in op.inputs.items():
        if slot not in shape_only:
            op.inputs[slot] = [seg.rename.get(n, n) for n in ns]


def apply(program, checkpoints, targets, no_grad, forward_of):
    """Rewrite ``program`` (which has its plain backward) for ``checkpoints``; see the module
    docstring.  ``targets``/``no_grad``: the backward's names; ``forward_of``: its record,
    gradient ``op.id`` -> forward op.  Returns ``program``."""
    block = program.global_block()
    plan = make_plan(block, targets, no_grad, checkpoint_names(block, checkpoints))
    declared = set(block.vars)
    insert_seeds(block, plan)
    create_recomputed_vars(block, plan)
    _declare_before_backward(block, [n for n in block.vars if n not in declared])
    places = {}    # Segment -> its first gradient op
    for op in block.ops:
        fwd = forward_of.get(op.id)
        seg = plan.segment_of.get(id(fwd)) if fwd is not None else None
        if seg is None:
            continue
        places.setdefault(seg, op)
        rename_data_reads(op, seg)
        op._touch()
    copies = _live_copies(block, {id(op): seg for seg, op in places.items()})
    with program.role_guard(OpRole.Backward):
        for seg, place in places.items():
            index = place.idx
            for k, (copy, fwd) in enumerate(copies[seg]):
                block._insert_op(index + k, copy.type, copy.inputs, copy.outputs, copy.attrs,
                                 callsite=fwd.callsite)
    return program


def _declare_before_backward(block, new) -> None:
    """Move the variables the pass declared (``new``) in front of the backward's own variables,
    so the program lists forward, recompute, then gradient variables (as a backward built with
    the plan in hand declares them)."""
    written = {n for op in block.ops if roles.is_backward(op.attrs.get(roles.ROLE_ATTR, 0))
               for n in op.output_arg_names}
    moved = set(new)
    rest = [name for name in block.vars if name not in moved]
    cut = next((i for i, name in enumerate(rest) if name in written), len(rest))
    order = rest[:cut] + list(new) + rest[cut:]
    block.vars = {name: block.vars[name] for name in order}


def _live_copies(block, segment_at) -> dict:
    """Segment -> [(copy, forward op)] of the copies some later op reads (``segment_at``: id of
    the op the segment's copies go in front of -> Segment), chosen by ``copied``."""
    live, kept = set(), {}
    for op in reversed(block.ops):
        live.update(op.input_arg_names)
        seg = segment_at.get(id(op))
        if seg is None:
            continue
        read = {n for n, new in seg.rename.items() if new in live}
        kept[seg] = [(copy_op(seg.ops[i], seg, set(outs)), seg.ops[i]) for i, outs in copied(seg.ops, seg.rename, read)]
        for copy, _ in kept[seg]:
            live.update(n for ns in copy.inputs.values() for n in ns)
    return kept
