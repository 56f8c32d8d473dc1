"""Convolution, pooling and batch-norm kernels split over threads (im2col/col2im copies, pooling
over pieces of the batch: ops/parallel.py ``split_range``; batch norm's element-wise passes:
``parallel.chunked``) give the bits of the one-thread kernel with 1, 2
and 3 threads, for every geometry the kernels branch on.  The pieces' minimum size is lowered so
that these small arrays split."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops import parallel
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

RNG = np.random.default_rng(5)
G = grad_slot


def r(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _kernel(op, ins, attrs, wanted):
    opdef = lookup(op)
    return opdef.kernel(ins, dict(opdef.attrs, **attrs), context(wanted))


CONV = [  # (input shape, filter shape, attrs)
    ((5, 4, 9, 8), (6, 4, 3, 3), {}),
    ((5, 4, 9, 8), (6, 4, 3, 2), {"paddings": [1, 2, 0, 1], "strides": [2, 1]}),
    ((3, 6, 10, 9), (4, 3, 3, 3), {"groups": 2, "dilations": [2, 1], "paddings": [1, 1]}),
    ((4, 9, 7, 4), (8, 4, 2, 2), {"data_format": "NHWC", "paddings": [1, 0]}),
    ((7, 1, 12, 12), (5, 1, 3, 3), {}),                                   # per-sample Filter@GRAD
    ((3, 4, 8, 8), (4, 1, 3, 3), {"groups": 4, "paddings": [1, 1]}),       # depthwise-like
]
POOL = [  # (input shape, attrs)
    ((5, 3, 8, 8), {"ksize": [2, 2], "strides": [2, 2]}),
    ((5, 3, 9, 7), {"ksize": [2, 2], "strides": [2, 2]}),                  # uncovered last row/col
    ((4, 3, 9, 9), {"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}),   # overlapping
    ((4, 3, 9, 9), {"ksize": [2, 3], "strides": [3, 3], "ceil_mode": True}),   # gaps, overhang
    ((4, 7, 7, 3), {"ksize": [2, 2], "strides": [2, 2], "data_format": "NHWC"}),
    ((4, 3, 9, 9), {"ksize": [3, 3], "strides": [2, 2], "pooling_type": "avg", "paddings": [1, 1]}),
]


def _conv_runs(x_shape, w_shape, attrs):
    x, w = r(*x_shape), r(*w_shape)
    out = _kernel("conv2d", {"Input": x, "Filter": w}, attrs, ())["Output"]
    grads = _kernel("conv2d_grad", {"Input": x, "Filter": w, G("Output"): r(*out.shape)}, attrs,
                    (G("Input"), G("Filter")))
    return {"Output": out, **grads}


def _pool_runs(x_shape, attrs):
    x = np.maximum(r(*x_shape), 0)          # ties (zeros) exercise the first-maximum rule
    out = _kernel("pool2d", {"X": x}, attrs, ())["Out"]
    dout = r(*out.shape)
    result = {"Out": out}
    for with_out in (True, False):
        ins = {"X": x, G("Out"): dout, **({"Out": out} if with_out else {})}
        result[f"X@GRAD (Out given: {with_out})"] = _kernel("pool2d_grad", ins, attrs, (G("X"),))[G("X")]
    return result


BATCH_NORM = [  # (input shape, attrs)
    ((6, 5, 4, 3), {}),
    ((6, 4, 3, 5), {"data_layout": "NHWC"}),
    ((7, 5, 9), {"use_global_stats": True}),
]


def _bn_runs(x_shape, attrs):
    x = r(*x_shape)
    c = x_shape[-1] if attrs.get("data_layout") == "NHWC" else x_shape[1]
    ins = {"X": x, "Scale": r(c), "Bias": r(c), "Mean": r(c), "Variance": np.abs(r(c)) + 0.5}
    fwd = _kernel("batch_norm", ins, attrs, ())
    grad_ins = {"X": x, "Scale": ins["Scale"], "SavedMean": fwd["SavedMean"],
                "SavedVariance": fwd["SavedVariance"], G("Y"): r(*x_shape)}
    grads = _kernel("batch_norm_grad", grad_ins, attrs, (G("X"), G("Scale"), G("Bias")))
    return {**fwd, **grads}


@pytest.fixture
def threads(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 16)
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    yield lambda count: paddle.set_flags({"FLAGS_paddle_num_threads": count})
    paddle.set_flags(old)


def _same_bits_for_thread_counts(threads, run):
    results = []
    for count in (1, 2, 3):
        threads(count)
        state = RNG.bit_generator.state
        results.append({k: (v.dtype, v.shape, np.asarray(v).tobytes()) for k, v in run().items()})
        RNG.bit_generator.state = state
    assert results[1] == results[0] and results[2] == results[0]


@pytest.mark.parametrize("x_shape, w_shape, attrs", CONV)
def test_conv_threads_give_the_bits_of_one_thread(threads, x_shape, w_shape, attrs):
    _same_bits_for_thread_counts(threads, lambda: _conv_runs(x_shape, w_shape, attrs))


@pytest.mark.parametrize("x_shape, attrs", POOL)
def test_pool_threads_give_the_bits_of_one_thread(threads, x_shape, attrs):
    _same_bits_for_thread_counts(threads, lambda: _pool_runs(x_shape, attrs))


@pytest.mark.parametrize("x_shape, attrs", BATCH_NORM)
def test_batch_norm_threads_give_the_bits_of_one_thread(threads, x_shape, attrs):
    _same_bits_for_thread_counts(threads, lambda: _bn_runs(x_shape, attrs))


def test_the_conv_pool_and_batch_norm_kernels_really_split(threads, monkeypatch):
    """The split path runs (not only the serial fallback): count the pieces."""
    threads(2)
    calls = []
    real = parallel.run_pieces
    monkeypatch.setattr(parallel, "run_pieces", lambda fn, pieces: (calls.append(len(pieces)), real(fn, pieces)))
    _conv_runs((4, 3, 8, 8), (5, 3, 3, 3), {"paddings": [1, 1]})
    assert calls and min(calls) >= 2
    calls.clear()
    _pool_runs((4, 3, 8, 8), {"ksize": [2, 2], "strides": [2, 2]})
    assert len(calls) == 3 and min(calls) >= 2   # forward, gradient with Out, recomputing Out
    calls.clear()
    _bn_runs((6, 5, 4, 3), {})
    # x - mean, scale and shift; x_hat, X@GRAD: chunked() hands out up to PIECES_PER_THREAD
    # pieces per thread, so each pass is split in more than one piece (not how many exactly)
    assert len(calls) == 4 and all(n > 1 for n in calls), calls
