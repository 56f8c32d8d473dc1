"""The progress bar: format as the reference's progressbar.py (step/total, bar, values), plus
rate (time per step, samples/s) and ETA computed from a controlled clock."""
import io

import numpy as np
import pytest

from headrace.hapi import progressbar
from headrace.hapi.progressbar import ProgressBar, format_duration, format_value


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(progressbar.time, "perf_counter", c)
    return c


class TTY(io.StringIO):
    def isatty(self):
        return True


def test_verbose_2_prints_one_line_per_update_with_rate_and_eta(clock):
    out = io.StringIO()
    bar = ProgressBar(num=10, verbose=2, file=out)
    clock.now += 2.0
    bar.update(4, [("loss", [0.5]), ("acc", 0.25)], samples=64)
    clock.now += 3.0
    bar.update(10, {"loss": [0.0001]}, samples=160)
    assert out.getvalue().splitlines() == [
        "step  4/10 - loss: 0.5000 - acc: 0.2500 - ETA: 3s - 500ms/step - 32 samples/s",
        "step 10/10 - loss: 1.0000e-04 - 500ms/step - 32 samples/s",
    ]


def test_verbose_1_draws_the_bar(clock):
    out = io.StringIO()
    bar = ProgressBar(num=4, width=8, verbose=1, file=out)
    clock.now += 0.004
    bar.update(1, [("loss", 1.5)])
    clock.now += 0.012
    bar.update(4, [("loss", 1.25)])
    assert out.getvalue().splitlines() == [
        "step 1/4 [=>......] - loss: 1.5000 - ETA: 0s - 4ms/step",
        "step 4/4 [========] - loss: 1.2500 - 4ms/step",
    ]


def test_verbose_1_redraws_in_place_on_a_terminal(clock):
    out = TTY()
    bar = ProgressBar(num=2, width=4, verbose=1, file=out)
    clock.now += 1.0
    bar.update(1, [("loss", 2.0)])
    clock.now += 1.0
    bar.update(2, [])
    text = out.getvalue()
    assert text.startswith("\rstep 1/2 [=>..] - loss: 2.0000 - ETA: 1s - 1s/step")
    assert "\rstep 2/2 [====] - 1s/step" in text and text.endswith("\n") and text.count("\n") == 1


def test_unknown_total_and_silence(clock):
    out = io.StringIO()
    ProgressBar(num=None, verbose=2, file=out).update(3, [("loss", 1.0)])
    ProgressBar(num=5, verbose=0, file=out).update(3, [("loss", 1.0)])
    assert out.getvalue() == "step   3 - loss: 1.0000 - 0s/step\n"


def test_writes_to_the_current_stdout(capsys, clock):
    ProgressBar(num=2, verbose=2).update(1, [("loss", 1.0)])
    assert capsys.readouterr().out.startswith("step 1/2 - loss: 1.0000")


def test_formatting_helpers():
    assert format_duration(5.9) == "5s" and format_duration(75) == "1:15" and format_duration(3700) == "1:01:40"
    assert format_value([np.float32(0.5), 2]) == "0.5000 2"
    assert format_value(np.array([0.25])) == "0.2500"
    with pytest.raises(TypeError, match="num should be None or an integer > 0"):
        ProgressBar(num=0)
