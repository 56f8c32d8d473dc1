"""The memo of an optimizer's eager updates: a ``step()`` like the last one replays what it resolved.

A dygraph ``step()`` runs one update op per parameter: the optimizer's ``_append_optimize_op``
gathers the accumulators and the learning rate, ``_update_op`` hands the op to the eager runner,
whose fast path (``eager/fast.py``) finds the ``FastOp`` of the call's signature and runs the
registered kernel into the Tensors passed as outputs.  That is ~5 us of Python per parameter
around a ~1 us SGD kernel.  The memo remembers, per parameter, what the last full update
resolved -- the ``FastOp``, the kernel's input arrays, the Tensors receiving its outputs -- and
the next ``step()`` calls the same kernel with the same attributes and context directly, when
nothing that resolution read has changed:

- per step: the memo is enabled (``ENABLED``), check mode (``HEADRACE_CHECK_KERNELS``) and
  ``FLAGS_check_nan_inf`` are off, no recompute pass is running (``tape.recomputing``),
  gradients are off (``step()`` runs under ``no_grad``), the eager runner is ``run_op``, the
  learning-rate Tensor is the one the memo saw, the optimizer's hyper-parameters (every plain
  number, bool, string or None attribute, and lists/tuples of them: ``hyper_state``) are equal
  and of the same type (and sign, for floats), the parameters with gradients are the same
  objects in the same order under the same names, every accumulator Tensor the memo writes is
  still the one ``opt._accumulators`` holds for its parameter (a table emptied to reset the
  optimizer: the full path creates them anew), static mode is off, and the methods the memo
  stands in for are still functions of headrace.optimizer's modules (``class_is_safe``, every
  step: a function patched onto the class later is seen);
- per parameter: the gradient is a Tensor whose array has the shape and dtype seen (the gradient
  buffer a ``clear_grad()`` keeps, or a new one); the parameter and every accumulator Tensor
  still hold the arrays the update wrote, with the shapes and dtypes seen (``set_value``,
  ``set_state_dict`` replace them; an array reshaped in place gets the full path's error); its
  ``optimize_attr`` learning-rate factor is still 1.0 (a float).

Tensors and arrays are held by weak reference: the memo keeps no parameter alive (parameters
given to one ``minimize`` call), and a copy or pickle of the optimizer gets an empty memo.

Whatever does not hold sends the parameter (or, for the per-step conditions, the whole step)
through the full path, which re-validates everything (errors name the user's line) and learns
the memo anew; so do the parameters whose update did not qualify (a learning-rate factor other
than 1.0, which runs a ``scale`` op per step; a signature the fast path does not take).
Clipping and weight decay run before the updates every step as before; the memo takes the
gradients they give.  The first step of a signature always takes the full path.  Optimizer
classes whose update methods are not headrace's own (a user subclass overriding
``_append_optimize_op`` or ``_attrs``, say) never use the memo, nor do optimizers holding
callables as attributes (AdamW's ``lr_ratio``/``apply_decay_param_fun``, Lamb's
``exclude_from_weight_decay_fn``: called for each parameter every step, as before).

The kernel is the op's registered kernel, looked up on the ``OpDef`` at each call, with the
``FastOp``'s resolved attributes and context; a kernel error is wrapped as on the fast path.
"""
from __future__ import annotations

import math
import operator
import weakref

import numpy as np

from ..core import context, flags
from ..core.errors import is_wrapped
from ..eager import runner, tape
from ..eager.tensor import Parameter, Tensor
from ..ops import apply as _apply

ENABLED = True          # tests turn the memo off to compare against the full path
_TENSORS = (Tensor, Parameter)
_PLAIN = (int, bool, str, type(None))
_is = operator.is_
_first = operator.itemgetter(0)
_name_of = operator.attrgetter("_name")
_ndarray = np.ndarray
_asarray = np.asarray
_ref = weakref.ref
_NONE: dict = {}
# the optimizer's own bookkeeping (read fresh every step, or run before the updates): not hyper-parameters
_BOOKKEEPING = frozenset({"_accumulators", "_learning_rate_map", "_eager_learning_rate", "_last_decay_lr",
                          "_pending_state", "_loaded_names", "_update_memo", "_learning_rate", "_grad_clip",
                          "_regularization", "_parameter_list", "_name"})
# the methods whose result the memo replays: a class overriding one outside headrace.optimizer opts out
_METHODS = ("_append_optimize_op", "_attrs", "_param_learning_rate", "_update_op", "_get_accumulator",
            "_weight_decay_of", "_eager_updates", "_create_accumulators", "_add_accumulator", "_fill",
            "_global_learning_rate")
_SAFE: dict = {}          # the methods' functions (a tuple) -> whether all are headrace.optimizer's


def class_is_safe(cls) -> bool:
    """Whether every method the memo stands in for is a function of headrace.optimizer's modules
    in ``cls`` now (a subclass's override, or a function patched onto a class, is not: checked
    every step, the answer cached by the functions themselves)."""
    funcs = tuple([getattr(cls, name, None) for name in _METHODS])
    safe = _SAFE.get(funcs)
    if safe is None:
        safe = all(f is None or str(getattr(f, "__module__", "")).startswith("headrace.optimizer.")
                   for f in funcs)
        if len(_SAFE) > 256:
            _SAFE.clear()
        _SAFE[funcs] = safe
    return safe


def hyper_state(opt):
    """The optimizer's hyper-parameters as a comparable tuple (floats with their sign), or None
    when an attribute is something else (a callable, an object): no memo then."""
    state = []
    for name, value in vars(opt).items():
        if name in _BOOKKEEPING:
            continue
        kind = type(value)
        if kind is float:
            state.append((name, kind, value, math.copysign(1.0, value)))
        elif kind in _PLAIN:
            state.append((name, kind, value))
        elif kind in (list, tuple) and all(type(v) in _PLAIN for v in value):
            state.append((name, kind, tuple((type(v), v) for v in value)))
        else:
            return None
    return tuple(state)


def _conditions_hold() -> bool:
    return (ENABLED and not runner.CHECK_KERNELS and flags._nan_inf is None and not tape.recomputing
            and not tape.grad_enabled and not context._static_mode and _apply._eager_runner is runner.run_op)


def _accumulator_of(opt, param, t):
    """The name of the accumulator ``t`` is for ``param`` in ``opt._accumulators``, or None."""
    for name, per_param in opt._accumulators.items():
        if per_param.get(param.name) is t:
            return name
    return None


class UpdateMemo:
    """One optimizer's memo (see the module docstring)."""

    __slots__ = ("entries", "params", "names", "hyper", "lr", "capturing", "replays", "misses")

    def __init__(self):
        # per parameter: [the kernel's input slots in the call's order (a dict of None), ((slot, weakref to
        # the Tensor, weakref to its array, the array's shape and dtype), ...)
        # for the inputs but the gradient and the learning rate, weakref to the gradient's array, its shape,
        # its dtype, ((output slot, weakref to the Tensor), ...), the FastOp's OpDef, attributes, context and
        # Step, ((accumulator name, parameter name, weakref to the Tensor), ...)], or None (the update does
        # not qualify).  Weak references: the memo keeps no Tensor or array alive (``params`` too).
        self.entries = None
        self.params = ()
        self.names = ()
        self.hyper = self.lr = self.capturing = None
        self.replays = 0         # steps replayed (tests read it)
        self.misses = 0          # parameters of replayed steps that took the full path

    def __reduce__(self):
        """A copy or pickle of the optimizer gets an empty memo (weak references do not pickle)."""
        return (UpdateMemo, ())

    def forget(self) -> None:
        """Drop the memo: the next step takes the full path (accumulators created or loaded)."""
        self.entries = None

    # --- the full path, learning ------------------------------------------------------------
    def learn(self, opt, params_grads) -> None:
        """Run every update through the full path (``_append_optimize_op``) and remember each."""
        self.entries = None
        hyper = hyper_state(opt) if _conditions_hold() and class_is_safe(type(opt)) else None
        if hyper is None:
            for param, grad in params_grads:
                opt._append_optimize_op(param, grad)
            return
        lr = opt._eager_learning_rate
        entries = [self._learn_one(opt, param, grad, lr) for param, grad in params_grads]
        params = list(map(_first, params_grads))
        self.params, self.names = tuple(map(_ref, params)), tuple(map(_name_of, params))
        self.hyper, self.lr, self.entries = hyper, lr, entries

    def _learn_one(self, opt, param, grad, lr):
        self.capturing = calls = []
        try:
            opt._append_optimize_op(param, grad)
        finally:
            self.capturing = None
        if len(calls) != 1:
            return None
        op, inputs, outputs = calls[0]
        if op is None or inputs.get("Param") is not param or inputs.get("Grad") is not grad or \
                inputs.get("LearningRate") is not lr or type(grad) not in _TENSORS:
            return None
        checked, accs = [], []
        for slot, t in inputs.items():
            if slot != "Grad" and slot != "LearningRate":    # (the learning rate: ours, a float32 [1])
                a = t._value
                if type(a) is not _ndarray:
                    return None
                checked.append((slot, _ref(t), _ref(a), a.shape, a.dtype))
                acc = None if slot == "Param" else _accumulator_of(opt, param, t)
                if acc is not None:
                    accs.append((acc, param.name, checked[-1][1]))
        garray = grad._value
        if type(garray) is not _ndarray:
            return None
        template = dict.fromkeys(inputs)      # the kernel's inputs in the call's slot order
        outs = tuple((slot, _ref(t)) for slot, t in outputs.items())
        return [template, tuple(checked), _ref(garray), garray.shape, garray.dtype, outs,
                op.opdef, op.attrs, op.ctx, op.step, tuple(accs)]

    def capture(self, op_type, inputs, outputs, attrs) -> None:
        """``Optimizer._update_op`` while learning: run the update, note its ``FastOp``."""
        _, op = runner.run_update(op_type, inputs, attrs, outputs)
        self.capturing.append((op, inputs, outputs))

    # --- the memo path ----------------------------------------------------------------------
    def ready(self, opt, params_grads) -> bool:
        """Whether this step may replay the memo (the per-step conditions)."""
        entries = self.entries
        if entries is None or len(params_grads) != len(entries) or not _conditions_hold() or \
                opt._eager_learning_rate is not self.lr:
            return False
        params = [r() for r in self.params]
        return all(map(_is, map(_first, params_grads), params)) and \
            all(map(_is, map(_name_of, params), self.names)) and class_is_safe(type(opt)) and \
            hyper_state(opt) == self.hyper and self._state_in_place(opt)

    def _state_in_place(self, opt) -> bool:
        """Whether every accumulator the memo writes is still the optimizer's for its parameter
        (``opt._accumulators`` emptied or an entry replaced: the full path creates them anew)."""
        accumulators = opt._accumulators
        for entry in self.entries:
            if entry is not None:
                for acc, name, tref in entry[10]:
                    t = tref()
                    if t is None or accumulators.get(acc, _NONE).get(name) is not t:
                        return False
        return True

    def replay(self, opt, params_grads, lr_tensor) -> None:
        """Each parameter's update: the memo's kernel call when its checks hold, else the full path."""
        entries = self.entries
        lr = lr_tensor._value
        self.replays += 1
        for i, (param, grad) in enumerate(params_grads):
            entry = entries[i]
            if entry is None or type(grad) not in _TENSORS:
                self._miss(opt, i, param, grad, lr_tensor)
                continue
            template, checked, gref, gshape, gdtype, out_items, opdef, attrs, ctx, step, _ = entry
            ga = grad._value
            if gref() is not ga:               # another gradient array (the first, or dropped ones)
                if type(ga) is not _ndarray:
                    self._miss(opt, i, param, grad, lr_tensor)
                    continue
                entry[2] = _ref(ga)
            if ga.shape != gshape or ga.dtype is not gdtype:   # (also an array reshaped in place)
                self._miss(opt, i, param, grad, lr_tensor)
                continue
            options = getattr(param, "optimize_attr", None)
            factor = options.get("learning_rate", 1.0) if options else 1.0
            ins = template.copy()
            ins["Grad"] = ga
            ins["LearningRate"] = lr
            for slot, tref, ref, shape, dtype in checked:
                t = tref()
                a = None if t is None else t._value
                if a is None or ref() is not a or a.shape != shape or a.dtype is not dtype:
                    ins = None                 # gone, or replaced (set_value, set_state_dict, reshaped in place)
                    break
                ins[slot] = a
            if ins is None or type(factor) is not float or factor != 1.0:   # factor: a scale op per step
                self._miss(opt, i, param, grad, lr_tensor)
                continue
            try:
                outs = opdef.kernel(ins, attrs, ctx)
            except Exception as exc:
                if is_wrapped(exc):
                    raise
                raise step.error(exc, ins) from exc
            for slot, tref in out_items:
                t = tref()
                if t is not None:          # (an output nobody holds any more: nothing to write)
                    value = outs[slot]
                    t._value = value if type(value) is _ndarray else _asarray(value)

    def _miss(self, opt, i, param, grad, lr_tensor) -> None:
        self.misses += 1
        self.entries[i] = self._learn_one(opt, param, grad, lr_tensor)
