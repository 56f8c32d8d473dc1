"""The memo of an optimizer's eager updates (headrace/optimizer/eager_memo.py): a ``step()`` like the
last one replays the resolved update ops; anything that changed sends the step (or the parameter)
through the full path.  Every scenario trains with the memo and again with it turned off
(``eager_memo.ENABLED = False``: today's full path every step) and compares the parameters bit for
bit after every step; the memo's counters show which path ran.  The suite runs in check mode, where
the eager fast path and the memo are off: the ``plain`` fixture turns check mode off."""
import gc
import weakref

import numpy as np
import pytest

import headrace as paddle
import headrace.optimizer as O
from headrace.core import context, names
from headrace.core.errors import DTypeError, ShapeError
from headrace.eager import fast, runner, tape
from headrace.eager.tensor import Tensor
from headrace.optimizer import eager_memo, lr
from headrace.optimizer.lars import LarsMomentum
from tests.helpers import TanhMLP, set_check_mode
from tests.optimizer.test_both_modes import NAMES, run

X = np.random.default_rng(0).standard_normal((5, 4)).astype("float32")


@pytest.fixture
def plain(monkeypatch):
    """Dygraph mode with check mode off (the eager fast path and the memo on); the eager caches
    made without check mode are emptied afterwards."""
    set_check_mode(monkeypatch, False)
    with context.static_mode_guard(False):
        yield monkeypatch
    runner._STEPS.clear()
    fast.FAST.clear()


MAKERS = {
    "sgd": lambda ps: O.SGD(0.1, parameters=ps),
    "momentum": lambda ps: O.Momentum(0.1, momentum=0.8, parameters=ps),
    "nesterov": lambda ps: O.Momentum(0.1, momentum=0.8, use_nesterov=True, rescale_grad=0.5, parameters=ps),
    "adam": lambda ps: O.Adam(0.05, parameters=ps),
    "adamw": lambda ps: O.AdamW(0.05, weight_decay=0.3, parameters=ps),
    "lars": lambda ps: LarsMomentum(0.5, 0.9, lars_coeff=0.2, lars_weight_decay=0.01, parameter_list=ps,
                                    exclude_from_weight_decay=["b_0"]),
    "adagrad": lambda ps: O.Adagrad(0.05, parameters=ps),
    "rmsprop": lambda ps: O.RMSProp(0.05, centered=True, momentum=0.2, parameters=ps),
    "adadelta": lambda ps: O.Adadelta(0.05, parameters=ps),
    "adamax": lambda ps: O.Adamax(0.05, parameters=ps),
    "lamb": lambda ps: O.Lamb(0.05, lamb_weight_decay=0.1, parameters=ps),
    "nadam": lambda ps: O.NAdam(0.05, parameters=ps),
    "radam": lambda ps: O.RAdam(0.05, parameters=ps),
    "decayed_adagrad": lambda ps: paddle.fluid.optimizer.DecayedAdagrad(0.05, parameter_list=ps),
}


def train(make_opt, steps=5, between=None, net=None, set_to_zero=True):
    """Train ``TanhMLP(4, 3)`` (seeded) for ``steps`` steps, ``clear_grad(set_to_zero)`` after each;
    ``between(k, net, opt)`` runs before step k's forward.  Returns (the parameters after each
    step, the optimizer)."""
    with names.guard():
        paddle.seed(1)
        net = net or TanhMLP(4, 3)
        opt = make_opt(net.parameters())
        trace = []
        for k in range(steps):
            if between is not None:
                between(k, net, opt)
            net(paddle.to_tensor(X)).backward()
            opt.step()
            opt.clear_grad(set_to_zero)
            trace.append([p.numpy().copy() for p in net.parameters()])
    return trace, opt


def same_with_and_without_memo(monkeypatch, make_opt, **kwargs):
    """Train with the memo, then without; assert every step bit-identical; return both optimizers."""
    got, opt = train(make_opt, **kwargs)
    monkeypatch.setattr(eager_memo, "ENABLED", False)
    want, full = train(make_opt, **kwargs)
    monkeypatch.setattr(eager_memo, "ENABLED", True)
    assert full._update_memo.replays == 0
    assert len(got) == len(want)
    for step, (g, w) in enumerate(zip(got, want)):
        for k, (a, b) in enumerate(zip(g, w)):
            assert a.dtype == b.dtype and np.array_equal(a, b), f"step {step}, parameter {k}"
    return opt


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_every_optimizer_replays_bit_identically(plain, name):
    opt = same_with_and_without_memo(plain, MAKERS[name])
    assert opt._update_memo.replays == 4 and opt._update_memo.misses == 0    # steps 2..5


@pytest.mark.parametrize("name", ["sgd", "momentum", "adam", "lars", "adamw", "lamb", "nadam", "radam",
                                  "adamax", "rmsprop"])
def test_static_and_eager_with_the_memo_are_bit_identical(plain, name):
    """tests/optimizer/test_both_modes.py's float64 problem, static against eager with the memo."""
    seen = []
    make = MAKERS[name]
    if name == "lars":
        make = lambda ps: LarsMomentum(0.5, 0.9, lars_coeff=0.2, lars_weight_decay=0.01, parameter_list=ps,  # noqa: E731
                                       exclude_from_weight_decay=["z"])
    eager = run("eager", make, after_step=lambda opt: seen.append(opt._update_memo.replays))
    static = run("static", make)
    assert seen == [0, 1, 2, 3, 4]
    for s, e in zip(static, eager):
        for k in NAMES:
            assert np.array_equal(s[k], e[k]), k


def test_the_first_step_goes_the_full_path_and_is_remembered(plain):
    _, opt = train(MAKERS["sgd"], steps=1)
    memo = opt._update_memo
    assert memo.replays == 0 and len(memo.entries) == 6 and all(e is not None for e in memo.entries)
    with names.guard():
        net = TanhMLP(4, 3)
        opt = O.SGD(0.1, parameters=net.parameters())
        net.fcs[0].weight._grad = Tensor(np.ones((4, 5), "float32"))
        for p in net.parameters()[1:]:
            p._grad = Tensor(np.ones(p.shape, "float32"))
        with pytest.raises(ShapeError, match="test_eager_update_memo.py"):
            opt.step()      # a first call: the full path's error, naming this line
        assert opt._update_memo.entries is None


@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_learning_rate_changes_are_read_every_step(plain, name):
    def set_lr(k, net, opt):
        opt.set_lr(0.1 / (k + 1))
    make = {"sgd": lambda ps: O.SGD(0.1, parameters=ps), "adam": lambda ps: O.Adam(0.1, parameters=ps)}[name]
    opt = same_with_and_without_memo(plain, make, between=set_lr)
    assert opt._update_memo.replays == 4


def test_a_scheduler_stepped_between_steps(plain):
    def make(ps):
        return O.Momentum(lr.StepDecay(0.2, step_size=2, gamma=0.5), momentum=0.9, parameters=ps)

    def sched(k, net, opt):
        if k:
            opt._learning_rate.step()
    opt = same_with_and_without_memo(plain, make, between=sched)
    assert opt._update_memo.replays == 4


def test_a_fluid_dygraph_decay_advancing_per_update(plain):
    def make(ps):
        return paddle.fluid.optimizer.SGD(paddle.fluid.dygraph.ExponentialDecay(0.3, 2, 0.5), parameter_list=ps)
    opt = same_with_and_without_memo(plain, make)
    assert opt._update_memo.replays == 4


def test_a_parameter_without_gradient_in_one_step_changes_the_list(plain):
    def drop(k, net, opt):
        net.fcs[1].weight.stop_gradient = k == 2       # no gradient in step 3 only
    opt = same_with_and_without_memo(plain, MAKERS["adam"], between=drop, steps=6)
    # step 3 (other list) and step 4 (back to all) learn anew; steps 2, 5, 6 replay
    assert opt._update_memo.replays == 3


def test_clear_grad_without_zeroing_and_gradients_dropped_by_hand(plain):
    def drop_one(k, net, opt):
        if k == 3:
            net.fcs[0].bias.clear_gradient(set_to_zero=False)
    opt = same_with_and_without_memo(plain, MAKERS["momentum"], set_to_zero=False)
    assert opt._update_memo.replays == 4
    opt = same_with_and_without_memo(plain, MAKERS["sgd"], between=drop_one)
    assert opt._update_memo.replays == 4 and opt._update_memo.misses == 0   # a new array, checked


def test_minimize_with_a_parameter_subset_and_no_grad_set(plain):
    def step(net, opt, k):
        loss = net(paddle.to_tensor(X))
        loss.backward()
        if k % 2:
            opt.minimize(loss, parameters=net.parameters()[:3])
        else:
            opt.minimize(loss, no_grad_set={net.fcs[2].weight.name})
        opt.clear_grad()

    def trained(enabled):
        plain.setattr(eager_memo, "ENABLED", enabled)
        with names.guard():
            paddle.seed(1)
            net = TanhMLP(4, 3)
            opt = O.Adam(0.05, parameters=net.parameters())
            for k in range(6):
                step(net, opt, k)
            return [p.numpy() for p in net.parameters()]
    for a, b in zip(trained(True), trained(False)):
        assert np.array_equal(a, b)


def _stepped_both_ways(plain, make_opt, step, steps):
    """Train ``TanhMLP(4, 3)`` with ``step(k, opt)`` in place of ``opt.step()``, with the memo and
    without; assert the parameters bit-identical; return the memo's replays."""
    runs = []
    for enabled in (True, False):
        plain.setattr(eager_memo, "ENABLED", enabled)
        with names.guard():
            paddle.seed(1)
            net = TanhMLP(4, 3)
            opt = make_opt(net.parameters())
            for k in range(steps):
                net(paddle.to_tensor(X)).backward()
                step(k, opt)
                opt.clear_grad()
            runs.append(([p.numpy() for p in net.parameters()], opt._update_memo.replays))
    (a, replays), (b, _) = runs
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    return replays


def test_no_grad_and_a_toggled_stop_gradient(plain):
    def between(k, net, opt):
        net.fcs[0].weight.stop_gradient = k in (1, 2)
    same_with_and_without_memo(plain, MAKERS["momentum"], between=between, steps=6)

    def under_no_grad(k, opt):
        with paddle.no_grad():
            opt.step()
    replays = _stepped_both_ways(plain, lambda ps: O.SGD(0.1, parameters=ps), under_no_grad, 3)
    assert replays == 2


def test_set_value_and_set_state_dict_between_steps(plain):
    """Loaded weights and accumulators (new arrays) are the ones the next update reads."""
    saved = {}

    def between(k, net, opt):
        if k == 2:
            saved["net"] = {n: v.numpy().copy() for n, v in net.state_dict().items()}
            saved["opt"] = {n: v.numpy().copy() for n, v in opt.state_dict().items()}
        if k == 4:
            net.set_state_dict(saved["net"])
            opt.set_state_dict(saved["opt"])
        if k == 5:
            net.fcs[1].bias.set_value(np.full(4, 0.25, "float32"))
    opt = same_with_and_without_memo(plain, MAKERS["adam"], between=between, steps=7)
    # set_state_dict drops the memo (step 5 learns); set_value sends one parameter through the full path
    assert opt._update_memo.replays == 5 and opt._update_memo.misses == 1


def test_a_per_parameter_learning_rate_factor(plain):
    def between(k, net, opt):
        if k == 2:
            net.fcs[0].weight.optimize_attr["learning_rate"] = 0.5
        if k == 4:
            net.fcs[0].weight.optimize_attr["learning_rate"] = 1.0
    opt = same_with_and_without_memo(plain, MAKERS["momentum"], between=between, steps=6)
    # that parameter takes the full path in steps 3, 4 (factor 0.5) and 5 (its entry is learned again)
    assert opt._update_memo.replays == 5 and opt._update_memo.misses == 3


def test_clipping_and_weight_decay_run_every_step_before_the_replay(plain):
    def make(ps):
        return O.Momentum(0.1, momentum=0.9, parameters=ps, weight_decay=paddle.regularizer.L2Decay(0.1),
                          grad_clip=paddle.nn.ClipGradByGlobalNorm(0.05))
    opt = same_with_and_without_memo(plain, make)
    assert opt._update_memo.replays == 4


def test_hyper_parameter_and_name_changes_are_seen(plain):
    def between(k, net, opt):
        if k in (2, 3, 4):
            opt._momentum = {2: 0.5, 3: 0.0, 4: -0.0}[k]       # -0.0 is another value than 0.0
        if k == 5:
            net.fcs[2].bias.name = "renamed_bias"      # a new name: new accumulators, as without the memo
    opt = same_with_and_without_memo(plain, MAKERS["momentum"], between=between, steps=7)
    assert opt._update_memo.replays == 2     # steps 2 and 7: each change makes the step after it learn


def test_check_modes_and_a_recompute_pass_turn_the_memo_off(plain):
    def between(k, net, opt):
        if k == 2:
            paddle.set_flags({"FLAGS_check_nan_inf": True})
        if k == 3:
            paddle.set_flags({"FLAGS_check_nan_inf": False})
            set_check_mode(plain, True)
        if k == 4:
            set_check_mode(plain, False)
    try:
        opt = same_with_and_without_memo(plain, MAKERS["adam"], between=between, steps=6)
    finally:
        paddle.set_flags({"FLAGS_check_nan_inf": False})
        set_check_mode(plain, False)
    assert opt._update_memo.replays == 2     # steps 2 and 6

    def recomputing_in_step_3(k, opt):
        plain.setattr(tape, "recomputing", k == 2)
        opt.step()
        plain.setattr(tape, "recomputing", False)
    replays = _stepped_both_ways(plain, lambda ps: O.Momentum(0.1, parameters=ps), recomputing_in_step_3, 4)
    assert replays == 1    # step 2 (step 4 learns)


def test_a_bad_gradient_after_replays_is_the_full_path_error_naming_the_user_line(plain):
    with names.guard():
        paddle.seed(1)
        net = TanhMLP(4, 3)
        opt = O.Momentum(0.1, parameters=net.parameters())
        for _ in range(3):
            net(paddle.to_tensor(X)).backward()
            opt.step()
        assert opt._update_memo.replays == 2
        w = net.fcs[0].weight
        good = w._grad
        w._grad = Tensor(np.ones((4, 5), "float32"))
        with pytest.raises(ShapeError, match="test_eager_update_memo.py"):
            opt.step()
        w._grad = Tensor(np.ones((4, 4), "float64"))
        with pytest.raises(DTypeError):
            opt.step()
        w._grad = good
        opt.step()
        assert opt._update_memo.replays == 5


def test_a_subclass_overriding_the_update_never_replays(plain):
    calls = []

    class Logged(O.SGD):
        def _append_optimize_op(self, param, grad):
            calls.append(param.name)
            return super()._append_optimize_op(param, grad)
    _, opt = train(lambda ps: Logged(0.1, parameters=ps), steps=3)
    assert opt._update_memo.replays == 0 and len(calls) == 3 * 6

    def ratio(param):
        return 0.5 if param.name.endswith("w_0") else 1.0
    same = same_with_and_without_memo(plain, lambda ps: O.AdamW(0.05, parameters=ps, lr_ratio=ratio))
    assert same._update_memo.replays == 0      # a per-parameter hook: called every step, as before


def test_the_memo_keeps_no_array_alive(plain):
    with names.guard():
        paddle.seed(1)
        net = TanhMLP(4, 3)
        opt = O.Adam(0.05, parameters=net.parameters())
        refs = []
        for _ in range(3):
            net(paddle.to_tensor(X)).backward()
            opt.step()
            refs += [weakref.ref(p._grad._value) for p in net.parameters()]
            opt.clear_grad(set_to_zero=False)
        w = net.fcs[0].weight
        refs.append(weakref.ref(w._value))
        w.set_value(np.zeros((4, 4), "float32"))
        gc.collect()
        assert opt._update_memo.replays == 2
        assert all(r() is None for r in refs)


# --- found by review: state the memo must not keep, patches it must see, copies it must allow ----------
def test_emptied_accumulators_are_created_anew_as_without_the_memo(plain):
    """``opt._accumulators.clear()`` between steps ("reset the optimizer"): the full path creates
    fresh zero accumulators; the memo must not keep updating the old, unreachable ones."""
    def reset(k, net, opt):
        if k == 2:
            opt._accumulators.clear()
    got, opt = train(MAKERS["momentum"], between=reset)
    plain.setattr(eager_memo, "ENABLED", False)
    want, full = train(MAKERS["momentum"], between=reset)
    for g, w in zip(got, want):
        assert all(np.array_equal(a, b) for a, b in zip(g, w))
    assert sorted(opt.state_dict()) == sorted(full.state_dict()) != []


def test_a_method_patched_onto_the_class_after_a_step_runs_every_step(plain):
    calls = []
    original = O.Momentum._append_optimize_op

    def patched(self, param, grad):
        calls.append(param.name)
        return original(self, param, grad)

    def patch(k, net, opt):
        if k == 1:
            plain.setattr(O.Momentum, "_append_optimize_op", patched)
    got, _ = train(MAKERS["momentum"], between=patch)
    assert len(calls) == 4 * len(got[0])   # steps 2 to 5, every parameter


def test_an_optimizer_with_a_memo_pickles_and_copies(plain):
    import copy
    import pickle
    _, opt = train(MAKERS["adam"], steps=2)
    assert opt._update_memo.entries is not None
    for clone in (pickle.loads(pickle.dumps(opt._update_memo)), copy.deepcopy(opt._update_memo)):
        assert clone.entries is None


def test_the_memo_keeps_no_parameter_alive(plain):
    """Parameters given to ``minimize`` only (not the optimizer's own): a dropped model is freed."""
    opt = O.SGD(0.1, parameters=[paddle.create_parameter([1], "float32")])
    net = paddle.nn.Linear(4, 3)
    for _ in range(3):
        loss = net(paddle.to_tensor(X)).mean()
        loss.backward()
        opt.minimize(loss, parameters=net.parameters())
        net.clear_gradients()
    assert opt._update_memo.replays >= 1
    weight = weakref.ref(net.weight)
    del net, loss
    gc.collect()
    assert weight() is None


@pytest.mark.parametrize("enabled", [True, False])
def test_a_parameter_reshaped_in_place_gets_the_full_paths_error(plain, enabled):
    """A parameter's array reshaped in place between backward and step: the same array object,
    so only a shape check tells; the update must fail as the full path does."""
    plain.setattr(eager_memo, "ENABLED", enabled)
    with names.guard():
        net = paddle.nn.Linear(4, 3)
        opt = O.SGD(0.1, parameters=net.parameters())
        for k in range(4):
            net(paddle.to_tensor(X)).mean().backward()
            if k == 3:
                net.bias._value.shape = (1, 3)
                with pytest.raises(ShapeError, match="sgd"):
                    opt.step()
            else:
                opt.step()
            opt.clear_grad()


def test_minimize_of_an_eager_loss_in_static_mode_gets_the_full_paths_error(plain):
    with names.guard():
        net = paddle.nn.Linear(4, 3)
        opt = O.SGD(0.1, parameters=net.parameters())
        for _ in range(3):
            loss = net(paddle.to_tensor(X)).mean()
            loss.backward()
            opt.step()
        loss = net(paddle.to_tensor(X)).mean()
        loss.backward()
        with context.static_mode_guard(True):
            with pytest.raises(TypeError, match="sgd"):
                opt.minimize(loss)
