"""SimpleRNN / LSTM / GRU, their cells and the RNN / BiRNN wrappers against an independent NumPy
implementation written here (float64): outputs, final states, and the gradients of a weighted
sum of both with respect to the input and every parameter (the NumPy side by central
differences); static mode gives the same numbers as dygraph."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.autodiff import gradients
from headrace.core import context
from headrace.runtime import Executor, Scope

nn = paddle.nn
rng = np.random.default_rng(21)


def sig(v):
    return 1 / (1 + np.exp(-v))


def np_cell(mode, x, state, p, activation="tanh"):
    """One step; ``p`` = (w_ih, w_hh, b_ih, b_hh); state is h, or (h, c) for LSTM."""
    w_ih, w_hh, b_ih, b_hh = p
    if mode == "LSTM":
        h, c = state
        gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, g, o = np.split(gates, 4, axis=-1)
        c2 = sig(f) * c + sig(i) * np.tanh(g)
        return sig(o) * np.tanh(c2), (sig(o) * np.tanh(c2), c2)
    if mode == "GRU":
        xr, xz, xc = np.split(x @ w_ih.T + b_ih, 3, axis=-1)
        hr, hz, hc = np.split(state @ w_hh.T + b_hh, 3, axis=-1)
        r, z = sig(xr + hr), sig(xz + hz)
        cand = np.tanh(xc + r * hc)
        h2 = z * state + (1 - z) * cand
        return h2, h2
    pre = x @ w_ih.T + b_ih + state @ w_hh.T + b_hh
    h2 = np.tanh(pre) if activation == "tanh" else np.maximum(pre, 0)
    return h2, h2


def np_direction(mode, x, state, p, lengths, reverse, mask_outputs, activation="tanh"):
    """x [B, T, I] -> outputs [B, T, H], final state."""
    steps = x.shape[1]
    outs = [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        out, new = np_cell(mode, x[:, t], state, p, activation)
        if lengths is not None:
            keep = (t < lengths)[:, None]
            if mode == "LSTM":
                new = (np.where(keep, new[0], state[0]), np.where(keep, new[1], state[1]))
            else:
                new = np.where(keep, new, state)
            if mask_outputs:
                out = out * keep
        state = new
        outs[t] = out
    return np.stack(outs, axis=1), state


def np_net(mode, x, cells, num_layers, ndir, lengths=None, init=None, activation="tanh"):
    """Stacked layers; cells[(layer * ndir + d)] = params; returns outputs and stacked finals."""
    batch, hidden = x.shape[0], cells[0][1].shape[1]
    finals = []
    out = x
    for layer in range(num_layers):
        results = []
        for d in range(ndir):
            k = layer * ndir + d
            if init is None:
                zero = np.zeros((batch, hidden))
                state = (zero, zero) if mode == "LSTM" else zero
            else:
                state = tuple(s[k] for s in init) if mode == "LSTM" else init[k]
            results.append(np_direction(mode, out, state, cells[k], lengths, d == 1, True, activation))
        out = np.concatenate([r[0] for r in results], axis=-1)
        finals += [r[1] for r in results]
    if mode == "LSTM":
        return out, (np.stack([f[0] for f in finals]), np.stack([f[1] for f in finals]))
    return out, np.stack(finals)


def _flat_states(states):
    return list(states) if isinstance(states, tuple) else [states]


def _cell_params(layer_params, count):
    """Group the layer's parameters (weight_ih, weight_hh, bias_ih, bias_hh per cell) by cell."""
    return [tuple(layer_params[4 * k: 4 * k + 4]) for k in range(count)]


CONFIGS = {
    "lstm": ("LSTM", dict(num_layers=1), False),
    "lstm-2layer-bidirect-lengths": ("LSTM", dict(num_layers=2, direction="bidirect"), True),
    "gru": ("GRU", dict(num_layers=2), False),
    "gru-bidirect-lengths": ("GRU", dict(direction="bidirectional"), True),
    "simple-rnn-relu-lengths": ("SimpleRNN", dict(activation="relu"), True),
    "simple-rnn-time-major": ("SimpleRNN", dict(time_major=True, num_layers=2), False),
}


def _run_eager(mode, kwargs, params, x, lengths, init, out_w, state_w):
    layer = getattr(nn, mode)(3, 2, **kwargs)
    for p, v in zip(layer.parameters(), params):
        p.set_value(v.astype(np.float32))
    time_major = kwargs.get("time_major", False)
    xt = paddle.to_tensor((x.transpose(1, 0, 2) if time_major else x).astype(np.float32), stop_gradient=False)
    seq = None if lengths is None else paddle.to_tensor(lengths)
    init_t = None if init is None else tuple(paddle.to_tensor(s.astype(np.float32)) for s in init)
    if init_t is not None and mode != "LSTM":
        init_t = init_t[0]
    out, states = layer(xt, init_t, seq)
    out_np = out.numpy().transpose(1, 0, 2) if time_major else out.numpy()
    loss = paddle.sum(out * paddle.to_tensor((out_w.transpose(1, 0, 2) if time_major else out_w).astype(np.float32)))
    for s, w in zip(_flat_states(states), state_w):
        loss = loss + paddle.sum(s * paddle.to_tensor(w.astype(np.float32)))
    loss.backward()
    x_grad = xt.grad.numpy()
    x_grad = x_grad.transpose(1, 0, 2) if time_major else x_grad
    return out_np, [s.numpy() for s in _flat_states(states)], x_grad, [p.grad.numpy() for p in layer.parameters()]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rnn_layers_against_numpy(name):
    mode, kwargs, use_lengths = CONFIGS[name]
    ndir = 2 if kwargs.get("direction", "forward") != "forward" else 1
    num_layers = kwargs.get("num_layers", 1)
    activation = kwargs.get("activation", "tanh")
    with context.static_mode_guard(False):
        shapes = [p.shape for p in getattr(nn, mode)(3, 2, **kwargs).parameters()]
    params = [rng.uniform(-0.8, 0.8, s) for s in shapes]
    x = rng.standard_normal((3, 4, 3))
    lengths = np.array([4, 2, 3], np.int64) if use_lengths else None
    init = None
    if name.startswith("lstm-2"):
        init = tuple(rng.standard_normal((num_layers * ndir, 3, 2)) * 0.5 for _ in range(2))
    cells = _cell_params(params, num_layers * ndir)
    want_out, want_states = np_net(mode, x, cells, num_layers, ndir, lengths, init, activation)
    want_states = _flat_states(want_states)
    out_w = rng.standard_normal(want_out.shape)
    state_w = [rng.standard_normal(s.shape) for s in want_states]
    with context.static_mode_guard(False):
        out, states, x_grad, p_grads = _run_eager(mode, kwargs, params, x, lengths, init, out_w, state_w)
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-6)
    for got, want in zip(states, want_states):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if use_lengths:
        assert not out[1, 2:].any()   # steps past a sequence's length are zero

    def loss(x_value, param_values):
        o, s = np_net(mode, x_value, _cell_params(param_values, num_layers * ndir), num_layers, ndir, lengths, init,
                      activation)
        return np.sum(o * out_w) + sum(np.sum(a * w) for a, w in zip(_flat_states(s), state_w))

    eps = 1e-6
    for k, value in enumerate([x] + params):
        numeric = np.zeros(value.shape)
        for idx in np.ndindex(value.shape):
            plus, minus = value.copy(), value.copy()
            plus[idx] += eps
            minus[idx] -= eps
            if k == 0:
                numeric[idx] = (loss(plus, params) - loss(minus, params)) / (2 * eps)
            else:
                numeric[idx] = (loss(x, params[:k - 1] + [plus] + params[k:])
                                - loss(x, params[:k - 1] + [minus] + params[k:])) / (2 * eps)
        got = x_grad if k == 0 else p_grads[k - 1]
        np.testing.assert_allclose(got, numeric, rtol=2e-4, atol=2e-5, err_msg=f"gradient {k}")


def test_static_mode_matches_dygraph():
    x = rng.standard_normal((2, 3, 3)).astype(np.float32)
    lengths = np.array([3, 1], np.int64)
    with context.static_mode_guard(False):
        paddle.seed(0)
        net = nn.LSTM(3, 2, num_layers=2, direction="bidirect")
        values = [p.numpy() for p in net.parameters()]
        xt = paddle.to_tensor(x, stop_gradient=False)
        out, (h, c) = net(xt, sequence_length=paddle.to_tensor(lengths))
        (paddle.sum(out) + paddle.sum(h * c)).backward()
        eager = [out.numpy(), h.numpy(), c.numpy(), xt.grad.numpy()] + [p.grad.numpy() for p in net.parameters()]
    main, startup = static.Program(), static.Program()
    with context.static_mode_guard(True), static.program_guard(main, startup):
        xs = static.data("x", [-1, 3, 3], "float32")
        xs.stop_gradient = False
        seq = static.data("seq", [-1], "int64")
        snet = nn.LSTM(3, 2, num_layers=2, direction="bidirect")
        out, (h, c) = snet(xs, sequence_length=seq)
        loss = paddle.sum(out) + paddle.sum(h * c)
        grads = gradients([loss], [xs] + snet.parameters())
    scope = Scope()
    exe = Executor()
    exe.run(startup, scope=scope)
    for p, v in zip(snet.parameters(), values):
        scope.var(p.name).get_tensor().set(v)
    got = exe.run(main, feed={"x": x, "seq": lengths}, fetch_list=[out, h, c] + grads, scope=scope)
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_cells_and_wrappers():
    with context.static_mode_guard(False):
        cell = nn.GRUCell(3, 4)
        x = paddle.to_tensor(rng.standard_normal((2, 5, 3)).astype(np.float32))
        out, h = nn.RNN(cell)(x)
        assert out.shape == [2, 5, 4] and h.shape == [2, 4]
        step, h1 = cell(paddle.to_tensor(x.numpy()[:, 0]))
        np.testing.assert_allclose(out.numpy()[:, 0], step.numpy(), rtol=1e-6)
        rev, h_rev = nn.RNN(cell, is_reverse=True)(x)
        np.testing.assert_allclose(rev.numpy()[:, 0], h_rev.numpy(), rtol=1e-6)
        bi = nn.BiRNN(nn.LSTMCell(3, 2), nn.LSTMCell(3, 2))
        out, (fw, bw) = bi(x)
        assert out.shape == [2, 5, 4] and fw[0].shape == [2, 2] and bw[1].shape == [2, 2]
        lstm_cell = nn.LSTMCell(3, 2, bias_ih_attr=False)
        assert lstm_cell.bias_ih is None and len(lstm_cell.parameters()) == 3
        h, (h2, c) = lstm_cell(paddle.to_tensor(x.numpy()[:, 0]))
        assert h.shape == [2, 2] and c.shape == [2, 2]
        simple = nn.SimpleRNN(3, 2, num_layers=2, direction="bidirect")
        assert "1.cell_bw.weight_ih" in simple.state_dict()
        assert simple.state_dict()["1.cell_fw.weight_ih"].shape == [2, 4]


def test_dropout_between_layers_only_while_training():
    with context.static_mode_guard(False):
        x = paddle.to_tensor(rng.standard_normal((2, 3, 3)).astype(np.float32))
        net = nn.GRU(3, 4, num_layers=2, dropout=0.5)
        net.eval()
        a = net(x)[0].numpy()
        np.testing.assert_array_equal(a, net(x)[0].numpy())
        net.train()
        paddle.seed(1)
        b = net(x)[0].numpy()
        assert not np.allclose(a, b)


def test_errors():
    with context.static_mode_guard(False):
        with pytest.raises(ValueError, match="direction"):
            nn.LSTM(3, 2, direction="backward")
        with pytest.raises(NotImplementedError, match="proj_size"):
            nn.LSTM(3, 2, proj_size=1)
        with pytest.raises(ValueError, match="activation"):
            nn.SimpleRNNCell(3, 2, activation="sigmoid")
        with pytest.raises(Exception, match="inputs must be"):
            nn.GRUCell(3, 2)(paddle.to_tensor(np.zeros((2, 4), np.float32)))
    with context.static_mode_guard(True), static.program_guard(static.Program(), static.Program()):
        x = static.data("x", [2, -1, 3], "float32")
        with pytest.raises(Exception, match="known number of time steps"):
            nn.GRU(3, 2)(x)


def test_rnn_and_birnn_wrappers_with_lengths_against_numpy():
    x = rng.standard_normal((3, 4, 3))
    lengths = np.array([2, 4, 1], np.int64)
    with context.static_mode_guard(False):
        fw, bw = nn.GRUCell(3, 2), nn.GRUCell(3, 2)
        p_fw = [p.numpy().astype(np.float64) for p in fw.parameters()]
        p_bw = [p.numpy().astype(np.float64) for p in bw.parameters()]
        xt, seq = paddle.to_tensor(x.astype(np.float32)), paddle.to_tensor(lengths)
        out, h = nn.RNN(fw, is_reverse=True)(xt, sequence_length=seq)
        bi_out, (h_fw, h_bw) = nn.BiRNN(fw, bw)(xt, sequence_length=seq)
    zero = np.zeros((3, 2))
    want, want_h = np_direction("GRU", x, zero, p_fw, lengths, True, True)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-5, atol=1e-6)
    assert not out.numpy()[2, 1:].any()
    fw_out, fw_h = np_direction("GRU", x, zero, p_fw, lengths, False, True)
    bw_out, bw_h = np_direction("GRU", x, zero, p_bw, lengths, True, True)
    np.testing.assert_allclose(bi_out.numpy(), np.concatenate([fw_out, bw_out], -1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_fw.numpy(), fw_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h_bw.numpy(), bw_h, rtol=1e-5, atol=1e-6)
