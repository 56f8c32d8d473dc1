"""Kernels split over threads (ops/parallel.py) give the bits of the one-thread kernel: with 1, 2
and 3 threads, fresh outputs and handed buffers (an inplace input too), odd shapes.  The pieces'
minimum size is lowered so that these small arrays split."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops import parallel
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

RNG = np.random.default_rng(3)
G = grad_slot


def r(*shape, dtype="float32", positive=False, scale=3.0):
    a = RNG.standard_normal(shape) * scale
    return (np.abs(a) + 0.5 if positive else a).astype(dtype)


def _forward(op, x, attrs=None):
    return lookup(op).kernel({"X": x}, dict(lookup(op).attrs, **(attrs or {})), context())["Out"]


# (op type, inputs, attrs, wanted slots of a grad op or None, (slot, input it may share) buffers)
CASES = []
for _t in ("elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "elementwise_max"):
    CASES.append((_t, {"X": r(7, 13, 31), "Y": r(31, positive=True)}, {}, None, ("Out", "X")))
CASES.append(("elementwise_add", {"X": r(5, 9, 11), "Y": r(9, 1)}, {"axis": 1}, None, ("Out", "X")))
CASES.append(("elementwise_mul", {"X": r(3, 1, 17), "Y": r(3, 19, 1)}, {}, None, ("Out", None)))
CASES.append(("elementwise_add", {"X": r(41, 23).T, "Y": r(23, 41)}, {}, None, ("Out", None)))  # transposed
CASES.append(("less_than", {"X": r(9, 101), "Y": r(101)}, {}, None, ("Out", None)))
for _t in ("elementwise_mul_grad", "elementwise_div_grad", "elementwise_pow_grad", "elementwise_sub_grad"):
    _x, _y = r(6, 17, 29, positive=True), r(29, positive=True)
    CASES.append((_t, {"X": _x, "Y": _y, "Out": _x / _y, G("Out"): r(6, 17, 29)}, {}, [G("X"), G("Y")],
                  (G("X"), G("Out"))))
CASES.append(("elementwise_mul_grad", {"X": r(11, 37), "Y": r(11, 37), G("Out"): r(11, 37)}, {},
              [G("X"), G("Y")], (G("Y"), None)))
for _t, _attrs, _pos in (("relu", {}, False), ("sigmoid", {}, False), ("tanh", {}, False), ("gelu", {}, False),
                         ("gelu", {"approximate": True}, False), ("leaky_relu", {"alpha": 0.1}, False),
                         ("sqrt", {}, True), ("exp", {}, False)):
    for _dtype in ("float32", "float64"):
        _x = r(13, 3, 37, dtype=_dtype, positive=_pos)
        CASES.append((_t, {"X": _x}, _attrs, None, ("Out", "X")))
        _reads = {slot.name for slot in lookup(f"{_t}_grad").inputs}
        _ins = {s: v for s, v in (("X", _x), ("Out", _forward(_t, _x, _attrs))) if s in _reads}
        CASES.append((f"{_t}_grad", {**_ins, G("Out"): r(13, 3, 37, dtype=_dtype)}, _attrs, [G("X")],
                      (G("X"), G("Out"))))
CASES.append(("tanh", {"X": r(37, 29)[:, ::2]}, {}, None, ("Out", None)))   # a strided input
for _axis, _shape in ((-1, (7, 5, 33)), (1, (6, 9, 13)), (0, (21, 8))):
    _x = r(*_shape)
    CASES.append(("softmax", {"X": _x}, {"axis": _axis}, None, ("Out", "X")))
    CASES.append(("softmax_grad", {"Out": _forward("softmax", _x, {"axis": _axis}), G("Out"): r(*_shape)},
                  {"axis": _axis}, [G("X")], (G("X"), G("Out"))))
for _shape, _axis in (((6, 11, 45), 2), ((9, 4, 7), 1)):
    _x, _width = r(*_shape), int(np.prod(_shape[_axis:]))
    _ins = {"X": _x, "Scale": r(_width), "Bias": r(_width)}
    CASES.append(("layer_norm", _ins, {"begin_norm_axis": _axis}, None, ("Y", None)))
    _fwd = lookup("layer_norm").kernel(_ins, {"begin_norm_axis": _axis, "epsilon": 1e-5}, context())
    CASES.append(("layer_norm_grad", {**_ins, "Mean": _fwd["Mean"], "Variance": _fwd["Variance"],
                                      G("Y"): r(*_shape)}, {"begin_norm_axis": _axis},
                  [G("X"), G("Scale"), G("Bias")], (G("X"), None)))

_logits, _labels = r(600, 1000), RNG.integers(0, 1000, (600, 1)).astype(np.int64)   # 3 row blocks
_labels[5, 0] = -100                                                                     # ignored
CASES.append(("softmax_with_cross_entropy", {"Logits": _logits, "Label": _labels}, {}, None, ("Softmax", "Logits")))
_softmax = lookup("softmax_with_cross_entropy").kernel(
    {"Logits": _logits, "Label": _labels}, dict(lookup("softmax_with_cross_entropy").attrs), context())["Softmax"]
CASES.append(("softmax_with_cross_entropy_grad", {"Label": _labels, "Softmax": _softmax, G("Loss"): r(600, 1)}, {},
              [G("Logits")], (G("Logits"), "Softmax")))

_p = r(17, 33)
CASES.append(("adam", {"Param": _p, "Grad": r(17, 33), "Moment1": r(17, 33), "Moment2": r(17, 33, positive=True),
                       "LearningRate": np.array([0.1], "float32"), "Beta1Pow": np.array([0.9], "float32"),
                       "Beta2Pow": np.array([0.99], "float32")}, {}, None, None))


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 16)
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    yield lambda count: paddle.set_flags({"FLAGS_paddle_num_threads": count})
    paddle.set_flags(old)


def _run(op, ins, attrs, wanted, buffer):
    opdef = lookup(op)
    ins = {k: v.copy() if isinstance(v, np.ndarray) and v.flags.c_contiguous else v for k, v in ins.items()}
    out = {}
    if buffer is not None:
        slot, shared = buffer
        out[slot] = ins[shared] if shared else None
    result = opdef.kernel(ins, dict(opdef.attrs, **attrs), context(wanted or (), out=out))
    return {k: np.array(v, copy=True) for k, v in result.items()}, out


def _bits(result):
    return {k: (v.dtype, v.shape, v.tobytes()) for k, v in result.items()}


@pytest.mark.parametrize("op, ins, attrs, wanted, buffer", CASES, ids=[c[0] for c in CASES])
def test_threads_give_the_bits_of_one_thread(small_pieces, op, ins, attrs, wanted, buffer):
    small_pieces(1)
    expected, _ = _run(op, ins, attrs, wanted, None)
    if buffer is None:   # an in-place update: its inputs are copied for every run
        for count in (2, 3):
            small_pieces(count)
            assert _bits(_run(op, ins, attrs, wanted, None)[0]) == _bits(expected), f"{count} threads"
        return
    slot = buffer[0]
    shared = lookup(op).inplace.get(slot)   # only the input the op declares may be its buffer
    like = expected[slot]
    for count in (1, 2, 3):
        small_pieces(count)
        fresh, _ = _run(op, ins, attrs, wanted, None)
        assert _bits(fresh) == _bits(expected), f"{count} threads, fresh outputs"
        handed = np.empty(like.shape, like.dtype)
        got, _ = _run(op, ins, attrs, wanted, (slot, shared))
        assert _bits(got) == _bits(expected), f"{count} threads, {shared or 'no'} input as buffer"
        opdef = lookup(op)
        result = opdef.kernel(dict(ins), dict(opdef.attrs, **attrs), context(wanted or (), out={slot: handed}))
        assert _bits({k: np.asarray(v) for k, v in result.items()}) == _bits(expected), f"{count} threads, buffer"


def test_the_gelu_kernel_really_splits(small_pieces, monkeypatch):
    """The split path runs (not only the serial fallback): count the pieces."""
    small_pieces(2)
    calls = []
    real = parallel.run_pieces
    monkeypatch.setattr(parallel, "run_pieces", lambda fn, pieces: (calls.append(len(pieces)), real(fn, pieces)))
    x = r(64, 33)
    _forward("gelu", x)
    _forward("tanh", x)
    grad = lookup("gelu_grad")
    grad.kernel({"X": x, "Out": _forward("gelu", x), G("Out"): x}, grad.attrs, context([G("X")]))
    assert len(calls) == 4 and all(count > 1 for count in calls)


@pytest.mark.parametrize("attrs", [{"scale": 0.125}, {"scale": -3.7, "bias": 1.25},
                                   {"scale": 3.1, "bias": -0.3, "bias_after_scale": False}])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scale_gives_the_bits_of_one_thread(small_pieces, attrs, dtype):
    x = r(7, 19, 23, dtype=dtype)
    opdef = lookup("scale")
    runs = []
    for count in (1, 2, 3):
        small_pieces(count)
        runs.append(opdef.kernel({"X": x}, dict(opdef.attrs, **attrs), context())["Out"])
    assert runs[0].dtype == x.dtype and runs[0].flags.c_contiguous
    want = (x * attrs["scale"] + attrs.get("bias", 0.0) if attrs.get("bias_after_scale", True)
            else (x + attrs["bias"]) * attrs["scale"])
    assert runs[0].tobytes() == want.astype(dtype).tobytes()
    assert all(run.tobytes() == runs[0].tobytes() for run in runs[1:])


@pytest.mark.parametrize("source, target", [("float32", "float64"), ("float64", "float32"), ("float32", "int32"),
                                            ("float64", "float16"), ("int64", "float32")])
def test_cast_gives_the_bits_of_astype(small_pieces, source, target):
    x = r(9, 31, 7, dtype="float64") * 1e3   # values that round, truncate or overflow float16
    x = x.astype(source)
    opdef = lookup("cast")
    want = x.astype(target)
    for count in (1, 2, 3):
        small_pieces(count)
        with np.errstate(over="ignore", invalid="ignore"):
            got = opdef.kernel({"X": x}, dict(opdef.attrs, out_dtype=target), context())["Out"]
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), f"{count} threads"
