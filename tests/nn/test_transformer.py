"""MultiHeadAttention and the Transformer layers against an independent NumPy implementation
written here (float64): outputs, attention weights, masks, caches, and gradients with respect to
the inputs and every parameter (the NumPy side by central differences); static equals dygraph."""
import numpy as np
import pytest

import headrace as paddle
from headrace.core import context
from tests.nn.layer_checks import both_modes

nn = paddle.nn
rng = np.random.default_rng(5)


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_linear(x, p, name):
    return x @ p[f"{name}.weight"] + p[f"{name}.bias"]


def np_mha(query, key, value, p, prefix, heads, mask=None):
    def split(x):
        b, t, d = x.shape
        return x.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)
    q = split(np_linear(query, p, f"{prefix}q_proj"))
    k = split(np_linear(key, p, f"{prefix}k_proj"))
    v = split(np_linear(value, p, f"{prefix}v_proj"))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + (np.where(mask, 0.0, -1e9) if mask.dtype == bool else mask)
    weights = np_softmax(scores)
    out = (weights @ v).transpose(0, 2, 1, 3)
    out = out.reshape(out.shape[0], out.shape[1], -1)
    return np_linear(out, p, f"{prefix}out_proj"), weights


def np_norm(x, p, name, eps=1e-5):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * p[f"{name}.weight"] + p[f"{name}.bias"]


def np_ffn(x, p, prefix, act):
    h = np_linear(x, p, f"{prefix}linear1")
    h = np.maximum(h, 0) if act == "relu" else np.tanh(h)
    return np_linear(h, p, f"{prefix}linear2")


def _sub(x, p, norm, before, body):
    y = np_norm(x, p, norm) if before else x
    y = x + body(y)
    return y if before else np_norm(y, p, norm)


def np_encoder_layer(x, p, heads, before, mask=None, prefix="", act="relu"):
    x = _sub(x, p, f"{prefix}norm1", before, lambda y: np_mha(y, y, y, p, f"{prefix}self_attn.", heads, mask)[0])
    return _sub(x, p, f"{prefix}norm2", before, lambda y: np_ffn(y, p, prefix, act))


def np_decoder_layer(x, memory, p, heads, before, tgt_mask=None, mem_mask=None, prefix=""):
    x = _sub(x, p, f"{prefix}norm1", before, lambda y: np_mha(y, y, y, p, f"{prefix}self_attn.", heads, tgt_mask)[0])
    x = _sub(x, p, f"{prefix}norm2", before,
             lambda y: np_mha(y, memory, memory, p, f"{prefix}cross_attn.", heads, mem_mask)[0])
    return _sub(x, p, f"{prefix}norm3", before, lambda y: np_ffn(y, p, prefix, "relu"))


def _random_params(layer):
    return {k: rng.uniform(-0.7, 0.7, v.shape) for k, v in layer.state_dict().items()}


def _eager_grads(layer, params, inputs, run, weight):
    for k, v in layer.state_dict().items():
        v.set_value(params[k].astype(np.float32))
    tensors = [paddle.to_tensor(a.astype(np.float32), stop_gradient=False) for a in inputs]
    out = run(layer, *tensors)
    paddle.sum(out * paddle.to_tensor(weight.astype(np.float32))).backward()
    grads = {k: v.grad.numpy() for k, v in layer.state_dict().items()}
    return out.numpy(), [t.grad.numpy() for t in tensors], grads


def _check_against_numpy(layer, inputs, run, reference, rtol=2e-4, atol=2e-5):
    """Outputs and gradients (inputs and every parameter) of ``run(layer, *inputs)`` against
    ``reference(params, *inputs)`` in float64, the gradients of the latter by central differences."""
    params = _random_params(layer)
    want = reference(params, *inputs)
    weight = rng.standard_normal(want.shape)
    out, input_grads, param_grads = _eager_grads(layer, params, inputs, run, weight)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)

    def loss(ps, xs):
        return float(np.sum(reference(ps, *xs) * weight))

    eps = 1e-6
    for i, value in enumerate(inputs):
        numeric = np.zeros(value.shape)
        for idx in np.ndindex(value.shape):
            plus, minus = [a.copy() for a in inputs], [a.copy() for a in inputs]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            numeric[idx] = (loss(params, plus) - loss(params, minus)) / (2 * eps)
        np.testing.assert_allclose(input_grads[i], numeric, rtol=rtol, atol=atol, err_msg=f"input {i}")
    for name, value in params.items():
        numeric = np.zeros(value.shape)
        for idx in np.ndindex(value.shape):
            plus, minus = dict(params), dict(params)
            plus[name], minus[name] = value.copy(), value.copy()
            plus[name][idx] += eps
            minus[name][idx] -= eps
            numeric[idx] = (loss(plus, inputs) - loss(minus, inputs)) / (2 * eps)
        np.testing.assert_allclose(param_grads[name], numeric, rtol=rtol, atol=atol, err_msg=name)


CAUSAL = np.tril(np.ones((3, 3), bool))


@pytest.mark.parametrize("mask", [None, "bool", "float"])
def test_multi_head_attention(mask):
    query, memory = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 6))
    mask_value = {None: None, "bool": rng.random((2, 1, 3, 5)) > 0.3,
                  "float": rng.standard_normal((2, 2, 3, 5))}[mask]
    with context.static_mode_guard(False):
        layer = nn.MultiHeadAttention(4, 2, kdim=6, vdim=6)
        mask_t = None if mask is None else paddle.to_tensor(mask_value)
        _check_against_numpy(layer, [query, memory], lambda m, q, kv: m(q, kv, kv, attn_mask=mask_t),
                             lambda p, q, kv: np_mha(q, kv, kv, p, "", 2, mask_value)[0])


def test_need_weights_and_int_mask():
    query = rng.standard_normal((2, 3, 4)).astype(np.float32)
    int_mask = np.tril(np.ones((3, 3), np.int64))
    with context.static_mode_guard(False):
        layer = nn.MultiHeadAttention(4, 2, need_weights=True)
        params = {k: v.numpy().astype(np.float64) for k, v in layer.state_dict().items()}
        out, weights = layer(paddle.to_tensor(query), attn_mask=paddle.to_tensor(int_mask))
    want_out, want_w = np_mha(query.astype(np.float64), query, query, params, "", 2, CAUSAL)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(weights.numpy(), want_w, rtol=1e-5, atol=1e-6)
    assert np.all(weights.numpy()[..., 0, 1:] < 1e-6)


@pytest.mark.parametrize("before", [False, True])
def test_encoder_layer(before):
    src = rng.standard_normal((2, 3, 4))
    with context.static_mode_guard(False):
        layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, normalize_before=before)
        _check_against_numpy(layer, [src], lambda m, x: m(x, paddle.to_tensor(CAUSAL)),
                             lambda p, x: np_encoder_layer(x, p, 2, before, CAUSAL))


@pytest.mark.parametrize("before", [False, True])
def test_decoder_layer(before):
    tgt, memory = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 2, 4))
    mem_mask = rng.random((2, 1, 3, 2)) > 0.2
    mem_mask[..., 0] = True
    with context.static_mode_guard(False):
        layer = nn.TransformerDecoderLayer(4, 2, 5, dropout=0.0, normalize_before=before)
        _check_against_numpy(layer, [tgt, memory],
                             lambda m, t, mem: m(t, mem, paddle.to_tensor(CAUSAL), paddle.to_tensor(mem_mask)),
                             lambda p, t, mem: np_decoder_layer(t, mem, p, 2, before, CAUSAL, mem_mask))


def test_transformer_forward_against_numpy():
    src, tgt = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 3, 4))
    with context.static_mode_guard(False):
        model = nn.Transformer(4, 2, 2, 2, 6, dropout=0.0, normalize_before=True)
        params = _random_params(model)
        for k, v in model.state_dict().items():
            v.set_value(params[k].astype(np.float32))
        causal = model.generate_square_subsequent_mask(3)
        out = model(paddle.to_tensor(src.astype(np.float32)), paddle.to_tensor(tgt.astype(np.float32)),
                    tgt_mask=causal).numpy()
    memory = src
    for i in range(2):
        memory = np_encoder_layer(memory, params, 2, True, prefix=f"encoder.layers.{i}.")
    memory = np_norm(memory, params, "encoder.norm")
    x = tgt
    float_causal = np.triu(np.full((3, 3), -np.inf), 1)
    for i in range(2):
        x = np_decoder_layer(x, memory, params, 2, True, float_causal, prefix=f"decoder.layers.{i}.")
    np.testing.assert_allclose(out, np_norm(x, params, "decoder.norm"), rtol=1e-4, atol=1e-5)


def test_encoder_layer_both_modes():
    def make():
        return nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="tanh")
    both_modes(make, rng.standard_normal((2, 3, 4)),
               lambda x, p: np_encoder_layer(x, dict(zip(make().state_dict().keys(), p)), 2, False, act="tanh"),
               rtol=1e-4, atol=1e-5)


def test_incremental_decoding_with_cache_equals_causal_attention():
    tgt = rng.standard_normal((2, 3, 4)).astype(np.float32)
    with context.static_mode_guard(False):
        decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0), 2)
        memory = paddle.to_tensor(rng.standard_normal((2, 5, 4)).astype(np.float32))
        full = decoder(paddle.to_tensor(tgt), memory, tgt_mask=paddle.to_tensor(CAUSAL)).numpy()
        cache = decoder.gen_cache(memory)
        steps = []
        for t in range(3):
            out, cache = decoder(paddle.to_tensor(tgt[:, t:t + 1]), memory, cache=cache)
            steps.append(out.numpy())
        assert cache[0][0].k.shape == [2, 2, 3, 2]
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, rtol=1e-5, atol=1e-5)


def test_dropout_and_errors():
    with context.static_mode_guard(False):
        layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.5)
        assert layer.self_attn.dropout == 0.5 and layer.dropout.p == 0.5
        x = paddle.to_tensor(rng.standard_normal((2, 3, 4)).astype(np.float32))
        layer.eval()
        np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())
        encoder = nn.TransformerEncoder(layer, 3)
        assert len(encoder.layers) == 3 and encoder.layers[0] is layer
        assert encoder.layers[2].normalize_before is False
        with pytest.raises(ValueError, match="divisible"):
            nn.MultiHeadAttention(5, 2)
        with pytest.raises(ValueError, match="1, 2 or 3"):
            nn.Transformer(4, 2, 1, 1, 6, weight_attr=[None] * 4)
