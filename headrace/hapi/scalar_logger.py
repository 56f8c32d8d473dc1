"""``paddle.callbacks.ScalarLogger``: the losses and metrics of ``fit``/``evaluate`` as a CSV file
plus a matplotlib plot.

Decision (docs/architecture.md, "paddle.Model and callbacks"): CSV + matplotlib rather than
TensorBoard event files.  Event files need a writer library (tensorboardX or tensorboard, which
pull in protobuf) - a new dependency for one callback - while matplotlib is already an optional
extra (``[plot]``).  A CSV opens in every spreadsheet, pandas, or a text editor; it is flushed
row by row, so a crashed or interrupted run keeps every complete row; the plot is redrawn at the
end of training (``scalars.png``, one panel per tag).  The reference's ``VisualDL`` callback writes
VisualDL's own format; headrace does not emulate it (``VisualDL`` raises and points here).

Files in ``log_dir``: ``scalars.csv`` with the header ``tag,step,value,wall_time``, tags
``train/<name>`` (step = training step, counted over all epochs) and ``eval/<name>`` (step = the
epoch the evaluation followed, or 0 for ``Model.evaluate``); ``scalars.png``.
"""
from __future__ import annotations

import csv
import numbers
import os
import time
import warnings

import numpy as np

from ..distributed.env import get_rank
from .callbacks import Callback

HEADER = ("tag", "step", "value", "wall_time")


def _scalar(value):
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(-1)[0]
    return float(value) if isinstance(value, (numbers.Number, np.number)) else None


def read_scalars(path) -> dict:
    """``{tag: (steps, values)}`` from a ``scalars.csv`` (for plotting and tests)."""
    series = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            steps, values = series.setdefault(row["tag"], ([], []))
            steps.append(int(row["step"]))
            values.append(float(row["value"]))
    return series


def plot_scalars(csv_path, png_path) -> None:
    """Draw every tag of ``csv_path`` in its own panel and save ``png_path`` (needs matplotlib)."""
    from matplotlib.figure import Figure     # no pyplot: the user's backend and figures are left alone

    series = read_scalars(csv_path)
    if not series:
        return
    fig = Figure(figsize=(6, 2.2 * len(series)))
    axes = fig.subplots(len(series), 1, squeeze=False)
    for ax, (tag, (steps, values)) in zip(axes[:, 0], sorted(series.items())):
        ax.plot(steps, values, marker="." if len(steps) < 50 else None)
        ax.set_title(tag)
        ax.set_xlabel("epoch" if tag.startswith("eval/") else "step")
    fig.tight_layout()
    fig.savefig(png_path)


class ScalarLogger(Callback):
    """``ScalarLogger(log_dir, plot=True)``: appends ``train/<name>`` rows after every training
    batch and ``eval/<name>`` rows after every evaluation to ``log_dir/scalars.csv`` and, with
    ``plot`` and matplotlib installed, draws ``log_dir/scalars.png`` when training (or a
    stand-alone evaluation) ends."""

    def __init__(self, log_dir, plot=True):
        super().__init__()
        self.log_dir, self.plot = str(log_dir), plot
        self.csv_path = os.path.join(self.log_dir, "scalars.csv")
        self.png_path = os.path.join(self.log_dir, "scalars.png")
        self._file = self._writer = None
        self._in_fit, self.train_step, self.epoch = False, 0, 0

    def _open(self) -> None:
        if self._file is None:
            os.makedirs(self.log_dir, exist_ok=True)
            fresh = not os.path.exists(self.csv_path) or os.path.getsize(self.csv_path) == 0
            self._file = open(self.csv_path, "a", newline="")
            self._writer = csv.writer(self._file)
            if fresh:
                self._writer.writerow(HEADER)

    def _write(self, mode, names, logs, step) -> None:
        if get_rank() != 0:        # one file for a multi-process job
            return
        self._open()
        now = time.time()
        for name in names:
            value = _scalar((logs or {}).get(name))
            if value is not None:
                self._writer.writerow((f"{mode}/{name}", step, repr(value), f"{now:.3f}"))
        self._file.flush()

    def _close(self) -> None:
        if self._file is None:
            return
        self._file.close()
        self._file = self._writer = None
        if self.plot:
            try:
                plot_scalars(self.csv_path, self.png_path)
            except ImportError:
                warnings.warn("ScalarLogger: matplotlib is not installed (pip install 'headrace[plot]'); "
                              f"wrote {self.csv_path} only")

    def on_train_begin(self, logs=None):
        self._in_fit, self.train_step = True, 0

    def on_epoch_begin(self, epoch=None, logs=None):
        self.epoch = epoch or 0

    def on_train_batch_end(self, step, logs=None):
        self.train_step += 1
        self._write("train", self.params.get("metrics", []), logs, self.train_step)

    def on_eval_begin(self, logs=None):
        self._eval_names = (logs or {}).get("metrics", [])

    def on_eval_end(self, logs=None):
        self._write("eval", getattr(self, "_eval_names", []), logs, self.epoch if self._in_fit else 0)
        if not self._in_fit:
            self._close()

    def on_train_end(self, logs=None):
        self._in_fit = False
        self._close()


class VisualDL(Callback):
    """The reference's VisualDL callback writes VisualDL's log format, which headrace does not
    write: use ``paddle.callbacks.ScalarLogger`` (CSV + a matplotlib plot) instead."""

    def __init__(self, log_dir=None):
        raise NotImplementedError("paddle.callbacks.VisualDL (VisualDL log files) is not supported by headrace; "
                                  "use paddle.callbacks.ScalarLogger(log_dir), which writes scalars.csv and a "
                                  "matplotlib plot")
