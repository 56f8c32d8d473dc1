"""Learning-rate schedules (``paddle.optimizer.lr``), plain Python, the same in both modes.

A scheduler holds ``last_epoch`` (the number of ``step()`` calls since the start, beginning at 0
after construction) and ``last_lr`` (the rate for that epoch); ``scheduler()`` returns
``last_lr`` and ``get_lr()`` computes the rate of ``last_epoch`` from the schedule's formula.
Optimizers read ``scheduler()`` when they update: in eager mode at every ``step()``, in static
mode the executor writes it into the learning-rate variable before each run.

``LearningRateDecay`` and ``PiecewiseDecay`` of ``fluid.dygraph`` are the 1.x style: calling the
schedule returns the rate of the current step and advances it (``begin``, ``step``).
"""
from __future__ import annotations

import math
import numbers


def _number(value, name, positive=False, integer=False):
    kinds = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise TypeError(f"{name} must be {'an int' if integer else 'a number'}, got "
                        f"{type(value).__name__}: {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


class LRScheduler:
    """Base class: subclasses define ``get_lr()`` from ``self.last_epoch`` and ``self.base_lr``."""

    def __init__(self, learning_rate=0.1, last_epoch=-1, verbose=False):
        self.base_lr = float(_number(learning_rate, "learning_rate"))
        self.last_epoch = int(_number(last_epoch, "last_epoch", integer=True))
        self.last_lr = self.base_lr
        self.verbose = bool(verbose)
        self.step()

    def __call__(self) -> float:
        return self.last_lr

    def step(self, epoch=None) -> None:
        """Advance one epoch (or jump to ``epoch``) and recompute ``last_lr``."""
        if epoch is None:
            self.last_epoch += 1
        else:
            self.last_epoch = int(_number(epoch, "epoch", integer=True))
        self.last_lr = float(self.get_lr())
        if self.verbose:
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to {self.last_lr}.")

    def get_lr(self) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch, "last_lr": self.last_lr}

    def set_state_dict(self, state_dict) -> None:
        self.last_epoch = int(state_dict["last_epoch"])
        self.last_lr = float(state_dict["last_lr"])

    set_dict = set_state_dict


class PiecewiseDecay(LRScheduler):
    """``values[i]`` while ``last_epoch < boundaries[i]``; ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries, values, last_epoch=-1, verbose=False):
        self.boundaries = [_number(b, "boundaries[i]", integer=True) for b in boundaries]
        self.values = [float(_number(v, "values[i]")) for v in values]
        if len(self.values) != len(self.boundaries) + 1:
            raise ValueError(f"PiecewiseDecay: values needs one more entry than boundaries, got "
                             f"{len(self.boundaries)} boundaries and {len(self.values)} values")
        if any(a >= b for a, b in zip(self.boundaries, self.boundaries[1:])):
            raise ValueError(f"PiecewiseDecay: boundaries must increase, got {self.boundaries}")
        super().__init__(self.values[0], last_epoch, verbose)

    def get_lr(self):
        for boundary, value in zip(self.boundaries, self.values):
            if self.last_epoch < boundary:
                return value
        return self.values[-1]


class StepDecay(LRScheduler):
    """``learning_rate * gamma ** (last_epoch // step_size)``."""

    def __init__(self, learning_rate, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        self.step_size = _number(step_size, "step_size", positive=True, integer=True)
        self.gamma = float(_number(gamma, "gamma"))
        if self.gamma >= 1.0:
            raise ValueError(f"StepDecay: gamma must be < 1.0, got {gamma}")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class ExponentialDecay(LRScheduler):
    """``learning_rate * gamma ** last_epoch``."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = float(_number(gamma, "gamma", positive=True))
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** self.last_epoch


class CosineAnnealingDecay(LRScheduler):
    """``eta_min + (learning_rate - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2``."""

    def __init__(self, learning_rate, T_max, eta_min=0, last_epoch=-1, verbose=False):
        self.T_max = _number(T_max, "T_max", positive=True, integer=True)
        self.eta_min = float(_number(eta_min, "eta_min"))
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2


class LinearWarmup(LRScheduler):
    """``start_lr`` rising linearly to ``end_lr`` over ``warmup_steps`` epochs, then
    ``learning_rate`` (a number, or a scheduler stepped from 0 once the warm-up is over)."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, last_epoch=-1, verbose=False):
        if not isinstance(learning_rate, LRScheduler):
            _number(learning_rate, "learning_rate")
        self.learning_rate = learning_rate
        self.warmup_steps = _number(warmup_steps, "warmup_steps", positive=True, integer=True)
        self.start_lr = float(_number(start_lr, "start_lr"))
        self.end_lr = float(_number(end_lr, "end_lr"))
        if self.end_lr <= self.start_lr:
            raise ValueError(f"LinearWarmup: end_lr ({end_lr}) must be greater than start_lr ({start_lr})")
        super().__init__(self.start_lr, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * self.last_epoch / self.warmup_steps + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)


class NoamDecay(LRScheduler):
    """``learning_rate * d_model ** -0.5 * min(epoch ** -0.5, epoch * warmup_steps ** -1.5)``
    (epoch 0 uses 1 for the first term, as the reference does)."""

    def __init__(self, d_model, warmup_steps, learning_rate=1.0, last_epoch=-1, verbose=False):
        self.d_model = _number(d_model, "d_model", positive=True)
        self.warmup_steps = _number(warmup_steps, "warmup_steps", positive=True, integer=True)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        a = 1.0 if self.last_epoch == 0 else self.last_epoch ** -0.5
        b = self.warmup_steps ** -1.5 * self.last_epoch
        return self.base_lr * self.d_model ** -0.5 * min(a, b)


class LambdaDecay(LRScheduler):
    """``learning_rate * lr_lambda(last_epoch)``."""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError(f"LambdaDecay: lr_lambda must be callable, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.last_epoch)


# --- fluid 1.x style ---------------------------------------------------------------------------
class LearningRateDecay:
    """1.x schedules: ``schedule()`` returns the rate of ``step_num`` and advances it by ``step``;
    ``step()`` (the 1.x name) computes the rate of ``step_num`` without advancing."""

    def __init__(self, begin=0, step=1, dtype="float32"):
        self.step_num = int(_number(begin, "begin", integer=True))
        self.step_size = int(_number(step, "step", positive=True, integer=True))
        self.dtype = dtype

    def __call__(self) -> float:
        lr = float(self.step())
        self.step_num += self.step_size
        return lr

    def step(self) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define step()")


class FluidPiecewiseDecay(LearningRateDecay):
    """``fluid.dygraph.PiecewiseDecay(boundaries, values, begin, step=1)``."""

    def __init__(self, boundaries, values, begin, step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        self._schedule = PiecewiseDecay(boundaries, values)

    def step(self) -> float:
        self._schedule.step(self.step_num)
        return self._schedule()


__all__ = ["CosineAnnealingDecay", "ExponentialDecay", "LRScheduler", "LambdaDecay", "LearningRateDecay",
           "LinearWarmup", "NoamDecay", "PiecewiseDecay", "StepDecay"]
