"""``paddle.static.ExponentialMovingAverage``: shadow averages of the parameters, swapped in for
evaluation.

As the reference: the constructor creates, in the default main program, a decay variable
(``decay``, or ``min(decay, (t + 1) / (t + 10))`` recomputed every run when ``thres_steps`` is a
step Variable ``t``) and one zero-initialised ``<param>_ema`` per parameter; ``update()`` appends
``ema = ema * decay + param * (1 - decay)`` for every parameter and a step counter
(``@EMA_STEP_COUNTER@``) to the main program; ``apply(executor)`` runs a program that saves the
parameters and writes the bias-corrected averages ``ema / (1 - decay ** step)`` into them (the
plain ``ema`` before the first update), and ``restore(executor)`` (called when ``apply``'s block
ends, unless ``need_restore=False``) puts the saved parameters back.  The reference chooses
between the two apply formulas with a ``Switch``; here the denominator is
``1 - decay ** step + (step == 0)``, the same numbers without control flow.
"""
from __future__ import annotations

import contextlib


from ..core import context, names
from ..core.context import program_guard
from ..core.program import Program
from ..core.roles import OpRole
from ..core.variable import Variable
from ..nn.static_layers import create_global_var
from ..ops.apply import apply_op, apply_op_single

STEP_COUNTER = "@EMA_STEP_COUNTER@"


def _assign(x, out):
    apply_op("assign", {"X": x}, outputs={"Out": out})


def _const(value, dtype="float32"):
    return apply_op_single("fill_constant", attrs={"shape": [1], "dtype": dtype, "value": float(value)})


class ExponentialMovingAverage:
    """Shadow moving averages of the parameters (static mode; see the module docstring)."""

    def __init__(self, decay=0.999, thres_steps=None, name=None):
        if context.in_dynamic_mode():
            raise RuntimeError("ExponentialMovingAverage works on static programs; call paddle.enable_static()")
        if not 0.0 <= float(decay) <= 1.0:
            raise ValueError(f"ExponentialMovingAverage: decay must be in [0, 1], got {decay}")
        if thres_steps is not None and not isinstance(thres_steps, Variable):
            raise TypeError(f"ExponentialMovingAverage: thres_steps must be a step Variable or None, got "
                            f"{type(thres_steps).__name__}")
        self._decay = float(decay)
        self._name = name or ""
        main = context.default_main_program()
        self._main = main
        self._decay_var = self._decay_variable(thres_steps)
        self._params = [p for p in main.global_block().all_parameters()
                        if getattr(p, "do_model_average", None) is not False and p.trainable]
        self._ema = {p.name: create_global_var(list(p.shape), 0.0, p.dtype, persistable=True,
                                               name=names.generate(f"{self._name}{p.name}_ema"))
                     for p in self._params}
        self._tmp = {p.name: names.generate(f"{self._name}{p.name}.ema_tmp") for p in self._params}
        self._counter = create_global_var([1], 0, "int64", persistable=True, name=STEP_COUNTER)
        self.apply_program = self._build_apply()
        self.restore_program = self._build_restore()

    def _decay_variable(self, thres_steps):
        decay = create_global_var([1], self._decay, "float32", persistable=True,
                                  name=names.generate("scheduled_ema_decay_rate"))
        if thres_steps is not None:
            with self._main.role_guard(OpRole.Optimize | OpRole.LRSched):
                steps = apply_op_single("cast", {"X": thres_steps}, {"out_dtype": "float32"})
                ratio = apply_op_single("elementwise_div", {
                    "X": apply_op_single("scale", {"X": steps}, {"scale": 1.0, "bias": 1.0}),
                    "Y": apply_op_single("scale", {"X": steps}, {"scale": 1.0, "bias": 10.0})})
                _assign(apply_op_single("elementwise_min", {"X": ratio, "Y": _const(self._decay)}), decay)
        return decay

    def update(self):
        """Append the average updates (and the step counter) to the main program."""
        with self._main.role_guard(OpRole.Optimize), context.name_scope("moving_average"):
            one = _const(1, "int64")
            _assign(apply_op_single("elementwise_add", {"X": self._counter, "Y": one}), self._counter)
            keep = apply_op_single("scale", {"X": self._decay_var}, {"scale": -1.0, "bias": 1.0})
            for p in self._params:
                ema = self._ema[p.name]
                if str(p.dtype) != "float32":
                    raise TypeError(f"ExponentialMovingAverage: parameter {p.name!r} is {p.dtype}; only float32 "
                                    "parameters are averaged")
                old = apply_op_single("elementwise_mul", {"X": ema, "Y": self._decay_var})
                new = apply_op_single("elementwise_mul", {"X": p, "Y": keep})
                _assign(apply_op_single("elementwise_add", {"X": old, "Y": new}), ema)

    def _clone(self, block, name, like, persistable=True):
        return block.create_var(name=name, shape=list(like.shape), dtype=like.dtype, persistable=persistable)

    def _build_apply(self):
        program = Program()
        block = program.global_block()
        with program_guard(program, Program()):
            decay = self._clone(block, self._decay_var.name, self._decay_var)
            counter = self._clone(block, STEP_COUNTER, self._counter)
            step = apply_op_single("cast", {"X": counter}, {"out_dtype": "float32"})
            power = apply_op_single("elementwise_pow", {"X": decay, "Y": step})
            first = apply_op_single("cast", {"X": apply_op_single("equal", {"X": step, "Y": _const(0)})},
                                    {"out_dtype": "float32"})
            denom = apply_op_single("elementwise_add", {
                "X": apply_op_single("scale", {"X": power}, {"scale": -1.0, "bias": 1.0}), "Y": first})
            for p in self._params:
                param = self._clone(block, p.name, p)
                tmp = self._clone(block, self._tmp[p.name], p)
                ema = self._clone(block, self._ema[p.name].name, p)
                _assign(param, tmp)
                _assign(apply_op_single("elementwise_div", {"X": ema, "Y": denom}), param)
        return program

    def _build_restore(self):
        program = Program()
        block = program.global_block()
        with program_guard(program, Program()):
            for p in self._params:
                _assign(self._clone(block, self._tmp[p.name], p), self._clone(block, p.name, p))
        return program

    @contextlib.contextmanager
    def apply(self, executor, need_restore=True):
        """Inside the block the parameters hold their averages."""
        executor.run(self.apply_program)
        try:
            yield
        finally:
            if need_restore:
                self.restore(executor)

    def restore(self, executor):
        executor.run(self.restore_program)


