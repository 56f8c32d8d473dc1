"""The text progress bar behind ``paddle.callbacks.ProgBarLogger``.

One bar per epoch (or per evaluation / prediction): ``step 12/50 [=====>.....] - loss: 0.4321 -
acc: 0.8750 - ETA: 3s - 21ms/step - 3010 samples/s``.  ``verbose=1`` redraws the bar in place on a
terminal (``\\r``) and prints a fresh line per update elsewhere (a log file, a captured stdout);
``verbose=2`` prints one line per update without the bar, as the reference.  The rate is measured
from the bar's start: milliseconds (or seconds) per step and, when the batch sizes are reported,
samples per second; the ETA is the mean step time times the steps left.
"""
from __future__ import annotations

import shutil
import sys
import time

import numpy as np


def format_value(value) -> str:
    """A logged value as the reference prints it: floats with 4 decimals (4 significant digits in
    scientific notation below 1e-3), lists of numbers space-separated, anything else by ``str``."""
    values = value if isinstance(value, (list, tuple)) else [value]
    parts = []
    for v in values:
        if isinstance(v, np.ndarray) and v.size == 1:
            v = v.reshape(-1)[0]
        if isinstance(v, (float, np.floating)):
            parts.append(f"{v:.4f}" if abs(v) > 1e-3 else f"{v:.4e}")
        else:
            parts.append(str(v))
    return " ".join(parts)


def format_duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    if seconds >= 60:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds}s"


def format_step_time(seconds: float, unit: str) -> str:
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


class ProgressBar:
    """``ProgressBar(num=None, width=30, verbose=1, file=sys.stdout, name='step')``: ``num`` is the
    number of steps (None when unknown); ``update(current, values, samples=None)`` draws step
    ``current`` with the ``(name, value)`` pairs in ``values``; ``samples`` is the number of
    samples seen so far (for the samples/s rate)."""

    def __init__(self, num=None, width=30, verbose=1, file=None, name="step"):
        if num is not None and (not isinstance(num, int) or num <= 0):
            raise TypeError(f"ProgressBar: num should be None or an integer > 0, got {num!r}")
        columns = shutil.get_terminal_size((80, 24)).columns or 80
        self._num = num
        self._width = max(1, min(width, int(columns * 0.6), columns - 50)) if columns > 50 else min(width, 10)
        self._verbose = verbose
        self.file = file
        self.name = name
        self._drawn = 0
        self._start = time.perf_counter()

    def start(self) -> None:
        self._start = time.perf_counter()

    def _out(self):
        return self.file if self.file is not None else sys.stdout  # stdout at write time (capsys)

    def _bar(self, current: int) -> str:
        digits = len(str(self._num))
        text = f"{self.name} {current:{digits}d}/{self._num}"
        if self._verbose != 1:
            return text
        filled = int(self._width * min(current, self._num) / self._num)
        arrow = "" if filled == 0 else "=" * (filled - 1) + (">" if current < self._num else "=")
        return f"{text} [{arrow}{'.' * (self._width - filled)}]"

    def _rates(self, current: int, samples) -> str:
        elapsed = time.perf_counter() - self._start
        per_step = elapsed / current if current else 0.0
        text = ""
        if self._num is not None and current < self._num:
            text += f" - ETA: {format_duration(per_step * (self._num - current))}"
        text += f" - {format_step_time(per_step, self.name)}"
        if samples and elapsed > 0:
            text += f" - {samples / elapsed:.0f} samples/s"
        return text

    def update(self, current: int, values=(), samples=None) -> None:
        """Draw step ``current`` (1-based) with ``values`` (``(name, value)`` pairs or a dict)."""
        if not self._verbose:
            return
        pairs = values.items() if isinstance(values, dict) else values
        head = self._bar(current) if self._num is not None else f"{self.name} {current:3d}"
        line = head + "".join(f" - {k}: {format_value(v)}" for k, v in pairs) + self._rates(current, samples)
        out = self._out()
        finished = self._num is None or current >= self._num
        if self._verbose == 1 and getattr(out, "isatty", lambda: False)():
            padding = " " * max(0, self._drawn - len(line))
            out.write("\r" + line + padding + ("\n" if finished else ""))
            self._drawn = 0 if finished else len(line)
        else:
            out.write(line + "\n")
        out.flush()
