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

import bisect
import math
import numbers

import numpy as np

from ..core.errors import ArgTypeError, AttrError, located


def _number(value, name, positive=False, integer=False):
    kinds = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise located(ArgTypeError, f"{name} must be {'an int' if integer else 'a number'}, got "
                        f"{type(value).__name__}: {value!r}")
    if positive and value <= 0:
        raise located(AttrError, f"{name} must be > 0, got {value}")
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
        if not self.last_lr >= 0:
            raise located(AttrError, f"{type(self).__name__}: the learning rate of epoch {self.last_epoch} is {self.last_lr}; "
                             "a learning rate must be >= 0")
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
            raise located(AttrError, f"PiecewiseDecay: values needs one more entry than boundaries, got "
                             f"{len(self.boundaries)} boundaries and {len(self.values)} values")
        if any(a >= b for a, b in zip(self.boundaries, self.boundaries[1:])):
            raise located(AttrError, f"PiecewiseDecay: boundaries must increase, got {self.boundaries}")
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
            raise located(AttrError, f"StepDecay: gamma must be < 1.0, got {gamma}")
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
        if isinstance(learning_rate, ReduceOnPlateau):
            raise located(ArgTypeError, "LinearWarmup: learning_rate cannot be a ReduceOnPlateau (it steps on a metric, "
                            "not an epoch); warm up with a number and switch schedulers yourself")
        if not isinstance(learning_rate, LRScheduler):
            _number(learning_rate, "learning_rate")
        self.learning_rate = learning_rate
        self.warmup_steps = _number(warmup_steps, "warmup_steps", positive=True, integer=True)
        self.start_lr = float(_number(start_lr, "start_lr"))
        self.end_lr = float(_number(end_lr, "end_lr"))
        if self.end_lr <= self.start_lr:
            raise located(AttrError, f"LinearWarmup: end_lr ({end_lr}) must be greater than start_lr ({start_lr})")
        super().__init__(self.start_lr, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * self.last_epoch / self.warmup_steps + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)


    def state_dict(self) -> dict:
        state = super().state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            state["LinearWarmup_LR"] = self.learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict) -> None:
        super().set_state_dict(state_dict)
        if isinstance(self.learning_rate, LRScheduler) and "LinearWarmup_LR" in state_dict:
            self.learning_rate.set_state_dict(state_dict["LinearWarmup_LR"])

    set_dict = set_state_dict


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
            raise located(ArgTypeError, f"LambdaDecay: lr_lambda must be callable, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.last_epoch)


class MultiStepDecay(LRScheduler):
    """``learning_rate * gamma ** (number of milestones <= last_epoch)``."""

    def __init__(self, learning_rate, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        if not isinstance(milestones, (list, tuple)):
            raise located(ArgTypeError, f"MultiStepDecay: milestones must be a list or tuple of ints, got "
                            f"{type(milestones).__name__}: {milestones!r}")
        self.milestones = [_number(m, "milestones[i]", integer=True) for m in milestones]
        if any(a >= b for a, b in zip(self.milestones, self.milestones[1:])):
            raise located(AttrError, f"MultiStepDecay: milestones must increase, got {self.milestones}")
        self.gamma = float(_number(gamma, "gamma"))
        if self.gamma >= 1.0:
            raise located(AttrError, f"MultiStepDecay: gamma must be < 1.0, got {gamma}")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** bisect.bisect_right(self.milestones, self.last_epoch)


class NaturalExpDecay(LRScheduler):
    """``learning_rate * exp(-gamma * last_epoch)``."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = float(_number(gamma, "gamma"))
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * math.exp(-self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    """``learning_rate / (1 + gamma * last_epoch)``."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = float(_number(gamma, "gamma"))
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    """``(learning_rate - end_lr) * (1 - t / T) ** power + end_lr`` with ``t = min(last_epoch,
    decay_steps)``, ``T = decay_steps``; with ``cycle`` ``t = last_epoch`` and ``T`` the next
    multiple of ``decay_steps`` (``decay_steps`` itself at epoch 0), so the rate climbs back
    after each period."""

    def __init__(self, learning_rate, decay_steps, end_lr=0.0001, power=1.0, cycle=False, last_epoch=-1,
                 verbose=False):
        self.decay_steps = _number(decay_steps, "decay_steps", positive=True, integer=True)
        self.end_lr = float(_number(end_lr, "end_lr"))
        self.power = float(_number(power, "power", positive=True))
        self.cycle = bool(cycle)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch = self.last_epoch
        if self.cycle:
            period = self.decay_steps * max(1, math.ceil(epoch / self.decay_steps))
        else:
            period, epoch = self.decay_steps, min(epoch, self.decay_steps)
        return (self.base_lr - self.end_lr) * (1 - epoch / period) ** self.power + self.end_lr


class MultiplicativeDecay(LRScheduler):
    """Each ``step()`` multiplies the rate by ``lr_lambda(last_epoch)`` (the rate of epoch 0 is
    ``learning_rate``); a jump ``step(epoch)`` applies the factors of the epochs in between."""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise located(ArgTypeError, f"MultiplicativeDecay: lr_lambda must be callable, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        self._epoch_of_last_lr = None
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        start = self._epoch_of_last_lr
        if start is None or self.last_epoch < start:   # first call, or a jump back: from the start
            rate, start = self.base_lr, 0
        else:
            rate = self.last_lr
        for epoch in range(start + 1, self.last_epoch + 1):
            rate *= self.lr_lambda(epoch)
        self._epoch_of_last_lr = self.last_epoch
        return rate

    def set_state_dict(self, state_dict) -> None:
        super().set_state_dict(state_dict)
        self._epoch_of_last_lr = self.last_epoch

    set_dict = set_state_dict


class ReduceOnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` (not below ``min_lr``) once ``metrics`` passed to
    ``step(metrics)`` has not improved for more than ``patience`` epochs, then wait ``cooldown``
    epochs.  Improvement: below ``best * (1 - threshold)`` ('min', 'rel'), ``best - threshold``
    ('min', 'abs'), above ``best * (1 + threshold)`` / ``best + threshold`` ('max').  A reduction
    smaller than ``epsilon`` is skipped."""

    def __init__(self, learning_rate, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, epsilon=1e-8, verbose=False):
        mode = mode.lower() if isinstance(mode, str) else mode
        threshold_mode = threshold_mode.lower() if isinstance(threshold_mode, str) else threshold_mode
        if mode not in ("min", "max"):
            raise located(AttrError, f"ReduceOnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise located(AttrError, f"ReduceOnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        self.factor = float(_number(factor, "factor", positive=True))
        if self.factor >= 1.0:
            raise located(AttrError, f"ReduceOnPlateau: factor must be < 1.0, got {factor}")
        self.mode, self.threshold_mode = mode, threshold_mode
        self.patience = int(_number(patience, "patience", integer=True))
        self.threshold = float(_number(threshold, "threshold"))
        self.cooldown = int(_number(cooldown, "cooldown", integer=True))
        self.min_lr = float(_number(min_lr, "min_lr"))
        self.epsilon = float(_number(epsilon, "epsilon"))
        self.best = None
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.base_lr = self.last_lr = float(_number(learning_rate, "learning_rate"))
        self.last_epoch = 0
        self.verbose = bool(verbose)

    def step(self, metrics, epoch=None) -> None:
        """Record this epoch's ``metrics`` (a number, or a one-element Tensor/array)."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else int(_number(epoch, "epoch", integer=True))
        current = _scalar_metric(metrics)
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best is None or self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:
                self.last_lr = new_lr
                if self.verbose:
                    print(f"Epoch {self.last_epoch}: ReduceOnPlateau set learning rate to {self.last_lr}.")

    def _is_better(self, current, best) -> bool:
        if self.mode == "min":
            bar = best * (1 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold
            return current < bar
        bar = best * (1 + self.threshold) if self.threshold_mode == "rel" else best + self.threshold
        return current > bar

    def get_lr(self):
        return self.last_lr

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch, "last_lr": self.last_lr, "best": self.best,
                "num_bad_epochs": self.num_bad_epochs, "cooldown_counter": self.cooldown_counter}

    def set_state_dict(self, state_dict) -> None:
        super().set_state_dict(state_dict)
        self.best = state_dict["best"]
        self.num_bad_epochs = int(state_dict["num_bad_epochs"])
        self.cooldown_counter = int(state_dict["cooldown_counter"])

    set_dict = set_state_dict


def _scalar_metric(metrics) -> float:
    if isinstance(metrics, numbers.Real) and not isinstance(metrics, bool):
        return float(metrics)
    value = metrics.numpy() if hasattr(metrics, "numpy") else metrics
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.size != 1 or array.ndim > 1:
        raise located(ArgTypeError, "ReduceOnPlateau.step: metrics must be a number or a Tensor/array of shape [] or [1], "
                        f"got {type(metrics).__name__}: {metrics!r}")
    return float(array.reshape(()))


# --- fluid 1.x style ---------------------------------------------------------------------------
class LearningRateDecay:
    """1.x schedules: ``schedule()`` returns the rate of ``step_num`` and advances it by ``step``;
    ``step()`` (the 1.x name) computes the rate of ``step_num`` without advancing."""

    api_name = "fluid.dygraph.LearningRateDecay"

    def __init__(self, begin=0, step=1, dtype="float32"):
        self.step_num = int(_number(begin, "begin", integer=True))
        self.step_size = int(_number(step, "step", positive=True, integer=True))
        self.dtype = dtype

    def __call__(self) -> float:
        lr = float(self.step())
        if not lr >= 0:
            raise located(AttrError, f"{type(self).__name__}: the learning rate of step {self.step_num} is {lr}; a "
                             "learning rate must be >= 0")
        self.step_num += self.step_size
        return lr

    def step(self) -> float:
        """The rate of ``step_num`` (subclasses; a number, or ``self.create_lr_var(number)``)."""
        raise NotImplementedError(f"{type(self).__name__} must define step()")

    def peek(self) -> float:
        """The rate the next call will return, without advancing."""
        return float(self.step())

    def create_lr_var(self, lr) -> float:
        """The 1.x helper subclasses return from ``step()``; the optimizer keeps the rate in its
        own learning-rate Tensor, so this is the number itself."""
        return float(lr)

    def state_dict(self) -> dict:
        return {"step_num": self.step_num}

    def set_state_dict(self, state_dict) -> None:
        self.step_num = int(state_dict["step_num"])

    set_dict = set_state_dict


class FluidPiecewiseDecay(LearningRateDecay):
    """``fluid.dygraph.PiecewiseDecay(boundaries, values, begin, step=1)``."""

    api_name = "fluid.dygraph.PiecewiseDecay"

    def __init__(self, boundaries, values, begin, step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        self._schedule = PiecewiseDecay(boundaries, values)

    def step(self) -> float:
        self._schedule.step(self.step_num)
        return self._schedule()


__all__ = ["CosineAnnealingDecay", "ExponentialDecay", "InverseTimeDecay", "LRScheduler", "LambdaDecay",
           "LearningRateDecay", "LinearWarmup", "MultiStepDecay", "MultiplicativeDecay", "NaturalExpDecay",
           "NoamDecay", "PiecewiseDecay", "PolynomialDecay", "ReduceOnPlateau", "StepDecay",
           "OneCycleLR", "CyclicLR"]

from .lr_cyclic import CyclicLR, OneCycleLR  # noqa: E402  (they subclass LRScheduler above)
