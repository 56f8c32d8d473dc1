"""conv2d's forward in blocks of samples (ops/conv_gemm.py ``convolve``) and its Input@GRAD as a
convolution with flipped filters (``input_grad_as_conv``): values against the loop reference and
the col2im path, bits independent of the block size and the thread count."""
import numpy as np
import pytest

import headrace as paddle
from headrace.ops import conv_gemm, parallel
from headrace.ops.gradrule import grad_slot
from headrace.ops.kernel import context
from headrace.ops.registry import lookup
from tests.ops.test_conv import conv_reference

RNG = np.random.default_rng(17)

CASES = [  # (input shape, filter shape, attrs)
    ((7, 3, 6, 5), (4, 3, 3, 3), {"paddings": [1, 1]}),
    ((5, 4, 7, 6), (6, 2, 3, 2), {"groups": 2, "paddings": [1, 2, 0, 1], "strides": [2, 1]}),
    ((6, 2, 9, 9), (3, 2, 2, 2), {"dilations": [2, 3], "paddings": [1, 1, 2, 1]}),
    ((5, 6, 5, 3), (4, 3, 3, 3), {"data_format": "NHWC", "paddings": [1, 1]}),
]


def _conv(x, w, attrs, wanted=()):
    conv = lookup("conv2d")
    full = dict(conv.attrs, **attrs)
    out = conv.kernel({"Input": x, "Filter": w}, full, context(["Output"]))["Output"]
    if not wanted:
        return out, None
    dout = np.random.default_rng(3).standard_normal(out.shape).astype(x.dtype)
    grads = lookup("conv2d_grad").kernel({"Input": x, "Filter": w, grad_slot("Output"): dout}, full, context(wanted))
    return out, grads


@pytest.fixture
def threads():
    old = paddle.get_flags("FLAGS_paddle_num_threads")
    yield lambda count: paddle.set_flags({"FLAGS_paddle_num_threads": count})
    paddle.set_flags(old)


def _bits_for_thread_counts(threads, x, w, attrs, expected):
    """The forward's bits with 1, 2 and 3 threads (each checked against ``expected``)."""
    bits = set()
    for count in (1, 2, 3):
        threads(count)
        out, _ = _conv(x, w, attrs)
        np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-5)
        bits.add(out.tobytes())
    return bits


@pytest.mark.parametrize("x_shape, w_shape, attrs", CASES)
def test_forward_blocks_match_the_reference_with_the_same_bits_for_any_block_and_thread_count(
        monkeypatch, threads, x_shape, w_shape, attrs):
    x, w = RNG.standard_normal(x_shape).astype("float32"), RNG.standard_normal(w_shape).astype("float32")
    expected = conv_reference({"Input": x.astype("float64"), "Filter": w.astype("float64")}, attrs)["Output"]
    blocks = []
    real = parallel.run_pieces
    monkeypatch.setattr(parallel, "run_pieces", lambda fn, pieces: (blocks.append(len(pieces)), real(fn, pieces)))
    monkeypatch.setattr(conv_gemm, "PRODUCT_COLUMNS", 1)   # one sample a product
    bits = set()
    for block_bytes in (1, 600, 1 << 18):          # one sample a block, a few, all in one
        monkeypatch.setattr(conv_gemm, "BLOCK_BYTES", block_bytes)
        bits |= _bits_for_thread_counts(threads, x, w, attrs, expected)
    assert len(bits) == 1
    assert x_shape[0] in blocks      # one block a sample ran on the pool (with 2 or 3 threads)


@pytest.mark.parametrize("x_shape, w_shape, attrs", CASES)
def test_samples_side_by_side_in_one_product_give_the_same_bits_for_any_thread_count(
        monkeypatch, threads, x_shape, w_shape, attrs):
    """Few output positions a sample: a block's product puts several samples' columns side by
    side (``_samples_per_product``); the blocks are fixed by the shapes, not the threads."""
    x, w = RNG.standard_normal(x_shape).astype("float32"), RNG.standard_normal(w_shape).astype("float32")
    expected = conv_reference({"Input": x.astype("float64"), "Filter": w.astype("float64")}, attrs)["Output"]
    out, _ = _conv(x, w, attrs)
    positions = int(np.prod(out.shape[1:3] if attrs.get("data_format") == "NHWC" else out.shape[2:]))
    monkeypatch.setattr(conv_gemm, "PRODUCT_COLUMNS", 2 * positions)     # two samples a product
    blocks, products = [], []
    real_pieces, real_matmul = parallel.run_pieces, np.matmul
    monkeypatch.setattr(parallel, "run_pieces", lambda fn, pieces: (blocks.append(pieces), real_pieces(fn, pieces)))
    monkeypatch.setattr(conv_gemm.np, "matmul", lambda a, b, **k: products.append(b.shape) or real_matmul(a, b, **k))
    assert len(_bits_for_thread_counts(threads, x, w, attrs, expected)) == 1
    assert blocks and all(stop - start <= 2 for start, stop in blocks[0]) and len(blocks[0]) == -(-x_shape[0] // 2)
    assert products and products[0][-1] == 2 * positions     # [g, C/g*kh*kw, 2 * OH*OW]


def test_samples_per_product():
    assert conv_gemm._samples_per_product(121, 288 * 121 * 4) == 7        # LeNet's second conv: bytes bound
    assert conv_gemm._samples_per_product(256, 576 * 256 * 4) == 1        # a ResNet block's conv
    assert conv_gemm._samples_per_product(4, 10) == conv_gemm.PRODUCT_COLUMNS // 4
    assert conv_gemm._samples_per_product(0, 1) == conv_gemm.PRODUCT_COLUMNS   # an empty output


@pytest.mark.parametrize("size, split", [(40, True), (8, False)])
def test_a_batch_of_one_splits_its_products_instead(monkeypatch, threads, size, split):
    """A batch of one large image splits its product over the threads; a small one (fewer
    positions than ``PRODUCT_COLUMNS``) is one product whatever the threads (same bits)."""
    x, w = RNG.standard_normal((1, 3, size, size)), RNG.standard_normal((4, 3, 3, 3))
    expected = conv_reference({"Input": x, "Filter": w}, {"paddings": [1, 1]})["Output"]
    products = []
    real = conv_gemm.gemm.matmul
    monkeypatch.setattr(conv_gemm.gemm, "matmul", lambda *a, **k: products.append(a) or real(*a, **k))
    bits = set()
    for count, splits in ((2, split), (1, False)):
        threads(count)
        products.clear()
        out, _ = _conv(x, w, {"paddings": [1, 1]})
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
        assert bool(products) is splits
        bits.add(out.tobytes())
    if not split:
        assert len(bits) == 1      # one product either way


DX_CASES = [  # stride-1 convolutions whose Input@GRAD is a convolution (H*W <= OH*OW)
    ((3, 4, 6, 5), (6, 4, 3, 3), {"paddings": [1, 1]}),
    ((2, 4, 5, 6), (6, 2, 3, 3), {"groups": 2, "paddings": [1, 1]}),
    ((2, 3, 7, 7), (2, 3, 3, 2), {"dilations": [2, 3], "paddings": [2, 2, 1, 2]}),
    ((2, 5, 4, 3), (4, 3, 2, 2), {"data_format": "NHWC", "paddings": [0, 1, 1, 0]}),
    ((2, 3, 4, 4), (2, 3, 3, 3), {"paddings": [2, 2]}),                 # output larger than input
    ((2, 3, 6, 6), (3, 1, 3, 3), {"groups": 3, "paddings": [1, 1]}),    # depthwise: one filter a group
    ((2, 3, 6, 5), (6, 1, 3, 3), {"groups": 3, "paddings": [1, 1]}),    # depthwise, two filters a group
]


@pytest.mark.parametrize("x_shape, w_shape, attrs", DX_CASES)
def test_input_gradient_as_a_convolution_equals_col2im(monkeypatch, x_shape, w_shape, attrs):
    x, w = RNG.standard_normal(x_shape), RNG.standard_normal(w_shape)
    used, real = [], conv_gemm.input_grad_as_conv
    monkeypatch.setattr("headrace.ops.conv.input_grad_as_conv", lambda *a: used.append(real(*a)) or used[-1])
    _, as_conv = _conv(x, w, attrs, [grad_slot("Input")])
    assert used and used[0] is not None
    monkeypatch.setattr("headrace.ops.conv.input_grad_as_conv", lambda *a: None)
    _, by_col2im = _conv(x, w, attrs, [grad_slot("Input")])
    np.testing.assert_allclose(as_conv[grad_slot("Input")], by_col2im[grad_slot("Input")], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("x_shape, w_shape, attrs, why", [
    ((2, 3, 6, 6), (4, 3, 3, 3), {"strides": [2, 2], "paddings": [1, 1]}, "strided"),
    ((2, 3, 6, 6), (4, 3, 3, 3), {}, "valid: more multiply-adds than col2im"),
    ((2, 3, 6, 6), (4, 3, 3, 3), {"paddings": [3, 0, 1, 1]}, "a pad wider than the filter's reach"),
])
def test_other_convolutions_keep_col2im(x_shape, w_shape, attrs, why):
    full = dict(lookup("conv2d").attrs, **attrs)
    x, w = RNG.standard_normal(x_shape), RNG.standard_normal(w_shape)
    out, _ = _conv(x, w, attrs)
    pads = [full["paddings"][0]] * 2 + [full["paddings"][1]] * 2 if len(full["paddings"]) == 2 else full["paddings"]
    assert conv_gemm.input_grad_as_conv(out, w, x_shape[2:], full["strides"], pads, full["dilations"],
                                        full["groups"]) is None, why


def test_blocks_use_the_pool_with_blas_on_one_thread(monkeypatch, threads):
    threads(2)
    monkeypatch.setattr(conv_gemm, "BLOCK_BYTES", 1)
    monkeypatch.setattr(conv_gemm, "PRODUCT_COLUMNS", 1)
    seen = []
    real = parallel.run_pieces
    monkeypatch.setattr(parallel, "run_pieces", lambda fn, pieces: (seen.append(len(pieces)), real(fn, pieces)))
    x, w = RNG.standard_normal((4, 2, 5, 5)), RNG.standard_normal((3, 2, 3, 3))
    assert conv_gemm.convolve(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1) is not None
    assert 4 in seen     # one block a sample


def test_filter_gradient_is_c_contiguous():
    """Filter@GRAD is computed transposed (columns @ Output@GRAD^T): the kernel returns it C-contiguous
    (the memory passes hand only C-contiguous buffers on)."""
    x, w = RNG.standard_normal((2, 8, 4, 4)), RNG.standard_normal((16, 8, 3, 3))
    _, grads = _conv(x, w, {"paddings": [1, 1]}, [grad_slot("Filter")])
    assert grads[grad_slot("Filter")].flags.c_contiguous


@pytest.mark.parametrize("attrs", [{}, {"paddings": [1, 2, 0, 1], "strides": [2, 1]}])
def test_col2im_transposes_in_row_blocks_with_the_same_bits(monkeypatch, attrs):
    """col2im's final [C, H, W, N] -> [N, C, H, W] copy runs a block of rows at a time: blocks of one
    row give the bits of one block a channel."""
    x, w = RNG.standard_normal((3, 4, 7, 6)), RNG.standard_normal((5, 4, 3, 3))
    _, whole = _conv(x, w, attrs, [grad_slot("Input")])
    monkeypatch.setattr(conv_gemm, "COPY_BLOCK_BYTES", 1)
    _, rows = _conv(x, w, attrs, [grad_slot("Input")])
    assert whole[grad_slot("Input")].tobytes() == rows[grad_slot("Input")].tobytes()


@pytest.mark.parametrize("attrs", [{}, {"paddings": [1, 1]}, {"strides": [2, 2]}])
def test_an_empty_batch_gives_empty_outputs_and_gradients(attrs):
    x, w = np.zeros((0, 3, 6, 6)), RNG.standard_normal((4, 3, 3, 3))
    out, grads = _conv(x, w, attrs, [grad_slot("Input"), grad_slot("Filter")])
    assert out.shape[0] == 0 and grads[grad_slot("Input")].shape == x.shape
    assert np.array_equal(grads[grad_slot("Filter")], np.zeros(w.shape))
