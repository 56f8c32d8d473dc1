"""Shared pieces of the paddle.Model tests: a tiny separable problem, a network factory and a
minimal metric written against the Metric protocol (compute/update/accumulate/reset/name)."""
import numpy as np

import headrace as paddle
from headrace import nn
from headrace.static import InputSpec


class CountingAccuracy:
    """Top-1 accuracy over everything ``update`` saw since ``reset``; counts resets."""

    def __init__(self, name="acc"):
        self._name, self.resets = name, 0
        self.correct = self.total = 0

    def name(self):
        return self._name

    def compute(self, pred, label):
        return pred, label

    def update(self, pred, label):
        hits = np.argmax(pred, axis=-1) == np.asarray(label).reshape(-1)
        self.correct += int(hits.sum())
        self.total += hits.size
        return float(hits.mean())

    def accumulate(self):
        return self.correct / max(self.total, 1)

    def reset(self):
        self.correct = self.total = 0
        self.resets += 1


def problem(n=64, seed=0):
    """Two classes: is the sum of 4 uniform features above 2?"""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 4)).astype(np.float32)
    y = (x.sum(axis=1) > 2.0).astype(np.int64)[:, None]
    return x, y


def batches(x, y, size=16):
    return [(x[i:i + size], y[i:i + size]) for i in range(0, len(x), size)]


def network(seed=1):
    paddle.seed(seed)
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))


def specs():
    return [InputSpec([None, 4], "float32", "x")], [InputSpec([None, 1], "int64", "y")]


def model(net=None, lr=0.05, metrics=None, optimizer=None):
    net = net if net is not None else network()
    inputs, labels = specs()
    m = paddle.Model(net, inputs, labels)
    opt = optimizer if optimizer is not None else paddle.optimizer.Adam(lr, parameters=m.parameters())
    m.prepare(opt, nn.CrossEntropyLoss(), metrics)
    return m


class Recorder(paddle.callbacks.Callback):
    """Records every hook call as (name, step or epoch, a copy of the logs)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __getattribute__(self, name):
        if name.startswith("on_"):
            calls = object.__getattribute__(self, "calls")

            def hook(*args):
                logs = args[-1] if args and isinstance(args[-1], dict) else None
                calls.append((name, args[0] if len(args) == 2 else None, dict(logs) if logs else None))
            return hook
        return object.__getattribute__(self, name)

    def names(self):
        return [c[0] for c in self.calls]
