"""The optimizer base: gradients in, parameter-update ops out.

Static mode (this module): ``minimize(loss)`` = ``backward`` (``append_backward``) then
``apply_optimize`` -> ``apply_gradients``, which appends one update op per parameter (role
Optimize, ``op_role_var=[param, grad]``) to the loss's program.  The learning rate lives in a
persistable float32 variable of shape [1] (``learning_rate_N``) set by the startup program, or is
a Variable the user gives; a parameter's ``ParamAttr(learning_rate=f)`` scales it by ``f`` with a
``scale`` op.  Accumulators (velocity, moments, beta powers) are persistable variables named
``<param>_<acc>_N``, created in the main program and initialised by the startup program.

Subclasses declare ``_create_accumulators(params)`` and ``_append_optimize_op(param, grad)``;
the update itself is a registered op (``ops/optim.py``), so eager mode runs the same kernels.

Dygraph mode: ``step()`` (and ``minimize(loss)``, which applies the gradients ``loss.backward()``
left, as the reference does) calls the same ``_append_optimize_op`` under ``no_grad``; there
``apply_op`` runs the update kernel at once on the parameters' arrays in place, the learning
rate is a [1] float32 Tensor refreshed from ``_learning_rate_value()`` before each step (a
paddle.optimizer.lr scheduler's current value — the user calls ``scheduler.step()`` — or a
fluid.dygraph ``LearningRateDecay``, which advances once per update), and accumulators are
Tensors named as in static mode.
Parameters must be given (``parameters=`` / ``parameter_list=``).
"""
from __future__ import annotations

import contextlib
import numbers
from collections import defaultdict

import numpy as np

from ..core import context, names
from ..core.dtypes import convert_dtype
from ..core.roles import OpRole
from ..core.variable import Variable
from ..eager.tape import no_grad
from ..eager.tensor import Tensor
from ..ops.apply import apply_op, apply_op_single
from .clip import check_grad_clip
from .clip_attr import append_gradient_clip_ops, has_clip_attr
from .lr import LearningRateDecay, LRScheduler
from .regularizer import L2Decay, append_regularization, check_regularizer
from ..core.errors import ArgTypeError, AttrError, located
from . import static_state
from .eager_memo import UpdateMemo


def _check_learning_rate(learning_rate):
    if isinstance(learning_rate, (Variable, LRScheduler)):
        return learning_rate
    if isinstance(learning_rate, LearningRateDecay):
        if context.in_static_mode():
            raise located(ArgTypeError, f"{learning_rate.api_name} is a dygraph (fluid 1.x) schedule; in static "
                            "mode use a paddle.optimizer.lr scheduler (e.g. paddle.optimizer.lr.PiecewiseDecay)")
        return learning_rate
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, numbers.Real):
        raise located(ArgTypeError, "learning_rate must be a float or a Variable, got "
                        f"{type(learning_rate).__name__}: {learning_rate!r}")
    if not learning_rate >= 0:
        raise located(AttrError, f"learning_rate must be >= 0, got {learning_rate}")
    return float(learning_rate)


def check_float_arg(value, name: str, low=None, high=None, high_open=False) -> float:
    """A hyper-parameter given as a real number in [low, high] (or [low, high) with high_open)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise located(ArgTypeError, f"{name} must be a float, got {type(value).__name__}: {value!r}")
    value = float(value)
    if low is not None and value < low:
        raise located(AttrError, f"{name} must be >= {low}, got {value}")
    if high is not None and (value > high or (high_open and value == high)):
        raise located(AttrError, f"{name} must be {'<' if high_open else '<='} {high}, got {value}")
    return value


class Optimizer:
    """Base class; see the module docstring."""

    type = "optimizer"

    def __init__(self, learning_rate, parameters=None, weight_decay=None, grad_clip=None, name=None):
        self._learning_rate = _check_learning_rate(learning_rate)
        if parameters is None and context.in_dynamic_mode():
            raise AttributeError("parameters argument given to the Optimizer should not be None in "
                                 "dygraph mode.")
        if parameters is not None:
            parameters = list(parameters)
            for p in parameters:
                if not isinstance(p, (Variable, str, Tensor)):
                    raise located(ArgTypeError, "parameters must hold Parameters (or, in static mode, their "
                                    f"names), got {type(p).__name__}: {p!r}")
        self._parameter_list = parameters
        if isinstance(weight_decay, numbers.Real) and not isinstance(weight_decay, bool):
            weight_decay = L2Decay(weight_decay)     # a number means L2 decay, as the reference
        self._regularization = check_regularizer(weight_decay, f"{type(self).__name__}: weight_decay/regularization")
        self._grad_clip = check_grad_clip(grad_clip)
        self._name = name
        self._accumulators = defaultdict(dict)   # accumulator name -> {param name: Variable}
        self._learning_rate_map = {}             # Program -> learning-rate Variable
        self._eager_learning_rate = None         # dygraph: the [1] learning-rate Tensor
        self._last_decay_lr = None               # dygraph: the rate a LearningRateDecay last gave
        self._pending_state = None               # dygraph: loaded accumulator values not created yet
        self._loaded_names = ()                  # dygraph: every accumulator name the loaded state holds
        self._update_memo = UpdateMemo()         # dygraph: the last step's updates, replayed (eager_memo.py)

    # --- learning rate --------------------------------------------------------------------
    def get_lr(self) -> float:
        """The learning rate as a float: a number, an LR scheduler's current value, or for a
        fluid.dygraph ``LearningRateDecay`` what ``current_step_lr()`` says.  (A Variable
        learning rate is read at run time: fetch it.)"""
        if isinstance(self._learning_rate, Variable):
            raise located(ArgTypeError, "get_lr(): the learning rate is a Variable; fetch it with Executor.run")
        if isinstance(self._learning_rate, LRScheduler):
            return self._learning_rate()
        if isinstance(self._learning_rate, LearningRateDecay):
            return self.current_step_lr()
        return self._learning_rate

    def current_step_lr(self) -> float:
        """The learning rate of the current step (the fluid 1.x name of ``get_lr``).

        With a fluid.dygraph ``LearningRateDecay`` (which advances once per update): before the
        first update, the rate the first update will use; afterwards, the rate the last update
        used — so after ``minimize`` number i (from 0) it is the schedule's value at step i."""
        if isinstance(self._learning_rate, LearningRateDecay):
            if self._last_decay_lr is None:
                return self._learning_rate.peek()
            return self._last_decay_lr
        return self.get_lr()

    def set_lr(self, value) -> None:
        """Set a number learning rate (not a schedule): eager updates use it from the next step;
        in static mode every program this optimizer built reads it from its next run (in
        whatever scope it runs, like a schedule's rate).  In static mode ``value`` may also be a
        float32 Variable of shape [1] (1.x): programs this optimizer builds from now on in
        ``value``'s program read their rate from it (ops already built keep theirs, as the
        reference)."""
        if isinstance(value, Variable):
            self._set_lr_variable(value)
            return
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise located(ArgTypeError, f"The type of 'value' in optimizer.set_lr must be float, but received {type(value)}.")
        if not isinstance(self._learning_rate, float):
            raise RuntimeError(f"optimizer.set_lr: the learning rate is a {type(self._learning_rate).__name__}, "
                               "not a number; a schedule sets the rate itself (call its step())")
        self._learning_rate = _check_learning_rate(value)
        rate = self._learning_rate
        for program, var in self._learning_rate_map.items():
            program._lr_schedulers[var.name] = lambda: rate

    def _set_lr_variable(self, value) -> None:
        if isinstance(self._learning_rate, (LRScheduler, LearningRateDecay)):
            raise RuntimeError(f"optimizer.set_lr: the learning rate is a {type(self._learning_rate).__name__}, "
                               "not a number; a schedule sets the rate itself (call its step())")
        if tuple(value.shape) != (1,) or str(value.dtype) not in ("float32", "float64"):
            raise ValueError(f"optimizer.set_lr: a learning-rate Variable must be a float tensor of shape [1], "
                             f"got {value.name!r} of shape {list(value.shape)} and dtype {value.dtype}")
        self._learning_rate_map[value.block.program] = value

    def _learning_rate_value(self) -> float:
        """The learning rate of the coming eager update; a ``LearningRateDecay`` advances here,
        once per update (``step()``/``minimize``), as in the reference's dygraph mode."""
        if isinstance(self._learning_rate, LearningRateDecay):
            self._last_decay_lr = float(self._learning_rate())
            return self._last_decay_lr
        return self.get_lr()

    def _global_learning_rate(self, program=None):
        if program is None and not context._static_mode:
            return self._eager_learning_rate
        program = program or context.default_main_program()
        return self._learning_rate_map.get(program)

    def _create_global_learning_rate(self):
        if context.in_dynamic_mode():
            value = np.full([1], self._learning_rate_value(), dtype=np.float32)
            if self._eager_learning_rate is None:
                self._eager_learning_rate = Tensor(value, name=names.generate("learning_rate"))
            else:
                self._eager_learning_rate._value = value
            return self._eager_learning_rate
        program = context.default_main_program()
        if program in self._learning_rate_map:
            return self._learning_rate_map[program]
        if isinstance(self._learning_rate, Variable):
            if self._learning_rate.block.program is not program:
                raise located(AttrError, f"learning rate Variable {self._learning_rate.name!r} belongs to "
                                 "another program than the loss")
            lr = self._learning_rate
        elif isinstance(self._learning_rate, LRScheduler):
            # the executor writes scheduler() into this variable before every run of the program
            lr = self._persistable(names.generate("learning_rate"), [1], "float32", self._learning_rate())
            program._lr_schedulers[lr.name] = self._learning_rate
        else:
            lr = self._persistable(names.generate("learning_rate"), [1], "float32", self._learning_rate)
        self._learning_rate_map[program] = lr
        return lr

    def _param_learning_rate(self, param):
        options = getattr(param, "optimize_attr", None)
        factor = options.get("learning_rate", 1.0) if options else 1.0
        lr = self._global_learning_rate()
        if isinstance(factor, Variable):
            return factor
        if factor == 1.0:
            return lr
        if context.in_dynamic_mode():
            return apply_op("scale", {"X": lr}, {"scale": float(factor)})["Out"][0]
        program = context.default_main_program()
        with program.role_guard(OpRole.Optimize | OpRole.LRSched), context.name_scope("scale_with_param_lr"):
            return apply_op("scale", {"X": lr}, {"scale": float(factor)})["Out"][0]

    # --- accumulators ---------------------------------------------------------------------
    def _persistable(self, name, shape, dtype, fill_value):
        """A persistable variable in the main program, filled with ``fill_value`` by the startup
        (in dygraph mode: a Tensor filled now)."""
        if context.in_dynamic_mode():
            tensor = Tensor(np.full(list(shape), fill_value, dtype=convert_dtype(dtype).numpy), name=name)
            tensor.persistable = True
            return tensor
        main = context.default_main_program().global_block()
        var = main.create_var(name=name, shape=list(shape), dtype=dtype, persistable=True,
                              stop_gradient=True)
        startup = context.default_startup_program().global_block()
        svar = startup.create_var(name=name, shape=list(shape), dtype=dtype, persistable=True)
        startup.append_op("fill_constant", {}, {"Out": [svar.name]},
                          {"shape": list(shape), "dtype": str(var.dtype), "value": float(fill_value)})
        return var

    def _add_accumulator(self, name, param, fill_value=0.0, shape=None, dtype=None):
        if param.name in self._accumulators[name]:
            raise located(AttrError, f"accumulator {name!r} already exists for parameter {param.name!r}")
        var = self._persistable(names.generate(f"{param.name}_{name}"),
                                param.shape if shape is None else shape,
                                dtype or param.dtype, fill_value)
        if self._pending_state is not None:       # set_state_dict ran before this step created it
            self._check_loaded(var, param)
            var.set_value(self._pending_state.pop(var.name))
        self._accumulators[name][param.name] = var
        self._update_memo.forget()
        return var

    def _get_accumulator(self, name, param):
        try:
            return self._accumulators[name][param.name]
        except KeyError:
            raise KeyError(f"accumulator {name!r} does not exist for parameter {param.name!r}") from None

    def _create_accumulators(self, params) -> None:
        """Subclasses create their per-parameter state here."""

    def _append_optimize_op(self, param, grad):
        raise NotImplementedError(f"{type(self).__name__} does not define its update op")

    # --- state (dygraph) ------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Dygraph: ``{accumulator name: Tensor}`` (velocities, moments, beta powers, ...) and,
        with a schedule, ``"LR_Scheduler"``: its state.  Empty before the first update.  Static
        mode: the accumulators' values in the global scope, as ndarrays (optimizer/static_state.py)."""
        if self._built_static():
            state = static_state.static_state_dict(self)
        else:
            state = {var.name: var for acc in self._accumulators.values() for var in acc.values()}
        if isinstance(self._learning_rate, LRScheduler):
            state["LR_Scheduler"] = self._learning_rate.state_dict()
        elif isinstance(self._learning_rate, LearningRateDecay):
            state["LR_Scheduler"] = dict(self._learning_rate.state_dict(), last_lr=self._last_decay_lr)
        return state

    def set_state_dict(self, state_dict) -> None:
        """Dygraph: load what ``state_dict()`` returned (Tensors or arrays).  Accumulators that
        exist are set now (same shape); the others when the update that creates them runs.  Static
        mode: stores them into the global scope (checked: shape and dtype)."""
        if not isinstance(state_dict, dict):
            raise located(ArgTypeError, f"set_state_dict: expected a dict from state_dict(), got {type(state_dict).__name__}")
        state = dict(state_dict)
        schedule = state.pop("LR_Scheduler", None)    # a number learning rate ignores it (fine-tuning)
        if isinstance(self._learning_rate, (LRScheduler, LearningRateDecay)):
            if schedule is None:
                raise KeyError(f"set_state_dict: this optimizer's learning rate is a "
                               f"{type(self._learning_rate).__name__} but the state has no 'LR_Scheduler' entry")
            self._learning_rate.set_state_dict(schedule)
            if isinstance(self._learning_rate, LearningRateDecay):
                self._last_decay_lr = schedule.get("last_lr")
        if self._built_static():
            static_state.set_static_state_dict(self, state)
            return
        self._update_memo.forget()
        self._pending_state = {k: np.asarray(v._value if isinstance(v, Tensor) else v) for k, v in state.items()}
        self._loaded_names = tuple(sorted(self._pending_state))
        for acc in self._accumulators.values():
            for param_name, var in acc.items():
                self._check_loaded(var, param_name)
                var.set_value(self._pending_state.pop(var.name))

    set_dict = set_state_dict

    def _check_loaded(self, var, param) -> None:
        """Once a state is loaded, every accumulator (existing, or created later) must be in it."""
        if var.name not in self._pending_state:
            param_name = param if isinstance(param, str) else param.name
            raise KeyError(
                f"{type(self).__name__}: the state loaded with set_state_dict has no value for accumulator "
                f"{var.name!r} (parameter {param_name!r}); it holds {list(self._loaded_names[:6])}. Were the "
                "parameters (or this optimizer) created under other names, e.g. a second model built in "
                "this process? Build them under the same names, e.g. in a fresh process.")

    def _built_static(self) -> bool:
        """Whether this optimizer's state lives in a scope (it built static programs): its
        accumulators are static Variables, or it has none yet and static mode is on."""
        for acc in self._accumulators.values():
            for var in acc.values():
                return isinstance(var, Variable)
        return context.in_static_mode()

    # --- dygraph mode ---------------------------------------------------------------------
    def _eager_params(self, parameters=None):
        params = _first_given(parameters, self._parameter_list)
        if params is None:
            raise AttributeError("parameters argument given to the Optimizer should not be None in "
                                 "dygraph mode.")
        for p in params:
            if not isinstance(p, Tensor):
                raise located(ArgTypeError, f"{type(self).__name__}: in dygraph mode parameters must be Tensors "
                                f"(Layer.parameters()), got {type(p).__name__}: {p!r}")
        return params

    def _eager_params_grads(self, parameters=None, no_grad_set=None) -> list:
        if not no_grad_set:     # step(): the same list, without the skip tests (p.name still names the unnamed)
            return [(p, p._grad) for p in self._eager_params(parameters)
                    if not p.stop_gradient and p._grad is not None and (p._name is not None or p.name)]
        skip = {id(p) for p in no_grad_set} | {p for p in no_grad_set if isinstance(p, str)}
        return [(p, p._grad) for p in self._eager_params(parameters)
                if not p.stop_gradient and p._grad is not None and id(p) not in skip and p.name not in skip]

    def _apply_eager(self, params_grads) -> None:
        with no_grad():
            params_grads = self._clip_and_regularize(params_grads)
            if self._update_memo.ready(self, params_grads):    # a step like the last: eager_memo.py
                self._update_memo.replay(self, params_grads, self._create_global_learning_rate())
                return
            params = [p for p, _ in params_grads]
            accumulators = list(self._accumulators.values())
            new = [p for p in params if not any(p.name in acc for acc in accumulators)] if accumulators else params
            self._create_accumulators(new)
            self._create_global_learning_rate()
            self._eager_updates(params_grads)

    def _eager_updates(self, params_grads) -> None:
        """Dygraph: run the update ops now, each through the eager runner (its fast path for a
        call passing its output Tensors, ``eager/fast.py`` ``run_into``, once its signature
        passed), and remember them for the next step (``eager_memo.py``)."""
        self._update_memo.learn(self, params_grads)

    def step(self) -> None:
        """Dygraph: update every parameter that has a gradient, with the same update kernels."""
        if context.in_static_mode():
            raise RuntimeError(f"{type(self).__name__}.step() runs in dygraph mode; in static mode call "
                               "minimize(loss) and run the program")
        self._apply_eager(self._eager_params_grads())

    def clear_grad(self, set_to_zero=True) -> None:
        """Dygraph: zero (or drop, with ``set_to_zero=False``) the parameters' gradients."""
        for p in self._eager_params():
            p.clear_gradient(set_to_zero)

    clear_gradients = clear_grad

    # --- the static-mode pipeline ---------------------------------------------------------
    def backward(self, loss, startup_program=None, parameters=None, no_grad_set=None,
                 callbacks=None, parameter_list=None):
        """Append the backward of ``loss``; return ``[(param, grad)]``.  (Dygraph: the gradients
        ``loss.backward()`` left — it does not run the backward itself, as the reference.)"""
        if isinstance(loss, Tensor):
            return self._eager_params_grads(_first_given(parameters, parameter_list), no_grad_set)
        if not isinstance(loss, Variable):
            raise located(ArgTypeError, f"{type(self).__name__}.backward: loss must be a Variable, got "
                            f"{type(loss).__name__}")
        params = _first_given(parameters, parameter_list, self._parameter_list)
        with context.program_guard(loss.block.program, startup_program):
            return append_backward(loss, params, no_grad_set, callbacks)

    def apply_gradients(self, params_grads) -> list:
        """Append the update ops for ``[(param, grad)]`` to the current program; return every op
        this appended (clipping, weight decay, per-parameter learning-rate ``scale`` ops and the
        updates, in program order, as the reference).  (Dygraph: apply them now; returns [].)"""
        if context.in_dynamic_mode():
            self._apply_eager([(p, g) for p, g in params_grads if g is not None])
            return []
        block = context.default_main_program().global_block()
        first = len(block.ops)
        self._append_updates(params_grads)
        return block.ops[first:]

    def _append_updates(self, params_grads) -> None:
        params_grads = sorted((pg for pg in params_grads if pg[1] is not None),
                              key=lambda pg: pg[0].name)
        params_grads = self._clip_and_regularize(params_grads)
        params = [p for p, _ in params_grads if getattr(p, "trainable", True)]
        new = [p for p in params if not any(p.name in acc for acc in self._accumulators.values())]
        self._create_accumulators(new)
        self._create_global_learning_rate()
        program = context.default_main_program()
        for param, grad in params_grads:
            if not getattr(param, "trainable", True):
                continue
            with program.role_guard(OpRole.Optimize, [param.name, grad.name]):
                self._append_optimize_op(param, grad)

    def _clip_and_regularize(self, params_grads) -> list:
        """Gradient clipping, then weight decay (a parameter's own regularizer first), as ops
        (role Optimize) ahead of the update ops; the reference's order."""
        # fluid set_gradient_clip: static Parameters only (an eager Parameter has no such attribute)
        clip_attrs = self._grad_clip is None and context._static_mode and has_clip_attr(params_grads)
        if self._grad_clip is None and not clip_attrs and self._regularization is None and \
                not any(getattr(p, "regularizer", None) for p, _ in params_grads):
            return params_grads
        with self._optimize_role():
            if self._grad_clip is not None:
                params_grads = self._grad_clip(params_grads)
            elif clip_attrs:
                params_grads = append_gradient_clip_ops(params_grads)
            return append_regularization(params_grads, self._regularization)

    def _optimize_role(self):
        """Static mode appends the ops with role Optimize; eager mode computes them now."""
        if context.in_dynamic_mode():
            return contextlib.nullcontext()
        return context.default_main_program().role_guard(OpRole.Optimize)

    def append_regularization_ops(self, parameters_and_grads, regularization=None) -> list:
        """Add weight decay to each gradient: the parameter's own regularizer, else
        ``regularization`` (static: appends the ops, role Optimize); returns ``[(param, grad)]``."""
        with self._optimize_role():
            return append_regularization(parameters_and_grads, check_regularizer(
                regularization, f"{type(self).__name__}.append_regularization_ops: regularization"))

    def apply_optimize(self, loss, startup_program, params_grads) -> list:
        if context.in_dynamic_mode():
            return self.apply_gradients(params_grads)
        if not isinstance(loss, Variable):
            raise located(ArgTypeError, f"{type(self).__name__}.apply_optimize: loss must be a Variable, got "
                            f"{type(loss).__name__}")
        with context.program_guard(loss.block.program, startup_program):
            return self.apply_gradients(params_grads)

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None,
                 parameter_list=None, grad_clip=None):
        """``backward`` then ``apply_optimize``; returns ``(optimize_ops, params_grads)``.
        In dygraph mode it applies the gradients ``loss.backward()`` left (it does not run
        backward itself, as the reference).  ``grad_clip`` (the fluid 1.x argument) clips this
        update instead of the optimizer's own ``grad_clip``."""
        with self._grad_clip_for_call(grad_clip):
            if isinstance(loss, Tensor):
                params_grads = self._eager_params_grads(_first_given(parameters, parameter_list), no_grad_set)
                self._apply_eager(params_grads)
                return [], params_grads
            params_grads = self.backward(loss, startup_program, parameters, no_grad_set,
                                         parameter_list=parameter_list)
            optimize_ops = self.apply_optimize(loss, startup_program, params_grads)
            return optimize_ops, params_grads

    @contextlib.contextmanager
    def _grad_clip_for_call(self, grad_clip):
        if grad_clip is None:
            yield
            return
        own, self._grad_clip = self._grad_clip, check_grad_clip(grad_clip)
        try:
            yield
        finally:
            self._grad_clip = own

    # helpers for subclasses -----------------------------------------------------------------
    def _update_op(self, type, inputs, outputs, attrs=None):
        """Append one update op to the main program's global block and return the Operator; in
        dygraph mode run it now and return None (``apply_op_single``: its eager shortcut)."""
        block = context.default_main_program().global_block() if context._static_mode else None
        if block is None and self._update_memo.capturing is not None:   # a step being learned
            return self._update_memo.capture(type, inputs, outputs, attrs)
        apply_op_single(type, inputs, attrs, next(iter(outputs)), outputs=outputs, block=block)
        return block.ops[-1] if block is not None else None


def _first_given(*values):
    for value in values:
        if value is not None:
            return value
    return None


def append_backward(loss, parameter_list, no_grad_set, callbacks, checkpoints=None) -> list:
    """``paddle.static.append_backward``: the facade, which checks the user's arguments as the
    reference does.  Imported on use: the ``headrace.static`` package imports ``nn``, which imports
    this package."""
    from ..static.backward import append_backward as facade

    return facade(loss, parameter_list, no_grad_set, callbacks, checkpoints=checkpoints)
