"""Data parallel: rewrite a training program into the program one place runs.

Contract
--------
Input: a Program with a backward for ``ctx.loss_name`` and update ops (role Optimize,
``op_role_var = [param, grad]``); ``ctx.num_places`` places, this program for ``ctx.place_index``.
Output: the same program plus collective ops, such that running it on every place (each on its
slice of the batch, each with its own copy of the persistables, every collective over the group)
updates the parameters identically on every place.

Algorithm
---------
1. Gradient scale (``ctx.gradient_scale``): the op seeding ``loss@GRAD`` (role Backward|Loss)
   fills ``1/places`` (CoeffNumDevice: when the batch divides evenly, all-reduced gradients then
   equal the full-batch mean's; with an uneven split each place's mean weighs 1/places, as in the
   reference),
   keeps 1 (One), or is removed and ``loss@GRAD`` becomes a fed variable (Customized).
2. For every parameter of an update op, a collective is inserted on the gradient the *backward*
   computed (named by ``op_role_var`` on its last Backward writer), right after that writer —
   not on what the update op reads, which may be the result of gradient clipping or weight decay
   (role Optimize): those then run on the combined gradient, identically on every place, as
   without data parallel.
   - AllReduce (``apply_all_reduce``): ``c_allreduce_sum(grad) -> grad``; every place then runs
     every update on identical inputs.
   - Reduce (``apply_reduce``): parameters get owner places (greedy by bytes, in program order);
     ``c_reduce_sum(grad, root_id=owner) -> grad``; the update ops of a parameter stay only on its
     owner; at the end of the program ``c_broadcast(param, root=owner)`` gives every place the
     owner's result (role Dist, so update hoisting never moves it and every place issues its
     collectives in the same order).
3. ``fuse_broadcasts`` (Reduce + ``fuse_broadcast_ops``): the per-parameter broadcasts become
   one ``c_broadcast`` with ``roots`` (one collective instead of one per parameter).

With one place nothing but step 1 applies.  ``loss_name=None`` with update ops on several places
is an error: without it the gradients would not be combined and the copies would drift apart.
"""
from __future__ import annotations

from ..core import names, roles
from ..core.errors import HeadraceError
from ..core.roles import OpRole


class DataParallelError(HeadraceError, ValueError):
    pass


def _backward_gradients(block) -> dict:
    """param -> the gradient the backward computed for it (``op_role_var`` of its last writer)."""
    raw = {}
    for op in block.ops:
        if roles.is_optimize(op.attrs.get(roles.ROLE_ATTR, 0)):
            continue
        role_var = op.attrs.get(roles.ROLE_VAR_ATTR) or []
        for param, grad in zip(role_var[0::2], role_var[1::2]):
            raw[param] = grad
    return raw


def _update_ops(block) -> list:
    """(op, param, grad) of the parameter update ops; ``grad`` is the backward's gradient of
    ``param`` (what the update reads may be derived from it by clipping / weight decay)."""
    raw = _backward_gradients(block)
    found = []
    for op in block.ops:
        role_var = op.attrs.get(roles.ROLE_VAR_ATTR) or []
        if roles.is_optimize(op.attrs.get(roles.ROLE_ATTR, 0)) and len(role_var) >= 2:
            found.append((op, role_var[0], raw.get(role_var[0], role_var[1])))
    return found


def _check_per_parameter(block, updates) -> None:
    """Reduce mode updates each parameter on one place only, from that place's reduced gradient:
    an update that depends on other parameters' gradients (e.g. clipping by the global norm)
    would read unreduced ones there."""
    raw_param = {grad: param for _, param, grad in updates}
    writer = {}
    for op in block.ops:
        if roles.is_optimize(op.attrs.get(roles.ROLE_ATTR, 0)):
            for name in op.output_arg_names:
                writer.setdefault(name, op)
    for op, param, _ in updates:
        stack, seen = [n for n in op.input_arg_names if n != param], set()
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            other = raw_param.get(name)
            if other is not None and other != param:
                raise DataParallelError(
                    f"with_data_parallel: in Reduce mode the update of {param!r} depends on the gradient "
                    f"of {other!r} (e.g. ClipGradByGlobalNorm), which only its owner place has reduced; "
                    "use ReduceStrategy.AllReduce")
            source = writer.get(name)
            if source is not None and source is not op:
                stack.extend(source.input_arg_names)


def _seed_op(block, loss_name):
    target = names.grad_name(loss_name)
    for index, op in enumerate(block.ops):
        if target in op.output_arg_names and op.attrs.get(roles.ROLE_ATTR, 0) & OpRole.Loss:
            return index, op
    return None, None


def _prepare(program, ctx):
    """Step 1 and the checks; returns the (op, param, grad) list (empty: nothing to combine)."""
    block = program.global_block()
    updates = _update_ops(block)
    if ctx.loss_name is None:
        if updates and ctx.num_places > 1:
            params = sorted({p for _, p, _ in updates})
            raise DataParallelError(
                f"with_data_parallel: the program updates parameters ({', '.join(params[:4])}"
                f"{', ...' if len(params) > 4 else ''}) but no loss_name was given, so gradients "
                "would not be combined across places; pass loss_name=loss.name")
        return []
    index, seed = _seed_op(block, ctx.loss_name)
    if seed is None:
        if updates:
            raise DataParallelError(f"with_data_parallel: loss_name {ctx.loss_name!r} has no gradient "
                                    "seed in this program (was the optimizer minimizing another loss?)")
        return []
    if ctx.gradient_scale == 2:  # Customized: the user feeds loss@GRAD
        grad_var = block.var(names.grad_name(ctx.loss_name))
        block._remove_op(index)
        grad_var.is_data = True
        grad_var.stop_gradient = True
    elif ctx.gradient_scale == 0 and ctx.num_places > 1:  # CoeffNumDevice
        if seed.type not in ("fill_constant", "fill_any_like"):
            raise DataParallelError(f"with_data_parallel: the gradient of {ctx.loss_name!r} is given by "
                                    f"op `{seed.type}`; CoeffNumDevice can only scale a filled "
                                    "constant (use GradientScaleStrategy.Customized)")
        seed._set_attr("value", float(seed.attrs["value"]) / ctx.num_places)
        if seed.attrs.get("str_value"):
            seed._set_attr("str_value", "")
    return updates if ctx.num_places > 1 else []


def _completion_points(block, grads) -> dict:
    """grad name -> index of the last non-update op writing it."""
    last = {}
    for index, op in enumerate(block.ops):
        if roles.is_optimize(op.attrs.get(roles.ROLE_ATTR, 0)):
            continue
        for name in op.output_arg_names:
            if name in grads:
                last[name] = index
    missing = sorted(set(grads) - set(last))
    if missing:
        raise DataParallelError(f"with_data_parallel: no op computes the gradient(s) {missing}")
    return last


def _insert_after_completion(block, grads, make_op) -> None:
    """Insert ``make_op(index, grad)`` right after each gradient's completion, from the back so
    earlier indices stay valid."""
    points = _completion_points(block, grads)
    for grad, index in sorted(points.items(), key=lambda kv: -kv[1]):
        make_op(index + 1, grad)


def apply_all_reduce(program, ctx):
    block = program.global_block()
    updates = _prepare(program, ctx)
    grads = list(dict.fromkeys(g for _, _, g in updates))
    role = int(OpRole.Backward)

    def make(index, grad):
        block._insert_op(index, "c_allreduce_sum", {"X": [grad]}, {"Out": [grad]},
                         {roles.ROLE_ATTR: role})
    _insert_after_completion(block, grads, make)
    return program


def owners(program, params, num_places) -> dict:
    """param -> owner place: greedy, the next parameter (in the given order) to the place with
    the fewest bytes so far (ties: lowest index)."""
    block = program.global_block()
    load = [0] * num_places
    owner = {}
    for param in params:
        var = block.var(param)
        size = 1
        for d in var.shape:
            size *= max(int(d), 1)
        place = min(range(num_places), key=lambda k: (load[k], k))
        owner[param] = place
        load[place] += size * var.dtype.numpy.itemsize
    return owner


def apply_reduce(program, ctx):
    block = program.global_block()
    updates = _prepare(program, ctx)
    if not updates:
        return program
    _check_per_parameter(block, updates)
    params = list(dict.fromkeys(p for _, p, _ in updates))
    param_of = {}
    for _, param, grad in updates:
        param_of.setdefault(grad, param)
    owner = owners(program, params, ctx.num_places)
    role = int(OpRole.Backward)

    def make(index, grad):
        block._insert_op(index, "c_reduce_sum", {"X": [grad]}, {"Out": [grad]},
                         {roles.ROLE_ATTR: role, "root_id": owner[param_of[grad]]})
    _insert_after_completion(block, list(param_of), make)
    for index in range(len(block.ops) - 1, -1, -1):
        op = block.ops[index]
        role_var = op.attrs.get(roles.ROLE_VAR_ATTR) or []
        if roles.is_optimize(op.attrs.get(roles.ROLE_ATTR, 0)) and len(role_var) >= 2 \
                and owner.get(role_var[0], ctx.place_index) != ctx.place_index:
            block._remove_op(index)
    for param in params:
        block.append_op("c_broadcast", {"X": [param]}, {"Out": [param]},
                        {roles.ROLE_ATTR: int(OpRole.Dist), "root": owner[param]})
    return program


def fuse_broadcasts(program, ctx):
    block = program.global_block()
    found = [(i, op) for i, op in enumerate(block.ops) if op.type == "c_broadcast"]
    if len(found) < 2:
        return program
    xs, roots = [], []
    for _, op in found:
        xs += op.inputs["X"]
        roots += op.attrs["roots"] or [op.attrs["root"]] * len(op.inputs["X"])
    for i, _ in reversed(found):
        block._remove_op(i)
    block.append_op("c_broadcast", {"X": xs}, {"Out": xs},
                    {roles.ROLE_ATTR: int(OpRole.Dist), "roots": roots})
    ctx.log.append(("fuse_broadcast_ops_pass", f"fused {len(found)} broadcasts into one"))
    return program
