"""``lr_schedule``: advance a step counter and compute a fluid 1.x learning-rate decay from it.

``Counter`` is a persistable int64 [1] variable (``CounterOut`` is the same variable: updated in
place); each run adds ``step`` to it and writes ``Out`` = the decayed learning rate (float32 [1]) of
the new count ``t``.  The reference builds the same schedules from an ``increment`` op on a global
counter plus elementwise ops; one op per schedule does the same arithmetic (in float64, rounded to
float32 once), survives ``clone()`` and runs on every place of a data-parallel program.

Kinds (``t`` the counter, ``d = t / decay_steps``, floored with ``staircase``):
exponential ``lr * decay_rate ** d``; natural_exp ``lr * exp(-decay_rate * d)``; inverse_time
``lr / (1 + decay_rate * d)``; polynomial ``(lr - end) * (1 - t' / s') ** power + end`` (``cycle``:
``s' = decay_steps * max(ceil(t / decay_steps), 1)``, ``t' = t``; else ``t' = min(t, decay_steps)``,
``s' = decay_steps``); piecewise ``values[i]`` for the first ``boundaries[i] > t``, else
``values[-1]``; cosine ``lr * (cos(floor(t / step_each_epoch) * pi / epochs) + 1) / 2``; noam ``lr *
d_model ** -0.5 * min(t ** -0.5, warmup_steps ** -1.5 * t)``; linear_warmup ``start_lr + (end_lr -
start_lr) * t / warmup_steps`` while ``t < warmup_steps``, else ``BaseLR`` (an input: another
schedule's output) or ``learning_rate``.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.dtypes import float32, int64
from .gradrule import NO_GRADIENT
from .registry import optional, register

KINDS = ("exponential", "natural_exp", "inverse_time", "polynomial", "piecewise", "cosine", "noam", "linear_warmup")


def _div(t, attrs):
    d = t / attrs["decay_steps"]
    return math.floor(d) if attrs["staircase"] else d


def _polynomial(t, attrs):
    steps = attrs["decay_steps"]
    if attrs["cycle"]:
        steps = steps * max(math.ceil(t / steps), 1)
    else:
        t = min(t, steps)
    return (attrs["learning_rate"] - attrs["end_learning_rate"]) * (1 - t / steps) ** attrs["power"] + \
        attrs["end_learning_rate"]


def _piecewise(t, attrs):
    for boundary, value in zip(attrs["boundaries"], attrs["values"]):
        if t < boundary:
            return value
    return attrs["values"][-1]


def _noam(t, attrs):
    return attrs["learning_rate"] * attrs["d_model"] ** -0.5 * min(t ** -0.5 if t > 0 else math.inf,
                                                                 attrs["warmup_steps"] ** -1.5 * t)


_FORMULAS = {
    "exponential": lambda t, a: a["learning_rate"] * a["decay_rate"] ** _div(t, a),
    "natural_exp": lambda t, a: a["learning_rate"] * math.exp(-a["decay_rate"] * _div(t, a)),
    "inverse_time": lambda t, a: a["learning_rate"] / (1 + a["decay_rate"] * _div(t, a)),
    "polynomial": _polynomial,
    "piecewise": _piecewise,
    "cosine": lambda t, a: a["learning_rate"] * 0.5 * (math.cos(math.floor(t / a["step_each_epoch"]) * math.pi
                                                                / a["epochs"]) + 1),
    "noam": _noam,
}


def _infer(ctx):
    if ctx.attr("kind") not in KINDS:
        ctx.fail_attr("kind", f"one of {KINDS}", ctx.attr("kind"))
    ctx.check_dtype("Counter", (int64,))
    if ctx.attr("kind") == "piecewise" and len(ctx.attr("values")) != len(ctx.attr("boundaries")) + 1:
        ctx.fail_attr("values", "one more value than boundaries", ctx.attr("values"))
    ctx.set("CounterOut", ctx.shape("Counter"), int64)
    ctx.set("Out", (1,), float32)


def _kernel(ins, attrs, ctx):
    counter = ins["Counter"]
    counter += np.int64(attrs["step"])
    t = float(counter.reshape(-1)[0])
    if attrs["kind"] == "linear_warmup":
        if t < attrs["warmup_steps"]:
            lr = attrs["start_lr"] + (attrs["end_lr"] - attrs["start_lr"]) * t / attrs["warmup_steps"]
        else:
            base = ins.get("BaseLR")
            lr = float(base.reshape(-1)[0]) if base is not None else attrs["learning_rate"]
    else:
        lr = _FORMULAS[attrs["kind"]](t, attrs)
    return {"CounterOut": counter, "Out": np.array([lr], dtype=np.float32)}


register("lr_schedule", inputs=["Counter", optional("BaseLR")], outputs=["CounterOut", "Out"],
         attrs={"kind": "exponential", "step": 1, "learning_rate": 0.0, "decay_steps": 1.0, "decay_rate": 1.0,
                "staircase": False, "end_learning_rate": 0.0001, "power": 1.0, "cycle": False, "boundaries": [],
                "values": [], "step_each_epoch": 1.0, "epochs": 1.0, "d_model": 1.0, "warmup_steps": 1.0,
                "start_lr": 0.0, "end_lr": 0.0},
         infer=_infer, kernel=_kernel, grad=NO_GRADIENT, inplace={"CounterOut": "Counter"},
         doc="Counter += step; Out = the fluid 1.x decay `kind` of the new count (see the module docstring)")
