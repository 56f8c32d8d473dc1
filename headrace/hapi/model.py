"""``paddle.Model``: the high-level training API (the reference's ``python/paddle/hapi/model.py``).

``Model(network, inputs=None, labels=None)`` wraps an ``nn.Layer``; ``prepare(optimizer, loss,
metrics)`` configures it; ``fit`` / ``evaluate`` / ``predict`` loop over a ``paddle.io.Dataset``
(wrapped in a ``paddle.io.DataLoader``) or over any re-iterable of batches (a DataLoader, a list
of ``[input..., label...]`` or ``([inputs], [labels])`` batches) and call the callbacks
(``paddle.callbacks``); ``train_batch`` / ``eval_batch`` / ``predict_batch`` run one batch;
``save`` / ``load`` write and read ``<path>.pdparams`` and ``<path>.pdopt`` with ``paddle.save``
/ ``paddle.load`` (atomic, checksummed files).  Eager mode runs the network on Tensors; after
``paddle.enable_static()`` the model builds programs from the ``inputs``/``labels`` InputSpecs
and runs them with an Executor (``adapters.py``).
"""
from __future__ import annotations

import inspect
import numbers
import os
import warnings

import numpy as np

from ..core.context import in_dynamic_mode
from ..static.input_spec import InputSpec
from .adapters import DynamicAdapter, StaticAdapter, to_list
from .callbacks import config_callbacks
from .loop import run_one_epoch

__all__ = ["Model"]

_METRIC_METHODS = ("compute", "update", "accumulate", "reset", "name")


def _forward_arity(network) -> int:
    """How many inputs ``network.forward`` takes positionally (1 for ``forward(*inputs)``)."""
    params = inspect.signature(network.forward).parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return max(1, len(positional)) if any(p.kind == p.VAR_POSITIONAL for p in params) else len(positional)


def _strip_postfix(path: str) -> str:
    for suffix in (".pdparams", ".pdopt", ".pdmodel"):
        if path.endswith(suffix):
            return path[:-len(suffix)]
    return path


class Model:
    """``Model(network, inputs=None, labels=None)``: ``network`` is an ``nn.Layer``; ``inputs`` and
    ``labels`` are ``paddle.static.InputSpec`` lists (or one spec; ``inputs`` may be a dict keyed by
    the forward's argument names).  In dygraph mode they are optional (the number of inputs is then
    the number of the forward's positional arguments; the rest of each batch are labels); in static
    mode ``inputs`` is required (the feed variables are built from it).  Each spec needs a name.

    Example::

        model = paddle.Model(net, [InputSpec([None, 4], 'float32', 'x')], [InputSpec([None, 1], 'int64', 'y')])
        model.prepare(paddle.optimizer.Adam(0.01, parameters=model.parameters()), paddle.nn.CrossEntropyLoss())
        model.fit(train_dataset, epochs=2, batch_size=32, verbose=0)
    """

    def __init__(self, network, inputs=None, labels=None):
        self.mode = "train"
        self.network = network
        self._loss = None
        self._optimizer = None
        self._metrics = []
        self.stop_training = False
        self.num_iters = None
        self._dynamic = in_dynamic_mode()
        if not self._dynamic and not isinstance(inputs, (list, tuple, dict, InputSpec)):
            raise TypeError("'inputs' must be list or dict, and couldn't be None in static graph mode.")
        self._inputs = self._verify_spec(inputs, is_input=True)
        self._labels = self._verify_spec(labels)
        self._adapter = DynamicAdapter(self) if self._dynamic else StaticAdapter(self)

    def _verify_spec(self, specs, is_input=False) -> list:
        if specs is None:
            if not is_input:
                return []
            return [InputSpec([-1], "float32", f"input_{i}") for i in range(_forward_arity(self.network))]
        if isinstance(specs, dict):
            if not is_input:
                raise TypeError("Model: 'labels' must be an InputSpec or a list of them, not a dict")
            names = list(inspect.signature(self.network.forward).parameters)
            missing = [n for n in names if n not in specs]
            if missing:
                raise ValueError(f"Model: inputs dict has no InputSpec for forward argument(s) {missing}")
            specs = [specs[n] for n in names]
        specs = to_list(specs)
        for i, spec in enumerate(specs):
            if not isinstance(spec, InputSpec):
                raise TypeError(f"Model: {'inputs' if is_input else 'labels'}[{i}] must be a "
                                f"paddle.static.InputSpec, got {type(spec).__name__}")
            if spec.name is None:
                raise ValueError(f"Requires Input[{i}].name != None, but receive `None` with {spec}.")
        return specs

    # -- configuration ------------------------------------------------------------------------
    def prepare(self, optimizer=None, loss=None, metrics=None, amp_configs=None):
        """``optimizer`` (a ``paddle.optimizer`` instance, needed by ``fit``/``train_batch``),
        ``loss`` (an ``nn.Layer`` or a callable ``loss(*outputs, *labels)``) and ``metrics`` (a
        ``paddle.metric.Metric`` or a list of them).  ``amp_configs`` other than None/'O0' is not
        supported (headrace's AMP runs float32 on the CPU)."""
        if amp_configs not in (None, "O0") and not (isinstance(amp_configs, dict) and
                                                    amp_configs.get("level", "O0") == "O0"):
            raise NotImplementedError("Model.prepare: amp_configs (mixed precision) is not supported by headrace's "
                                      "CPU kernels; leave it None")
        if optimizer is not None and not callable(getattr(optimizer, "minimize", None)):
            raise TypeError(f"'optimizer' must be a paddle.optimizer.Optimizer, got {type(optimizer).__name__}")
        if loss is not None and not callable(loss):
            raise TypeError("'loss' must be sub classes of `paddle.nn.Layer` or any callable function.")
        metrics = to_list(metrics)
        for metric in metrics:
            if not all(callable(getattr(metric, m, None)) for m in _METRIC_METHODS):
                raise TypeError(f"{type(metric).__name__} is not sub class of Metric")
        self._optimizer, self._loss, self._metrics = optimizer, loss, metrics
        if not self._dynamic:
            self._adapter.prepared()

    def parameters(self, *args, **kwargs):
        """The network's parameters (``network.parameters()``)."""
        return self.network.parameters(*args, **kwargs)

    def _metrics_name(self) -> list:
        names = ["loss"] if self._loss is not None else []
        for metric in self._metrics:
            names.extend(to_list(metric.name()))
        return names

    # -- one batch ----------------------------------------------------------------------------
    def train_batch(self, inputs, labels=None, update=True):
        """One optimization step on a batch (``inputs``/``labels``: arrays or Tensors, one or a list).
        Returns ``[loss arrays]``, or ``([loss arrays], [metric update results])`` with metrics.
        With ``update=False`` the gradients are kept for the next call (accumulation)."""
        if self._optimizer is None or self._loss is None:
            raise RuntimeError("model not ready, please call `model.prepare()` with an optimizer and a loss first")
        self.mode = "train"
        return self._adapter.train_batch(inputs, labels, update)

    def eval_batch(self, inputs, labels=None):
        """Losses and metric updates of one batch, without training (dropout off, no gradients)."""
        self.mode = "eval"
        return self._adapter.eval_batch(inputs, labels)

    def predict_batch(self, inputs):
        """The network's outputs on one batch, as a list of numpy arrays."""
        self.mode = "test"
        return self._adapter.predict_batch(inputs)

    # -- loops --------------------------------------------------------------------------------
    def _loader(self, data, batch_size, shuffle=False, drop_last=False, num_workers=0, passes=1):
        from .. import io

        if isinstance(data, io.Dataset):
            loader_class = getattr(io, "DataLoader", None)
            if loader_class is None:
                raise NotImplementedError("paddle.io has no DataLoader in this build: pass an iterable of "
                                          "batches instead of a Dataset")
            return loader_class(data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                num_workers=num_workers, return_list=True)
        if data is None or not hasattr(data, "__iter__") or isinstance(data, (np.ndarray, str)):
            raise TypeError(f"Model: data must be a paddle.io.Dataset, a DataLoader or an iterable of batches, "
                            f"got {type(data).__name__}")
        if passes > 1 and iter(data) is data:
            raise ValueError("Model: an iterator of batches can be read only once; pass a DataLoader, a Dataset "
                             "or a list of batches to train more than one epoch")
        return data

    @staticmethod
    def _steps(loader):
        try:
            return len(loader)
        except (TypeError, ValueError):      # no __len__, or a DataLoader over an IterableDataset
            return None

    def fit(self, train_data=None, eval_data=None, batch_size=1, epochs=1, eval_freq=1, log_freq=10,
            save_dir=None, save_freq=1, verbose=2, drop_last=False, shuffle=True, num_workers=0,
            callbacks=None, accumulate_grad_batches=1, num_iters=None):
        """Train for ``epochs`` epochs (or ``num_iters`` steps), evaluating on ``eval_data`` every
        ``eval_freq`` epochs; ``save_dir`` saves ``<epoch>`` every ``save_freq`` epochs and
        ``final`` (ModelCheckpoint); ``verbose`` 0/1/2 as ProgBarLogger; datasets are batched by a
        DataLoader with ``batch_size``/``shuffle``/``drop_last``/``num_workers``."""
        if train_data is None:
            raise ValueError("train_data must be given!")
        for name, value in (("epochs", epochs), ("eval_freq", eval_freq), ("accumulate_grad_batches",
                                                                          accumulate_grad_batches)):
            if not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"Model.fit: {name} must be a positive int, got {value!r}")
        train_loader = self._loader(train_data, batch_size, shuffle, drop_last, num_workers, passes=epochs)
        eval_loader = None if eval_data is None else self._loader(eval_data, batch_size, num_workers=num_workers,
                                                                  passes=epochs)
        steps = self._steps(train_loader)
        if num_iters is not None:
            if not isinstance(num_iters, numbers.Integral) or num_iters < 1:
                raise ValueError(f"Model.fit: num_iters must be a positive int, got {num_iters!r}")
            epochs = num_iters // steps + 1 if steps else epochs
        self.num_iters, self._accumulate, self.stop_training = num_iters, accumulate_grad_batches, False
        cbks = config_callbacks(callbacks, model=self, epochs=epochs, steps=steps, log_freq=log_freq,
                                save_freq=save_freq, save_dir=save_dir, verbose=verbose,
                                metrics=self._metrics_name(), batch_size=batch_size)
        cbks.on_begin("train")
        logs = {}
        for epoch in range(epochs):
            cbks.on_epoch_begin(epoch)
            logs = run_one_epoch(self, train_loader, cbks, "train")
            cbks.on_epoch_end(epoch, logs)
            if eval_loader is not None and epoch % eval_freq == 0:
                self._evaluate_with(eval_loader, cbks)
            if self.stop_training:
                break
        cbks.on_end("train", logs)

    def _evaluate_with(self, loader, cbks) -> dict:
        cbks.on_begin("eval", {"steps": self._steps(loader), "metrics": self._metrics_name()})
        logs = run_one_epoch(self, loader, cbks, "eval")
        cbks.on_end("eval", logs)
        return logs

    def evaluate(self, eval_data, batch_size=1, log_freq=10, verbose=2, num_workers=0, callbacks=None,
                 num_iters=None):
        """Run ``eval_data`` once; returns ``{'loss': [...], <metric name>: value, ...}``."""
        loader = self._loader(eval_data, batch_size, num_workers=num_workers)
        self.num_iters = num_iters
        cbks = config_callbacks(callbacks, model=self, log_freq=log_freq, verbose=verbose,
                                metrics=self._metrics_name())
        logs = self._evaluate_with(loader, cbks)
        return {k: logs[k] for k in self._metrics_name() if k in logs}

    def predict(self, test_data, batch_size=1, num_workers=0, stack_outputs=False, verbose=1, callbacks=None):
        """The network's outputs on ``test_data``: one entry per output, each a list of per-batch
        arrays, or (``stack_outputs=True``) one array stacked along the batch dim."""
        loader = self._loader(test_data, batch_size, num_workers=num_workers)
        self.num_iters = None
        cbks = config_callbacks(callbacks, model=self, verbose=verbose, metrics=self._metrics_name())
        cbks.on_begin("predict", {"steps": self._steps(loader)})
        logs, outputs = run_one_epoch(self, loader, cbks, "predict")
        cbks.on_end("predict", logs)
        outputs = list(zip(*outputs))
        if stack_outputs:
            outputs = [np.vstack(outs) for outs in outputs]
        return outputs

    # -- persistence --------------------------------------------------------------------------
    def save(self, path, training=True):
        """``training=True``: ``<path>.pdparams`` (the network's ``state_dict``) and, with an
        optimizer, ``<path>.pdopt`` (its ``state_dict``), via ``paddle.save`` (atomic files).
        ``training=False``: an inference model (``<path>.pdmodel``/``.pdiparams``) — static mode
        only (dygraph would need the reference's jit export, which headrace does not have)."""
        from ..framework import save

        if not isinstance(path, str) or not os.path.basename(path):
            raise ValueError(f"path should be of 'dirname/filename' format, got {path!r}")
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if not training:
            self._adapter.save_inference(path)
            return
        if not self._dynamic:
            self._adapter.ready()        # built and initialized, as the reference's prepare leaves it
        save(self.network.state_dict(), path + ".pdparams")
        if self._optimizer is not None:
            save(self._optimizer.state_dict(), path + ".pdopt")

    def load(self, path, skip_mismatch=False, reset_optimizer=False):
        """Load ``<path>.pdparams`` into the network (every parameter must be found with its shape,
        else ValueError; ``skip_mismatch=True`` warns and skips those instead) and, unless
        ``reset_optimizer``, ``<path>.pdopt`` into the optimizer when both exist."""
        from ..framework import load

        path = _strip_postfix(path)
        if not os.path.exists(path + ".pdparams"):
            raise ValueError(f"Model.load: {path + '.pdparams'} does not exist")
        state = load(path + ".pdparams", return_numpy=True)
        matched = {}
        for key, param in self.network.state_dict().items():
            problem = None
            if key not in state:
                problem = f"{key} is not found in the providing file."
            elif list(np.shape(state[key])) != list(param.shape):
                problem = (f"{key} receives a shape {list(np.shape(state[key]))}, but the expected shape is "
                           f"{list(param.shape)}.")
            if problem is None:
                matched[key] = state[key]
            elif skip_mismatch:
                warnings.warn(f"Skip loading for {key}. {problem}")
            else:
                raise ValueError(problem)
        self.network.set_state_dict(matched)
        if self._optimizer is not None and not reset_optimizer and os.path.exists(path + ".pdopt"):
            self._load_optimizer(load(path + ".pdopt", return_numpy=True))

    def _load_optimizer(self, state) -> None:
        """A state saved before the first update holds no accumulators (at most the schedule):
        restore the schedule only, and let the accumulators start fresh, as the reference does."""
        if any(key != "LR_Scheduler" for key in state):
            if not self._dynamic:
                self._adapter.build()
            self._optimizer.set_state_dict(state)
            return
        schedule = getattr(self._optimizer, "_learning_rate", None)
        if "LR_Scheduler" in state and callable(getattr(schedule, "set_state_dict", None)):
            schedule.set_state_dict(state["LR_Scheduler"])

    def summary(self, input_size=None, dtype=None):
        """``paddle.summary`` of the network with ``input_size`` (default: the ``inputs`` specs)."""
        import headrace

        summary = getattr(headrace, "summary", None)
        if summary is None:
            raise NotImplementedError("Model.summary: this build has no summary function (the reference's "
                                      "top-level summary)")
        if input_size is None and not self._inputs:
            raise ValueError("Model.summary: give input_size, or the inputs specs when building the Model")
        return summary(self.network, input_size if input_size is not None else self._inputs, dtypes=dtype)
