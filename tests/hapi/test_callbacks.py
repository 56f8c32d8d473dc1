"""paddle.callbacks in Model.fit: call order, ProgBarLogger output, ModelCheckpoint, EarlyStopping,
LRScheduler, ReduceLROnPlateau, ScalarLogger, errors and Ctrl-C (semantics from the reference's
hapi/callbacks.py and test_callbacks.py)."""
import csv
import os

import numpy as np
import pytest

import headrace as paddle
from headrace.callbacks import (Callback, EarlyStopping, LRScheduler, ModelCheckpoint, ProgBarLogger,
                                ReduceLROnPlateau, ScalarLogger, VisualDL)
from headrace.hapi.callbacks import config_callbacks

from .common import CountingAccuracy, Recorder, batches, model, network, problem


class ScriptedMetric(CountingAccuracy):
    """Reports ``script[k]`` during the k-th evaluation (passes alternate train, eval)."""

    def __init__(self, script, name="acc"):
        super().__init__(name)
        self.script = script

    def accumulate(self):
        return self.script[min(self.resets // 2, len(self.script) - 1)]


def test_default_callbacks_as_the_reference():
    kinds = [type(c) for c in config_callbacks(None, verbose=2)]
    assert kinds == [ProgBarLogger, ModelCheckpoint, LRScheduler]
    assert [type(c) for c in config_callbacks(None, verbose=0)] == [ModelCheckpoint, LRScheduler]
    mine = ProgBarLogger(log_freq=3)
    assert config_callbacks([mine], verbose=2).callbacks[0] is mine
    with pytest.raises(TypeError, match="Callback"):
        config_callbacks([object()])


def test_hook_order_in_fit(eager):
    x, y = problem(32)
    rec = Recorder()
    model(metrics=CountingAccuracy()).fit(batches(x, y), batches(x[:16], y[:16]), epochs=2, verbose=0,
                                          callbacks=[rec])
    epoch = ["on_epoch_begin"] + ["on_train_batch_begin", "on_train_batch_end"] * 2 + ["on_epoch_end",
             "on_eval_begin", "on_eval_batch_begin", "on_eval_batch_end", "on_eval_end"]
    assert rec.names() == ["on_train_begin"] + epoch * 2 + ["on_train_end"]
    assert rec.params == {"batch_size": 1, "epochs": 2, "steps": 2, "verbose": 0, "metrics": ["loss", "acc"]}
    end = rec.calls[5]
    assert end[:2] == ("on_train_batch_end", 1)
    assert set(end[2]) == {"loss", "acc", "step", "batch_size"} and end[2]["batch_size"] == 16 and end[2]["step"] == 1
    assert rec.calls[7] == ("on_eval_begin", None, {"steps": 1, "metrics": ["loss", "acc"]})


def test_progbar_logger_output(eager, capsys):
    x, y = problem(64)
    model(metrics=CountingAccuracy()).fit(batches(x, y), batches(x, y), epochs=2, log_freq=2, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("The loss value printed in the log is the current batch")
    assert lines[1] == "Epoch 1/2"
    assert lines[2].startswith("step 2/4 - loss: ") and " - acc: " in lines[2] and " - ETA: " in lines[2]
    assert lines[2].endswith(" samples/s") and "/step - " in lines[2]
    assert lines[3].startswith("step 4/4 - loss: ") and "ETA" not in lines[3]
    assert lines[4:7] == ["Eval begin..."] + lines[5:7] and lines[6].startswith("step 4/4")
    assert lines[7] == "Eval samples: 64"
    assert lines[8] == "Epoch 2/2" and len(lines) == 15


def test_progbar_silent_and_bar(eager, capsys):
    x, y = problem(32)
    m = model()
    m.fit(batches(x, y), epochs=1, verbose=0)
    assert capsys.readouterr().out == ""
    m.fit(batches(x, y), epochs=1, verbose=1, log_freq=1)
    out = capsys.readouterr().out
    assert "step 1/2 [" in out and "step 2/2 [" in out and "=]" in out
    m.predict(batches(x, y), verbose=1)
    assert capsys.readouterr().out.splitlines()[-1] == "Predict samples: 32"


def test_model_checkpoint_saves_every_save_freq_and_final(eager, tmp_path, capsys):
    x, y = problem(32)
    m = model()
    m.fit(batches(x, y), epochs=3, save_dir=str(tmp_path), save_freq=2, verbose=0)
    files = sorted(os.listdir(tmp_path))
    assert files == ["0.pdopt", "0.pdparams", "2.pdopt", "2.pdparams", "final.pdopt", "final.pdparams"]
    assert f"save checkpoint at {tmp_path / 'final'}" in capsys.readouterr().out
    fresh = model(network(9))
    fresh.load(str(tmp_path / "final"), reset_optimizer=True)
    np.testing.assert_array_equal(fresh.predict_batch(x)[0], m.predict_batch(x)[0])


@pytest.mark.parametrize("script, kwargs, epochs_run", [
    ([0.5, 0.6, 0.55, 0.58, 0.7, 0.8], dict(monitor="acc", patience=2), 4),          # auto -> max
    ([0.5, 0.55, 0.58, 0.9], dict(monitor="acc", patience=1, min_delta=0.1), 2),
    ([0.5, 0.6, 0.7], dict(monitor="acc", patience=1, baseline=0.9), 1),
    ([0.5, 0.4, 0.3, 0.35, 0.2], dict(monitor="acc", mode="min", patience=1), 4),
    ([0.5, 0.6, 0.7, 0.8, 0.9], dict(monitor="acc", patience=1), 5),                # never worse
    # the reference stops at the first evaluation with patience=0, even on an improvement
    ([0.5, 0.6, 0.7], dict(monitor="acc", patience=0), 1),
])
def test_early_stopping(eager, script, kwargs, epochs_run, capsys):
    x, y = problem(16)
    rec = Recorder()
    m = model(metrics=ScriptedMetric(script))
    m.fit(batches(x, y), batches(x, y), epochs=len(script), verbose=0, callbacks=[EarlyStopping(**kwargs), rec])
    assert rec.names().count("on_epoch_end") == epochs_run
    stopped = epochs_run < len(script)
    assert ("Early stopping." in capsys.readouterr().out) is stopped


def test_early_stopping_saves_the_best_model(eager, tmp_path):
    x, y = problem(16)
    m = model(metrics=ScriptedMetric([0.5, 0.9, 0.6, 0.7]))
    m.fit(batches(x, y), batches(x, y), epochs=4, save_dir=str(tmp_path), verbose=0,
          callbacks=[EarlyStopping("acc", patience=2)])
    best = paddle.load(str(tmp_path / "best_model.pdparams"), return_numpy=True)
    at_epoch_1 = paddle.load(str(tmp_path / "1.pdparams"), return_numpy=True)
    at_epoch_3 = paddle.load(str(tmp_path / "3.pdparams"), return_numpy=True)
    for key in best:
        np.testing.assert_array_equal(best[key], at_epoch_1[key])
    assert not np.array_equal(best["0.weight"], at_epoch_3["0.weight"])


def test_early_stopping_unknown_monitor_warns(eager):
    x, y = problem(16)
    with pytest.warns(UserWarning, match="Monitor of EarlyStopping"):
        model().fit(batches(x, y), batches(x, y), epochs=1, verbose=0, callbacks=[EarlyStopping("f1")])
    with pytest.warns(UserWarning, match="mode sideways is unknown"):
        EarlyStopping(mode="sideways")


@pytest.mark.parametrize("by_step, expected", [(True, 8), (False, 2)])
def test_lr_scheduler_callback(eager, by_step, expected):
    x, y = problem(64)
    net = network()
    schedule = paddle.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
    m = model(net, optimizer=paddle.optimizer.SGD(schedule, parameters=net.parameters()))
    m.fit(batches(x, y), epochs=2, verbose=0, callbacks=[LRScheduler(by_step=by_step, by_epoch=not by_step)])
    assert schedule.last_epoch == expected
    assert schedule.get_lr() == pytest.approx(0.1 * 0.5 ** expected)
    with pytest.raises(ValueError, match="mutually exclusive"):
        LRScheduler(by_step=True, by_epoch=True)


def test_reduce_lr_on_plateau(eager, capsys):
    x, y = problem(16)
    net = network()
    opt = paddle.optimizer.SGD(0.1, parameters=net.parameters())
    m = model(net, optimizer=opt, metrics=ScriptedMetric([0.5, 0.5, 0.5, 0.6, 0.6]))
    m.fit(batches(x, y), batches(x, y), epochs=5, verbose=0,
          callbacks=[ReduceLROnPlateau("acc", factor=0.5, patience=2, cooldown=0)])
    assert opt.get_lr() == pytest.approx(0.05)       # reduced once: after the 3rd evaluation
    assert "Epoch 3: ReduceLROnPlateau reducing learning rate to 0.05." in capsys.readouterr().out
    with pytest.raises(ValueError, match="factor >= 1.0"):
        ReduceLROnPlateau(factor=1.5)


def test_a_raising_callback_stops_fit_with_its_error(eager):
    class Boom(Callback):
        def on_train_batch_end(self, step, logs=None):
            if step == 1:
                raise ValueError("boom at step 1")

    x, y = problem(64)
    rec = Recorder()
    with pytest.raises(ValueError, match="boom at step 1"):
        model().fit(batches(x, y), epochs=3, verbose=0, callbacks=[Boom(), rec])
    assert rec.names().count("on_train_batch_begin") == 2 and "on_train_end" not in rec.names()


def test_ctrl_c_keeps_the_last_checkpoint_whole(eager, tmp_path):
    class CtrlC(Callback):
        def on_train_batch_begin(self, step, logs=None):
            if self.epoch == 2 and step == 1:
                raise KeyboardInterrupt

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

    x, y = problem(32)
    m = model()
    with pytest.raises(KeyboardInterrupt):
        m.fit(batches(x, y), epochs=5, save_dir=str(tmp_path), verbose=0, callbacks=[CtrlC()])
    assert sorted(os.listdir(tmp_path)) == ["0.pdopt", "0.pdparams", "1.pdopt", "1.pdparams"]
    fresh = model(network(4))
    fresh.load(str(tmp_path / "1"), reset_optimizer=True)        # loads: checksums verified
    assert np.isfinite(fresh.predict_batch(x)[0]).all()


def test_scalar_logger_writes_csv_and_plot(eager, tmp_path):
    x, y = problem(32)
    rec = Recorder()
    log_dir = tmp_path / "logs"
    m = model(metrics=CountingAccuracy())
    m.fit(batches(x, y), batches(x, y), epochs=2, verbose=0, callbacks=[ScalarLogger(str(log_dir)), rec])
    with open(log_dir / "scalars.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["tag", "step", "value", "wall_time"]
    train_loss = [(int(r[1]), float(r[2])) for r in rows[1:] if r[0] == "train/loss"]
    logged = [c[2]["loss"][0] for c in rec.calls if c[0] == "on_train_batch_end"]
    assert [s for s, _ in train_loss] == [1, 2, 3, 4]
    np.testing.assert_allclose([v for _, v in train_loss], logged, rtol=1e-12)
    eval_acc = [(int(r[1]), float(r[2])) for r in rows[1:] if r[0] == "eval/acc"]
    assert eval_acc == [(epoch, c[2]["acc"]) for epoch, c in enumerate(c for c in rec.calls if c[0] == "on_eval_end")]
    assert {r[0] for r in rows[1:]} == {"train/loss", "train/acc", "eval/loss", "eval/acc"}
    assert (log_dir / "scalars.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    m.evaluate(batches(x, y), verbose=0, callbacks=[ScalarLogger(str(log_dir), plot=False)])
    with open(log_dir / "scalars.csv", newline="") as f:
        assert list(csv.reader(f))[-1][:2] == ["eval/acc", "0"]     # appended, step 0 outside fit


def test_visualdl_points_to_the_scalar_logger():
    with pytest.raises(NotImplementedError, match="ScalarLogger"):
        VisualDL(log_dir="x")


def test_only_rank_0_logs_and_saves(eager, tmp_path, capsys, monkeypatch):
    """In a multi-process job every rank runs fit; only rank 0 prints and writes files."""
    from headrace.hapi import callbacks as cb_module
    from headrace.hapi import scalar_logger

    monkeypatch.setattr(cb_module, "get_rank", lambda: 1)
    monkeypatch.setattr(scalar_logger, "get_rank", lambda: 1)
    x, y = problem(16)
    model().fit(batches(x, y), batches(x, y), epochs=2, verbose=2, save_dir=str(tmp_path / "ckpt"),
                callbacks=[EarlyStopping("loss", patience=5), ScalarLogger(str(tmp_path / "logs"), plot=False)])
    assert capsys.readouterr().out == ""
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "logs").exists()


def test_scalar_logger_leaves_pyplot_alone(tmp_path):
    """The plot is drawn on a bare matplotlib Figure: pyplot (and the user's backend) untouched."""
    import subprocess
    import sys

    code = ("import sys, numpy as np, headrace as paddle\n"
            "net = paddle.nn.Linear(4, 2)\n"
            "m = paddle.Model(net)\n"
            "m.prepare(paddle.optimizer.SGD(0.1, parameters=net.parameters()), paddle.nn.CrossEntropyLoss())\n"
            "x = np.ones((8, 4), 'float32'); y = np.zeros((8, 1), 'int64')\n"
            f"m.fit([(x, y)], epochs=2, verbose=0, callbacks=[paddle.callbacks.ScalarLogger({str(tmp_path)!r})])\n"
            "print('matplotlib' in sys.modules, 'matplotlib.pyplot' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]
    assert (tmp_path / "scalars.png").exists()
