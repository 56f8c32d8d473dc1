"""The fluid 1.x learning-rate decay functions of ``fluid.layers`` (``exponential_decay``,
``piecewise_decay``, ``noam_decay``, ...).

In static mode each returns a float32 [1] learning-rate Variable computed by an ``lr_schedule`` op
(role Optimize | LRSched) from its own persistable int64 step counter: the startup program sets
the counter to ``begin - 1`` and every run of the main program adds 1 before computing the rate, so
run ``k`` (from 0) uses the rate of step ``begin + k`` — ``begin`` is 1 for ``noam_decay`` and 0
for the others, as the reference's global step counter.  The op is part of the program, so the
schedule survives ``clone()`` (a ``for_test`` clone drops it, like the optimizer ops) and
advances on every place of a data-parallel run.  Give the Variable to an optimizer as its
``learning_rate``.

In dygraph mode each returns the matching ``fluid.dygraph`` schedule object, as the reference does.
"""
from __future__ import annotations

import numbers

from ..core import context, names
from ..core.roles import OpRole
from ..core.variable import Variable
from ..ops.apply import apply_op
from . import lr_fluid
from .lr import FluidPiecewiseDecay, LearningRateDecay


def _counter(begin: int):
    main = context.default_main_program().global_block()
    name = names.generate("@LR_DECAY_COUNTER@")
    counter = main.create_var(name=name, shape=[1], dtype="int64", persistable=True, stop_gradient=True)
    startup = context.default_startup_program().global_block()
    svar = startup.create_var(name=name, shape=[1], dtype="int64", persistable=True)
    startup.append_op("fill_constant", {}, {"Out": [svar.name]},
                      {"shape": [1], "dtype": "int64", "value": float(begin - 1)})
    return counter


def _schedule(kind: str, begin: int = 0, base=None, **attrs):
    program = context.default_main_program()
    counter = _counter(begin)
    inputs = {"Counter": counter}
    if base is not None:
        inputs["BaseLR"] = base
    with program.role_guard(OpRole.Optimize | OpRole.LRSched):
        outs = apply_op("lr_schedule", inputs, dict(attrs, kind=kind), outputs={"CounterOut": counter},
                        name_key=f"{names.generate('learning_rate')}.tmp")
    lr = outs["Out"][0]
    lr.stop_gradient = True
    return lr


def _float(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number, got {type(value).__name__}: {value!r}")
    return float(value)


def _rate_decay(kind, dygraph_class, learning_rate, decay_steps, decay_rate, staircase):
    """The three decays of (learning_rate, decay_steps, decay_rate, staircase): one schedule op."""
    if context.in_dynamic_mode():
        return dygraph_class(learning_rate, decay_steps, decay_rate, staircase)
    return _schedule(kind, learning_rate=_float(learning_rate, "learning_rate"),
                     decay_steps=_float(decay_steps, "decay_steps"), decay_rate=_float(decay_rate, "decay_rate"),
                     staircase=bool(staircase))


def exponential_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``learning_rate * decay_rate ** (step / decay_steps)`` (floored with ``staircase``)."""
    return _rate_decay("exponential", lr_fluid.ExponentialDecay, learning_rate, decay_steps, decay_rate, staircase)


def natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``learning_rate * exp(-decay_rate * step / decay_steps)``."""
    return _rate_decay("natural_exp", lr_fluid.NaturalExpDecay, learning_rate, decay_steps, decay_rate, staircase)


def inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``learning_rate / (1 + decay_rate * step / decay_steps)``."""
    return _rate_decay("inverse_time", lr_fluid.InverseTimeDecay, learning_rate, decay_steps, decay_rate, staircase)


def polynomial_decay(learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False):
    """``(learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power + end_learning_rate``
    (step held at decay_steps, or with ``cycle`` the period grows to the next multiple)."""
    if context.in_dynamic_mode():
        return lr_fluid.PolynomialDecay(learning_rate, decay_steps, end_learning_rate, power, cycle)
    if not decay_steps > 0:
        raise ValueError(f"polynomial_decay: decay_steps must be > 0, got {decay_steps}")
    return _schedule("polynomial", learning_rate=_float(learning_rate, "learning_rate"),
                     decay_steps=_float(decay_steps, "decay_steps"),
                     end_learning_rate=_float(end_learning_rate, "end_learning_rate"), power=_float(power, "power"),
                     cycle=bool(cycle))


def piecewise_decay(boundaries, values):
    """``values[i]`` while ``step < boundaries[i]``, then ``values[-1]``."""
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"piecewise_decay: len(values) must be len(boundaries) + 1, got {len(values)} values and "
                         f"{len(boundaries)} boundaries")
    if context.in_dynamic_mode():
        return FluidPiecewiseDecay(boundaries, values, 0)
    return _schedule("piecewise", boundaries=[_float(b, "boundaries[i]") for b in boundaries],
                     values=[_float(v, "values[i]") for v in values])


def cosine_decay(learning_rate, step_each_epoch, epochs):
    """``learning_rate * (cos(floor(step / step_each_epoch) * pi / epochs) + 1) / 2``."""
    if context.in_dynamic_mode():
        return lr_fluid.CosineDecay(learning_rate, step_each_epoch, epochs)
    return _schedule("cosine", learning_rate=_float(learning_rate, "learning_rate"),
                     step_each_epoch=_float(step_each_epoch, "step_each_epoch"), epochs=_float(epochs, "epochs"))


def noam_decay(d_model, warmup_steps, learning_rate=1.0):
    """``learning_rate * d_model ** -0.5 * min(step ** -0.5, warmup_steps ** -1.5 * step)``, counting from 1."""
    if context.in_dynamic_mode():
        return lr_fluid.NoamDecay(d_model, warmup_steps, learning_rate=learning_rate)
    return _schedule("noam", begin=1, d_model=_float(d_model, "d_model"),
                     warmup_steps=_float(warmup_steps, "warmup_steps"),
                     learning_rate=_float(learning_rate, "learning_rate"))


def linear_lr_warmup(learning_rate, warmup_steps, start_lr, end_lr):
    """``start_lr + (end_lr - start_lr) * step / warmup_steps`` for ``step < warmup_steps``, then
    ``learning_rate`` (a number or another schedule's learning-rate Variable)."""
    if context.in_dynamic_mode():
        if isinstance(learning_rate, Variable):
            raise TypeError("linear_lr_warmup: in dygraph mode learning_rate must be a number or a fluid.dygraph "
                            "schedule")
        inner = learning_rate if isinstance(learning_rate, LearningRateDecay) else float(learning_rate)
        return lr_fluid.LinearLrWarmup(inner, warmup_steps, start_lr, end_lr)
    base = learning_rate if isinstance(learning_rate, Variable) else None
    return _schedule("linear_warmup", base=base, learning_rate=0.0 if base is not None else
                     _float(learning_rate, "learning_rate"), warmup_steps=_float(warmup_steps, "warmup_steps"),
                     start_lr=_float(start_lr, "start_lr"), end_lr=_float(end_lr, "end_lr"))


__all__ = ["cosine_decay", "exponential_decay", "inverse_time_decay", "linear_lr_warmup", "natural_exp_decay",
           "noam_decay", "piecewise_decay", "polynomial_decay"]
