"""paddle.Model: train/eval/predict batches, fit/evaluate/predict loops, eager vs static (the
reference mode) and errors.  Semantics from the reference's hapi/model.py and test_model.py."""
import numpy as np
import pytest

import headrace as paddle
from headrace import nn
from headrace.static import InputSpec

from .common import CountingAccuracy, Recorder, batches, model, network, problem


def test_fit_learns_in_eager_mode(eager):
    x, y = problem(128)
    m = model(metrics=CountingAccuracy())
    before = m.evaluate(batches(x, y), verbose=0)
    m.fit(batches(x, y), epochs=15, verbose=0)
    after = m.evaluate(batches(x, y), verbose=0)
    assert after["loss"][0] < 0.5 * before["loss"][0], (before, after)
    assert after["acc"] > 0.9, after


def _train_record(static, init, with_eval=True):
    if static:
        paddle.enable_static()
    x, y = problem(64)
    m = model(network(seed=7), metrics=CountingAccuracy())
    m.network.set_state_dict(init)
    rec = Recorder()
    m.fit(batches(x, y), batches(x, y) if with_eval else None, epochs=3, verbose=0, callbacks=[rec])
    losses = [c[2]["loss"][0] for c in rec.calls if c[0] == "on_train_batch_end"]
    evals = [c[2] for c in rec.calls if c[0] == "on_eval_end"]
    return losses, evals, m.predict(batches(x, y), stack_outputs=True, verbose=0)[0]


def test_static_mode_gives_the_eager_losses_for_the_same_init(fresh_programs):
    """Static mode (programs built from the InputSpecs, run by the Executor) is the reference's
    mode: same init -> the same losses, metrics and predictions as eager mode."""
    from headrace.core import context

    with context.static_mode_guard(False):
        init = {k: v.numpy() for k, v in network(seed=3).state_dict().items()}
        eager_losses, eager_evals, eager_pred = _train_record(False, init)
    static_losses, static_evals, static_pred = _train_record(True, init)
    assert len(eager_losses) == 12
    np.testing.assert_allclose(static_losses, eager_losses, rtol=1e-5, atol=1e-6)
    assert [e["acc"] for e in static_evals] == [e["acc"] for e in eager_evals]
    np.testing.assert_allclose(static_pred, eager_pred, rtol=1e-5, atol=1e-6)
    assert eager_losses[-1] < eager_losses[0]


def test_batch_methods_return_the_reference_structures(eager):
    x, y = problem(16)
    plain = model()
    out = plain.train_batch([x], [y])
    assert isinstance(out, list) and len(out) == 1 and np.asarray(out[0]).size == 1
    with_metric = model(metrics=CountingAccuracy())
    losses, metrics = with_metric.train_batch(x, y)
    assert len(losses) == 1 and len(metrics) == 1 and 0.0 <= metrics[0] <= 1.0
    losses, metrics = with_metric.eval_batch(x, y)
    assert len(losses) == 1 and len(metrics) == 1
    pred = with_metric.predict_batch(x)
    assert len(pred) == 1 and pred[0].shape == (16, 2)
    # eval_batch does not train: the same batch twice gives the same loss
    assert with_metric.eval_batch(x, y)[0][0] == pytest.approx(with_metric.eval_batch(x, y)[0][0])


def test_eval_batch_uses_eval_mode_and_no_gradients(eager):
    x, y = problem(16)
    paddle.seed(0)
    net = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.5), nn.Linear(16, 2))
    m = model(net)
    first = float(m.eval_batch(x, y)[0])
    assert float(m.eval_batch(x, y)[0]) == first       # dropout is off
    assert all(p.grad is None for p in net.parameters())
    assert net.training is False
    m.train_batch(x, y)
    assert net.training is True


def test_predict_unstacked_and_stacked(eager):
    x, y = problem(40)
    m = model()
    outs = m.predict(batches(x, y, 16), verbose=0)
    assert len(outs) == 1 and [a.shape for a in outs[0]] == [(16, 2), (16, 2), (8, 2)]
    stacked = m.predict(batches(x, y, 16), stack_outputs=True, verbose=0)
    np.testing.assert_array_equal(stacked[0], np.vstack(outs[0]))
    np.testing.assert_allclose(stacked[0], m.predict_batch(x)[0], rtol=1e-6)


def test_evaluate_returns_loss_and_metrics(eager):
    x, y = problem(32)
    metric = CountingAccuracy()
    m = model(metrics=metric)
    result = m.evaluate(batches(x, y), verbose=0)
    assert set(result) == {"loss", "acc"}
    expected = float(np.mean(np.argmax(m.predict_batch(x)[0], -1) == y[:, 0]))
    assert result["acc"] == pytest.approx(expected)
    assert metric.total == 0       # reset after the pass


def test_inputs_default_to_the_forward_arguments(eager):
    x, y = problem(16)
    net = network()
    m = paddle.Model(net)
    m.prepare(paddle.optimizer.SGD(0.1, parameters=net.parameters()), nn.CrossEntropyLoss())
    assert [s.name for s in m._inputs] == ["input_0"]
    losses = m.fit([(x, y)], epochs=2, verbose=0)
    assert losses is None
    assert m.eval_batch(x, y)[0].size == 1


def test_accumulate_grad_batches_sums_gradients(eager):
    """Two half batches accumulated with SGD(lr) = one full batch with SGD(2*lr) (mean losses)."""
    x, y = problem(32)
    a = model(network(5), optimizer=None, lr=0.1)
    a.prepare(paddle.optimizer.SGD(0.1, parameters=a.parameters()), nn.CrossEntropyLoss())
    a.fit(batches(x, y, 16), epochs=1, verbose=0, accumulate_grad_batches=2, shuffle=False)
    b = model(network(5))
    b.prepare(paddle.optimizer.SGD(0.2, parameters=b.parameters()), nn.CrossEntropyLoss())
    b.train_batch(x, y)
    for (ka, va), (kb, vb) in zip(a.network.state_dict().items(), b.network.state_dict().items()):
        np.testing.assert_allclose(va.numpy(), vb.numpy(), rtol=1e-5, atol=1e-6, err_msg=ka)
    c = model(network(5))
    c.prepare(paddle.optimizer.SGD(0.1, parameters=c.parameters()), nn.CrossEntropyLoss())
    c.fit(batches(x, y, 16), epochs=1, verbose=0, shuffle=False)     # no accumulation: differs
    assert not np.allclose(c.network.state_dict()["0.weight"].numpy(), b.network.state_dict()["0.weight"].numpy())


def test_num_iters_stops_after_that_many_steps(eager):
    x, y = problem(64)
    rec = Recorder()
    model().fit(batches(x, y), epochs=5, verbose=0, num_iters=6, callbacks=[rec])
    assert rec.names().count("on_train_batch_end") == 6
    assert rec.names().count("on_epoch_end") == 2


def test_errors(eager):
    net = network()
    with pytest.raises(ValueError, match="name != None"):
        paddle.Model(net, [InputSpec([None, 4], "float32")])
    with pytest.raises(TypeError, match="InputSpec"):
        paddle.Model(net, [np.zeros(3)])
    m = paddle.Model(net)
    with pytest.raises(RuntimeError, match="prepare"):
        m.train_batch(np.zeros((2, 4), np.float32), np.zeros((2, 1), np.int64))
    with pytest.raises(TypeError, match="loss"):
        m.prepare(None, loss="cross entropy")
    with pytest.raises(TypeError, match="Metric"):
        m.prepare(None, nn.CrossEntropyLoss(), metrics=[object()])
    with pytest.raises(NotImplementedError, match="amp_configs"):
        m.prepare(None, nn.CrossEntropyLoss(), amp_configs="O1")
    m = model()
    with pytest.raises(ValueError, match="train_data must be given"):
        m.fit()
    x, y = problem(16)
    with pytest.raises(ValueError, match="read only once"):
        m.fit(iter(batches(x, y)), epochs=2, verbose=0)
    with pytest.raises(TypeError, match="iterable of batches"):
        m.fit(3, verbose=0)
    with pytest.raises(ValueError, match="epochs"):
        m.fit(batches(x, y), epochs=0)


def test_static_mode_needs_inputs(fresh_programs):
    with pytest.raises(TypeError, match="couldn't be None in static graph mode"):
        paddle.Model(network())


def test_static_models_in_one_program_stay_apart(fresh_programs):
    """Each static Model's programs hold its own ops only; the default program is left as it was."""
    import headrace.static as static

    x, y = problem(32)
    main = static.default_main_program()
    a = model(network(1))
    a.fit(batches(x, y), epochs=1, verbose=0)
    b = model(network(2))
    assert len(main.global_block().ops) == 0
    a_params = {k: np.array(static.global_scope().find_var(v.name).get_tensor()) for k, v in
                a.network.state_dict().items()}
    b.fit(batches(x, y), epochs=2, verbose=0)
    for key, value in a.network.state_dict().items():     # training b left a alone
        np.testing.assert_array_equal(np.array(static.global_scope().find_var(value.name).get_tensor()),
                                      a_params[key])
    ops_a = {op.type for op in a._adapter.build()["train"].global_block().ops}
    assert "adam" in ops_a and len(a._adapter.build()["train"].global_block().ops) == \
        len(b._adapter.build()["train"].global_block().ops)


def test_static_lr_schedule_and_set_lr_reach_the_model(fresh_programs):
    """The training program is a clone: schedule steps and set_lr must still reach it."""
    import headrace.static as static

    x, y = problem(32)

    def stepper(m):
        w = m.network.state_dict()["0.weight"]
        m.eval_batch(x, y)                            # the first run initializes the parameters

        def step():
            before = np.array(static.global_scope().find_var(w.name).get_tensor())
            m.train_batch(x, y)
            return np.abs(np.array(static.global_scope().find_var(w.name).get_tensor()) - before).max()
        return step

    net = network()
    schedule = paddle.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.1)
    m = model(net, optimizer=paddle.optimizer.SGD(schedule, parameters=net.parameters()))
    step = stepper(m)
    big = step()
    schedule.step()                                   # 0.1 -> 0.01
    assert step() < 0.3 * big
    m.fit(batches(x, y), epochs=1, verbose=0)         # the LRScheduler callback steps it twice more
    assert schedule.last_epoch == 3

    net2 = network(2)
    opt = paddle.optimizer.SGD(0.01, parameters=net2.parameters())
    m2 = model(net2, optimizer=opt)
    step = stepper(m2)
    small = step()
    opt.set_lr(0.1)
    assert step() > 3 * small


def test_batches_of_unknown_count(eager, capsys):
    """A loader without a length (a generator function's batches) trains; the bar has no total."""
    x, y = problem(32)

    class Stream:
        def __iter__(self):
            return iter(batches(x, y))

        def __len__(self):
            raise ValueError("the length of an IterableDataset is not known")

    rec = Recorder()
    model().fit(Stream(), epochs=2, verbose=2, log_freq=1, callbacks=[rec])
    assert rec.params["steps"] is None and rec.names().count("on_train_batch_end") == 4
    out = capsys.readouterr().out
    assert "step   1 - loss: " in out and "step   2 - loss: " in out


class PointsDataset(paddle.io.Dataset):
    def __init__(self, x, y):
        super().__init__()
        self.x, self.y = x, y

    def __getitem__(self, index):
        return self.x[index], self.y[index]

    def __len__(self):
        return len(self.x)


@pytest.mark.parametrize("static", [False, True])
def test_fit_on_a_dataset_batches_it_with_a_dataloader(fresh_programs, static):
    """A Dataset goes through paddle.io.DataLoader (batch_size, shuffle, drop_last, num_workers):
    unshuffled, the per-batch losses are those of the same batches given as a list."""
    from headrace.core import context

    x, y = problem(40)
    with context.static_mode_guard(False):
        init = {k: v.numpy() for k, v in network(3).state_dict().items()}
    with context.static_mode_guard(static):
        runs = []
        for data, kwargs in ((PointsDataset(x, y), dict(batch_size=16, shuffle=False, drop_last=True)),
                             (batches(x[:32], y[:32], 16), {}),
                             (PointsDataset(x, y), dict(batch_size=16, shuffle=False, drop_last=True, num_workers=2))):
            rec = Recorder()
            m = model(network(3))
            m.network.set_state_dict(init)      # static mode: the startup program's draws differ per model
            m.fit(data, epochs=2, verbose=0, callbacks=[rec], **kwargs)
            runs.append([c[2]["loss"][0] for c in rec.calls if c[0] == "on_train_batch_end"])
            assert rec.params["steps"] == 2
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-6)
    np.testing.assert_allclose(runs[2], runs[1], rtol=1e-6)
    shuffled = Recorder()
    with context.static_mode_guard(static):
        m = model(network(3))
        m.fit(PointsDataset(x, y), batch_size=16, epochs=1, verbose=0, callbacks=[shuffled])
        assert shuffled.params["steps"] == 3                      # drop_last=False: 16 + 16 + 8
        result = m.evaluate(PointsDataset(x, y), batch_size=8, verbose=0)
        assert set(result) == {"loss"}
        pred = m.predict(PointsDataset(x, y), batch_size=16, stack_outputs=True, verbose=0)
        assert pred[0].shape == (40, 2)


def test_model_summary(eager, capsys):
    m = model()
    info = m.summary()
    assert info == {"total_params": 4 * 16 + 16 + 16 * 2 + 2, "trainable_params": 4 * 16 + 16 + 16 * 2 + 2}
    assert "Linear" in capsys.readouterr().out
    assert m.summary((1, 4))["total_params"] == 114
