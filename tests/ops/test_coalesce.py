"""coalesce_tensor, fused_adam, c_fused_allreduce_sum: forward against NumPy written here, both
modes, errors.  None has a gradient (declared NO_GRADIENT)."""
import threading

import numpy as np
import pytest

import headrace.fluid as fluid
from headrace.core.context import program_guard
from headrace.core.errors import DTypeError, ShapeError
from headrace.core.program import Program
from headrace.ops.apply import apply_op
from headrace.ops.coalesce import coalesce, coalesced_buffer
from headrace.ops.collective import using
from headrace.ops.kernel import context
from headrace.ops.registry import lookup
from headrace.runtime import Executor, Scope
from headrace.runtime.collective import ThreadGroup
from tests.ops.harness import Case, check_build_error, check_forward

rng = np.random.default_rng(4)
A, B, C = (rng.standard_normal(s) for s in ((2, 3), (4,), (1, 2, 2)))


def _flat(ins, attrs):
    flat = np.concatenate([np.ravel(x) for x in ins["Input"]])
    out = {"FusedOutput": flat}
    if attrs.get("output_views", True):
        out["Output"] = [np.asarray(x) for x in ins["Input"]]
    return out


def test_coalesce_forward_static():
    check_forward(Case("coalesce_tensor", {"Input": [A, B, C]}, _flat, outputs={"Output": 3}))
    check_forward(Case("coalesce_tensor", {"Input": [A, B]}, _flat, attrs={"output_views": False}))


def test_coalesce_views_and_no_copy_the_second_time():
    flat, views = coalesce([A, B, C])
    np.testing.assert_array_equal(flat, np.concatenate([A.ravel(), B.ravel(), C.ravel()]))
    assert all(v.base is flat for v in views) and coalesced_buffer(views) is flat
    again, same = coalesce(views)
    assert again is flat and all(a is b for a, b in zip(same, views))
    views[1] = views[1].copy()                      # replaced: copied into a new buffer
    third, _ = coalesce(views)
    assert third is not flat and np.array_equal(third, flat)
    assert coalesced_buffer([views[2], views[0]]) is None     # wrong order is no coalesced state


def test_coalesce_eager():
    with fluid.dygraph.guard():
        xs = [fluid.dygraph.to_variable(a) for a in (A, B)]
        out = apply_op("coalesce_tensor", {"Input": xs}, {"output_views": False})
        np.testing.assert_array_equal(out["FusedOutput"][0].numpy(), np.concatenate([A.ravel(), B.ravel()]))


def test_coalesce_errors():
    check_build_error("coalesce_tensor", {"Input": [A, B.astype("float32")]}, {"output_views": False},
                      DTypeError, match="position 1")


def _build_error(op, inputs, error, outputs):
    """Building ``op`` in place (outputs: out slot -> the input slot it writes) raises ``error``."""
    main = Program()
    with program_guard(main, Program()):
        block = main.global_block()
        ins = {}
        for slot, value in inputs.items():
            values = value if isinstance(value, list) else [value]
            ins[slot] = [block.create_var(name=f"{slot}_{i}", shape=list(np.shape(v)), dtype=str(np.asarray(v).dtype),
                                          persistable=True) for i, v in enumerate(values)]
        with pytest.raises(error) as info:
            apply_op(op, ins, outputs={out: ins[src] for out, src in outputs.items()})
    message = str(info.value)
    assert f"`{op}`" in message and "test_coalesce.py" in message, message
    return message


# --- fused_adam ---------------------------------------------------------------------------------------
def _adam_numpy(p, g, m1, m2, b1p, b2p, lr, beta1=0.9, beta2=0.999, eps=1e-8):
    """Adam with the bias correction in the step size, written out in the parameter dtype."""
    t = p.dtype.type
    m1 = t(beta1) * m1 + t(1 - beta1) * g
    m2 = t(beta2) * m2 + t(1 - beta2) * g * g
    lr_t = t(lr) * np.sqrt(t(1) - t(b2p)) / (t(1) - t(b1p))
    p = p - lr_t * m1 / (np.sqrt(m2) + t(eps) * np.sqrt(t(1) - t(b2p)))
    return p, m1, m2


def _adam_inputs(n, dtype="float64", pows=(0.9 ** 3, 0.999 ** 3)):
    ins = {"Param": rng.standard_normal(n).astype(dtype), "Grad": rng.standard_normal(n).astype(dtype),
           "LearningRate": np.array([0.01], dtype), "Moment1": rng.standard_normal(n).astype(dtype) * 0.1,
           "Moment2": rng.uniform(0, 0.1, n).astype(dtype)}
    ins["Beta1Pow"] = [np.array([pows[0]], dtype) for _ in range(3)]
    ins["Beta2Pow"] = [np.array([pows[1]], dtype) for _ in range(3)]
    return ins


def _fused_adam_reference(ins, attrs):
    p, m1, m2 = _adam_numpy(ins["Param"], ins["Grad"], ins["Moment1"], ins["Moment2"],
                            ins["Beta1Pow"][0][0], ins["Beta2Pow"][0][0], ins["LearningRate"][0])
    return {"ParamOut": p, "Moment1Out": m1, "Moment2Out": m2,
            "Beta1PowOut": [b * 0.9 for b in ins["Beta1Pow"]], "Beta2PowOut": [b * 0.999 for b in ins["Beta2Pow"]]}


def test_fused_adam_forward_matches_numpy():
    """Static: persistable state updated in place (as the fused pass builds it), two steps."""
    ins = _adam_inputs(10)
    main, scope = Program(), Scope()
    with program_guard(main, Program()):
        block = main.global_block()
        names = {}
        for slot, value in ins.items():
            values = value if isinstance(value, list) else [value]
            names[slot] = [f"{slot}_{i}" for i in range(len(values))]
            for name, v in zip(names[slot], values):
                block.create_var(name=name, shape=list(v.shape), dtype="float64", persistable=True)
                scope.var(name).get_tensor().set(v.copy())
        outs = {f"{slot}Out": names[slot] for slot in ("Param", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow")}
        block.append_op("fused_adam", names, outs)
    want = {k: (v.copy() if isinstance(v, np.ndarray) else [a.copy() for a in v]) for k, v in ins.items()}
    for _ in range(2):
        Executor().run(main, scope=scope)
        ref = _fused_adam_reference(want, {})
        want.update(Param=ref["ParamOut"], Moment1=ref["Moment1Out"], Moment2=ref["Moment2Out"],
                    Beta1Pow=ref["Beta1PowOut"], Beta2Pow=ref["Beta2PowOut"])
    for slot in ("Param", "Moment1", "Moment2"):
        np.testing.assert_allclose(np.array(scope.find_var(f"{slot}_0").get_tensor()), want[slot], rtol=1e-12)
    for i in range(3):
        np.testing.assert_allclose(np.array(scope.find_var(f"Beta1Pow_{i}").get_tensor()), want["Beta1Pow"][i],
                                   rtol=1e-15)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_adam_is_bit_identical_to_adam_per_slice(dtype):
    ins = _adam_inputs(12, dtype)
    sizes = [5, 4, 3]
    per_param = []
    offset = 0
    for size in sizes:
        part = {k: ins[k][offset:offset + size].copy() for k in ("Param", "Grad", "Moment1", "Moment2")}
        part.update(LearningRate=ins["LearningRate"], Beta1Pow=ins["Beta1Pow"][0].copy(),
                    Beta2Pow=ins["Beta2Pow"][0].copy())
        out = lookup("adam").kernel(part, dict(lookup("adam").attrs), context())
        per_param.append(out)
        offset += size
    fused_ins = {k: (v.copy() if isinstance(v, np.ndarray) else [a.copy() for a in v]) for k, v in ins.items()}
    fused = lookup("fused_adam").kernel(fused_ins, dict(lookup("fused_adam").attrs), context())
    for slot in ("ParamOut", "Moment1Out", "Moment2Out"):
        np.testing.assert_array_equal(fused[slot], np.concatenate([o[slot] for o in per_param]))
    for b in fused["Beta1PowOut"]:
        np.testing.assert_array_equal(b, per_param[0]["Beta1PowOut"])


def test_fused_adam_unequal_powers_and_bad_shapes():
    ins = _adam_inputs(6)
    ins["Beta1Pow"][2] = np.array([0.5])
    with pytest.raises(ValueError, match="Beta1Pow accumulators differ"):
        lookup("fused_adam").kernel(ins, dict(lookup("fused_adam").attrs), context())
    bad = _adam_inputs(6)
    bad["Moment1"] = bad["Moment1"][:5]
    message = _build_error("fused_adam", bad, ShapeError, {
        f"{slot}Out": slot for slot in ("Param", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow")})
    assert "`Moment1`" in message and "[6]" in message


def test_fused_adam_eager():
    ins = _adam_inputs(6)
    want = _fused_adam_reference({k: (v.copy() if isinstance(v, np.ndarray) else [a.copy() for a in v])
                                  for k, v in ins.items()}, {})
    with fluid.dygraph.guard():
        tensors = {k: (fluid.dygraph.to_variable(v) if isinstance(v, np.ndarray)
                       else [fluid.dygraph.to_variable(a) for a in v]) for k, v in ins.items()}
        outs = {f"{slot}Out": tensors[slot] for slot in ("Param", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow")}
        apply_op("fused_adam", tensors, outputs=outs)
        np.testing.assert_allclose(tensors["Param"].numpy(), want["ParamOut"], rtol=1e-12)
        np.testing.assert_allclose(tensors["Beta2Pow"][1].numpy(), want["Beta2PowOut"][1], rtol=1e-15)


# --- c_fused_allreduce_sum ----------------------------------------------------------------------------
def test_fused_allreduce_alone_is_the_identity():
    check_forward(Case("c_fused_allreduce_sum", {"X": [A, B]}, lambda ins, attrs: {"Out": list(ins["X"])},
                       outputs={"Out": 2}))
    with fluid.dygraph.guard():
        xs = [fluid.dygraph.to_variable(a) for a in (A, B)]
        outs = [fluid.dygraph.to_variable(np.zeros_like(a)) for a in (A, B)]
        apply_op("c_fused_allreduce_sum", {"X": xs}, outputs={"Out": outs})
        np.testing.assert_array_equal(outs[1].numpy(), B)


def test_fused_allreduce_sums_over_places_with_one_collective():
    group = ThreadGroup(2)
    data = [[rng.standard_normal((2, 3)), rng.standard_normal(4)] for _ in range(2)]
    results, calls = [None, None], []

    def run(rank):
        comm = group.communicator(rank)
        original = comm.all_reduce_sum

        def counted(array):
            calls.append(rank)
            return original(array)
        comm.all_reduce_sum = counted
        with using(comm):
            results[rank] = lookup("c_fused_allreduce_sum").kernel({"X": data[rank]}, {}, context())["Out"]
    threads = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(calls) == [0, 1]                     # one collective per rank for the whole bucket
    for rank in range(2):
        for i in range(2):
            np.testing.assert_array_equal(results[rank][i], data[0][i] + data[1][i])


def test_fused_allreduce_dtype_mismatch():
    message = _build_error("c_fused_allreduce_sum", {"X": [A, B.astype("float32")]}, DTypeError, {"Out": "X"})
    assert "position 1" in message
