"""``check_program``: is a Program well formed?  Run after every transformation.

Contract
--------
Raises ``ProgramError`` naming the block, the op (type and the line that built it) and the fault;
returns ``None`` for a well-formed program.  Nothing is modified.

Checks, per block, walking the ops in order:
1. the op type is registered, its slots are the declared ones with the right arity, and its
   attributes are all known;
2. every input was defined before the op: a persistable or data variable, a name in ``feeds``,
   an output of an earlier op, or a variable of an enclosing block;
3. every variable an op names exists in the block (or an enclosing one);
4. re-running the op's shape inference gives shapes compatible with (and dtypes equal to) the
   output variables' recorded ones;
5. the buffer plan (an op's ``buffer_reuse`` attribute, ``roles.BUFFER_ATTR``): the op is
   registered ``buffers=True``; each entry ``[out_slot, out_name, donor]`` names one of the op's
   outputs and an existing donor variable of the same shape and dtype that is neither the output
   itself, persistable, nor fed; no donor serves two outputs (of one op or of two).  Whether a
   donor is dead when its op runs depends on the fetches, so the executor's plan checks that
   and skips an entry that is not safe (``runtime/plan.py``);
6. ``Program.strict_order`` is a bool.
"""
from __future__ import annotations

from ..core.names import EMPTY_VAR_NAME
from ..core.errors import HeadraceError, ProgramError, where
from ..core.roles import BUFFER_ATTR, COMMON_ATTRS
from ..ops.registry import check_slots, compatible_shapes, input_vars, lookup, run_infer


def check_program(program, feeds=()) -> None:
    feeds = set(feeds)
    if not isinstance(program.strict_order, bool):
        raise ProgramError(f"Program.strict_order must be a bool, got {program.strict_order!r}")
    for block in program.blocks:
        _check_block(block, feeds)


def _check_block(block, feeds) -> None:
    defined = set(feeds)
    donors = set()
    for var in block.vars.values():
        if var.persistable or var.is_data:
            defined.add(var.name)
    for index, op in enumerate(block.ops):
        here = f"block {block.idx} op {index}: {where(op.type, op.callsite)}"
        try:
            opdef = lookup(op.type)
            check_slots(opdef, op.inputs, opdef.inputs, "input", op)
            check_slots(opdef, op.outputs, opdef.outputs, "output", op)
        except HeadraceError as exc:
            raise ProgramError(f"block {block.idx} op {index}: {exc}") from exc
        unknown = sorted(set(op.attrs) - set(opdef.attrs) - set(COMMON_ATTRS))
        if unknown:
            raise ProgramError(f"{here}: unknown attributes {unknown}")
        for slot, names in op.inputs.items():
            for name in names:
                if name in block.vars and name not in defined:  # enclosing blocks' vars are defined
                    raise ProgramError(f"{here}, input `{slot}`: {name!r} is read before any op writes it "
                                       "(and it is neither data, persistable nor fed)")
        try:
            ctx = run_infer(opdef, op, input_vars(block, op))
        except HeadraceError as exc:
            raise ProgramError(f"block {block.idx} op {index}: {exc}") from exc
        except (TypeError, ValueError, KeyError, IndexError) as exc:   # attributes infer cannot read
            raise ProgramError(f"{here}: shape inference failed on its attributes: "
                               f"{type(exc).__name__}: {exc}") from exc
        for slot, names in op.outputs.items():
            for name, (shape, dtype) in zip(names, ctx.outs[slot]):
                if name == EMPTY_VAR_NAME:
                    continue
                var = block._find_var_recursive(name)
                if var is None:
                    raise ProgramError(f"{here}, output `{slot}`: variable {name!r} does not exist")
                if var.shape is None or not compatible_shapes(var.shape, shape) or var.dtype != dtype:
                    raise ProgramError(f"{here}, output `{slot}`: {name!r} is recorded as shape {var.shape} "
                                       f"dtype {var.dtype}, but the op infers shape {shape} dtype {dtype}")
        _check_buffer_plan(block, op, opdef, here, feeds, donors)
        defined.update(op.output_arg_names)


def _check_buffer_plan(block, op, opdef, here, feeds, donors) -> None:
    entries = op.attrs.get(BUFFER_ATTR)
    if not entries:
        return
    if not opdef.buffers:
        raise ProgramError(f"{here}: has a buffer plan, but its kernel takes no buffers")
    for entry in entries:
        if not (isinstance(entry, (list, tuple)) and len(entry) == 3 and all(isinstance(e, str) for e in entry)):
            raise ProgramError(f"{here}: buffer plan entry {entry!r} is not [out_slot, out_name, donor]")
        slot, name, donor = entry
        if name not in op.outputs.get(slot, ()):
            raise ProgramError(f"{here}: buffer plan entry {entry!r}: {name!r} is not an output in `{slot}`")
        out, given = block._find_var_recursive(name), block._find_var_recursive(donor)
        if given is None or donor == name or given.persistable or donor in feeds or donor in donors:
            raise ProgramError(f"{here}: buffer plan entry {entry!r}: the donor must be another existing, "
                               "non-persistable, unfed variable serving one output")
        if out is None or out.shape != given.shape or out.dtype != given.dtype:
            raise ProgramError(f"{here}: buffer plan entry {entry!r}: donor shape/dtype "
                               f"{given.shape}/{given.dtype} differs from the output's")
        donors.add(donor)
