"""Static recompute (append_backward(checkpoints=...), RecomputeOptimizer).

Equality tests train the same network, from the same initial values on the same batches, with
and without checkpoints, and compare losses, every gradient and every persistable value after
the updates bit for bit (``np.array_equal``).  Structure tests check the segments, renames,
seed ops, pruning and logs against the semantics in ``passes/recompute.py``.
"""
import logging

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import headrace as paddle
import headrace.fluid as fluid
import headrace.static as static
from headrace.passes import recompute
from headrace.autodiff.backward import append_backward
from headrace.core import names
from headrace.core.program import Program
from headrace.device import cpu
from headrace.nn import functional as F
from headrace.runtime import Executor, Scope


# --- harness -----------------------------------------------------------------------------------
def train(build, pick, feeds, optimizer=lambda: paddle.optimizer.SGD(learning_rate=0.1)):
    """Build with ``build() -> (loss, named vars)``; checkpoints ``pick(named)`` (None: plain).
    Returns (per-step fetched loss + gradients, persistable values after training, program)."""
    main, startup = Program(), Program()
    main.random_seed = startup.random_seed = 11
    with static.program_guard(main, startup), names.guard():
        loss, named = build()
        opt = optimizer()
        checkpoints = pick(named)
        if checkpoints is not None:
            opt = fluid.optimizer.RecomputeOptimizer(opt)
            opt._set_checkpoints(checkpoints)
        _, params_grads = opt.minimize(loss)
    scope, exe = Scope(), Executor()
    exe.run(startup, scope=scope)
    fetch = [loss] + [g for _, g in params_grads]
    steps = [exe.run(main, feed=feed, fetch_list=fetch, scope=scope) for feed in feeds]
    persist = {v.name: scope._get_array(v.name).copy() for v in main.list_vars()
               if v.persistable and scope._get_array(v.name) is not None}
    return steps, persist, main


def assert_bit_identical(a, b):
    steps_a, persist_a, _ = a
    steps_b, persist_b, _ = b
    for i, (sa, sb) in enumerate(zip(steps_a, steps_b)):
        for j, (x, y) in enumerate(zip(sa, sb)):
            assert np.array_equal(x, y), f"step {i}, fetch {j} differs"
    assert persist_a.keys() == persist_b.keys()
    for name in persist_a:
        assert np.array_equal(persist_a[name], persist_b[name]), name


def ops_of(program):
    return [op.type for op in program.global_block().ops]


rng = np.random.default_rng(3)


# --- networks ----------------------------------------------------------------------------------
def mlp_with_dropout(layers=4, width=8):
    def build():
        x = static.data("x", [-1, 6], "float32")
        h, named = x, {"x": x}
        for i in range(layers):
            h = static.nn.fc(h, size=width, activation="relu")
            named[f"relu{i}"] = h
            h = F.dropout(h, p=0.3)
            named[f"drop{i}"] = h
        loss = paddle.mean(static.nn.fc(h, size=1))
        named["loss"] = loss
        return loss, named
    return build


MLP_FEEDS = [{"x": rng.standard_normal((5, 6)).astype("float32")} for _ in range(3)]


def conv_bn_net():
    x = static.data("img", [-1, 2, 6, 6], "float32")
    y = static.data("y", [-1, 1], "int64")
    named = {}
    h = static.nn.conv2d(x, num_filters=4, filter_size=3, padding=1)
    named["conv0"] = h
    h = static.nn.batch_norm(h, act="relu")
    named["bn0"] = h
    h = static.nn.conv2d(h, num_filters=4, filter_size=3, padding=1)
    named["conv1"] = h
    h = static.nn.batch_norm(h, act="relu")
    named["bn1"] = h
    h = F.max_pool2d(h, kernel_size=2, stride=2)
    named["pool"] = h
    logits = static.nn.fc(h, size=3)
    named["logits"] = logits
    loss = paddle.mean(F.cross_entropy(logits, y, reduction="none"))
    return loss, named


CONV_FEEDS = [{"img": rng.standard_normal((3, 2, 6, 6)).astype("float32"),
               "y": rng.integers(0, 3, (3, 1)).astype(np.int64)} for _ in range(3)]


def transformer_block():
    x = static.data("x", [2, 3, 8], "float32")
    named = {}
    h = static.nn.layer_norm(x, begin_norm_axis=2)
    named["ln0"] = h
    q = static.nn.fc(h, size=8, num_flatten_dims=2)
    k = static.nn.fc(h, size=8, num_flatten_dims=2)
    v = static.nn.fc(h, size=8, num_flatten_dims=2)
    scores = paddle.matmul(q, k, transpose_y=True) * 0.35
    probs = F.dropout(F.softmax(scores), p=0.1)
    named["probs"] = probs
    attn = paddle.matmul(probs, v) + x
    named["attn"] = attn
    h2 = static.nn.layer_norm(attn, begin_norm_axis=2)
    named["ln1"] = h2
    ff = static.nn.fc(static.nn.fc(h2, size=16, num_flatten_dims=2, activation="relu"), size=8, num_flatten_dims=2)
    out = ff + attn
    named["out"] = out
    loss = paddle.mean(out * out)
    return loss, named


BLOCK_FEEDS = [{"x": rng.standard_normal((2, 3, 8)).astype("float32")} for _ in range(3)]


# --- bit-identical training --------------------------------------------------------------------
@pytest.mark.parametrize("picked", [["relu1"], ["drop0", "drop2"], ["relu0", "drop1", "relu3"],
                                    ["drop0", "drop1", "drop2", "drop3"], ["x", "drop1"], ["drop1", "loss"]])
def test_mlp_with_dropout_is_bit_identical(picked):
    build = mlp_with_dropout()
    plain = train(build, lambda n: None, MLP_FEEDS)
    rec = train(build, lambda n: [n[k] for k in picked], MLP_FEEDS)
    assert_bit_identical(plain, rec)


@pytest.mark.parametrize("picked", [["bn0"], ["conv0", "bn1"], ["bn0", "pool"], ["conv1", "logits"]])
def test_conv_net_with_batch_norm_is_bit_identical(picked):
    plain = train(conv_bn_net, lambda n: None, CONV_FEEDS,
                  optimizer=lambda: paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9))
    rec = train(conv_bn_net, lambda n: [n[k] for k in picked], CONV_FEEDS,
                optimizer=lambda: paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9))
    assert_bit_identical(plain, rec)
    # a recomputed batch_norm never writes the running statistics again
    for op in rec[2].global_block().ops:
        if op.type == "batch_norm" and op.attrs["op_role"] == 1:
            assert op.output("MeanOut") == ["@EMPTY@"] and op.output("VarianceOut") == ["@EMPTY@"]


@pytest.mark.parametrize("picked", [["ln1"], ["probs", "attn"], ["ln0", "attn", "ln1"], ["attn", "out"]])
def test_transformer_block_is_bit_identical(picked):
    plain = train(transformer_block, lambda n: None, BLOCK_FEEDS, optimizer=lambda: paddle.optimizer.Adam(0.01))
    rec = train(transformer_block, lambda n: [n[k] for k in picked], BLOCK_FEEDS,
                optimizer=lambda: paddle.optimizer.Adam(0.01))
    assert_bit_identical(plain, rec)
    assert any(".subprog_" in n for op in rec[2].global_block().ops for n in op.output_arg_names)


# --- property: random programs, random checkpoints ---------------------------------------------
@st.composite
def programs(draw):
    """A random DAG of float64 [4, 6] values: fc+activation, add, mul, dropout, tanh, scale,
    each reading earlier values (so chains and branches), and a random checkpoint subset."""
    kinds = draw(st.lists(st.sampled_from(["fc", "add", "mul", "dropout", "tanh", "scale"]),
                          min_size=3, max_size=10))
    # the first operand is mostly the previous value (chains), the second any earlier one (branches)
    reads = [(draw(st.sampled_from([i, i, i, max(i - 1, 0)])), draw(st.integers(0, i)))
             for i in range(len(kinds))]
    picks = draw(st.lists(st.integers(0, len(kinds)), min_size=1, max_size=4))
    return kinds, reads, picks


def _random_program(kinds, reads):
    def build():
        x = static.data("x", [4, 6], "float64")
        values = [x]
        for kind, (a, b) in zip(kinds, reads):
            u, w = values[a], values[b]
            if kind == "fc":
                v = static.nn.fc(u, size=6, activation="sigmoid")
            elif kind == "add":
                v = u + w
            elif kind == "mul":
                v = u * w
            elif kind == "dropout":
                v = F.dropout(u, p=0.4)
            elif kind == "tanh":
                v = F.tanh(u)
            else:
                v = u * 0.5
            values.append(v)
        last = static.nn.fc(values[-1], size=1)
        loss = paddle.mean(last)
        return loss, {i: v for i, v in enumerate(values)}
    return build


@given(programs())
def test_random_programs_and_checkpoints_are_bit_identical(case):
    kinds, reads, picks = case
    build = _random_program(kinds, reads)
    feeds = [{"x": np.linspace(-1, 1, 24).reshape(4, 6) * (k + 1)} for k in range(2)]
    plain = train(build, lambda n: None, feeds)
    rec = train(build, lambda n: [n[i] for i in picks], feeds)
    assert_bit_identical(plain, rec)


# --- structure ---------------------------------------------------------------------------------
def _fc_chain(layers=3, dropout=False):
    x = static.data("x", [-1, 4], "float32")
    h, outs = x, []
    for _ in range(layers):
        h = static.nn.fc(h, size=8, activation="relu")
        if dropout:
            h = F.dropout(h, p=0.5)
        outs.append(h)
    return x, outs, paddle.mean(h)


def test_relu_outputs_as_checkpoints_need_no_recompute_at_all():
    """The reference recomputes mul and add of every layer here (Appendix A.1); their outputs are
    read only for shapes by elementwise_add_grad, and relu_grad reads the checkpoint."""
    _, outs, loss = _fc_chain()
    pairs = append_backward(loss, checkpoints=outs)
    assert isinstance(pairs, list) and len(pairs) == 6
    program = loss.block.program
    assert not any(".subprog_" in n for op in program.global_block().ops for n in op.output_arg_names)
    plain_loss = _fc_chain_in_fresh_program()
    assert ops_of(program) == plain_loss


def _fc_chain_in_fresh_program():
    main = Program()
    with static.program_guard(main, Program()), names.guard():
        _, _, loss = _fc_chain()
        append_backward(loss)
    return ops_of(main)


def test_segments_rename_from_the_last_and_copies_precede_their_gradients():
    _, outs, loss = _fc_chain(layers=4)
    append_backward(loss, checkpoints=[outs[1], outs[3]])
    ops = loss.block.ops
    types = ops_of(loss.block.program)
    # segment [reader of fc_1 out .. writer of fc_3 out] = layers 2, 3 (subprog_0); prefix = layers 0, 1 (subprog_1)
    copies = [op for op in ops if any(".subprog_" in n for n in op.output_arg_names)]
    assert [(op.type, op.output_arg_names) for op in copies] == [
        ("mul", ["fc_2.tmp_0.subprog_0"]), ("elementwise_add", ["fc_2.tmp_1.subprog_0"]),
        ("relu", ["fc_2.tmp_2.subprog_0"]),
        ("mul", ["fc_0.tmp_0.subprog_1"]), ("elementwise_add", ["fc_0.tmp_1.subprog_1"]),
        ("relu", ["fc_0.tmp_2.subprog_1"])]
    assert all(op.attrs["op_role"] == 1 for op in copies)
    # every copy comes right before the gradient ops of its segment; the gradient ops read the copies
    first_copy = types.index("mul", types.index("fill_constant"))
    assert types[first_copy: first_copy + 4] == ["mul", "elementwise_add", "relu", "relu_grad"]
    relu_grads = [op for op in ops if op.type == "relu_grad"]
    assert [op.input("Out") for op in relu_grads] == [
        ["fc_3.tmp_2"], ["fc_2.tmp_2.subprog_0"], ["fc_1.tmp_2"], ["fc_0.tmp_2.subprog_1"]]
    # shape-only reads keep the forward name (its buffer is gone by then; the shape is all it needs)
    add_grads = [op for op in ops if op.type == "elementwise_add_grad"]
    assert add_grads[1].input("X") == ["fc_2.tmp_0"]


def test_dropout_gets_a_seed_op_and_its_recomputed_mask_equals_the_forward_mask():
    x, outs, loss = _fc_chain(layers=3, dropout=True)
    main = loss.block.program
    main.random_seed = 5
    append_backward(loss, checkpoints=[outs[0], outs[1]])
    ops = main.global_block().ops
    drops = [op for op in ops if op.type == "dropout"]
    forward = [op for op in drops if op.attrs["op_role"] == 0]
    copies = [op for op in drops if op.attrs["op_role"] == 1]
    # dropouts 0 and 1 are recomputed (prefix and the middle segment); the last one is not
    assert [bool(op.input("Seed")) for op in forward] == [True, True, False]
    assert [op.input("Seed") for op in copies] == [forward[1].input("Seed"), forward[0].input("Seed")]
    seeds = [i for i, op in enumerate(ops) if op.type == "seed"]
    assert [ops[i + 1] for i in seeds] == forward[:2]          # right before its dropout
    assert all(op.attrs["seed"] == 0 and not op.attrs["fix_seed"] for op in forward)
    mask_pairs = [(fwd.output("Mask")[0], cp.output("Mask")[0]) for fwd, cp in zip(forward[:2], reversed(copies))]
    exe = Executor()
    exe.run(static.default_startup_program())
    fetched = exe.run(main, feed={"x": rng.standard_normal((6, 4)).astype("float32")},
                      fetch_list=[n for pair in mask_pairs for n in pair])
    assert np.array_equal(fetched[0], fetched[1]) and np.array_equal(fetched[2], fetched[3])
    assert 0 < fetched[0].mean() < 1


def test_the_program_declares_forward_then_recompute_then_gradient_variables():
    x, outs, loss = _fc_chain(layers=3, dropout=True)
    main = loss.block.program
    append_backward(loss, checkpoints=[outs[0], outs[1]])
    kinds = ["grad" if "@GRAD" in v.name else "recompute" if ".subprog_" in v.name or v.name.startswith("seed")
             else "forward" for v in main.list_vars()]
    assert "recompute" in kinds and "grad" in kinds
    assert kinds == sorted(kinds, key=["forward", "recompute", "grad"].index)


def test_checkpoints_are_deduplicated_sorted_and_filtered(caplog):
    x, outs, loss = _fc_chain(layers=3)
    stray = paddle.scale(x, 2.0)   # not on the path to the loss
    block = loss.block
    with caplog.at_level(logging.INFO, logger="headrace.recompute"):
        plan = recompute.make_plan(block, [loss.name], set(),
                                   recompute.checkpoint_names(block, [outs[2], outs[0], stray, outs[2], "fc_0.w_0"]))
    assert plan.checkpoints == ["fc_0.w_0", outs[0].name, outs[2].name]
    assert f"checkpoint {stray.name!r} dropped" in caplog.text


def test_parallel_branches_do_not_form_a_segment(caplog):
    x = static.data("x", [-1, 4], "float32")
    a = static.nn.fc(x, size=4, activation="relu")
    b = static.nn.fc(x, size=4, activation="relu")
    loss = paddle.mean(a + b)
    with caplog.at_level(logging.INFO, logger="headrace.recompute"):
        append_backward(loss, checkpoints=[b, a])
    assert "do not bound a forward range" in caplog.text


def test_cross_segment_variables_are_held_and_logged(caplog):
    x = static.data("x", [-1, 4], "float32")
    h0 = static.nn.fc(x, size=4, activation="tanh")
    h1 = static.nn.fc(h0, size=4, activation="tanh")
    mid = F.tanh(h1)
    h2 = static.nn.fc(mid, size=4, activation="tanh")
    loss = paddle.mean(h2 + mid)       # `mid`, inside the segment (h1, h2], is read after it
    with caplog.at_level(logging.INFO, logger="headrace.recompute"):
        append_backward(loss, checkpoints=[h1, h2])
    assert "found [1] vars which cross recompute segments" in caplog.text and mid.name in caplog.text
    assert not any(n.startswith(mid.name + ".subprog") for op in loss.block.ops for n in op.output_arg_names)


def test_a_feed_or_first_op_output_alone_gives_no_segment():
    for pick in ("x", 0):
        main = Program()
        with static.program_guard(main, Program()), names.guard():
            x = static.data("x", [-1, 4], "float32")
            h = F.tanh(x)
            h2 = static.nn.fc(h, size=3)
            loss = paddle.mean(h2)
            append_backward(loss, checkpoints=[x if pick == "x" else h])
        assert ops_of(main) == _plain_tanh_fc()


def _plain_tanh_fc():
    main = Program()
    with static.program_guard(main, Program()), names.guard():
        x = static.data("x", [-1, 4], "float32")
        loss = paddle.mean(static.nn.fc(F.tanh(x), size=3))
        append_backward(loss)
    return ops_of(main)


def test_callbacks_see_gradient_ops_only():
    _, outs, loss = _fc_chain(layers=4)
    seen = []
    append_backward(loss, checkpoints=[outs[1], outs[3]],
                    callbacks=[lambda block, context: seen.append(context["__current_op_desc__"].type())])
    assert seen and all(t.endswith("_grad") or t == "sum" for t in seen)


def test_callbacks_with_checkpoints_see_the_block_as_when_their_op_was_appended():
    """The pass runs after the plain backward; callbacks still see their op as the block's last,
    the copies before it already in place, and ops they append land right after it (role
    Backward), as without checkpoints."""
    _, outs, loss = _fc_chain(layers=4)
    seen = []

    def callback(block, context):
        op = context["__current_op_desc__"].op
        copies = sum(any(".subprog_" in n for n in o.output_arg_names) for o in block.ops)
        seen.append((block.ops[-1] is op, copies))
        if op.type == "relu_grad":
            block.append_op("scale", {"X": op.output("X@GRAD")}, {"Out": op.output("X@GRAD")})

    append_backward(loss, checkpoints=[outs[1], outs[3]], callbacks=[callback])
    assert all(last for last, _ in seen)
    counts = [c for _, c in seen]
    assert counts == sorted(counts) and counts[0] == 0 and counts[-1] > 0
    ops = loss.block.ops
    scales = [i for i, op in enumerate(ops) if op.type == "scale" and op.attrs["op_role"] == 1]
    assert len(scales) == 4 and all(ops[i - 1].type == "relu_grad" for i in scales)


@pytest.mark.parametrize("net,picked", [(mlp_with_dropout(), ["drop0", "relu2"]),
                                        (transformer_block, ["probs", "attn"]),
                                        (conv_bn_net, ["conv0", "bn1"])])
def test_the_pass_changes_only_what_its_contract_names(net, picked):
    """Without the seed ops, the copies and the ``.subprog_`` renames, a recompute program is the
    plain one: same ops, order, slots and attributes."""
    def program(checkpoints):
        main = Program()
        main.random_seed = 3
        with static.program_guard(main, Program()), names.guard():
            loss, named = net()
            append_backward(loss, checkpoints=checkpoints(named))
        return main

    def normalized(main):
        out = []
        for op in main.global_block().ops:
            if op.type == "seed" or any(".subprog_" in n for n in op.output_arg_names):
                continue
            ins = {slot: [n.split(".subprog_")[0] for n in ns] for slot, ns in op.inputs.items()
                   if slot != "Seed"}
            out.append((op.type, ins, op.outputs, op.attrs, op.callsite))
        return out

    plain = program(lambda named: None)
    rec = program(lambda named: [named[k] for k in picked])
    assert any(".subprog_" in n for op in rec.global_block().ops for n in op.output_arg_names)
    assert normalized(rec) == normalized(plain)


def test_recompute_lowers_the_executor_peak():
    """The bytes a step allocates beyond parameters: deterministic, so a plain assertion."""
    def peak(every):
        main, startup = Program(), Program()
        with static.program_guard(main, startup), names.guard():
            x = static.data("x", [-1, 64], "float32")
            h, acts = x, []
            for _ in range(8):
                h = static.nn.fc(h, size=64, activation="relu")
                acts.append(h)
            loss = paddle.mean(h)
            append_backward(loss, checkpoints=[a for i, a in enumerate(acts) if every and (i + 1) % every == 0])
        scope, exe = Scope(), Executor()
        exe.run(startup, scope=scope)
        feed = {"x": np.ones((256, 64), "float32")}
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        before = cpu.memory_allocated()
        cpu.reset_max_memory_allocated()
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        return cpu.max_memory_allocated() - before
    act = 256 * 64 * 4
    none, every4 = peak(0), peak(4)
    assert none <= 13 * act           # about one activation per layer (8 layers + feed + gradients)
    assert every4 <= 0.75 * none


# --- regressions found by review -----------------------------------------------------------
def test_a_variable_overwritten_by_a_non_differentiable_op_is_not_recomputed_from_its_first_writer():
    """v = relu(h), then fill_constant overwrites v: readers of v see the constant, so a copy
    must not recompute v as relu(h)."""
    def build():
        x = static.data("x", [4, 6], "float32")
        h = static.nn.fc(x, size=6, activation="tanh")
        v = F.relu(h)
        fluid.layers.fill_constant([4, 6], "float32", 0.5, out=v)
        w = static.nn.fc(v, size=6, activation="sigmoid")
        loss = paddle.mean(w * w)
        return loss, {"w": w, "h": h}
    feeds = [{"x": np.ones((4, 6), "float32") * k} for k in (1, 2)]
    plain = train(build, lambda n: None, feeds)
    for picked in (["w"], ["h", "w"]):
        assert_bit_identical(plain, train(build, lambda n: [n[k] for k in picked], feeds))


def test_a_test_clone_does_not_draw_the_recompute_seeds():
    """clone(for_test=True) keeps the seed ops; with is_test they draw nothing, so alternating
    training and evaluation runs stays bit-identical to the program without checkpoints."""
    rng2 = np.random.default_rng(1)
    feeds = [{"x": rng2.standard_normal((4, 6)).astype("float32")} for _ in range(3)]

    def run(with_checkpoints):
        paddle.seed(123)
        main, startup = Program(), Program()
        with static.program_guard(main, startup), names.guard():
            x = static.data("x", [4, 6], "float32")
            h1 = static.nn.fc(x, size=6, activation="tanh")
            h2 = static.nn.fc(F.dropout(h1, p=0.3), size=6, activation="sigmoid")
            loss = paddle.mean(static.nn.fc(h2, size=1))
            opt = paddle.optimizer.SGD(0.1)
            if with_checkpoints:
                opt = fluid.optimizer.RecomputeOptimizer(opt)
                opt._set_checkpoints([h2])
            opt.minimize(loss)
            test = main.clone(for_test=True)
        scope, exe = Scope(), Executor()
        exe.run(startup, scope=scope)
        out = []
        for f in feeds:
            out.append(exe.run(main, feed=f, fetch_list=[loss], scope=scope)[0])
            out.append(exe.run(test, feed=f, fetch_list=[loss], scope=scope)[0])
        return out, test
    plain, _ = run(False)
    rec, test = run(True)
    assert "seed" in ops_of(test)
    assert all(np.array_equal(a, b) for a, b in zip(plain, rec))
