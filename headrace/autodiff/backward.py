"""Reverse-mode automatic differentiation of a Program: ``append_backward`` and ``gradients``.

Contract
--------
Takes block 0 of a Program whose forward ops compute the targets, and appends gradient ops (role
Backward) that compute ``v@GRAD`` for every variable ``v`` that lies on a path from a gradient
*source* to a target.  Sources are, for ``append_backward``, every variable that is not
``stop_gradient`` (parameters, and data the user marked) and, for ``gradients``, exactly the given
inputs.  The forward ops are not modified except that the loss op's role becomes Forward|Loss.
``Backward.build`` returns the map forward name -> gradient name; ``append_backward`` and
``gradients`` here wrap it.  They take checked, normalized arguments (Variables, lists of names, a
set of names, a list of callables); the reference's argument checks are the facades'
(``static/backward.py``, also ``fluid.backward``).

Algorithm
---------
1. Region: the ops up to the last one that writes a target.
2. Forward sweep: a variable *requires grad* if it is a source, or an output (floating point, not
   stop_gradient, not in ``no_grad_set``) of a differentiable op with an input that requires grad.
   Ops marked ``NO_GRADIENT`` stop the flow.
3. Reverse sweep: a variable is *needed* if it is a target that requires grad, or an input that
   requires grad of an op with a needed output; those ops form the path.  Everything else is
   pruned from the backward.
4. For each path op, last to first, ask its gradient rule for gradient ops.  Outputs for
   variables that are not needed are dropped (in a slot holding several variables they become
   ``@EMPTY@`` so positions stay); an op left with no output is dropped; a gradient an op reads
   but nothing produces (an output that does not reach the loss) is filled with zeros first.
5. Accumulation: when several ops write the same gradient, the writers' outputs are renamed
   ``v@GRAD@RENAME@block0@k`` (k in backward order) and a ``sum`` op writing ``v@GRAD`` is
   placed right before the first op that reads it (or at the end).
6. The ops are appended (role Backward; the seeds of the targets' gradients Backward|Loss);
   gradient ops carry their forward op's callsite, so an error in a gradient points at the
   user's line that built the forward op.  Callbacks run after each op except the seeds.  The
   builder records which forward op each appended op came from (``forward_of``: ``op.id`` ->
   forward op; a rule's ops, the zero-fills they need and the sums placed in front of them).

Recompute is not part of the engine: with ``checkpoints``, ``append_backward`` builds the plain
backward, then hands it and ``forward_of`` to the recompute pass (``passes/recompute.py``),
which rewrites the program; the callbacks are called after that, for the same gradient ops (never
for the pass's copies), each seeing the block as it was when its op was appended
(``_replay_callbacks``).
"""
from __future__ import annotations

from collections import defaultdict

from ..core import names, roles
from ..core.errors import HeadraceError, where
from ..core.names import EMPTY_VAR_NAME
from ..core.roles import OpRole
from ..core.variable import Parameter
from ..ops.gradrule import NO_GRADIENT, GradMaker, GradOp
from ..ops.registry import compatible_shapes, lookup
from ..passes import recompute


class BackwardError(HeadraceError, ValueError):
    """A gradient cannot be built (an op without a gradient rule on the path, a loss no op computes)."""


# --- entry points (arguments already checked and normalized by the facades) -------------------
def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None, checkpoints=None):
    """Append the backward of ``loss`` (a Variable of block 0) to its program; return
    ``[(parameter, gradient)]``.

    ``parameter_list`` (names) only filters the returned pairs (default: every trainable
    parameter); ``no_grad_set`` (a set of names) adds to the stop_gradient variables;
    ``callbacks`` (a list of callables) are called as ``cb(block=..., context=...)`` after each
    gradient op.  ``checkpoints`` (Variables or names, as ``recompute.checkpoint_names`` takes
    them; checked before anything is appended) turn on activation recompute: the plain backward
    is rewritten by ``passes/recompute.py``.  The return value is a list either way.
    """
    program = loss.block.program
    block = program.global_block()
    if loss.block is not block:
        raise BackwardError(f"append_backward: loss {loss.name!r} must live in block 0")
    checkpoints = recompute.checkpoint_names(block, checkpoints) if checkpoints is not None else []
    loss_op = _last_writer(block, loss.name)
    if loss_op is None:
        raise BackwardError(f"append_backward: no op of the program computes the loss {loss.name!r}")
    loss_op._set_attr(roles.ROLE_ATTR, int(OpRole.Forward | OpRole.Loss))
    program._appending_grad_times += 1
    callbacks = list(callbacks or ())
    builder = Backward(block, [loss], None, None, no_grad_set or (), [] if checkpoints else callbacks)
    grads = builder.build()
    if checkpoints:
        recompute.apply(program, checkpoints, builder.targets, builder.no_grad, builder.forward_of)
        if callbacks:
            _replay_callbacks(builder, callbacks)
    if parameter_list is None:
        parameter_list = [p.name for p in block.all_parameters() if p.trainable]
    pairs = []
    for name in parameter_list:
        if not block.has_var(name):
            raise ValueError(f"append_backward: parameter_list names {name!r}, which is not a "
                             "variable of the loss's program")
        grad = grads.get(name)
        if grad is not None:
            pairs.append((block.var(name), block.var(grad)))
    _mark_role_vars(block, pairs)
    return pairs


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """Gradients of ``sum(targets)`` (each seeded by ones or by its entry of
    ``target_gradients``) with respect to ``inputs``; one Variable per input, ``None`` where the
    targets do not depend on it.  ``targets``/``inputs``: lists of Variables;
    ``target_gradients``: ``None`` or a list of Variables/``None``; ``no_grad_set``: names.
    """
    if target_gradients is not None:
        if len(target_gradients) != len(targets):
            raise ValueError(f"gradients: {len(targets)} targets but {len(target_gradients)} "
                             "target_gradients")
        for t, g in zip(targets, target_gradients):
            if g is not None and not compatible_shapes(g.shape, t.shape):
                raise ValueError(f"gradients: target_gradient {g.name!r} has shape {list(g.shape)}, "
                                 f"but its target {t.name!r} has shape {list(t.shape)}")
    block = targets[0].block
    program = block.program
    for var in targets + inputs:
        if var.block.program is not program:
            raise ValueError(f"gradients: {var.name!r} belongs to another program than the targets")
    program._appending_grad_times += 1
    grads = Backward(block, targets, target_gradients, [v.name for v in inputs], no_grad_set or (),
                     []).build()
    return [block.var(grads[v.name]) if v.name in grads else None for v in inputs]


# --- the engine ----------------------------------------------------------------------------
def _last_writer(block, name):
    for op in reversed(block.ops):
        if name in op.output_arg_names:
            return op
    return None


def _is_float(var) -> bool:
    return var is not None and var.dtype is not None and var.dtype.is_floating


class Backward:
    """One backward construction (see the module docstring for the steps)."""

    def __init__(self, block, targets, target_grads, sources, no_grad, callbacks):
        self.block = block
        self.program = block.program
        self.targets = [t.name for t in targets]
        self.target_grads = target_grads
        self.sources = None if sources is None else set(sources)
        self.no_grad = set(no_grad)
        self.callbacks = callbacks
        self.prefix = "grad/" * max(self.program._appending_grad_times - 1, 0)
        self.grad_to_fwd = {}   # every gradient name handed out -> its forward name
        self.seed_names = {}    # target -> the name of its seed gradient (set in build)
        self.appended = []      # the ops appended, in order (set in build)
        self.forward_of = {}    # op.id of an appended op -> the forward op it came from
        self.context = {}       # what callbacks get: gradient name -> forward name (set in build)

    # names ----------------------------------------------------------------------------------
    def grad_var_name(self, name: str) -> str:
        """The name of forward variable ``name``'s gradient variable (recorded in grad_to_fwd)."""
        grad = self.seed_names.get(name) or self.prefix + names.grad_name(name)
        self.grad_to_fwd[grad] = name
        return grad

    def _fresh_target_grad_name(self, name: str) -> str:
        base = names.grad_name(name)
        candidate, k = base, 0
        while self.block._find_var_recursive(candidate) is not None:
            candidate = f"{base}_{k}"
            k += 1
        return candidate

    # step 2 ---------------------------------------------------------------------------------
    def _leaf_requires_grad(self, name: str) -> bool:
        if name in self.no_grad:
            return False
        if self.sources is not None:
            return name in self.sources
        var = self.block._find_var_recursive(name)
        if not _is_float(var) or var.stop_gradient:
            return False
        return not var.persistable or isinstance(var, Parameter)

    def _requires_grad(self, region) -> set:
        requires, seen = set(), set()
        for op in region:
            for name in op.input_arg_names:
                if name not in seen:
                    seen.add(name)
                    if self._leaf_requires_grad(name):
                        requires.add(name)
            flows = lookup(op.type).grad is not NO_GRADIENT and any(
                n in requires for n in op.input_arg_names)
            for name in op.output_arg_names:
                seen.add(name)
                var = self.block._find_var_recursive(name)
                if self.sources is not None and name in self.sources and name not in self.no_grad:
                    requires.add(name)
                elif flows and _is_float(var) and not var.stop_gradient and name not in self.no_grad:
                    requires.add(name)
                else:
                    requires.discard(name)
        return requires

    # step 3 ---------------------------------------------------------------------------------
    def _path(self, region, requires) -> tuple:
        needed = {t for t in self.targets if t in requires}
        path = []
        for op in reversed(region):
            if not any(n in needed for n in op.output_arg_names):
                continue
            ins = [n for n in op.input_arg_names if n in requires]
            if ins:
                path.append(op)
                needed.update(ins)
        path.reverse()
        return path, needed

    # step 4 ---------------------------------------------------------------------------------
    def _seed_ops(self, requires) -> list:
        seeds = []
        role = int(OpRole.Backward | OpRole.Loss)
        for i, name in enumerate(self.targets):
            if name not in requires:
                continue
            var = self.block.var(name)
            out = self.seed_names[name]
            given = self.target_grads[i] if self.target_grads else None
            if given is not None:
                op = GradOp("assign", {"X": [given.name]}, {"Out": [out]}, {roles.ROLE_ATTR: role})
            elif all(d >= 0 for d in var.shape):
                op = GradOp("fill_constant", {}, {"Out": [out]},
                            {"shape": list(var.shape), "value": 1.0, "dtype": str(var.dtype),
                             roles.ROLE_ATTR: role})
            else:  # unknown dims: shaped like the target at run time
                op = GradOp("fill_any_like", {"X": [name]}, {"Out": [out]},
                            {"value": 1.0, "dtype": "", roles.ROLE_ATTR: role})
            writer = _last_writer(self.block, name)
            seeds.append((op, writer.callsite if writer is not None else None, None))
            self.grad_to_fwd[out] = name
        return seeds

    def _grad_ops(self, path, needed, produced) -> list:
        """``(desc, callsite, forward op)`` of the gradient ops of ``path``, last op first, each
        preceded by the zero-fills of the gradients it reads that nothing produced."""
        described = []
        for op in reversed(path):
            rule = lookup(op.type).grad
            if rule is None:
                reads = [n for n in op.input_arg_names if n in needed]
                raise BackwardError(
                    f"{where(op.type, op.callsite)} has no gradient rule, but the gradient must flow "
                    f"through it to {reads}; mark its output stop_gradient=True or add it to no_grad_set")
            for desc in rule(GradMaker.of(op, self.grad_var_name)):
                outs = self._needed_outputs(desc, needed)
                if not outs:
                    continue
                desc.outputs = outs
                for slot, names_ in desc.inputs.items():
                    for name in names_:
                        fwd = self.grad_to_fwd.get(name)
                        if fwd is not None and name not in produced:
                            described.append((GradOp("fill_any_like", {"X": [fwd]}, {"Out": [name]},
                                                     {"value": 0.0, "dtype": ""}), op.callsite, op))
                            produced.add(name)
                described.append((desc, op.callsite, op))
                produced.update(n for ns in outs.values() for n in ns)
        return described

    def _needed_outputs(self, desc, needed) -> dict:
        outs = {}
        for slot, names_ in desc.outputs.items():
            kept = []
            for name in names_:
                fwd = self.grad_to_fwd.get(name)
                kept.append(name if fwd is None or fwd in needed else EMPTY_VAR_NAME)
            if any(n != EMPTY_VAR_NAME for n in kept):
                many = lookup(desc.type).output_slot(slot).many
                outs[slot] = kept if many else [n for n in kept if n != EMPTY_VAR_NAME]
        return outs

    # step 5 ---------------------------------------------------------------------------------
    def _accumulate(self, described) -> list:
        final = []
        partials = {}        # grad name -> names written so far (one entry: the name itself)
        first_writer = {}    # grad name -> (desc, slot, position)
        counters = defaultdict(int)

        def flush(name, callsite, origin):
            final.append((GradOp("sum", {"X": partials[name]}, {"Out": [name]}, {}), callsite, origin))
            partials[name] = [name]

        for desc, callsite, origin in described:
            for names_ in desc.inputs.values():
                for name in names_:
                    if len(partials.get(name, ())) > 1:
                        flush(name, callsite, origin)
            for slot, names_ in desc.outputs.items():
                for pos, name in enumerate(names_):
                    if name == EMPTY_VAR_NAME:
                        continue
                    if name not in partials:
                        partials[name] = [name]
                        first_writer[name] = (desc, slot, pos)
                        continue
                    if partials[name] == [name]:
                        first, first_slot, first_pos = first_writer[name]
                        renamed = self._rename(name, counters)
                        first.outputs[first_slot][first_pos] = renamed
                        partials[name] = [renamed]
                    renamed = self._rename(name, counters)
                    names_[pos] = renamed
                    partials[name].append(renamed)
            final.append((desc, callsite, origin))
        for name, parts in partials.items():
            if len(parts) > 1:
                flush(name, final[-1][1], None)
        return final

    def _rename(self, name, counters) -> str:
        renamed = names.rename_grad(name, self.block.idx, counters[name])
        counters[name] += 1
        self.grad_to_fwd[renamed] = self.grad_to_fwd.get(name)
        return renamed

    # putting it together ----------------------------------------------------------------------
    def build(self) -> dict:
        ends = [i for i, op in enumerate(self.block.ops)
                if any(t in op.output_arg_names for t in self.targets)]
        region = self.block.ops[: max(ends) + 1] if ends else []
        requires = self._requires_grad(region)
        for t in self.targets:
            if self.sources is not None and t in self.sources:
                requires.add(t)
        self.seed_names = {t: self._fresh_target_grad_name(t) for t in self.targets}
        path, needed = self._path(region, requires)
        seeds = self._seed_ops(requires)
        produced = {op.outputs["Out"][0] for op, _, _ in seeds}
        final = self._accumulate(seeds + self._grad_ops(path, needed, produced))
        self.context = {g: f for g, f in self.grad_to_fwd.items() if f is not None}
        with self.program.role_guard(OpRole.Backward):
            for desc, callsite, origin in final:
                op = self.block.append_op(desc.type, desc.inputs, desc.outputs, desc.attrs,
                                          callsite=callsite)
                self.appended.append(op)
                if origin is not None:
                    self.forward_of[op.id] = origin
                if self.callbacks and _is_gradient_op(op):
                    self.call_back(self.callbacks, op)
        produced = {n for desc, _, _ in final for ns in desc.outputs.values() for n in ns}
        return {fwd: grad for grad, fwd in self.grad_to_fwd.items()
                if grad in produced and fwd is not None and names.RENAME_MARK not in grad}

    def call_back(self, callbacks, op) -> None:
        """Call each callback as the reference does, with ``op`` as the current op."""
        self.context["__current_op_desc__"] = op.desc
        for cb in callbacks:
            cb(block=self.block, context=self.context)


def _is_gradient_op(op) -> bool:
    """Whether an op the backward appended is a gradient op (callbacks are called for it): every
    one except the seeds of the targets' gradients, whose role is Backward|Loss."""
    return not op.role & OpRole.Loss


def _replay_callbacks(builder, callbacks) -> None:
    """Call ``callbacks`` for the builder's gradient ops after a transformation (recompute) has
    rewritten the backward: the ops from the builder's first one on are taken off the block and
    put back one at a time, so each callback sees the block as it was when its op was appended —
    ops the transformation inserted (copies) included, but no callback is called for those.  (One
    difference remains: the variables that later ops write are declared already.)"""
    block = builder.block
    if not builder.appended:
        return
    start = builder.appended[0].idx
    tail = block.ops[start:]
    del block.ops[start:]
    gradient_ops = {op.id for op in builder.appended if _is_gradient_op(op)}
    with block.program.role_guard(OpRole.Backward):   # as when the builder appended them
        for op in tail:
            block.ops.append(op)
            if op.id in gradient_ops:
                builder.call_back(callbacks, op)
    block.program._bump()


def _mark_role_vars(block, pairs) -> None:
    """The op that last writes each parameter gradient carries ``op_role_var=[param, grad, ...]``."""
    writers = {}
    for op in block.ops:   # one pass: the last writer of every name (a scan per pair is quadratic)
        for name in op.output_arg_names:
            writers[name] = op
    for param, grad in pairs:
        op = writers.get(grad.name)
        if op is None:
            continue
        value = [param.name, grad.name] + list(op.attrs.get(roles.ROLE_VAR_ATTR) or [])
        op._set_attr(roles.ROLE_VAR_ATTR, value)
