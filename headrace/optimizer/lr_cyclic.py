"""Per-step cyclic schedules of ``paddle.optimizer.lr``: ``OneCycleLR`` and ``CyclicLR``.

Both are meant to be stepped once per training step (not per epoch), as the reference says.
The formulas are the reference's:

- ``OneCycleLR``: from ``max_learning_rate / divide_factor`` up to ``max_learning_rate`` over the
  first ``phase_pct`` of ``total_steps`` (phase ends at step ``phase_pct * total_steps - 1``), then
  down to ``end_learning_rate`` by step ``total_steps - 1``; with ``three_phase`` it first comes back
  to the initial rate over as many steps as it went up.  Each phase anneals by cosine
  (``end + (start - end) / 2 * (1 + cos(pi * pct))``) or linearly.  Stepping past ``total_steps``
  is an error.
- ``CyclicLR``: triangles between ``base_learning_rate`` and ``max_learning_rate``, up for
  ``step_size_up`` steps and down for ``step_size_down``; the amplitude is scaled by ``mode``
  (``triangular``: 1; ``triangular2``: halved each cycle; ``exp_range``: ``exp_gamma ** step``) or a
  user ``scale_fn`` of the cycle number or of the step (``scale_mode``).
"""
from __future__ import annotations

import math

from ..core.errors import AttrError, located
from .lr import LRScheduler, _number


def _cos_anneal(start, end, pct):
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _linear_anneal(start, end, pct):
    return (end - start) * pct + start


class OneCycleLR(LRScheduler):
    """The one-cycle schedule (two phases, or three with ``three_phase``); see the module docstring."""

    def __init__(self, max_learning_rate, total_steps, divide_factor=25.0, end_learning_rate=0.0001,
                 phase_pct=0.3, anneal_strategy="cos", three_phase=False, last_epoch=-1, verbose=False):
        max_lr = float(_number(max_learning_rate, "max_learning_rate"))
        min_lr = float(_number(end_learning_rate, "end_learning_rate"))
        self.total_steps = _number(total_steps, "total_steps", positive=True, integer=True)
        phase_pct = float(_number(phase_pct, "phase_pct"))
        divide_factor = float(_number(divide_factor, "divide_factor", positive=True))
        if max_lr < 0 or min_lr < 0:
            raise located(AttrError, f"OneCycleLR: max_learning_rate ({max_lr}) and end_learning_rate "
                                     f"({min_lr}) must be >= 0")
        if not 0 <= phase_pct <= 1:
            raise located(AttrError, f"OneCycleLR: phase_pct must be between 0 and 1, got {phase_pct}")
        if anneal_strategy not in ("cos", "linear"):
            raise located(AttrError, f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.anneal_func = _cos_anneal if anneal_strategy == "cos" else _linear_anneal
        initial_lr = max_lr / divide_factor
        up_end = phase_pct * self.total_steps - 1
        last = self.total_steps - 1
        if three_phase:
            if phase_pct >= 0.5:
                raise located(AttrError, f"OneCycleLR: with three_phase, phase_pct must be < 0.5, got {phase_pct}")
            down_end = 2 * phase_pct * self.total_steps - 2
            # (start step, end step, start lr, end lr) of each phase
            self._phases = [(0, up_end, initial_lr, max_lr), (up_end, down_end, max_lr, initial_lr),
                            (down_end, last, initial_lr, min_lr)]
        else:
            self._phases = [(0, up_end, initial_lr, max_lr), (up_end, last, max_lr, min_lr)]
        super().__init__(initial_lr, last_epoch, verbose)

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise located(AttrError, f"OneCycleLR: stepped {step} times, but total_steps is {self.total_steps}")
        phase = next((p for p in self._phases if step <= p[1]), self._phases[-1])
        start, end, start_lr, end_lr = phase
        if end == start:      # a phase of no steps (phase_pct * total_steps == 1): its end value
            return end_lr
        return self.anneal_func(start_lr, end_lr, (step - start) / (end - start))


class CyclicLR(LRScheduler):
    """The cyclic (triangular) schedule; see the module docstring."""

    _MODES = {"triangular": "cycle", "triangular2": "cycle", "exp_range": "iterations"}

    def __init__(self, base_learning_rate, max_learning_rate, step_size_up, step_size_down=None,
                 mode="triangular", exp_gamma=1.0, scale_fn=None, scale_mode="cycle", last_epoch=-1,
                 verbose=False):
        self.max_lr = float(_number(max_learning_rate, "max_learning_rate"))
        base = float(_number(base_learning_rate, "base_learning_rate"))
        if self.max_lr < 0:
            raise located(AttrError, f"CyclicLR: max_learning_rate must be >= 0, got {self.max_lr}")
        up = _number(step_size_up, "step_size_up", positive=True, integer=True)
        down = up if step_size_down is None else _number(step_size_down, "step_size_down", positive=True, integer=True)
        self.gamma = float(_number(exp_gamma, "exp_gamma"))
        self.cycle_size = float(up + down)
        self.step_up_pct = up / self.cycle_size
        self.amplitude = self.max_lr - base
        if scale_fn is None:
            if mode not in self._MODES:
                raise located(AttrError, f"CyclicLR: mode must be one of {sorted(self._MODES)} (or give scale_fn), "
                                         f"got {mode!r}")
            self.scale_fn, self.scale_mode = self._builtin_scale(mode), self._MODES[mode]
        else:
            if scale_mode not in ("cycle", "iterations"):
                raise located(AttrError, f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
            self.scale_fn, self.scale_mode = scale_fn, scale_mode
        self.mode = mode
        super().__init__(base, last_epoch, verbose)

    def _builtin_scale(self, mode):
        if mode == "triangular":
            return lambda x: 1.0
        if mode == "triangular2":
            return lambda x: 1 / (2.0 ** (x - 1))
        return lambda x: self.gamma ** x

    def get_lr(self):
        iterations = self.last_epoch
        cycle = 1 + iterations // self.cycle_size
        pct = 1.0 + iterations / self.cycle_size - cycle
        if pct <= self.step_up_pct:
            height = pct / self.step_up_pct
        else:
            height = (1 - pct) / (1 - self.step_up_pct)
        x = cycle if self.scale_mode == "cycle" else iterations
        return self.base_lr + self.amplitude * height * self.scale_fn(x)
