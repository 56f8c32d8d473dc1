"""Update ops (sgd, momentum, adam) against the formulas written out in NumPy, float64 and float32,
several steps, in place; and their build-time checks."""
import numpy as np
import pytest

from headrace.core.errors import AttrError, DTypeError, ShapeError
from headrace.core.context import program_guard
from headrace.core.program import Program
from headrace.runtime import Executor, Scope
from tests.ops.harness import check_build_error

rng = np.random.default_rng(7)


def _run_steps(op, state, attrs, grads, lr):
    """Run ``op`` once per gradient on persistable state; returns the state after each step."""
    main = Program()
    scope = Scope()
    with program_guard(main, Program()):
        block = main.global_block()
        slots = {}
        for slot, value in state.items():
            block.create_var(name=slot, shape=list(value.shape), dtype=value.dtype.name, persistable=True)
            scope.var(slot).get_tensor().set(value)
            slots[slot] = [slot]
        block.create_var(name="LearningRate", shape=[1], dtype="float32", persistable=True)
        scope.var("LearningRate").get_tensor().set(np.array([lr], np.float32))
        g = block.create_var(name="Grad", shape=list(grads[0].shape), dtype=grads[0].dtype.name, is_data=True)
        ins = {**slots, "Grad": [g.name], "LearningRate": ["LearningRate"]}
        outs = {f"{slot}Out": [slot] for slot in state}
        block.append_op(op, ins, outs, attrs)
    history = []
    for grad in grads:
        Executor().run(main, feed={"Grad": grad}, scope=scope)
        history.append({slot: np.array(scope.find_var(slot).get_tensor()) for slot in state})
    return history


def _sgd_ref(state, grad, lr, attrs):
    return {"Param": state["Param"] - lr * grad}


def _momentum_ref(state, grad, lr, attrs):
    mu = attrs.get("mu", 0.9)
    g = grad * attrs.get("rescale_grad", 1.0)
    v = mu * state["Velocity"] + g
    if attrs.get("use_nesterov", False):
        p = state["Param"] - (g + mu * v) * lr
    else:
        p = state["Param"] - lr * v
    return {"Param": p, "Velocity": v}


def _adam_ref(state, grad, lr, attrs):
    b1, b2, eps = attrs.get("beta1", 0.9), attrs.get("beta2", 0.999), attrs.get("epsilon", 1e-8)
    m1 = b1 * state["Moment1"] + (1 - b1) * grad
    m2 = b2 * state["Moment2"] + (1 - b2) * grad ** 2
    p1, p2 = state["Beta1Pow"], state["Beta2Pow"]
    lr_t = lr * np.sqrt(1 - p2) / (1 - p1)
    p = state["Param"] - lr_t * (m1 / (np.sqrt(m2) + eps * np.sqrt(1 - p2)))
    return {"Param": p, "Moment1": m1, "Moment2": m2, "Beta1Pow": p1 * b1, "Beta2Pow": p2 * b2}


def _initial(op, shape, dtype, attrs):
    param = rng.normal(size=shape).astype(dtype)
    if op == "sgd":
        return {"Param": param}
    if op == "momentum":
        return {"Param": param, "Velocity": rng.normal(size=shape).astype(dtype)}
    return {"Param": param, "Moment1": np.zeros(shape, dtype), "Moment2": np.zeros(shape, dtype),
            "Beta1Pow": np.array([attrs.get("beta1", 0.9)], dtype),
            "Beta2Pow": np.array([attrs.get("beta2", 0.999)], dtype)}


REFS = {"sgd": _sgd_ref, "momentum": _momentum_ref, "adam": _adam_ref}
CASES = [
    ("sgd", {}),
    ("momentum", {"mu": 0.9}),
    ("momentum", {"mu": 0.5, "use_nesterov": True}),
    ("momentum", {"mu": 0.8, "rescale_grad": 0.25}),
    ("adam", {}),
    ("adam", {"beta1": 0.5, "beta2": 0.9, "epsilon": 1e-4}),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op,attrs", CASES, ids=[f"{o}-{a}" for o, a in CASES])
def test_trajectory_matches_formula(op, attrs, dtype):
    shape = (3, 4)
    state = _initial(op, shape, dtype, attrs)
    grads = [rng.normal(size=shape).astype(dtype) for _ in range(4)]
    lr = 0.05
    lr_used = float(np.float32(lr))  # the learning-rate variable is float32, as in the reference
    history = _run_steps(op, state, attrs, grads, lr)
    ref = {k: v.astype(np.float64) for k, v in state.items()}
    tol = 1e-12 if dtype == "float64" else 2e-6
    for step, grad in enumerate(grads):
        ref = {**ref, **REFS[op](ref, grad.astype(np.float64), lr_used, attrs)}
        for slot, got in history[step].items():
            assert got.dtype == np.dtype(dtype)
            np.testing.assert_allclose(got, ref[slot], rtol=tol, atol=tol, err_msg=f"{op} step {step} {slot}")


def test_update_is_in_place():
    """The parameter buffer is updated in place: no new parameter-sized array per step."""
    state = _initial("momentum", (5,), "float64", {})
    main = Program()
    scope = Scope()
    with program_guard(main, Program()):
        block = main.global_block()
        for slot in ("Param", "Velocity"):
            block.create_var(name=slot, shape=[5], dtype="float64", persistable=True)
            scope.var(slot).get_tensor().set(state[slot])
        block.create_var(name="lr", shape=[1], dtype="float32", persistable=True)
        scope.var("lr").get_tensor().set(np.array([0.1], np.float32))
        block.create_var(name="g", shape=[5], dtype="float64", is_data=True)
        block.append_op("momentum", {"Param": ["Param"], "Grad": ["g"], "Velocity": ["Velocity"],
                                     "LearningRate": ["lr"]},
                        {"ParamOut": ["Param"], "VelocityOut": ["Velocity"]})
    before = scope._get_array("Param")
    Executor().run(main, feed={"g": np.ones(5)}, scope=scope)
    assert scope._get_array("Param") is before


def test_grad_shape_mismatch_is_a_build_error():
    message = check_build_error("sgd", {"Param": np.ones((3, 4)), "Grad": np.ones((4, 3)),
                                        "LearningRate": np.ones(1, np.float32)},
                                {}, ShapeError)
    assert "`Grad`" in message and "[3, 4]" in message


def test_learning_rate_must_be_one_element():
    check_build_error("sgd", {"Param": np.ones((3,)), "Grad": np.ones((3,)),
                              "LearningRate": np.ones(2, np.float32)}, {}, ShapeError, match="LearningRate")


def test_grad_dtype_must_match_param():
    check_build_error("sgd", {"Param": np.ones((3,)), "Grad": np.ones((3,), np.float32),
                              "LearningRate": np.ones(1, np.float32)}, {}, DTypeError)


def test_adam_beta_out_of_range_is_a_build_error():
    z = np.zeros((2,))
    check_build_error("adam", {"Param": z, "Grad": z, "LearningRate": np.ones(1, np.float32),
                               "Moment1": z, "Moment2": z, "Beta1Pow": np.ones(1), "Beta2Pow": np.ones(1)},
                      {"beta1": 1.0}, AttrError, match="beta1")
