"""One pass of ``paddle.Model`` over a data loader (train, eval or predict), with the callbacks.

A batch may come as ``[input..., label...]`` (a DataLoader), ``([inputs], [labels])`` (nested
lists are flattened) or a single array/Tensor; the first ``len(model._inputs)`` items are the
inputs, the rest the labels.  The logs a callback sees after each batch: ``'loss'`` (a list of
floats, one per loss, for the current batch), each metric's accumulated value so far (metrics are
reset after the pass), ``'step'`` and ``'batch_size'``.
"""
from __future__ import annotations

import numpy as np

from .adapters import to_list


def flatten(batch) -> list:
    if isinstance(batch, (list, tuple)):
        return [item for part in batch for item in flatten(part)]
    return [batch]


def _batch_size(first) -> int:
    shape = getattr(first, "shape", None)
    shape = shape() if callable(shape) else shape
    return int(shape[0]) if shape else len(first)


def _scalars(losses) -> list:
    return [float(np.asarray(v).reshape(-1)[0]) for v in losses]


def _train_or_eval(model, mode, data, step, steps) -> dict:
    count = len(model._inputs)
    args = [data[:count], data[count:]]
    if mode == "train":
        args.append((step + 1) % model._accumulate == 0 or (steps is not None and step + 1 == steps))
    outs = getattr(model, mode + "_batch")(*args)
    if model._metrics and model._loss is not None:
        values = [_scalars(outs[0])]
    elif model._loss is not None:
        values = [_scalars(outs)]
    else:
        values = []
    for metric in model._metrics:
        values.extend(to_list(metric.accumulate()))
    return dict(zip(model._metrics_name(), values))


def run_one_epoch(model, loader, callbacks, mode):
    """Run every batch of ``loader`` in ``mode``; returns the last batch's logs (and, for
    'predict', also the list of per-batch output lists)."""
    logs, outputs = {}, []
    steps = model._steps(loader)
    for step, batch in enumerate(loader):
        data = flatten(batch)
        callbacks.on_batch_begin(mode, step, logs)
        if mode == "predict":
            outputs.append(model.predict_batch(data[:len(model._inputs)]))
        else:
            logs.update(_train_or_eval(model, mode, data, step, steps))
        logs["step"] = step
        logs["batch_size"] = _batch_size(data[0])
        callbacks.on_batch_end(mode, step, logs)
        if model.num_iters is not None:
            model.num_iters -= 1
            if model.num_iters <= 0:
                model.stop_training = True
                break
    for metric in model._metrics:
        metric.reset()
    return (logs, outputs) if mode == "predict" else logs
