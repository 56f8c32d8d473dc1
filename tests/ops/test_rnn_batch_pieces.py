"""The fused ``rnn`` op runs each cell's recurrence on pieces of the batch, one per thread
(ops/rnn_fused.py ``_on_batch_pieces``): forward, every gradient and the final states agree with
the one-piece run (and the forward with the NumPy model of test_rnn_fused.py), with
sequence_length rows falling in different pieces, several layers, both directions, both layouts,
in every mode."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops import parallel, rnn_fused
from headrace.ops.kernel import context
from headrace.ops.registry import lookup
from tests.ops.test_rnn_fused import make_case

CASES = {
    "lstm-bidirect-lengths": dict(mode="LSTM", dirs=2, lengths=[4, 1, 3, 0, 4, 2, 3]),
    "lstm-2layer-batch-major": dict(mode="LSTM", layers=2, time_major=False, lengths=[2, 4, 4, 1, 3, 4, 4]),
    "gru-2layer-bidirect-lengths": dict(mode="GRU", layers=2, dirs=2, lengths=[3, 4, 1, 2, 4, 4, 2]),
    "rnn-tanh-batch-major": dict(mode="RNN_TANH", dirs=2, time_major=False),
    "rnn-relu-lengths": dict(mode="RNN_RELU", lengths=[1, 4, 2, 3, 4, 0, 4]),
}
WANTED = ("Input@GRAD", "WeightList@GRAD", "PreState@GRAD")


def _run(ins, attrs):
    full = dict(lookup("rnn").attrs, **attrs)
    fwd = lookup("rnn").kernel(ins, full, context())
    rng = np.random.default_rng(4)
    grad_ins = {**ins, "Reserve": fwd["Reserve"], "Out@GRAD": rng.standard_normal(fwd["Out"].shape),
                "State@GRAD": [rng.standard_normal(s.shape) for s in fwd["State"]]}
    grads = lookup("rnn_grad").kernel(grad_ins, full, context(set(WANTED)))
    flat = {"Out": fwd["Out"], "Reserve": fwd["Reserve"], "Input@GRAD": grads["Input@GRAD"]}
    for slot in ("State", "WeightList@GRAD", "PreState@GRAD"):
        source = fwd if slot == "State" else grads
        flat.update({f"{slot}[{i}]": a for i, a in enumerate(source[slot])})
    return flat


@pytest.fixture
def pieces(monkeypatch):
    """Threads and the split thresholds low enough that a batch of 7 splits; the piece counts seen."""
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    monkeypatch.setattr(rnn_fused, "SPLIT_STEP_MACS", 0)
    monkeypatch.setattr(rnn_fused, "BATCH_ALIGN", 1)
    seen, real = [], parallel.run_pieces
    monkeypatch.setattr(parallel, "run_pieces", lambda fn, p: (seen.append(len(p)), real(fn, p)))
    yield lambda count: paddle.set_flags({"FLAGS_paddle_num_threads": count}) or seen
    paddle.set_flags(old)


@pytest.mark.parametrize("name", sorted(CASES))
def test_batch_pieces_give_the_one_piece_results(pieces, name):
    ins, attrs, want_out, want_states = make_case(batch=7, **CASES[name])
    seen = pieces(1)
    whole = _run(ins, attrs)
    assert seen == []
    seen = pieces(3)
    split = _run(ins, attrs)
    assert seen and all(count == 3 for count in seen)   # [0, 3), [3, 6), [6, 7): every cell, both passes
    assert whole.keys() == split.keys()
    for key in whole:
        np.testing.assert_allclose(split[key], whole[key], rtol=1e-13, atol=1e-13, err_msg=key)
    np.testing.assert_allclose(split["Out"], want_out, rtol=1e-12, atol=1e-12)
    for i, state in enumerate(want_states):
        np.testing.assert_allclose(split[f"State[{i}]"], state, rtol=1e-12, atol=1e-12)


def test_small_products_and_one_thread_stay_whole(monkeypatch):
    calls = []
    monkeypatch.setattr(rnn_fused.gemm, "blas_on_one_thread", lambda: calls.append(1))
    ins, attrs, _, _ = make_case("LSTM", batch=64, hidden=4)   # 64 * 4 * 16 multiply-adds a step
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    try:
        paddle.set_flags({"FLAGS_paddle_num_threads": 2})
        _run(ins, attrs)
    finally:
        paddle.set_flags(old)
    assert calls == []


def test_aligned_pieces():
    got = []
    geo = rnn_fused.Geometry({"mode": "LSTM", "hidden_size": 256, "num_layers": 1, "is_bidirec": False})
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    try:
        for threads, batch in ((2, 32), (2, 40), (3, 40), (2, 16), (1, 64)):
            paddle.set_flags({"FLAGS_paddle_num_threads": threads})
            cuts = []
            rnn_fused._on_batch_pieces(lambda s, e: cuts.append((s, e)), geo, batch)
            got.append(sorted(cuts))
    finally:
        paddle.set_flags(old)
    assert got == [[(0, 16), (16, 32)], [(0, 32), (32, 40)], [(0, 16), (16, 32), (32, 40)], [(0, 16)], [(0, 64)]]
