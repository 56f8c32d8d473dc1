"""BuildStrategy.fuse_all_optimizer_ops / fuse_all_reduce_ops: one update (one collective) over
flat buffers, bit-identical to the per-parameter ops."""
import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core.context import program_guard
from headrace.core.program import Program
from headrace.passes import PassContext, fuse_all_reduce, fuse_optimizer, run_passes
from headrace.passes.buckets import plan_buckets
from tests.passes.dp_nets import batches, conv_bn_fc_net, train

OPTIMIZERS = {
    "sgd": lambda: paddle.optimizer.SGD(learning_rate=0.1),
    "momentum": lambda: paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9),
    "nesterov": lambda: paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9, use_nesterov=True),
    "adam": lambda: paddle.optimizer.Adam(learning_rate=0.01),
    "adam_clip_decay": lambda: paddle.optimizer.Adam(learning_rate=0.01, weight_decay=1e-3,
                                                     grad_clip=paddle.nn.ClipGradByGlobalNorm(0.5)),
}


def mlp(optimizer, dtype="float32", layers=3, lr_factor=None):
    main, startup = Program(), Program()
    main.random_seed = startup.random_seed = 5
    with program_guard(main, startup):
        x = static.data("x", [-1, 6], dtype)
        h = x
        for i in range(layers):
            attr = paddle.ParamAttr(learning_rate=lr_factor) if lr_factor and i == 0 else None
            h = static.nn.fc(h, size=6, activation="tanh", weight_attr=attr)
        loss = paddle.mean(static.nn.fc(h, size=1))
        OPTIMIZERS[optimizer]().minimize(loss)
    return main, startup, loss


def feeds(steps=4, dtype="float32", places=1):
    rng = np.random.default_rng(3)
    return [{"x": rng.standard_normal((4 * places, 6)).astype(dtype)} for _ in range(steps)]


def compiled(main, loss, places=1, **flags):
    strategy = static.BuildStrategy()
    for name, value in flags.items():
        setattr(strategy, name, value)
    prog = static.CompiledProgram(main, build_strategy=strategy)
    if places > 1:
        prog = prog.with_data_parallel(loss_name=loss.name, places=static.cpu_places(places))
    return prog


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_updates_are_bit_identical(optimizer, dtype):
    data = feeds(dtype=dtype)
    runs = []
    for flags in ({}, {"fuse_all_optimizer_ops": True}):
        main, startup, loss = mlp(optimizer, dtype)   # built again: the same seeded initial values
        runs.append(train(main, startup, loss, data, compiled(main, loss, **flags)))
    (plain_losses, plain), (fused_losses, fused) = runs
    np.testing.assert_array_equal(plain_losses, fused_losses)
    assert len(plain) == len(fused) > 0
    for (name, a), b in zip(plain.items(), fused.values()):
        np.testing.assert_array_equal(a, b, err_msg=name)


def _fused_program(main, loss, **flags):
    prog = compiled(main, loss, **flags)
    prog._compile((), (loss.name,))
    return prog


def test_one_update_op_per_group_and_state_stays_coalesced():
    main, startup, loss = mlp("adam")
    n_params = len(main.all_parameters())
    ctx = PassContext(loss_name=loss.name)
    program = run_passes(main.clone(), ["fuse_all_optimizer_ops_pass"], ctx)
    types = [op.type for op in program.global_block().ops]
    assert types.count("adam") == 0 and types.count("fused_adam") == 1
    assert types.count("coalesce_tensor") == 4      # params, moment1, moment2, grads
    assert ctx.log == [("fuse_all_optimizer_ops_pass", f"fused {n_params} `adam` updates into one")]
    scope = static.Scope()
    exe = static.Executor(static.CPUPlace())
    with static.scope_guard(scope):
        exe.run(startup)
        for feed in feeds(2):
            exe.run(program, feed=feed, fetch_list=[loss])
        weights = [scope._get_array(p.name) for p in main.all_parameters()]
        flat = weights[0].base
        assert flat is not None and all(w.base is flat for w in weights)   # views of one buffer
        before = flat.copy()
        exe.run(program, feed=feeds(1)[0], fetch_list=[loss])
        assert scope._get_array(main.all_parameters()[0].name).base is flat   # no copy, updated in place
        assert not np.array_equal(before, flat)


def test_per_parameter_learning_rates_make_separate_groups():
    main, _, loss = mlp("sgd", lr_factor=2.0)
    ctx = PassContext(loss_name=loss.name)
    program = run_passes(main.clone(), ["fuse_all_optimizer_ops_pass"], ctx)
    sgd_ops = [op for op in program.global_block().ops if op.type == "sgd"]
    lrs = {op.inputs["LearningRate"][0] for op in sgd_ops}
    assert len(sgd_ops) == len(lrs) == 2   # the scaled-rate weight alone; the others fused


def test_a_state_replaced_in_the_scope_is_coalesced_again():
    data = feeds(3)
    results = []
    for flags in ({}, {"fuse_all_optimizer_ops": True}):
        main, startup, loss = mlp("momentum")
        program = compiled(main, loss, **flags)
        scope = static.Scope()
        exe = static.Executor(static.CPUPlace())
        with static.scope_guard(scope):
            exe.run(startup)
            exe.run(program, feed=data[0], fetch_list=[loss])
            name = main.all_parameters()[1].name
            scope._set_array(name, np.full_like(scope._get_array(name), 0.25))   # e.g. a loaded value
            for feed in data[1:]:
                exe.run(program, feed=feed, fetch_list=[loss])
            results.append([np.array(scope._get_array(p.name)) for p in main.all_parameters()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_beta_powers_that_differ_are_an_error_not_a_wrong_step():
    main, startup, loss = mlp("adam")
    prog = compiled(main, loss, fuse_all_optimizer_ops=True)
    scope = static.Scope()
    exe = static.Executor(static.CPUPlace())
    with static.scope_guard(scope):
        exe.run(startup)
        pow_name = next(v.name for v in main.list_vars() if "beta1_pow_acc" in v.name)
        scope._set_array(pow_name, np.array([0.5], dtype="float32"))
        with pytest.raises(ValueError, match="Beta1Pow accumulators differ"):
            exe.run(prog, feed=feeds(1)[0], fetch_list=[loss])


def test_an_op_between_the_updates_that_reads_an_updated_parameter_blocks_the_fusion():
    main, _, loss = mlp("sgd")
    block = main.global_block()
    updates = [i for i, op in enumerate(block.ops) if op.type == "sgd"]
    param = block.ops[updates[0]].inputs["Param"][0]
    block._insert_op(updates[0] + 1, "scale", {"X": [param]}, {"Out": [block.create_var(name="peek").name]},
                     {"op_role": 2})
    ctx = PassContext(loss_name=loss.name)
    program = run_passes(main.clone(), ["fuse_all_optimizer_ops_pass"], ctx)
    assert sum(op.type == "sgd" for op in program.global_block().ops) == len(updates)
    assert "unfused" in ctx.log[0][1]


@pytest.mark.parametrize("optimizer", ["sgd", "momentum"])
def test_fused_with_data_parallel_equals_unfused(optimizer):
    data = batches(3, batch=8)
    runs = []
    for flags in ({}, {"fuse_all_optimizer_ops": True, "fuse_all_reduce_ops": True}):
        main, startup, loss = conv_bn_fc_net(optimizer)
        prog = compiled(main, loss, places=2, **flags)
        runs.append(train(main, startup, loss, data, prog))
    passes = {name for name, _ in prog.pass_log}
    assert {"fuse_all_reduce_op_pass", "fuse_all_optimizer_ops_pass"} <= passes, prog.pass_log
    (ref_losses, ref), (got_losses, got) = runs
    np.testing.assert_array_equal(ref_losses, got_losses)
    for (name, a), b in zip(ref.items(), got.values()):
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_fuse_all_reduce_makes_buckets():
    main, _, loss = conv_bn_fc_net("sgd")
    base = run_passes(main.clone(), ["all_reduce_mode_multi_devices_pass"], PassContext(num_places=2,
                                                                                         loss_name=loss.name))
    count = sum(op.type == "c_allreduce_sum" for op in base.global_block().ops)
    for limit, buckets in ((0, 1), (64, None)):
        ctx = PassContext(num_places=2, loss_name=loss.name, fuse_grad_bytes=limit)
        program = fuse_all_reduce.apply(base.clone(), ctx)
        ops = program.global_block().ops
        fused = [op for op in ops if op.type == "c_fused_allreduce_sum"]
        plain = [op for op in ops if op.type == "c_allreduce_sum"]
        assert sum(len(op.inputs["X"]) for op in fused) + len(plain) == count
        if buckets is not None:
            assert len(fused) == buckets and not plain
        else:
            assert len(fused) + len(plain) > 1     # 64-byte buckets split the gradients


def test_plan_buckets():
    items = [("a", 40, "float32"), ("b", 40, "float32"), ("c", 40, "float64"), ("d", 100, "float64"),
             ("e", 8, "float64")]
    assert plan_buckets(items, 100) == [["a", "b"], ["c"], ["d"], ["e"]]
    assert plan_buckets(items, 1000) == [["a", "b"], ["c", "d", "e"]]
    assert plan_buckets(items, 1000, breaks={"d"}) == [["a", "b"], ["c"], ["d", "e"]]
    with pytest.raises(ValueError):
        plan_buckets(items, 0)


def test_flags_follow_the_reference_defaults_and_mode():
    strategy = static.BuildStrategy()
    assert strategy.fuse_all_optimizer_ops is False and strategy.fuse_all_reduce_ops is False
    with pytest.raises(TypeError):
        strategy.fuse_all_optimizer_ops = 1
    from headrace.passes.strategy import pipeline
    strategy.fuse_all_optimizer_ops = True
    strategy.fuse_all_reduce_ops = True
    stages = dict(pipeline(strategy, 2))
    assert stages["multi_devices"][-2:] == ["fuse_all_reduce_op_pass", "fuse_all_optimizer_ops_pass"]
    strategy.reduce_strategy = static.BuildStrategy.ReduceStrategy.Reduce
    assert "fuse_all_optimizer_ops_pass" not in dict(pipeline(strategy, 2))["multi_devices"]
    assert fuse_optimizer.PASS_NAME not in dict(pipeline(static.BuildStrategy(), 1))["multi_devices"]


@pytest.mark.parametrize("optimizer", ["momentum", "adam"])
def test_fused_with_the_memory_passes_is_bit_identical(optimizer):
    data = feeds()
    runs = []
    for flags in ({}, {"fuse_all_optimizer_ops": True, "enable_inplace": True, "memory_optimize": True}):
        main, startup, loss = mlp(optimizer)
        runs.append(train(main, startup, loss, data, compiled(main, loss, **flags)))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    for a, b in zip(runs[0][1].values(), runs[1][1].values()):
        np.testing.assert_array_equal(a, b)
