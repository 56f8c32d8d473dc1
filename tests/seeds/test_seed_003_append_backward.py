"""Seed 003 (append_backward): the docstring example, verbatim except the import line, and the
lengths its comments state."""
import numpy as np


def test_seed_003_example_lengths():
    import headrace.fluid as fluid
    x = fluid.data(name='x', shape=[None, 13], dtype='float32')
    y = fluid.data(name='y', shape=[None, 1], dtype='float32')
    y_predict = fluid.layers.fc(input=x, size=1, act=None)
    loss = fluid.layers.square_error_cost(input=y_predict, label=y)
    avg_loss = fluid.layers.mean(loss)
    param_grad_list = fluid.backward.append_backward(loss=avg_loss)
    p_g_list1 = fluid.backward.append_backward(loss=avg_loss)  # len(p_g_list1) == 2
    p_g_list2 = fluid.backward.append_backward(loss=avg_loss, parameter_list=[p_g_list1[0][0].name])  # len(p_g_list1) == 1
    p_g_list3 = fluid.backward.append_backward(loss=avg_loss, no_grad_set=set([p_g_list1[0][0].name]))  # len(p_g_list1) == 1
    p_g_list4 = fluid.backward.append_backward(loss=avg_loss, parameter_list=[p_g_list1[0][0].name], no_grad_set=set([p_g_list1[0][0].name]))  # len(p_g_list1) == 0

    assert len(param_grad_list) == 2
    assert len(p_g_list1) == 2
    assert len(p_g_list2) == 1
    assert len(p_g_list3) == 1
    assert len(p_g_list4) == 0
    w, b = (p.name for p, _ in param_grad_list)
    assert [p.name for p, _ in p_g_list2] == [w]
    assert [p.name for p, _ in p_g_list3] == [b]
    # the reference's names for the third and fourth calls (paddle_behaviour.md §1.5)
    assert p_g_list2[0][1].name == f"grad/grad/{w}@GRAD"
    assert p_g_list3[0][1].name == f"grad/grad/grad/{b}@GRAD"
    # every call appended its own backward: all gradients are distinct variables with equal values
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    rng = np.random.default_rng(0)
    feed = {"x": rng.random((8, 13), dtype=np.float32), "y": rng.random((8, 1), dtype=np.float32)}
    fetch = [param_grad_list[0][1], p_g_list1[0][1], p_g_list2[0][1]]
    assert len({v.name for v in fetch}) == 3
    g0, g1, g2 = exe.run(fluid.default_main_program(), feed=feed, fetch_list=fetch)
    np.testing.assert_array_equal(g0, g1)
    np.testing.assert_array_equal(g0, g2)
    # and they are right: d mean((xW + b - y)^2) / dW = 2/N x^T (xW + b - y)
    wv, bv = exe.run(fluid.default_main_program(), feed=feed, fetch_list=[w, b])
    resid = feed["x"].astype(np.float64) @ wv + bv - feed["y"]
    np.testing.assert_allclose(g0, 2 / 8 * feed["x"].T.astype(np.float64) @ resid, rtol=1e-5, atol=1e-6)
