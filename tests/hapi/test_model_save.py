"""Model.save / Model.load (the persistence of issue 14: atomic, checksummed files) in both modes."""
import contextlib
import os

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace import nn

from .common import batches, model, network, problem


@contextlib.contextmanager
def fresh_names():
    """Names as a fresh process gives them: the optimizer's state is keyed by parameter and
    accumulator names, as the reference's, so a resumed model must be built under the same names."""
    from headrace.core import names

    old = names.switch()
    try:
        yield
    finally:
        names.switch(old)


def test_save_writes_params_and_optimizer_and_load_restores_them(eager, tmp_path):
    x, y = problem(32)
    with fresh_names():
        a = model(network(1))
        a.fit(batches(x, y), epochs=2, verbose=0)
        a.save(str(tmp_path / "ckpt" / "m"))       # the directory is created
        a_loss, a_pred = a.train_batch(x, y)[0], a.predict_batch(x)[0]
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["m.pdopt", "m.pdparams"]
    with fresh_names():
        b = model(network(2))
        b.load(str(tmp_path / "ckpt" / "m.pdparams"))     # the suffix is stripped, as the reference
        # the optimizer state came back too: the next step is the same as the saved model's
        np.testing.assert_allclose(b.train_batch(x, y)[0], a_loss, rtol=1e-6)
        np.testing.assert_allclose(b.predict_batch(x)[0], a_pred, rtol=1e-6)


def test_reset_optimizer_skips_the_optimizer_state(eager, tmp_path):
    x, y = problem(32)
    with fresh_names():
        a = model(network(1))
        a.fit(batches(x, y), epochs=2, verbose=0)
        a.save(str(tmp_path / "m"))
        np.testing.assert_array_equal(model(network(2)).predict_batch(x)[0] == a.predict_batch(x)[0], False)
        a.train_batch(x, y)
        expected = a.predict_batch(x)[0]
    for reset in (False, True):
        with fresh_names():
            b = model(network(2))
            b.load(str(tmp_path / "m"), reset_optimizer=reset)
            b.train_batch(x, y)
            assert np.allclose(b.predict_batch(x)[0], expected, rtol=1e-6) is not reset


def test_load_mismatch_raises_or_skips(eager, tmp_path):
    a = model(network(1))
    a.train_batch(*problem(16))
    a.save(str(tmp_path / "m"))
    paddle.seed(3)
    other = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    b = paddle.Model(other)
    with pytest.raises(ValueError, match=r"0.weight receives a shape \[4, 16\], but the expected shape is \[4, 8\]"):
        b.load(str(tmp_path / "m"))
    before = other.state_dict()["2.bias"].numpy()
    with pytest.warns(UserWarning, match="Skip loading for") as caught:
        b.load(str(tmp_path / "m"), skip_mismatch=True)
    assert [str(w.message).split(".")[0] for w in caught] == ["Skip loading for 0", "Skip loading for 0",
                                                              "Skip loading for 2"]
    np.testing.assert_array_equal(other.state_dict()["2.bias"].numpy(), a.network.state_dict()["2.bias"].numpy())
    assert not np.array_equal(before, a.network.state_dict()["2.bias"].numpy())
    with pytest.raises(ValueError, match="does not exist"):
        b.load(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="dirname/filename"):
        a.save(str(tmp_path) + os.sep)


def test_inference_save_needs_static_mode(eager, tmp_path):
    with pytest.raises(NotImplementedError, match="jit.save"):
        model().save(str(tmp_path / "inf"), training=False)


def test_static_save_load_and_inference_model(fresh_programs, tmp_path):
    x, y = problem(32)
    a = model(network(1))
    a.fit(batches(x, y), epochs=2, verbose=0)
    a.save(str(tmp_path / "m"))
    a.save(str(tmp_path / "inf"), training=False)
    expected = a.predict_batch(x)[0]
    exe = static.Executor(paddle.CPUPlace())
    program, feeds, fetches = static.load_inference_model(str(tmp_path / "inf"), exe)
    assert feeds == ["x"]
    np.testing.assert_allclose(exe.run(program, feed={"x": x}, fetch_list=fetches)[0], expected, rtol=1e-6)
    # a second static model in fresh programs and scope loads the training checkpoint
    from headrace.core import context, names
    from headrace.core.program import Program
    from headrace.runtime.scope import Scope, scope_guard

    context.switch_main_program(Program())
    context.switch_startup_program(Program())
    names.switch()
    with scope_guard(Scope()):
        b = model(network(2))
        b.load(str(tmp_path / "m"))
        np.testing.assert_allclose(b.predict_batch(x)[0], expected, rtol=1e-6)
        loss_b = b.train_batch(x, y)[0]
    np.testing.assert_allclose(loss_b, a.train_batch(x, y)[0], rtol=1e-5)


def test_a_checkpoint_saved_before_training_resumes(eager, tmp_path):
    """Saved before the first update, the optimizer state holds no accumulators: loading it
    restores the schedule and lets the accumulators start fresh (the reference does the same)."""
    x, y = problem(16)
    schedule = paddle.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
    with fresh_names():
        net = network(1)
        a = model(net, optimizer=paddle.optimizer.Adam(schedule, parameters=net.parameters()))
        schedule.step()
        a.save(str(tmp_path / "init"))
        expected = a.train_batch(x, y)[0]
    assert list(paddle.load(str(tmp_path / "init.pdopt"))) == ["LR_Scheduler"]
    with fresh_names():
        net = network(2)
        schedule2 = paddle.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)
        b = model(net, optimizer=paddle.optimizer.Adam(schedule2, parameters=net.parameters()))
        b.load(str(tmp_path / "init"))
        assert schedule2.last_epoch == 1
        np.testing.assert_allclose(b.train_batch(x, y)[0], expected, rtol=1e-6)


def test_static_save_right_after_prepare(fresh_programs, tmp_path):
    """As the reference's prepare, the static model is initialized before its first batch, so a
    save right away writes the initial parameters and optimizer state."""
    m = model(network(1))
    m.save(str(tmp_path / "init"))
    state = paddle.load(str(tmp_path / "init.pdparams"), return_numpy=True)
    assert sorted(state) == ["0.bias", "0.weight", "2.bias", "2.weight"] and not state["0.bias"].any()
    assert any(k.endswith("moment1_0") for k in paddle.load(str(tmp_path / "init.pdopt")))
