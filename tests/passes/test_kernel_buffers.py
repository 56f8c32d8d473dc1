"""Kernels that accept ``out=`` (ops/buffers.py): a handed buffer of the right shape, dtype and
layout is used and gives bit-identical values; any other buffer is ignored and left untouched;
an op's ``inplace`` input handed as its own output buffer gives the same values too."""
import numpy as np
import pytest

from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup

RNG = np.random.default_rng(0)
G = grad_slot


def r(*shape, dtype="float32", positive=False, scale=1.0):
    a = RNG.standard_normal(shape) * scale
    return (np.abs(a) + 0.5 if positive else a).astype(dtype)


def labels(n, depth):
    return RNG.integers(0, depth, (n, 1)).astype("int64")


def soft(n, depth):
    p = RNG.random((n, depth)).astype("float32")
    return p / p.sum(axis=1, keepdims=True)


# (op type, inputs, attrs, wanted output slots (grad ops) or None, output slots that must take a buffer)
CASES = []
for _t in ("elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "elementwise_max",
           "elementwise_min"):
    CASES.append((_t, {"X": r(4, 5), "Y": r(5, positive=True)}, {}, None, ["Out"]))
CASES.append(("elementwise_pow", {"X": r(4, 5, positive=True), "Y": r(4, 5)}, {}, None, ["Out"]))
CASES.append(("elementwise_add", {"X": r(2, 3, 4), "Y": r(3)}, {"axis": 1}, None, ["Out"]))
CASES.append(("less_than", {"X": r(4, 5), "Y": r(4, 5)}, {}, None, ["Out"]))
CASES.append(("elementwise_sub_grad", {"X": r(4, 5), "Y": r(4, 5), G("Out"): r(4, 5)}, {}, [G("X"), G("Y")],
              [G("Y")]))
for _t in ("elementwise_mul_grad", "elementwise_max_grad", "elementwise_min_grad"):
    CASES.append((_t, {"X": r(4, 5), "Y": r(4, 5), G("Out"): r(4, 5)}, {}, [G("X"), G("Y")], [G("X"), G("Y")]))
CASES.append(("elementwise_mul_grad", {"X": r(4, 5), "Y": r(5), G("Out"): r(4, 5)}, {}, [G("X"), G("Y")], [G("X")]))
CASES.append(("elementwise_div_grad", {"X": r(4, 5), "Y": r(4, 5, positive=True), "Out": r(4, 5),
                                       G("Out"): r(4, 5)}, {}, [G("X"), G("Y")], [G("X"), G("Y")]))
CASES.append(("elementwise_pow_grad", {"X": r(4, 5, positive=True), "Y": r(4, 5), "Out": r(4, 5),
                                       G("Out"): r(4, 5)}, {}, [G("X"), G("Y")], [G("X"), G("Y")]))
for _t, _pos, _attrs in (("relu", False, {}), ("leaky_relu", False, {"alpha": 0.1}), ("sigmoid", False, {}),
                         ("tanh", False, {}), ("gelu", False, {}), ("gelu", False, {"approximate": True}),
                         ("log", True, {}), ("exp", False, {}), ("sqrt", True, {}), ("square", False, {}),
                         ("abs", False, {})):
    for _dtype in ("float32", "float64"):
        _x = r(6, 7, dtype=_dtype, positive=_pos, scale=8.0)
        CASES.append((_t, {"X": _x}, _attrs, None, ["Out"]))
        _out = np.asarray(lookup(_t).kernel({"X": _x}, dict(lookup(_t).attrs, **_attrs), context())["Out"])
        _reads = {slot.name for slot in lookup(f"{_t}_grad").inputs}    # X and/or Out, and Out@GRAD
        _ins = {slot: value for slot, value in (("X", _x), ("Out", _out)) if slot in _reads}
        CASES.append((f"{_t}_grad", {**_ins, G("Out"): r(6, 7, dtype=_dtype)}, _attrs, [G("X")], [G("X")]))
CASES.append(("square", {"X": RNG.integers(-9, 9, (3, 4)).astype("int64")}, {}, None, ["Out"]))
for _axis in (-1, 0):
    CASES.append(("softmax", {"X": r(5, 6, scale=4.0)}, {"axis": _axis}, None, ["Out"]))
    _o = lookup("softmax").kernel({"X": r(5, 6)}, {"axis": _axis}, context())["Out"]
    CASES.append(("softmax_grad", {"Out": _o, G("Out"): r(5, 6)}, {"axis": _axis}, [G("X")], [G("X")]))
CASES.append(("mul", {"X": r(8, 5), "Y": r(5, 3)}, {}, None, ["Out"]))
CASES.append(("mul", {"X": r(2, 3, 4), "Y": r(4, 6)}, {"x_num_col_dims": 2}, None, ["Out"]))
CASES.append(("mul_grad", {"X": r(2, 3, 4), "Y": r(4, 6), G("Out"): r(2, 3, 6)}, {"x_num_col_dims": 2},
              [G("X"), G("Y")], [G("X"), G("Y")]))
for _tx in (False, True):
    for _ty in (False, True):
        _xs, _ys = ((5, 4) if _tx else (4, 5)), ((3, 5) if _ty else (5, 3))
        _a = {"trans_x": _tx, "trans_y": _ty}
        CASES.append(("matmul_v2", {"X": r(*_xs), "Y": r(*_ys)}, _a, None, ["Out"]))
        CASES.append(("matmul_v2_grad", {"X": r(*_xs), "Y": r(*_ys), G("Out"): r(4, 3)}, _a, [G("X"), G("Y")],
                      [G("X"), G("Y")]))
        CASES.append(("matmul_v2_grad", {"X": r(2, *_xs), "Y": r(*_ys), G("Out"): r(2, 4, 3)}, _a,
                      [G("X"), G("Y")], [G("X")] + ([G("Y")] if not _tx else [])))
CASES.append(("matmul_v2", {"X": r(2, 4, 5), "Y": r(5, 3)}, {}, None, ["Out"]))
CASES.append(("matmul_v2", {"X": r(2, 4, 5), "Y": r(2, 5, 3)}, {}, None, ["Out"]))
CASES.append(("matmul_v2", {"X": r(5), "Y": r(5, 3)}, {}, None, []))  # a 1-D operand: no buffer
CASES.append(("fused_gemm_epilogue", {"X": r(2, 4, 5), "Y": r(5, 3), "Bias": r(3)}, {}, None, ["Out"]))
CASES.append(("fused_gemm_epilogue_grad", {"X": r(4, 5), "Y": r(5, 3), "Bias": r(3), G("Out"): r(4, 3)}, {},
              [G("X"), G("Y"), G("Bias")], [G("X"), G("Y")]))
CASES.append(("matmul", {"X": r(4, 5), "Y": r(5, 3)}, {"alpha": 2.5}, None, ["Out"]))
CASES.append(("matmul_grad", {"X": r(4, 5), "Y": r(5, 3), G("Out"): r(4, 3)}, {"alpha": 2.5},
              [G("X"), G("Y")], [G("X"), G("Y")]))
CASES.append(("softmax_with_cross_entropy", {"Logits": r(6, 5, scale=3.0), "Label": labels(6, 5)}, {}, None,
              ["Softmax"]))
CASES.append(("softmax_with_cross_entropy", {"Logits": r(6, 5), "Label": soft(6, 5)}, {"soft_label": True},
              None, ["Softmax"]))
_sm = lookup("softmax").kernel({"X": r(6, 5)}, {"axis": -1}, context())["Out"]
_lab = labels(6, 5)
_lab[2, 0] = -100
CASES.append(("softmax_with_cross_entropy_grad", {"Softmax": _sm, "Label": _lab, G("Loss"): r(6, 1)}, {},
              [G("Logits")], [G("Logits")]))
CASES.append(("softmax_with_cross_entropy_grad", {"Softmax": _sm, "Label": soft(6, 5), G("Loss"): r(6, 1)},
              {"soft_label": True}, [G("Logits")], [G("Logits")]))
CASES.append(("mean_grad", {"X": r(4, 5), G("Out"): np.asarray(0.7, dtype="float32")}, {}, [G("X")], [G("X")]))


def _call(op_type, ins, attrs, wanted, out=None):
    opdef = lookup(op_type)
    attrs = dict(opdef.attrs, **attrs)
    ins = {k: v.copy() for k, v in ins.items()}
    return opdef.kernel(ins, attrs, context(wanted or (), out)), ins


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _misfits(value):
    """Buffers a kernel must ignore: wrong shape, wrong dtype, not C-contiguous, read-only."""
    bad = [np.zeros((value.size + 1,), value.dtype),
           np.zeros(value.shape, np.float16 if value.dtype != np.float16 else np.float32)]
    if value.ndim >= 2 and value.shape[-1] > 1 and value.shape[-2] > 1:
        bad.append(np.zeros(value.shape, value.dtype, order="F"))
    frozen = np.zeros(value.shape, value.dtype)
    frozen.flags.writeable = False
    bad.append(frozen)
    return bad


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_kernel_buffers(case):
    op_type, ins, attrs, wanted, takes = case
    assert lookup(op_type).buffers
    plain, _ = _call(op_type, ins, attrs, wanted)
    plain = {k: np.asarray(v).copy() for k, v in plain.items()}
    for slot, value in plain.items():
        # a fitting buffer (filled with garbage) is used exactly when the kernel can write the result
        buf = np.full(value.shape, 7, value.dtype)
        got, seen = _call(op_type, ins, attrs, wanted, out={slot: buf})
        assert (got[slot] is buf) == (slot in takes), slot
        for k in plain:
            assert _same_bits(got[k], plain[k]), (slot, k)
        for k in ins:  # no input touched
            assert _same_bits(seen[k], ins[k]), k
        for bad in _misfits(value):
            before = bad.copy()
            got, _ = _call(op_type, ins, attrs, wanted, out={slot: bad})
            assert got[slot] is not bad and not np.may_share_memory(np.asarray(got[slot]), bad)
            assert _same_bits(got[slot], plain[slot]) and _same_bits(bad, before)
    # the op's inplace input handed as the output buffer
    for out_slot, in_slot in lookup(op_type).inplace.items():
        if out_slot not in plain or plain[out_slot].shape != ins[in_slot].shape \
                or plain[out_slot].dtype != ins[in_slot].dtype:
            continue
        opdef = lookup(op_type)
        shared = {k: v.copy() for k, v in ins.items()}
        handed = {out_slot: shared[in_slot]}
        got = opdef.kernel(shared, dict(opdef.attrs, **attrs), context(wanted or (), handed))
        assert got[out_slot] is handed[out_slot]
        for k in plain:
            assert _same_bits(got[k], plain[k]), (out_slot, k)


def test_every_case_family_is_covered():
    """The kernels the brief names accept out= (activation grads included)."""
    for op_type in ("elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "relu", "relu_grad",
                    "sigmoid", "sigmoid_grad", "tanh_grad", "exp", "sqrt", "square", "leaky_relu", "gelu",
                    "softmax", "softmax_grad", "mul", "mul_grad", "matmul", "matmul_grad", "matmul_v2",
                    "matmul_v2_grad", "elementwise_add_grad", "softmax_with_cross_entropy",
                    "softmax_with_cross_entropy_grad", "mean_grad"):
        assert lookup(op_type).buffers, op_type
