"""The fluid 1.x dygraph learning-rate decays (``fluid.dygraph.ExponentialDecay``, ...), with the
1.x argument names, defaults and step timing.

Step decays (``LearningRateDecay``): calling the schedule returns the rate of ``step_num`` and then
advances ``step_num`` by ``step``; an optimizer calls it once per update, so update ``i`` (from 0)
uses the rate of ``begin + i * step``.  ``NoamDecay`` and ``LinearLrWarmup`` begin at 1, the others
at 0.  ``LinearLrWarmup`` calls a wrapped schedule at every update, also during the warm-up (so the
wrapped one advances from the start, as in the reference).

Epoch decays (``StepDecay``, ``MultiStepDecay``, ``LambdaDecay``): the schedule is advanced by the
user's ``epoch()`` (once at construction, so the first epoch is 0); calling it returns the current
rate without advancing.  ``ReduceLROnPlateau``: calling it returns the current rate;
``step(loss)`` (once per epoch) lowers it to ``max(lr * decay_rate, min_lr)`` after more than
``patience`` epochs without improvement (then waits ``cooldown`` epochs), when that lowers it by
more than ``eps``.  (2.x ``paddle.optimizer.lr`` differs: other argument names, e.g. ``gamma``,
and ``step()`` advances.)
"""
from __future__ import annotations

import math
import numbers

from .lr import LearningRateDecay, _number, _scalar_metric


class _StepDecay(LearningRateDecay):
    """Common constructor of the decays parametrized by ``decay_steps`` / ``decay_rate``."""

    def __init__(self, learning_rate, decay_steps, decay_rate, staircase=False, begin=0, step=1,
                 dtype="float32"):
        super().__init__(begin, step, dtype)
        self.learning_rate = float(_number(learning_rate, "learning_rate"))
        self.decay_steps = _number(decay_steps, "decay_steps", positive=True)
        self.decay_rate = float(_number(decay_rate, "decay_rate"))
        self.staircase = bool(staircase)

    def _div(self) -> float:
        d = self.step_num / self.decay_steps
        return float(math.floor(d)) if self.staircase else d


class ExponentialDecay(_StepDecay):
    """``learning_rate * decay_rate ** (step_num / decay_steps)`` (floored with ``staircase``)."""

    api_name = "fluid.dygraph.ExponentialDecay"

    def step(self):
        return self.learning_rate * self.decay_rate ** self._div()


class NaturalExpDecay(_StepDecay):
    """``learning_rate * exp(-decay_rate * step_num / decay_steps)``."""

    api_name = "fluid.dygraph.NaturalExpDecay"

    def step(self):
        return self.learning_rate * math.exp(-self.decay_rate * self._div())


class InverseTimeDecay(_StepDecay):
    """``learning_rate / (1 + decay_rate * step_num / decay_steps)``."""

    api_name = "fluid.dygraph.InverseTimeDecay"

    def step(self):
        return self.learning_rate / (1 + self.decay_rate * self._div())


class PolynomialDecay(LearningRateDecay):
    """``(learning_rate - end_learning_rate) * (1 - t / s) ** power + end_learning_rate`` with
    ``t = min(step_num, decay_steps)``, ``s = decay_steps`` (``cycle``: ``t = step_num``, ``s =
    decay_steps * ceil(step_num / decay_steps)``, at least one period)."""

    api_name = "fluid.dygraph.PolynomialDecay"

    def __init__(self, learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False, begin=0,
                 step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        self.learning_rate = float(_number(learning_rate, "learning_rate"))
        self.decay_steps = _number(decay_steps, "decay_steps", positive=True)
        self.end_learning_rate = float(_number(end_learning_rate, "end_learning_rate"))
        self.power = float(_number(power, "power"))
        self.cycle = bool(cycle)

    def step(self):
        t, steps = self.step_num, self.decay_steps
        if self.cycle:
            steps = steps * (math.ceil(t / steps) if t else 1)
        else:
            t = min(t, steps)
        return (self.learning_rate - self.end_learning_rate) * (1 - t / steps) ** self.power + self.end_learning_rate


class CosineDecay(LearningRateDecay):
    """``learning_rate * (cos(floor(step_num / step_each_epoch) * pi / epochs) + 1) / 2``."""

    api_name = "fluid.dygraph.CosineDecay"

    def __init__(self, learning_rate, step_each_epoch, epochs, begin=0, step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        self.learning_rate = float(_number(learning_rate, "learning_rate"))
        self.step_each_epoch = _number(step_each_epoch, "step_each_epoch", positive=True)
        self.epochs = _number(epochs, "epochs", positive=True)

    def step(self):
        epoch = math.floor(self.step_num / self.step_each_epoch)
        return self.learning_rate * 0.5 * (math.cos(epoch * math.pi / self.epochs) + 1)


class NoamDecay(LearningRateDecay):
    """``learning_rate * d_model ** -0.5 * min(step_num ** -0.5, warmup_steps ** -1.5 * step_num)``."""

    api_name = "fluid.dygraph.NoamDecay"

    def __init__(self, d_model, warmup_steps, begin=1, step=1, dtype="float32", learning_rate=1.0):
        super().__init__(begin, step, dtype)
        self.d_model = _number(d_model, "d_model", positive=True)
        self.warmup_steps = _number(warmup_steps, "warmup_steps", positive=True)
        self.learning_rate = float(_number(learning_rate, "learning_rate"))

    def step(self):
        t = self.step_num
        a = t ** -0.5 if t > 0 else math.inf
        return self.learning_rate * self.d_model ** -0.5 * min(a, self.warmup_steps ** -1.5 * t)


class LinearLrWarmup(LearningRateDecay):
    """``start_lr + (end_lr - start_lr) * step_num / warmup_steps`` while ``step_num <
    warmup_steps``, then ``learning_rate`` (a number or a wrapped 1.x schedule, called every step)."""

    api_name = "fluid.dygraph.LinearLrWarmup"

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, begin=1, step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        if not isinstance(learning_rate, (numbers.Real, LearningRateDecay)) or isinstance(learning_rate, bool):
            raise TypeError("the type of learning_rate should be [int, float or LearningRateDecay], the current "
                            f"type is {type(learning_rate).__name__}")
        if not end_lr > start_lr:
            raise ValueError(f"end_lr {end_lr} must be greater than start_lr {start_lr}")
        self.learning_rate = learning_rate
        self.warmup_steps = _number(warmup_steps, "warmup_steps", positive=True)
        self.start_lr = float(start_lr)
        self.lr_ratio_before_warmup = (float(end_lr) - float(start_lr)) / float(warmup_steps)

    def step(self):
        base = self.learning_rate() if isinstance(self.learning_rate, LearningRateDecay) else self.learning_rate
        if self.step_num < self.warmup_steps:
            return self.lr_ratio_before_warmup * self.step_num + self.start_lr
        return float(base)

    def state_dict(self):
        state = super().state_dict()
        if isinstance(self.learning_rate, LearningRateDecay):
            state["inner"] = self.learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict):
        super().set_state_dict(state_dict)
        if isinstance(self.learning_rate, LearningRateDecay):
            self.learning_rate.set_state_dict(state_dict["inner"])

    set_dict = set_state_dict


class _EpochDecay(LearningRateDecay):
    """Advanced by ``epoch()``; calling it returns the current rate."""

    def __init__(self, learning_rate):
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, numbers.Real):
            raise TypeError(f"The type of 'learning_rate' must be 'float, int', but received {type(learning_rate)}.")
        if learning_rate < 0:
            raise ValueError(f"Invalid learning rate: {learning_rate}")
        # not LearningRateDecay.__init__: step counting is not used, and StepDecay's step_size is its period
        self.dtype = "float32"
        self.base_lr = float(learning_rate)
        self.epoch_num = -1
        self.learning_rate = self.base_lr
        self.epoch()

    def __call__(self) -> float:
        return self.learning_rate

    def peek(self) -> float:
        return self.learning_rate

    def epoch(self, epoch=None) -> None:
        """Advance one epoch (or jump to ``epoch``) and recompute the rate."""
        self.epoch_num = self.epoch_num + 1 if epoch is None else int(_number(epoch, "epoch", integer=True))
        self.learning_rate = float(self.get_lr())

    def get_lr(self) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def state_dict(self):
        return {"epoch_num": self.epoch_num, "learning_rate": self.learning_rate}

    def set_state_dict(self, state_dict):
        self.epoch_num = int(state_dict["epoch_num"])
        self.learning_rate = float(state_dict["learning_rate"])

    set_dict = set_state_dict


def _decay_rate(decay_rate):
    decay_rate = float(_number(decay_rate, "decay_rate"))
    if decay_rate >= 1.0:
        raise ValueError("decay_rate should be < 1.0.")
    return decay_rate


class StepDecay(_EpochDecay):
    """``learning_rate * decay_rate ** (epoch // step_size)``."""

    api_name = "fluid.dygraph.StepDecay"

    def __init__(self, learning_rate, step_size, decay_rate=0.1):
        if isinstance(step_size, bool) or not isinstance(step_size, int):
            raise TypeError(f"The type of 'step_size' must be 'int', but received {type(step_size)}.")
        self.step_size = step_size
        self.decay_rate = _decay_rate(decay_rate)
        super().__init__(learning_rate)

    def get_lr(self):
        return self.base_lr * self.decay_rate ** (self.epoch_num // self.step_size)


class MultiStepDecay(_EpochDecay):
    """``learning_rate * decay_rate ** (number of milestones <= epoch)``."""

    api_name = "fluid.dygraph.MultiStepDecay"

    def __init__(self, learning_rate, milestones, decay_rate=0.1):
        if not isinstance(milestones, (tuple, list)):
            raise TypeError(f"The type of 'milestones' in 'MultiStepDecay' must be 'tuple, list', but received "
                            f"{type(milestones)}.")
        if any(a >= b for a, b in zip(milestones, milestones[1:])):
            raise ValueError("The elements of milestones must be incremented")
        self.milestones = list(milestones)
        self.decay_rate = _decay_rate(decay_rate)
        super().__init__(learning_rate)

    def get_lr(self):
        passed = sum(1 for m in self.milestones if self.epoch_num >= m)
        return self.base_lr * self.decay_rate ** passed


class LambdaDecay(_EpochDecay):
    """``learning_rate * lr_lambda(epoch)``."""

    api_name = "fluid.dygraph.LambdaDecay"

    def __init__(self, learning_rate, lr_lambda):
        if not callable(lr_lambda):
            raise TypeError(f"The type of 'lr_lambda' in 'LambdaDecay' must be 'function', but received "
                            f"{type(lr_lambda)}.")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.epoch_num)


class ReduceLROnPlateau(LearningRateDecay):
    """1.x ``ReduceLROnPlateau(learning_rate, mode='min', decay_rate=0.1, patience=10, verbose=False,
    threshold=1e-4, threshold_mode='rel', cooldown=0, min_lr=0, eps=1e-8, dtype='float32')``."""

    api_name = "fluid.dygraph.ReduceLROnPlateau"

    def __init__(self, learning_rate, mode="min", decay_rate=0.1, patience=10, verbose=False, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8, dtype="float32"):
        super().__init__(0, 1, dtype)
        if str(mode).lower() not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if str(threshold_mode).lower() not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.mode, self.threshold_mode = str(mode).lower(), str(threshold_mode).lower()
        self.decay_rate = _decay_rate(decay_rate)
        self.learning_rate = float(_number(learning_rate, "learning_rate"))
        self.verbose, self.patience, self.threshold = bool(verbose), int(patience), float(threshold)
        self.cooldown, self.min_lr, self.eps = int(cooldown), float(min_lr), float(eps)
        self.cooldown_counter = self.num_bad_epochs = self.epoch_num = 0
        self.best_loss = None

    def __call__(self) -> float:
        return self.learning_rate

    def peek(self) -> float:
        return self.learning_rate

    def step(self, loss) -> None:  # noqa: D401  (the 1.x name: one call per epoch with the epoch's loss)
        """Record one epoch's ``loss`` (a number, or a Tensor/array of one element)."""
        loss = _scalar_metric(loss)
        self.epoch_num += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best_loss is None or self._is_better(loss, self.best_loss):
            self.best_loss, self.num_bad_epochs = loss, 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
            new_lr = max(self.learning_rate * self.decay_rate, self.min_lr)
            if self.learning_rate - new_lr > self.eps:
                if self.verbose:
                    print(f"Epoch {self.epoch_num}: reducing learning rate from {self.learning_rate} to {new_lr}.")
                self.learning_rate = new_lr

    def _is_better(self, current, best) -> bool:
        delta = best * self.threshold if self.threshold_mode == "rel" else self.threshold
        return current < best - delta if self.mode == "min" else current > best + delta

    def state_dict(self):
        return {k: getattr(self, k) for k in ("cooldown_counter", "best_loss", "num_bad_epochs", "epoch_num",
                                              "learning_rate")}

    def set_state_dict(self, state_dict):
        for key in ("cooldown_counter", "best_loss", "num_bad_epochs", "epoch_num", "learning_rate"):
            setattr(self, key, state_dict[key])

    set_dict = set_state_dict


__all__ = ["CosineDecay", "ExponentialDecay", "InverseTimeDecay", "LambdaDecay", "LinearLrWarmup", "MultiStepDecay",
           "NaturalExpDecay", "NoamDecay", "PolynomialDecay", "ReduceLROnPlateau", "StepDecay"]
