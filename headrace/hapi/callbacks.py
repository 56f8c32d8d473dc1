"""``paddle.callbacks``: hooks ``paddle.Model.fit`` / ``evaluate`` / ``predict`` call.

The reference's names and call order (``python/paddle/hapi/callbacks.py``): ``Callback`` (every
hook a no-op), ``ProgBarLogger`` (the progress bar; ``verbose`` 0 silent, 1 a bar, 2 one line per
``log_freq`` steps, 3 as 2), ``ModelCheckpoint`` (``save_dir/<epoch>`` every ``save_freq`` epochs
and ``save_dir/final``), ``LRScheduler`` (steps the optimizer's ``paddle.optimizer.lr``
schedule per batch or per epoch), ``EarlyStopping``, ``ReduceLROnPlateau``.  The scalar logger
is ``ScalarLogger`` (``scalar_logger.py``).  ``config_callbacks`` adds the default ProgBarLogger,
ModelCheckpoint and LRScheduler as the reference does.  A callback that raises stops ``fit`` with
its error (nothing is caught).
"""
from __future__ import annotations

import numbers
import os
import warnings

import numpy as np

from ..distributed.env import get_rank
from ..optimizer.lr import LRScheduler as _Schedule
from .progressbar import ProgressBar

__all__ = ["Callback", "EarlyStopping", "LRScheduler", "ModelCheckpoint", "ProgBarLogger", "ReduceLROnPlateau"]

_MODES = ("train", "eval", "predict")


def config_callbacks(callbacks=None, model=None, batch_size=None, epochs=None, steps=None, log_freq=2,
                     verbose=2, save_freq=1, save_dir=None, metrics=None, mode="train"):
    """The callback list ``Model`` runs: the user's, plus a ProgBarLogger (when ``verbose``), a
    ModelCheckpoint and an LRScheduler unless the user gave one of each kind."""
    cbks = callbacks or []
    cbks = list(cbks) if isinstance(cbks, (list, tuple)) else [cbks]
    for c in cbks:
        if not isinstance(c, Callback):
            raise TypeError(f"callbacks must be paddle.callbacks.Callback instances, got {type(c).__name__}")
    if verbose and not any(isinstance(k, ProgBarLogger) for k in cbks):
        cbks = [ProgBarLogger(log_freq, verbose=verbose)] + cbks
    if not any(isinstance(k, ModelCheckpoint) for k in cbks):
        cbks = cbks + [ModelCheckpoint(save_freq, save_dir)]
    for k in cbks:
        if isinstance(k, EarlyStopping):
            k.save_dir = save_dir
    if not any(isinstance(k, LRScheduler) for k in cbks):
        cbks = cbks + [LRScheduler()]
    cbk_list = CallbackList(cbks)
    cbk_list.set_model(model)
    params = {"batch_size": batch_size, "epochs": epochs, "steps": steps, "verbose": verbose,
              "metrics": (metrics or []) if mode != "test" else []}
    cbk_list.set_params(params)
    return cbk_list


class CallbackList:
    """Calls one hook on every callback, in order."""

    def __init__(self, callbacks=None):
        self.callbacks = list(callbacks or [])

    def append(self, callback) -> None:
        self.callbacks.append(callback)

    def __iter__(self):
        return iter(self.callbacks)

    def set_params(self, params) -> None:
        for c in self.callbacks:
            c.set_params(params)

    def set_model(self, model) -> None:
        for c in self.callbacks:
            c.set_model(model)

    def _call(self, name, *args) -> None:
        for c in self.callbacks:
            getattr(c, name)(*args)

    @staticmethod
    def _check_mode(mode) -> None:
        if mode not in _MODES:
            raise ValueError(f"callback mode should be one of {_MODES}, got {mode!r}")

    def on_begin(self, mode, logs=None) -> None:
        self._check_mode(mode)
        self._call(f"on_{mode}_begin", logs)

    def on_end(self, mode, logs=None) -> None:
        self._check_mode(mode)
        self._call(f"on_{mode}_end", logs)

    def on_epoch_begin(self, epoch=None, logs=None) -> None:
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch=None, logs=None) -> None:
        self._call("on_epoch_end", epoch, logs)

    def on_batch_begin(self, mode, step=None, logs=None) -> None:
        self._check_mode(mode)
        self._call(f"on_{mode}_batch_begin", step, logs)

    def on_batch_end(self, mode, step=None, logs=None) -> None:
        self._check_mode(mode)
        self._call(f"on_{mode}_batch_end", step, logs)


class Callback:
    """Base class of callbacks: override the hooks you need.  ``self.model`` is the
    ``paddle.Model``; ``self.params`` holds ``batch_size``, ``epochs``, ``steps`` (per epoch,
    None when unknown), ``verbose`` and ``metrics`` (the logged names: ``'loss'`` and the
    metrics' names).  Batch-end logs carry ``'loss'``, the metrics, ``'step'`` and
    ``'batch_size'``; epoch-end logs are those of the epoch's last batch."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_params(self, params) -> None:
        self.params = params

    def set_model(self, model) -> None:
        self.model = model

    def on_train_begin(self, logs=None): """Called at the start of ``fit``."""

    def on_train_end(self, logs=None): """Called at the end of ``fit`` with the last epoch's logs."""

    def on_eval_begin(self, logs=None): """Called before evaluating; logs has ``steps`` and ``metrics``."""

    def on_eval_end(self, logs=None): """Called after evaluating, with the evaluation's logs."""

    def on_predict_begin(self, logs=None): """Called at the start of ``predict``."""

    def on_predict_end(self, logs=None): """Called at the end of ``predict``."""

    def on_epoch_begin(self, epoch, logs=None): """Called at the start of each epoch (0-based)."""

    def on_epoch_end(self, epoch, logs=None): """Called at the end of each training epoch."""

    def on_train_batch_begin(self, step, logs=None): """Called before each training batch."""

    def on_train_batch_end(self, step, logs=None): """Called after each training batch."""

    def on_eval_batch_begin(self, step, logs=None): """Called before each evaluation batch."""

    def on_eval_batch_end(self, step, logs=None): """Called after each evaluation batch."""

    def on_predict_batch_begin(self, step, logs=None): """Called before each prediction batch."""

    def on_predict_batch_end(self, step, logs=None): """Called after each prediction batch."""


class _Phase:
    """One progress bar's state (train epoch, evaluation or prediction)."""

    def __init__(self, steps, names, verbose):
        self.steps, self.names, self.step, self.samples = steps, names, 0, 0
        self.bar = ProgressBar(num=steps, verbose=verbose)

    def advance(self, logs) -> None:
        self.step += 1
        self.samples += int(logs.get("batch_size", 1))

    def draw(self, logs) -> None:
        self.bar.update(self.step, [(k, logs[k]) for k in self.names if k in logs], samples=self.samples)


class ProgBarLogger(Callback):
    """``ProgBarLogger(log_freq=1, verbose=2)``: prints ``Epoch i/n`` and a progress bar (step/total,
    the current batch's loss, the metrics accumulated so far, ETA, time per step and samples/s)
    every ``log_freq`` steps and at the end of each epoch, evaluation and prediction."""

    _NOTE = ("The loss value printed in the log is the current batch, and the metric is the average "
             "value of previous step.")

    def __init__(self, log_freq=1, verbose=2):
        super().__init__()
        if not isinstance(log_freq, int) or log_freq < 1:
            raise ValueError(f"ProgBarLogger: log_freq must be a positive int, got {log_freq!r}")
        self.log_freq, self.verbose = log_freq, verbose
        self._phases = {}

    def _is_print(self) -> bool:
        return bool(self.verbose) and get_rank() == 0      # one log for a multi-process job

    def on_train_begin(self, logs=None):
        self.epochs = self.params.get("epochs")
        if self._is_print():
            print(self._NOTE)

    def on_epoch_begin(self, epoch=None, logs=None):
        if self._is_print() and self.epochs:
            print(f"Epoch {epoch + 1}/{self.epochs}")
        self._phases["train"] = _Phase(self.params.get("steps"), self.params.get("metrics", []), self.verbose)

    def _batch_end(self, mode, logs) -> None:
        phase = self._phases[mode]
        phase.advance(logs or {})
        if self._is_print() and phase.step % self.log_freq == 0 and (phase.steps is None or phase.step < phase.steps):
            phase.draw(logs or {})

    def on_train_batch_end(self, step, logs=None):
        self._batch_end("train", logs)

    def on_epoch_end(self, epoch, logs=None):
        self._final_draw("train", logs)

    def _final_draw(self, mode, logs) -> None:
        """The phase's last state, unless the last ``log_freq`` line already showed it."""
        phase = self._phases[mode]
        if self._is_print() and phase.step and (phase.steps is not None or phase.step % self.log_freq):
            phase.draw(logs or {})

    def on_eval_begin(self, logs=None):
        logs = logs or {}
        self._phases["eval"] = _Phase(logs.get("steps"), logs.get("metrics", []), self.verbose)
        if self._is_print():
            print("Eval begin...")

    def on_eval_batch_end(self, step, logs=None):
        self._batch_end("eval", logs)

    def on_eval_end(self, logs=None):
        self._final_draw("eval", logs)
        if self._is_print():
            print(f"Eval samples: {self._phases['eval'].samples}")

    def on_predict_begin(self, logs=None):
        logs = logs or {}
        self._phases["predict"] = _Phase(logs.get("steps"), [], self.verbose)
        if self._is_print():
            print("Predict begin...")

    def on_predict_batch_end(self, step, logs=None):
        self._batch_end("predict", logs)

    def on_predict_end(self, logs=None):
        self._final_draw("predict", logs)
        if self._is_print():
            print(f"Predict samples: {self._phases['predict'].samples}")


class ModelCheckpoint(Callback):
    """``ModelCheckpoint(save_freq=1, save_dir=None)``: ``model.save(save_dir/<epoch>)`` after every
    ``save_freq``-th epoch (epochs 0, save_freq, 2*save_freq, ...) and ``save_dir/final`` when
    training ends; nothing without ``save_dir``.  Saves are atomic (a write never leaves a torn
    file), so an interrupted ``fit`` keeps its last checkpoint whole."""

    def __init__(self, save_freq=1, save_dir=None):
        super().__init__()
        if not isinstance(save_freq, int) or save_freq < 1:
            raise ValueError(f"ModelCheckpoint: save_freq must be a positive int, got {save_freq!r}")
        self.save_freq, self.save_dir = save_freq, save_dir

    def _is_save(self) -> bool:
        return bool(self.model is not None and self.save_dir) and get_rank() == 0

    def _save(self, name) -> None:
        path = os.path.join(self.save_dir, str(name))
        print(f"save checkpoint at {os.path.abspath(path)}")
        self.model.save(path)

    def on_epoch_end(self, epoch, logs=None):
        if self._is_save() and epoch % self.save_freq == 0:
            self._save(epoch)

    def on_train_end(self, logs=None):
        if self._is_save():
            self._save("final")


def _schedule_of(model):
    optimizer = getattr(model, "_optimizer", None)
    schedule = getattr(optimizer, "_learning_rate", None)
    return schedule if isinstance(schedule, _Schedule) else None


class LRScheduler(Callback):
    """``LRScheduler(by_step=True, by_epoch=False)``: calls ``step()`` of the optimizer's
    ``paddle.optimizer.lr.LRScheduler`` after every training batch, or after every epoch."""

    def __init__(self, by_step=True, by_epoch=False):
        super().__init__()
        if by_step and by_epoch:
            raise ValueError("by_step option is mutually exclusive with by_epoch")
        self.by_step, self.by_epoch = by_step, by_epoch

    def on_epoch_end(self, epoch, logs=None):
        schedule = _schedule_of(self.model)
        if self.by_epoch and schedule is not None:
            schedule.step()

    def on_train_batch_end(self, step, logs=None):
        schedule = _schedule_of(self.model)
        if self.by_step and schedule is not None:
            schedule.step()


def _monitor_less(mode, monitor, name):
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{name} mode {mode} is unknown, fallback to auto mode.")
        mode = "auto"
    return mode == "min" or (mode == "auto" and "acc" not in monitor)


def _monitored(logs, monitor, name):
    if logs is None or monitor not in logs:
        warnings.warn(f"Monitor of {name} should be loss or metric name.")
        return None
    current = logs[monitor]
    if isinstance(current, (list, tuple)):
        current = current[0]
    if isinstance(current, np.ndarray) and current.size == 1:
        current = current.reshape(-1)[0]
    return float(current) if isinstance(current, (numbers.Number, np.number)) else None


class EarlyStopping(Callback):
    """``EarlyStopping(monitor='loss', mode='auto', patience=0, verbose=1, min_delta=0,
    baseline=None, save_best_model=True)``: after each evaluation, stops training
    (``model.stop_training``) once ``monitor`` has not improved by more than ``min_delta`` for
    ``patience`` evaluations (``mode`` 'auto' maximizes names containing 'acc').  With
    ``save_best_model`` and ``fit(save_dir=...)`` the best model is saved at
    ``save_dir/best_model``."""

    def __init__(self, monitor="loss", mode="auto", patience=0, verbose=1, min_delta=0, baseline=None,
                 save_best_model=True):
        super().__init__()
        self.monitor, self.patience, self.verbose, self.baseline = monitor, patience, verbose, baseline
        self.save_best_model, self.save_dir = save_best_model, None
        self.wait_epoch, self.stopped_epoch = 0, 0
        self._less = _monitor_less(mode, monitor, "EarlyStopping")
        self.min_delta = -abs(min_delta) if self._less else abs(min_delta)

    def _better(self, current) -> bool:
        shifted = current - self.min_delta
        return shifted < self.best_value if self._less else shifted > self.best_value

    def on_train_begin(self, logs=None):
        self.wait_epoch = 0
        if self.baseline is not None:
            self.best_value = self.baseline
        else:
            self.best_value = np.inf if self._less else -np.inf

    def on_eval_end(self, logs=None):
        current = _monitored(logs, self.monitor, "EarlyStopping")
        if current is None:
            return
        best_path = os.path.join(self.save_dir, "best_model") if self.save_dir and get_rank() == 0 else None
        if self._better(current):
            self.best_value, self.wait_epoch = current, 0
            if self.save_best_model and best_path:
                self.model.save(best_path)
        else:
            self.wait_epoch += 1
        if self.wait_epoch >= self.patience:
            self.model.stop_training = True
            if self.verbose > 0:
                print(f"Epoch {self.stopped_epoch + 1}: Early stopping.")
                if self.save_best_model and best_path:
                    print(f"Best checkpoint has been saved at {os.path.abspath(best_path)}")
        self.stopped_epoch += 1


class ReduceLROnPlateau(Callback):
    """``ReduceLROnPlateau(monitor='loss', factor=0.1, patience=10, verbose=1, mode='auto',
    min_delta=1e-4, cooldown=0, min_lr=0)``: after each evaluation, multiplies a float learning
    rate by ``factor`` (not below ``min_lr``) once ``monitor`` has not improved for ``patience``
    evaluations, then waits ``cooldown`` evaluations."""

    def __init__(self, monitor="loss", factor=0.1, patience=10, verbose=1, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0):
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0.")
        self.monitor, self.factor, self.min_lr, self.min_delta = monitor, factor, min_lr, min_delta
        self.patience, self.verbose, self.cooldown, self.mode = patience, verbose, cooldown, mode
        self.epoch = 0
        self._reset()

    def _reset(self) -> None:
        self._less = _monitor_less(self.mode, self.monitor, "ReduceLROnPlateau")
        self.best = np.inf if self._less else -np.inf
        self.cooldown_counter, self.wait = 0, 0

    def _improved(self, current) -> bool:
        return current < self.best - self.min_delta if self._less else current > self.best + self.min_delta

    def on_train_begin(self, logs=None):
        self._reset()

    def on_eval_end(self, logs=None):
        current = _monitored(logs, self.monitor, "ReduceLROnPlateau")
        optimizer = getattr(self.model, "_optimizer", None)
        if current is None or optimizer is None:
            return
        if not isinstance(optimizer._learning_rate, float):
            warnings.warn(f"Expected learning_rate be float, but got {type(optimizer._learning_rate)}.")
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(current):
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience and optimizer._learning_rate > np.float32(self.min_lr):
                new_lr = max(optimizer._learning_rate * self.factor, self.min_lr)
                optimizer.set_lr(new_lr)
                if self.verbose > 0:
                    print(f"\nEpoch {self.epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.")
                self.cooldown_counter, self.wait = self.cooldown, 0
        self.epoch += 1
