"""Gradient buckets in one process: fuse_all_reduce_ops (the c_fused_allreduce_sum op and the
fuse_all_reduce_op_pass) on in-process places, and the op itself in both modes."""
import threading

import numpy as np
import pytest

import headrace as paddle
import headrace.static as static
from headrace.core.errors import DTypeError
from headrace.ops.collective import using
from headrace.runtime.collective import ThreadGroup

from ..passes.dp_nets import batches, conv_bn_fc_net, train


def _strategy(fuse, size_mb=32.0):
    bs = static.BuildStrategy()
    bs.fuse_all_reduce_ops = fuse
    bs.fuse_grad_size_in_MB = size_mb
    return bs


@pytest.mark.parametrize("size_mb,buckets", [(32.0, 1), (0.001, None)])
def test_fused_buckets_are_bit_identical_to_one_all_reduce_per_gradient(size_mb, buckets):
    feeds = batches(3)
    results = []
    for fuse in (False, True):
        main, startup, loss = conv_bn_fc_net("momentum")
        prog = static.CompiledProgram(main).with_data_parallel(
            loss_name=loss.name, build_strategy=_strategy(fuse, size_mb), places=static.cpu_places(2))
        results.append(train(main, startup, loss, feeds, prog))
        if fuse:
            ops = [op.type for op in prog._compile(("label", "x"), (loss.name,))[0].global_block().ops]
    (loss0, params0), (loss1, params1) = results
    np.testing.assert_array_equal(loss0, loss1)
    for a, b in zip(params0.values(), params1.values()):
        np.testing.assert_array_equal(a, b)
    fused = ops.count("c_fused_allreduce_sum")
    assert fused == buckets if buckets else fused > 1
    if buckets == 1:
        assert "c_allreduce_sum" not in ops


def test_a_bucket_closes_before_an_op_that_reads_its_gradient():
    main, startup, loss = conv_bn_fc_net("sgd")
    block = main.global_block()
    grads = [op.inputs["Grad"][0] for op in block.ops if op.type == "sgd"]
    # an op between two gradients' completion that reads the first one (a backward-role op)
    from headrace.core import roles
    from headrace.passes import PassContext, run_passes

    program = main.clone()
    ctx = PassContext(num_places=2, loss_name=loss.name)
    run_passes(program, ["all_reduce_mode_multi_devices_pass"], ctx)
    pblock = program.global_block()
    first = next(i for i, op in enumerate(pblock.ops) if op.type == "c_allreduce_sum")
    g = pblock.ops[first].inputs["X"][0]
    pblock._insert_op(first + 1, "scale", {"X": [g]}, {"Out": [g + "_probe"]},
                      {"scale": 1.0, roles.ROLE_ATTR: int(roles.OpRole.Backward)})
    pblock.create_var(name=g + "_probe", shape=pblock.var(g).shape, dtype=pblock.var(g).dtype)
    run_passes(program, ["fuse_all_reduce_op_pass"], ctx)
    ops = pblock.ops
    probe = next(i for i, op in enumerate(ops) if op.type == "scale" and op.inputs["X"] == [g])
    reducer = next(i for i, op in enumerate(ops) if g in op.input_arg_names and op.type.startswith("c_"))
    assert reducer < probe, "the probe must read the all-reduced gradient"
    assert len(grads) > 2


def _run_op_on_threads(inputs_per_rank):
    group = ThreadGroup(len(inputs_per_rank))
    results = [None] * len(inputs_per_rank)

    def rank(k):
        with using(group.communicator(k)):
            results[k] = paddle.ops.apply_op("c_fused_allreduce_sum", {"X": [paddle.to_tensor(a) for a in
                                                                          inputs_per_rank[k]]}, {})["Out"]

    threads = [threading.Thread(target=rank, args=(k,)) for k in range(len(inputs_per_rank))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_fused_all_reduce_op_sums_each_input_over_the_ranks_eagerly():
    rng = np.random.default_rng(0)
    per_rank = [[rng.standard_normal((3, 4)), rng.standard_normal(5)] for _ in range(3)]
    with paddle.fluid.dygraph.guard():
        results = _run_op_on_threads(per_rank)
    for k in range(3):
        for i in range(2):
            np.testing.assert_array_equal(results[k][i].numpy(),
                                          per_rank[0][i] + per_rank[1][i] + per_rank[2][i])


def test_fused_all_reduce_op_in_a_program_of_one_place_is_the_identity():
    x = static.data("x", [2, 3], "float32")
    y = static.data("y", [4], "float32")
    block = static.default_main_program().global_block()
    x2, y2 = x * 1.0, y * 1.0
    block.append_op("c_fused_allreduce_sum", {"X": [x2, y2]}, {"Out": [x2, y2]})
    exe = static.Executor()
    a, b = np.ones((2, 3), "float32"), np.arange(4, dtype="float32")
    out = exe.run(feed={"x": a, "y": b}, fetch_list=[x2, y2])
    np.testing.assert_array_equal(out[0], a)
    np.testing.assert_array_equal(out[1], b)


def test_fused_all_reduce_op_needs_one_dtype():
    x = static.data("x", [2, 3], "float32")
    y = static.data("y", [4], "float64")
    with pytest.raises(DTypeError, match="share it"):
        static.default_main_program().global_block().append_op("c_fused_allreduce_sum", {"X": [x, y]},
                                                               {"Out": [x, y]})


def test_bucket_size_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        static.BuildStrategy().fuse_grad_size_in_MB = 0


def test_thread_backend_barrier_all_gather_and_buckets():
    group = ThreadGroup(3)
    out = [None] * 3

    def rank(k):
        comm = group.communicator(k)
        gathered = comm.all_gather(np.full(2, k, "float32"))
        comm.barrier()
        summed = comm.all_reduce_sum_many([np.full((2, 2), k + 1.0), np.array([k])])
        out[k] = (gathered, summed)

    threads = [threading.Thread(target=rank, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for gathered, summed in out:
        assert [list(g) for g in gathered] == [[0, 0], [1, 1], [2, 2]]
        np.testing.assert_array_equal(summed[0], np.full((2, 2), 6.0))
        np.testing.assert_array_equal(summed[1], [3])
