"""The fused recurrent op ``rnn`` (the reference's op behind ``paddle.nn.LSTM/GRU/SimpleRNN``) and
its gradient ``rnn_grad``: a whole stack of (bi)directional LSTM / GRU / Elman layers over all time
steps in one kernel.

Slots and attributes are the reference's: ``Input`` [T, B, I] (time-major; ``time_major=False``,
an attribute of ours, reads [B, T, I] and writes ``Out`` [B, T, D*H]), ``PreState`` (h, or h and c
for LSTM; each [L*D, B, H]; absent = zeros), ``WeightList`` (first every cell's ``weight_ih``
[G*H, I_l] and ``weight_hh`` [G*H, H], cell ``k = layer * D + direction``, then every cell's
``bias_ih`` and ``bias_hh`` [G*H]; G = 4 for LSTM, 3 for GRU, 1 for RNN_TANH / RNN_RELU) and
``SequenceLength`` ([B] ints: steps ``t >= length`` leave the state unchanged and output zeros).
Outputs: ``Out``, ``State`` (final states, like PreState) and ``Reserve`` (what the gradient reads,
so nothing is recomputed).  Formulas and gate orders are the cells' (nn/rnn_cells.py): LSTM i, f,
g, o; GRU r, z, c with ``c = tanh(x_c + r * (h W_hc^T + b_hc))``.  Dropout between layers is not
done here (``dropout_prob > 0`` while training a multi-layer net is NotImplementedError: the layers
keep their unrolled path for it).

Reserve is [T, B, W] (the Input's first two dims) in column blocks: per cell ``k`` a block of
planes of width H per step — LSTM: gates after activation (4H), tanh(c_t), h_{t-1}, c_{t-1}; GRU:
r, z, candidate (3H), ``h W_hc^T + b_hc``, h_{t-1}; Elman: h_t, h_{t-1} — and after the cells the
outputs of every layer but the last (the next layer's input).  Storing the state *entering* each
step makes the hidden-weight gradient one GEMM over all steps.

Forward per cell: the input projection of all steps is one GEMM written into the gate planes, then
per step one [B, H] x [H, G*H] GEMM (LSTM: [G*H, H] x [H, B]) and the gate arithmetic in place
(LSTM: in a gate-major scratch array in cache, where the step also adds the biases, then stored
into the Reserve).  Backward per cell walks the steps in reverse, writing the pre-activation gate
gradients of every step into one [T*B, G*H] array; then the weight gradients are one GEMM each
over all steps and the input gradient one GEMM.
A step outside a sequence has zero gate gradients and passes the state gradient through (rows
picked by index, so padded steps never mix into the arithmetic).

Threads: every product here calls NumPy's matmul and keeps BLAS's own threads, unlike the other
kernels' products (``ops/gemm.py``: BLAS at one thread, split over the intra-op pool).  The
per-step [B, H] products are latency-bound: BLAS's threads, still spinning from the last step,
pick each one up at once, where handing half of it to a pool thread costs about as much as it
saves; and switching BLAS to one thread and back around the all-steps GEMMs alone leaves the two
thread sets competing for the cores between them (measured slower: docs/architecture.md).
"""
from __future__ import annotations

import numpy as np

from ..core.errors import fmt_shape
from .elementwise import check_float
from .gradrule import Gradient, grad_slot
from .registry import many, optional, register


GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
PLANES = {"LSTM": 7, "GRU": 5, "RNN_TANH": 2, "RNN_RELU": 2}   # saved planes of width H per cell and step
H_PREV = {"LSTM": 5, "GRU": 4, "RNN_TANH": 1, "RNN_RELU": 1}   # plane index of h_{t-1}
STATE_COUNT = {"LSTM": 2, "GRU": 1, "RNN_TANH": 1, "RNN_RELU": 1}


class Geometry:
    """Sizes of one ``rnn`` op and the column blocks of its Reserve."""

    def __init__(self, attrs):
        self.mode = attrs["mode"]
        self.hidden = int(attrs["hidden_size"])
        self.layers = int(attrs["num_layers"])
        self.dirs = 2 if attrs["is_bidirec"] else 1
        self.cells = self.layers * self.dirs
        self.gate_width = GATES[self.mode] * self.hidden
        self.cell_width = PLANES[self.mode] * self.hidden
        self.width = self.cells * self.cell_width + (self.layers - 1) * self.dirs * self.hidden

    def cell(self, reserve, k):
        return reserve[..., k * self.cell_width:(k + 1) * self.cell_width]

    def layer_out(self, reserve, layer):
        start = self.cells * self.cell_width + layer * self.dirs * self.hidden
        return reserve[..., start:start + self.dirs * self.hidden]

    def plane(self, cell, index, count=1):
        return cell[..., index * self.hidden:(index + count) * self.hidden]

    def weights(self, weights, k):
        """(weight_ih, weight_hh, bias_ih, bias_hh) of cell ``k``."""
        b = 2 * self.cells
        return weights[2 * k], weights[2 * k + 1], weights[b + 2 * k], weights[b + 2 * k + 1]


def _rows(a):
    """The [N, C] view of a [T, B, C] / [B, T, C] array (N = T*B rows, in memory order)."""
    return a.reshape(-1, a.shape[-1])


def _time_major(a, time_major):
    return a if time_major else a.swapaxes(0, 1)


def _outside_rows(lengths, steps):
    """Per step, the batch rows whose sequence has ended (an index array, None if there are none)."""
    if lengths is None:
        return [None] * steps
    lengths = np.asarray(lengths).astype(np.int64)
    return [None if (lengths > t).all() else np.flatnonzero(lengths <= t) for t in range(steps)]


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
# ``w_t`` is weight_hh transposed, C-contiguous (LSTM: weight_hh itself); ``bias`` what the step
# adds and ``work`` scratch arrays, hot in cache, where the gates are computed before they are
# stored in the (large, cold) Reserve (``_step_operands``).
def _lstm_step(planes, w_t, bias, h_out, c_out, relu, work):
    h = h_out.shape[1]
    flat, gates, spare = work
    c_prev, tanh_c = planes[:, 6 * h:], planes[:, 4 * h:5 * h]
    stored = planes[:, :4 * h].reshape(-1, 4, h).transpose(1, 0, 2)  # the step's gates, gate-major view
    np.matmul(w_t, planes[:, 5 * h:6 * h].T, out=flat)               # [4H, B]: one GEMM for all gates
    np.add(flat.reshape(4, h, -1).transpose(0, 2, 1), stored, out=gates)  # [4, B, H]: each gate contiguous
    gates += bias
    i, f, g, o = gates
    _sigmoid_(gates[:2])
    np.tanh(g, out=g)
    _sigmoid_(o)
    np.multiply(f, c_prev, out=c_out)                                # c = f * c_prev + i * g
    c_out += np.multiply(i, g, out=spare)
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


def _input_bias(mode, b_ih, b_hh):
    """The bias added to the input projection of all steps, or None: LSTM adds b_ih + b_hh to
    each step's gates in cache (a pass over the strided projection of all steps took ~0.7 ms of
    a 10 ms forward), GRU adds b_hh per step, inside r * (...)."""
    return None if mode == "LSTM" else b_ih if mode == "GRU" else b_ih + b_hh


def _step_operands(geo, w, batch):
    """The per-step GEMM's weight (weight_hh transposed, C order: a transposed operand makes the
    small GEMM ~40% slower), the bias the step adds and scratch arrays that stay in cache.
    LSTM: all gates from one GEMM, weight_hh [4H, H] x h_prev^T [H, B] (on BLAS's two threads
    81 us, [B, H] x [H, 4H] 102 us, four gate-major [B, H] x [H, H] 140 us; the same bits as
    [B, H] x [H, 4H] here), then gate-major [4, B, H] gates, so that each gate's passes run over
    contiguous memory (column slices of [B, 4H] cost 2-4x more per pass), and a [B, H] plane."""
    _, w_hh, b_ih, b_hh = w
    if geo.mode == "LSTM":
        h, dtype = geo.hidden, w_hh.dtype
        work = (np.empty((4 * h, batch), dtype), np.empty((4, batch, h), dtype), np.empty((batch, h), dtype))
        return np.ascontiguousarray(w_hh), (b_ih + b_hh).reshape(4, 1, h), work
    return np.ascontiguousarray(w_hh.T), b_hh, np.empty((batch, geo.gate_width), w_hh.dtype)


def _cell_forward(geo, x, out, cell, init, final, w, outside, reverse, time_major):
    """Run cell (weights ``w``) over all steps: x, out, cell are native-layout views; init/final
    are the [B, H] states (h, and c for LSTM) entering the first step / after the last."""
    w_ih, _, b_ih, b_hh = w
    np.matmul(_rows(x), w_ih.T, out=_rows(geo.plane(cell, 0, GATES[geo.mode])))
    bias = _input_bias(geo.mode, b_ih, b_hh)
    if bias is not None:
        geo.plane(cell, 0, GATES[geo.mode])[...] += bias
    planes, outs = _time_major(cell, time_major), _time_major(out, time_major)
    steps = list(range(planes.shape[0]))[::-1] if reverse else list(range(planes.shape[0]))
    states = [geo.plane(planes, H_PREV[geo.mode])] + ([geo.plane(planes, 6)] if geo.mode == "LSTM" else [])
    for plane, value in zip(states, init):
        plane[steps[0]] = value
    step, relu = STEP[geo.mode], geo.mode == "RNN_RELU"
    w_t, step_bias, work = _step_operands(geo, w, planes.shape[1])
    for i, t in enumerate(steps):
        nxt = final if i + 1 == len(steps) else [s[steps[i + 1]] for s in states]
        step(planes[t], w_t, step_bias, outs[t], nxt[1] if len(nxt) > 1 else None, relu, work)
        nxt[0][...] = outs[t]
        rows = outside[t]
        if rows is not None:
            for dst, plane in zip(nxt, states):
                dst[rows] = plane[t][rows]
            outs[t][rows] = 0


def _states_in(ins, geo, batch, dtype):
    pre = ins.get("PreState") or []
    if pre:
        return pre
    return [np.zeros((geo.cells, batch, geo.hidden), dtype) for _ in range(STATE_COUNT[geo.mode])]


def _rnn_kernel(ins, attrs, ctx):
    x = ins["Input"]
    geo, time_major = Geometry(attrs), attrs["time_major"]
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    reserve = np.empty(x.shape[:2] + (geo.width,), x.dtype)
    out = np.empty(x.shape[:2] + (geo.dirs * geo.hidden,), x.dtype)
    pre = _states_in(ins, geo, batch, x.dtype)
    finals = [np.empty((geo.cells, batch, geo.hidden), x.dtype) for _ in pre]
    outside = _outside_rows(ins.get("SequenceLength"), steps)
    layer_in, h = x, geo.hidden
    with np.errstate(over="ignore"):
        for layer in range(geo.layers):
            layer_out = out if layer == geo.layers - 1 else geo.layer_out(reserve, layer)
            for d in range(geo.dirs):
                k = layer * geo.dirs + d
                _cell_forward(geo, layer_in, layer_out[..., d * h:(d + 1) * h], geo.cell(reserve, k),
                              [s[k] for s in pre], [s[k] for s in finals], geo.weights(ins["WeightList"], k),
                              outside, d == 1, time_major)
            layer_in = layer_out
    return {"Out": out, "State": finals, "Reserve": reserve}


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


def _cell_backward(geo, cell, dout, dfinal, w_hh, outside, reverse, time_major):
    """The pre-activation gate gradients of all steps (gx, gh; native layout) and the gradients of
    the initial states, from the gradients of the outputs ``dout`` (native view or None) and of the
    final states ``dfinal``."""
    shape = cell.shape[:2] + (geo.gate_width,)
    gx = np.empty(shape, cell.dtype)
    gh = np.empty(shape, cell.dtype) if geo.mode == "GRU" else gx
    planes, gx_t, gh_t = (_time_major(a, time_major) for a in (cell, gx, gh))
    douts = None if dout is None else _time_major(dout, time_major)
    carry = [np.array(d, copy=True) for d in dfinal]                  # gradients of the states after step t
    dc = carry[1] if len(carry) > 1 else None
    steps = list(range(planes.shape[0]))
    step_grad, relu = STEP_GRAD[geo.mode], geo.mode == "RNN_RELU"
    work = [np.empty((planes.shape[1], geo.gate_width), cell.dtype) for _ in range(2)]
    w_hh_t = np.ascontiguousarray(w_hh.T)
    for t in (steps if reverse else steps[::-1]):
        # (C order: carry[0] is a transposed view, and the step's passes run ~10% slower on one)
        dh = np.ascontiguousarray(carry[0]) if douts is None else np.add(carry[0], douts[t], order="C")
        rows = outside[t]
        if rows is not None:
            kept = [c[rows] for c in carry]
        direct = step_grad(planes[t], dh, dc, gx_t[t], gh_t[t], relu, work)
        if rows is not None:
            gx_t[t][rows] = 0
            if gh is not gx:
                gh_t[t][rows] = 0
        carry[0] = np.matmul(w_hh_t, gh_t[t].T).T   # (w_hh^T gh^T)^T: 103 us where gh w_hh took 118
        if direct is not None:
            carry[0] += direct
        if rows is not None:
            for c, k in zip(carry, kept):
                c[rows] = k
    return gx, gh, carry


def _rnn_grad_kernel(ins, attrs, ctx):
    x, reserve, weights = ins["Input"], ins["Reserve"], ins["WeightList"]
    geo, time_major = Geometry(attrs), attrs["time_major"]
    steps, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    outside = _outside_rows(ins.get("SequenceLength"), steps)
    dstates = ins.get(grad_slot("State")) or []
    dstates = [d if d is not None else np.zeros((geo.cells, batch, geo.hidden), x.dtype)
               for d in dstates] or [np.zeros((geo.cells, batch, geo.hidden), x.dtype)] * STATE_COUNT[geo.mode]
    dweights = [None] * len(weights)
    dinit = [np.empty((geo.cells, batch, geo.hidden), x.dtype) for _ in dstates]
    dlayer, h = ins.get(grad_slot("Out")), geo.hidden
    with np.errstate(over="ignore"):
        for layer in reversed(range(geo.layers)):
            layer_in = x if layer == 0 else geo.layer_out(reserve, layer - 1)
            want_dx = layer > 0 or grad_slot("Input") in ctx.wanted
            dx = None
            for d in range(geo.dirs):
                k = layer * geo.dirs + d
                w_ih, w_hh, _, _ = geo.weights(weights, k)
                cell = geo.cell(reserve, k)
                dout = None if dlayer is None else dlayer[..., d * h:(d + 1) * h]
                gx, gh, carry = _cell_backward(geo, cell, dout, [s[k] for s in dstates], w_hh, outside, d == 1,
                                               time_major)
                for s, c in zip(dinit, carry):
                    s[k] = c
                _weight_grads(geo, k, layer_in, cell, gx, gh, dweights)
                if want_dx:
                    part = np.matmul(_rows(gx), w_ih)
                    dx = part if dx is None else np.add(dx, part, out=dx)
            dlayer = None if dx is None else dx.reshape(layer_in.shape)
    result = {grad_slot("WeightList"): dweights, grad_slot("PreState"): dinit}
    if dlayer is not None:
        result[grad_slot("Input")] = dlayer
    return result


def _weight_grads(geo, k, layer_in, cell, gx, gh, dweights):
    """Gradients of cell k's weights: one GEMM over all steps each; biases are column sums."""
    rows_x, rows_h = _rows(gx), _rows(gh)
    b = 2 * geo.cells
    dweights[2 * k] = np.matmul(rows_x.T, _rows(layer_in))
    dweights[2 * k + 1] = np.matmul(rows_h.T, _rows(geo.plane(cell, H_PREV[geo.mode])))
    dweights[b + 2 * k] = rows_x.sum(axis=0)
    dweights[b + 2 * k + 1] = dweights[b + 2 * k].copy() if gh is gx else rows_h.sum(axis=0)


# --- shape inference and the records -------------------------------------------------------------
def _known(a, b):
    return a == b or a < 0 or b < 0


def _check_weights(ctx, geo, input_size, dtype):
    shapes, dtypes = ctx.shapes("WeightList"), ctx.dtypes("WeightList")
    if len(shapes) != 4 * geo.cells:
        ctx.fail("WeightList", f"{4 * geo.cells} tensors (weight_ih, weight_hh per cell, then bias_ih, bias_hh "
                 f"per cell; {geo.layers} layer(s) x {geo.dirs} direction(s))", f"{len(shapes)}")
    for k in range(geo.cells):
        width = input_size if k < geo.dirs else geo.dirs * geo.hidden
        want = [(geo.gate_width, width), (geo.gate_width, geo.hidden), (geo.gate_width,), (geo.gate_width,)]
        got = geo.weights(list(zip(shapes, dtypes)), k)
        for name, expected, (shape, dt) in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), want, got):
            if len(shape) != len(expected) or not all(_known(a, b) for a, b in zip(shape, expected)):
                ctx.fail("WeightList", f"{name} of cell {k} shaped {fmt_shape(expected)}", fmt_shape(shape))
            if dt != dtype:
                ctx.fail("WeightList", f"{name} of cell {k} with dtype {dtype} (Input's)", str(dt))


def _rnn_infer(ctx):
    dtype = check_float(ctx, "Input")
    shape = ctx.check_rank("Input", 3)
    if ctx.attr("mode") not in GATES:
        ctx.fail_attr("mode", "one of " + ", ".join(GATES), ctx.attr("mode"))
    for name in ("hidden_size", "num_layers"):
        if int(ctx.attr(name)) <= 0:
            ctx.fail_attr(name, "a positive int", ctx.attr(name))
    geo = Geometry(ctx.attrs)
    if ctx.attr("dropout_prob") > 0 and not ctx.attr("is_test") and geo.layers > 1:
        raise NotImplementedError(f"op `rnn`: dropout between layers (dropout_prob={ctx.attr('dropout_prob')}) "
                                  "while training is not supported by the fused op yet")
    steps, batch = (shape[0], shape[1]) if ctx.attr("time_major") else (shape[1], shape[0])
    if steps == 0:
        ctx.fail("Input", "at least one time step", fmt_shape(shape))
    if not _known(shape[2], int(ctx.attr("input_size"))):
        ctx.fail("Input", f"last dim input_size={ctx.attr('input_size')}", fmt_shape(shape))
    _check_weights(ctx, geo, shape[2] if shape[2] >= 0 else int(ctx.attr("input_size")), dtype)
    state_shape = (geo.cells, batch, geo.hidden)
    if ctx.has("PreState"):
        if ctx.count("PreState") != STATE_COUNT[geo.mode]:
            ctx.fail("PreState", f"{STATE_COUNT[geo.mode]} tensor(s) for mode {geo.mode}", str(ctx.count("PreState")))
        for s in ctx.shapes("PreState"):
            if len(s) != 3 or not all(_known(a, b) for a, b in zip(s, state_shape)):
                ctx.fail("PreState", f"states shaped {fmt_shape(state_shape)}", fmt_shape(s))
    if ctx.has("SequenceLength"):
        if ctx.dtype("SequenceLength").numpy.kind not in "iu" or len(ctx.shape("SequenceLength")) != 1:
            ctx.fail("SequenceLength", "a [batch] integer tensor",
                     f"{ctx.dtype('SequenceLength')} {fmt_shape(ctx.shape('SequenceLength'))}")
    ctx.set("Out", shape[:2] + (geo.dirs * geo.hidden,), dtype)
    ctx.set_many("State", [(state_shape, dtype)] * STATE_COUNT[geo.mode])
    ctx.set("Reserve", shape[:2] + (geo.width,), dtype)


register(
    "rnn",
    inputs=["Input", many("PreState", optional=True), many("WeightList"), optional("SequenceLength")],
    outputs=["Out", many("State"), "Reserve"],
    attrs={"dropout_prob": 0.0, "is_bidirec": False, "input_size": 10, "hidden_size": 100, "num_layers": 1,
           "mode": "LSTM", "seed": 0, "is_test": False, "time_major": True},
    infer=_rnn_infer,
    kernel=_rnn_kernel,
    grad=Gradient(_rnn_grad_kernel, inputs=("Input", "PreState", "WeightList", "SequenceLength"),
                  outputs=("Reserve",), output_grads=("Out", "State"),
                  input_grads=("Input", "PreState", "WeightList")),
    doc="a stack of LSTM / GRU / Elman (tanh, relu) layers over all time steps (see ops/rnn_fused.py)",
)
