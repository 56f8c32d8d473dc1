"""One time step of each cell type of the fused ``rnn`` op (``ops/rnn_fused.py``): the gate
arithmetic, forward and backward, on [B, ...] planes of the op's Reserve, in place where it can.
Weights arrive in the per-step GEMM's layout (``rnn_fused._step_weight``) and ``work`` is a scratch
array that stays in cache (``rnn_fused._scratch``)."""
from __future__ import annotations

import numpy as np


def _sigmoid_(a):
    """a = 1 / (1 + exp(-a)) in place (exp overflow gives inf, then 0: callers ignore 'over')."""
    np.negative(a, out=a)
    np.exp(a, out=a)
    a += 1
    return np.reciprocal(a, out=a)


def _times_dsigmoid(grad, y, out):
    """out = grad * y * (1 - y): the gradient through a sigmoid whose output is y."""
    np.subtract(1, y, out=out)
    out *= y
    out *= grad
    return out


# --- one step of each cell type, forward: writes the new h into h_out, LSTM's new c into c_out ---
# ``w_t`` is weight_hh transposed, C-contiguous ([H, G*H]: the small per-step GEMM is slower on a
# transposed operand); ``work`` a C-contiguous [B, G*H] scratch array, hot in cache, where the gates
# are computed before they are stored in the (large, cold) Reserve.
def _lstm_step(planes, w_t, b_hh, h_out, c_out, relu, work):
    h = h_out.shape[1]
    c_prev, tanh_c = planes[:, 6 * h:], planes[:, 4 * h:5 * h]
    stored = planes[:, :4 * h].reshape(-1, 4, h).transpose(1, 0, 2)  # the step's gates, gate-major view
    gates = np.matmul(planes[:, 5 * h:6 * h], w_t, out=work[:4])      # [4, B, H]: every gate contiguous
    gates += stored
    i, f, g, o = gates
    _sigmoid_(gates[:2])
    np.tanh(g, out=g)
    _sigmoid_(o)
    np.multiply(f, c_prev, out=c_out)                                # c = f * c_prev + i * g
    c_out += np.multiply(i, g, out=work[4])
    np.tanh(c_out, out=tanh_c)
    np.multiply(o, tanh_c, out=h_out)                                # h = o * tanh(c)
    stored[...] = gates


def _gru_step(planes, w_t, b_hh, h_out, c_out, relu, work):
    h = h_out.shape[1]
    h_prev = planes[:, 4 * h:]
    hp = np.matmul(h_prev, w_t, out=work)
    hp += b_hh
    rz, cand, hc = planes[:, :2 * h], planes[:, 2 * h:3 * h], planes[:, 3 * h:4 * h]
    rz += hp[:, :2 * h]
    _sigmoid_(rz)
    hc[...] = hp[:, 2 * h:]
    cand += rz[:, :h] * hc                                           # c = tanh(x_c + r * hc)
    np.tanh(cand, out=cand)
    np.subtract(h_prev, cand, out=h_out)                             # h = z * (h_prev - c) + c
    h_out *= rz[:, h:]
    h_out += cand


def _elman_step(planes, w_t, b_hh, h_out, c_out, relu, work):
    h = h_out.shape[1]
    pre = planes[:, :h]
    pre += np.matmul(planes[:, h:], w_t, out=work)
    if relu:
        np.maximum(pre, 0, out=pre)
    else:
        np.tanh(pre, out=pre)
    h_out[...] = pre


STEP = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN_TANH": _elman_step, "RNN_RELU": _elman_step}


# --- one step of each cell type, backward ----------------------------------------------------------
# Each reads the saved planes of the step and dh (the gradient of the new h), updates dc (LSTM:
# the gradient of the state c, in place, to that of c_{t-1}), writes the pre-activation gate
# gradients into gx (input side) and gh (hidden side; the same array but for GRU), and returns
# the part of the gradient of h_{t-1} that does not go through w_hh.
def _lstm_step_grad(planes, dh, dc, gx, gh, relu, work):
    h = dh.shape[1]
    stored = planes[:, :4 * h].reshape(-1, 4, h).transpose(1, 0, 2)  # gate-major views, as the forward
    i, f, g, o = stored
    tanh_c, c_prev = planes[:, 4 * h:5 * h], planes[:, 6 * h:]
    slope, coef = (w.reshape(4, -1, h) for w in work)                 # [4, B, H] scratch, contiguous
    np.subtract(1, stored, out=slope)                                 # y (1 - y) for i, f, o
    slope *= stored
    np.multiply(g, g, out=slope[2])                                   # 1 - g^2 for g
    np.subtract(1, slope[2], out=slope[2])
    t = np.multiply(tanh_c, tanh_c, out=coef[0])
    np.subtract(1, t, out=t)
    t *= o
    t *= dh
    dc += t                                                           # dc of c_t: state + through h
    np.multiply(dc, g, out=coef[0])                                   # c = f c_prev + i g, h = o tanh(c)
    np.multiply(dc, c_prev, out=coef[1])
    np.multiply(dc, i, out=coef[2])
    np.multiply(dh, tanh_c, out=coef[3])
    slope *= coef
    gx.reshape(-1, 4, h).transpose(1, 0, 2)[...] = slope
    dc *= f                                                           # dc of c_{t-1}
    return None


def _gru_step_grad(planes, dh, dc, gx, gh, relu, work):
    h = dh.shape[1]
    r, z, cand = planes[:, :h], planes[:, h:2 * h], planes[:, 2 * h:3 * h]
    hc, h_prev = planes[:, 3 * h:4 * h], planes[:, 4 * h:]
    _times_dsigmoid(dh * (h_prev - cand), z, gx[:, h:2 * h])          # through z
    dcand = gx[:, 2 * h:]
    np.multiply(cand, cand, out=dcand)                                # through c: dh (1 - z) (1 - c^2)
    np.subtract(1, dcand, out=dcand)
    dcand *= dh
    dcand *= 1 - z
    np.multiply(dcand, r, out=gh[:, 2 * h:])                          # through hc
    _times_dsigmoid(dcand * hc, r, gx[:, :h])                         # through r
    gh[:, :2 * h] = gx[:, :2 * h]
    return dh * z


def _elman_step_grad(planes, dh, dc, gx, gh, relu, work):
    h = dh.shape[1]
    new = planes[:, :h]
    if relu:
        np.multiply(dh, new > 0, out=gx)
    else:
        np.multiply(new, new, out=gx)
        np.subtract(1, gx, out=gx)
        gx *= dh
    return None


STEP_GRAD = {"LSTM": _lstm_step_grad, "GRU": _gru_step_grad, "RNN_TANH": _elman_step_grad,
             "RNN_RELU": _elman_step_grad}
