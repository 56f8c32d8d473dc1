"""fuse_all_optimizer_ops over the elementwise update ops of ops/optim_more.py (adagrad,
decayed_adagrad, rmsprop, adadelta): one fused update per group, bit-identical to the
per-parameter updates; norm-based (lamb) and per-parameter-attribute (adamw) updates stay unfused."""
import numpy as np
import pytest

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.core.context import program_guard
from headrace.core.program import Program
from headrace.passes import PassContext, run_passes
from tests.passes.dp_nets import train
from tests.passes.test_fuse_optimizer import compiled, feeds

O = paddle.optimizer
MAKERS = {
    "adagrad": lambda: O.Adagrad(0.05, initial_accumulator_value=0.1),
    "decayed_adagrad": lambda: fluid.optimizer.DecayedAdagrad(0.05, decay=0.9),
    "rmsprop": lambda: O.RMSProp(0.01, momentum=0.5),
    "rmsprop_centered": lambda: O.RMSProp(0.01, centered=True),
    "adadelta": lambda: O.Adadelta(0.5, rho=0.9),
    "lamb": lambda: O.Lamb(0.01),
}


def _mlp(make, dtype="float32"):
    main, startup = Program(), Program()
    main.random_seed = startup.random_seed = 5
    with program_guard(main, startup):
        h = static.data("x", [-1, 6], dtype)
        for _ in range(3):
            h = static.nn.fc(h, size=6, activation="tanh")
        loss = paddle.mean(static.nn.fc(h, size=1))
        make().minimize(loss)
    return main, startup, loss


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_updates_are_bit_identical(name, dtype):
    data = feeds(dtype=dtype)
    runs = []
    for flags in ({}, {"fuse_all_optimizer_ops": True}):
        main, startup, loss = _mlp(MAKERS[name], dtype)
        runs.append(train(main, startup, loss, data, compiled(main, loss, **flags)))
    (plain_losses, plain), (fused_losses, fused) = runs
    np.testing.assert_array_equal(plain_losses, fused_losses)
    assert len(plain) == len(fused) > 0
    for (key, a), b in zip(plain.items(), fused.values()):
        np.testing.assert_array_equal(a, b, err_msg=key)


@pytest.mark.parametrize("name,fused", [("adagrad", True), ("rmsprop", True), ("adadelta", True), ("lamb", False)])
def test_one_update_op_per_group(name, fused):
    main, _, loss = _mlp(MAKERS[name])
    op_type = MAKERS[name]().type
    n_params = len(main.all_parameters())
    program = run_passes(main.clone(), ["fuse_all_optimizer_ops_pass"], PassContext(loss_name=loss.name))
    types = [op.type for op in program.global_block().ops]
    assert types.count(op_type) == (1 if fused else n_params)
