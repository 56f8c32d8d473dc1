"""Fourth session of issue 18 (eager per-op overhead): every optimizer's dygraph update on the
runner's fast path, the user's line kept raw on a node and formatted for messages only, the
backward's one sorted pass, and record plans' cached Metas.

The suite runs in check mode, where the fast path is off; the ``plain`` fixture (conftest.py) turns
check mode off in every module that reads it (as a run without HEADRACE_CHECK_KERNELS would)."""
import sys

import numpy as np
import pytest

import headrace as paddle
from headrace.core.errors import KernelError
from headrace.eager import fast, runner
from headrace.ops.registry import Meta, lookup
from headrace.optimizer.lars import LarsMomentum
from tests.helpers import TanhMLP, set_check_mode


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


OPTIMIZERS = {
    "sgd": lambda ps: paddle.optimizer.SGD(0.1, parameters=ps),
    "momentum": lambda ps: paddle.optimizer.Momentum(0.1, 0.9, parameters=ps, use_nesterov=True),
    "adam": lambda ps: paddle.optimizer.Adam(0.01, parameters=ps),
    "adamw": lambda ps: paddle.optimizer.AdamW(0.01, parameters=ps, weight_decay=0.1),
    "lamb": lambda ps: paddle.optimizer.Lamb(0.01, parameters=ps),
    "rmsprop": lambda ps: paddle.optimizer.RMSProp(0.01, parameters=ps),
    "lars": lambda ps: LarsMomentum(0.1, 0.9, parameter_list=ps),
}


def _train(make_opt, steps, count_full=None):
    """Losses and final parameters of ``steps`` steps; ``count_full`` (a list) gets the op types
    that took the runner's full path during the updates after the first step."""
    paddle.seed(5)
    net = TanhMLP(5, 3)
    net.fcs[1].weight.optimize_attr["learning_rate"] = 0.5     # a per-parameter rate: a scale op
    opt = make_opt(net.parameters())
    x = paddle.to_tensor(_rand(4, 5, seed=1))
    losses = []
    for step in range(steps):
        loss = net(x)
        loss.backward()
        if count_full is not None and step > 0:
            full = runner._run_full

            def counting(op_type, *args):
                count_full.append(op_type)
                return full(op_type, *args)
            runner._run_full = counting
            try:
                opt.step()
            finally:
                runner._run_full = full
        else:
            opt.step()
        opt.clear_grad()
        losses.append(loss.numpy())
    return losses + [p.numpy() for p in net.parameters()]


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_optimizers_update_takes_the_fast_path_and_matches_the_full_path(plain, name):
    full_path = []
    fast_run = _train(OPTIMIZERS[name], 3, full_path)
    assert full_path == []                       # after the first step no update left the fast path
    update_type = OPTIMIZERS[name]([]).type
    assert any(key[0] == update_type for key in fast.FAST)
    set_check_mode(plain, True)                  # check mode: every op on the full, checked path
    checked = _train(OPTIMIZERS[name], 3)
    assert not fast.FAST
    for a, b in zip(fast_run, checked):
        np.testing.assert_array_equal(a, b)


def test_a_node_keeps_the_users_line_raw_and_messages_name_it(plain):
    x = paddle.to_tensor(np.abs(_rand(3)) + 1, stop_gradient=False)
    line = sys._getframe().f_lineno + 1
    y = paddle.sqrt(x)
    y = paddle.sqrt(x)                                  # the fast path's node (the first learnt it)
    line += 1
    site = y._node.site
    assert type(site) is tuple and site[0] == __file__ and site[1] == line
    assert y._node.callsite == f"{__file__}:{line}"
    assert f"test_eager_overhead.py:{line})" in y._node.label()

    def broken(ins, attrs, ctx):
        raise RuntimeError("broken gradient")
    plain.setattr(lookup("sqrt_grad"), "kernel", broken)
    with pytest.raises(KernelError) as info:
        y.sum().backward()
    assert f"test_eager_overhead.py:{line})" in str(info.value)
    assert info.value.headrace_op[1] == f"{__file__}:{line}"     # text, as every wrapped error's


def test_backward_runs_the_nodes_newest_first(plain):
    x = paddle.to_tensor(_rand(3), stop_gradient=False)
    a = x * 2.0
    b = a * 3.0            # recorded before c
    c = a * 4.0
    order = []
    b.register_hook(lambda g: order.append("b"))
    c.register_hook(lambda g: order.append("c"))
    a.register_hook(lambda g: order.append("a"))
    (b + c).sum().backward()
    assert order == ["c", "b", "a"]
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 14.0, "float32"))


def test_record_plans_reuse_the_metas_of_shape_only_inputs(plain):
    w = paddle.to_tensor(_rand(4), stop_gradient=False)
    x = paddle.to_tensor(_rand(2, 4))
    first, second = x + w, x + w                        # elementwise_add_grad reads X, Y for shape only
    assert second._node.plan is first._node.plan
    metas = [m for m in second._node.saved if type(m) is Meta]
    assert [m.shape for m in metas] == [(2, 4), (4,)]
    assert all(a is b for a, b in zip(metas, [m for m in first._node.saved if type(m) is Meta]))
    other = paddle.to_tensor(_rand(3, 4)) + w           # another signature: its own plan and Metas
    assert other._node.plan is not first._node.plan
    assert [m.shape for m in other._node.saved if type(m) is Meta] == [(3, 4), (4,)]
    (first.sum() + other.sum()).backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full(4, 5.0, "float32"))


def test_shape_only_outputs_get_a_meta_per_call(plain):
    x = paddle.to_tensor(_rand(2, 6), stop_gradient=False)
    first, second = paddle.reshape(x, [3, 4]), paddle.reshape(x, [3, 4])   # reshape2_grad reads XShape's shape
    assert second._node.plan is first._node.plan
    metas = [(a, b) for a, b in zip(first._node.saved, second._node.saved) if type(a) is Meta]
    assert metas and all(a is not b and a.shape == b.shape for a, b in metas)   # an output's: made each call
    (first * second).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * _rand(2, 6), rtol=1e-6)
