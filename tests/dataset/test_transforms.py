"""paddle.vision.transforms on NumPy arrays, PIL images and Tensors, against NumPy references written here."""
import random

import numpy as np
import pytest
from PIL import Image

import headrace as paddle
import headrace.vision.transforms as T
import headrace.vision.transforms.functional as F
from headrace.core import context


def _img(h=5, w=7, c=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(h, w, c) if c else (h, w), dtype=np.uint8)


def _bilinear_reference(img, out_h, out_w):
    """Pixel-by-pixel bilinear resampling with half-pixel centres and edge clamping (OpenCV INTER_LINEAR)."""
    h, w = img.shape[:2]
    x = img.astype(np.float64)
    out = np.zeros((out_h, out_w) + img.shape[2:])
    for i in range(out_h):
        sy = min(max((i + 0.5) * h / out_h - 0.5, 0.0), h - 1)
        y0 = int(np.floor(sy))
        y1, wy = min(y0 + 1, h - 1), sy - int(np.floor(sy))
        for j in range(out_w):
            sx = min(max((j + 0.5) * w / out_w - 0.5, 0.0), w - 1)
            x0 = int(np.floor(sx))
            x1, wx = min(x0 + 1, w - 1), sx - x0
            out[i, j] = ((1 - wy) * ((1 - wx) * x[y0, x0] + wx * x[y0, x1])
                         + wy * ((1 - wx) * x[y1, x0] + wx * x[y1, x1]))
    return out


@pytest.mark.parametrize("shape,size", [((5, 7, 3), (9, 4)), ((6, 6), (3, 11)), ((4, 9, 1), (4, 3)),
                                        ((8, 5, 2), (16, 10))])
def test_bilinear_resize_of_arrays_matches_the_reference(shape, size):
    img = np.random.default_rng(1).random(shape).astype(np.float32) * 255
    out = F.resize(img, size)
    assert out.shape == tuple(size) + shape[2:] and out.dtype == np.float32
    np.testing.assert_allclose(out, _bilinear_reference(img, *size), rtol=1e-5, atol=1e-3)
    u8 = img.astype(np.uint8)
    out8 = F.resize(u8, size)
    assert out8.dtype == np.uint8
    np.testing.assert_array_equal(out8, np.clip(np.rint(_bilinear_reference(u8, *size)), 0, 255))


def test_nearest_resize_of_arrays():
    img = _img(4, 6)
    out = F.resize(img, (8, 3), interpolation="nearest")
    rows, cols = np.floor(np.arange(8) * 4 / 8).astype(int), np.floor(np.arange(3) * 6 / 3).astype(int)
    np.testing.assert_array_equal(out, img[rows][:, cols])
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.resize(img, (3, 3), interpolation="bicubic")


def test_int_size_is_the_shorter_side():
    img = np.zeros((256, 300, 3), np.uint8)
    assert F.resize(img, 224).shape == (224, 262, 3)
    assert F.resize(np.zeros((300, 256), np.uint8), 224).shape == (262, 224)
    assert F.resize(img, 256) is img   # already that size: returned as is (the reference too)
    pil = Image.fromarray(img)
    assert T.Resize(224)(pil).size == (262, 224) and T.Resize((200, 150))(pil).size == (150, 200)
    with pytest.raises(TypeError, match="size"):
        T.Resize((1, 2, 3))


def test_pil_bilinear_upscaling_agrees_with_the_array_version():
    img = _img(6, 5, 0)
    ours = F.resize(img, (12, 10))
    pils = np.asarray(F.resize(Image.fromarray(img), (12, 10)))
    assert pils.shape == (12, 10) and np.abs(ours.astype(int) - pils.astype(int)).max() <= 1
    nearest = np.asarray(F.resize(Image.fromarray(img), (12, 10), interpolation="nearest"))
    np.testing.assert_array_equal(nearest, img.repeat(2, 0).repeat(2, 1))


def test_to_tensor_arrays_and_pil():
    img = _img(4, 5)
    chw = F.to_tensor(img)          # static mode (the test default): a NumPy array
    assert isinstance(chw, np.ndarray) and chw.dtype == np.float32 and chw.shape == (3, 4, 5)
    np.testing.assert_allclose(chw, img.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    np.testing.assert_allclose(F.to_tensor(Image.fromarray(img)), chw)
    np.testing.assert_allclose(F.to_tensor(img, "HWC"), img / 255.0, rtol=1e-6)
    gray = _img(4, 5, 0)
    assert F.to_tensor(gray).shape == (1, 4, 5) and F.to_tensor(Image.fromarray(gray)).shape == (1, 4, 5)
    floats = img.astype(np.float64)
    np.testing.assert_array_equal(F.to_tensor(floats), floats.transpose(2, 0, 1))   # not scaled
    with pytest.raises(ValueError, match="data_format"):
        F.to_tensor(img, "NCHW")
    with pytest.raises(TypeError, match="ndim 4"):
        F.to_tensor(np.zeros((1, 2, 3, 4)))


def test_to_tensor_in_dynamic_mode_gives_a_tensor():
    img = _img(3, 2)
    with context.static_mode_guard(False):
        t = T.ToTensor()(img)
        assert isinstance(t, paddle.Tensor) and t.shape == [3, 3, 2] and t.dtype == paddle.float32
        np.testing.assert_allclose(t.numpy(), img.transpose(2, 0, 1) / 255.0, rtol=1e-6)
        n = T.Normalize([0.5] * 3, [0.25] * 3)(t)
        assert isinstance(n, paddle.Tensor)
        np.testing.assert_allclose(n.numpy(), (img.transpose(2, 0, 1) / 255.0 - 0.5) / 0.25, rtol=1e-5)
        flipped = F.hflip(t)
        np.testing.assert_array_equal(flipped.numpy(), t.numpy()[:, :, ::-1])


def test_normalize_formats_and_to_rgb():
    img = _img(3, 4).astype(np.float32)
    mean, std = [10.0, 20.0, 30.0], [2.0, 4.0, 8.0]
    np.testing.assert_allclose(F.normalize(img, mean, std, "HWC"), (img - mean) / std, rtol=1e-6)
    chw = img.transpose(2, 0, 1)
    want = (chw - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    np.testing.assert_allclose(T.Normalize(mean, std)(chw), want, rtol=1e-6)
    np.testing.assert_allclose(F.normalize(img, mean, std, "HWC", to_rgb=True), (img[..., ::-1] - mean) / std,
                               rtol=1e-6)
    np.testing.assert_allclose(T.Normalize(127.5, 127.5, "HWC")(Image.fromarray(img.astype(np.uint8))),
                               (img.astype(np.uint8).astype(np.float32) - 127.5) / 127.5, rtol=1e-6)


def test_crops_and_flips_on_arrays_and_pil():
    img = _img(7, 8)
    np.testing.assert_array_equal(F.crop(img, 1, 2, 3, 4), img[1:4, 2:6])
    # centre: top = round((7 - 4) / 2) = 2 (round half to even), left = round((8 - 3) / 2) = 2
    np.testing.assert_array_equal(T.CenterCrop((4, 3))(img), img[2:6, 2:5])
    np.testing.assert_array_equal(np.asarray(T.CenterCrop((4, 3))(Image.fromarray(img))), img[2:6, 2:5])
    np.testing.assert_array_equal(T.CenterCrop(5)(img), img[1:6, 2:7])
    np.testing.assert_array_equal(F.hflip(img), img[:, ::-1])
    np.testing.assert_array_equal(F.vflip(img), img[::-1])
    np.testing.assert_array_equal(np.asarray(F.hflip(Image.fromarray(img))), img[:, ::-1])
    np.testing.assert_array_equal(np.asarray(F.vflip(Image.fromarray(img))), img[::-1])


def test_pad_modes():
    row = np.array([[1, 2, 3, 4]], np.uint8)
    assert F.pad(row, (2, 0), padding_mode="reflect")[0].tolist() == [3, 2, 1, 2, 3, 4, 3, 2]
    assert F.pad(row, (2, 0), padding_mode="symmetric")[0].tolist() == [2, 1, 1, 2, 3, 4, 4, 3]
    assert F.pad(row, (1, 0), padding_mode="edge")[0].tolist() == [1, 1, 2, 3, 4, 4]
    img = _img(2, 3)
    out = F.pad(img, (1, 2, 3, 4), fill=(7, 8, 9))    # left, top, right, bottom
    assert out.shape == (2 + 2 + 4, 3 + 1 + 3, 3)
    np.testing.assert_array_equal(out[2:4, 1:4], img)
    assert out[0, 0].tolist() == [7, 8, 9] and out[-1, -1].tolist() == [7, 8, 9]
    pil = F.pad(Image.fromarray(img), 2, fill=(7, 8, 9))
    np.testing.assert_array_equal(np.asarray(pil), F.pad(img, 2, fill=(7, 8, 9)))
    np.testing.assert_array_equal(np.asarray(T.Pad(1, padding_mode="reflect")(Image.fromarray(img))),
                                  np.pad(img, ((1, 1), (1, 1), (0, 0)), mode="reflect"))
    with pytest.raises(ValueError, match="3 element"):
        F.pad(img, (1, 2, 3))
    with pytest.raises(ValueError, match="Padding mode"):
        F.pad(img, 1, padding_mode="wrap")


def test_random_crop_uses_python_random_and_is_reproducible():
    img = _img(9, 10)
    random.seed(3)
    out = T.RandomCrop((4, 5))(img)
    random.seed(3)
    top, left = random.randint(0, 9 - 4), random.randint(0, 10 - 5)
    np.testing.assert_array_equal(out, img[top:top + 4, left:left + 5])
    padded = T.RandomCrop(12, pad_if_needed=True)(img)
    assert padded.shape == (12, 12, 3)
    random.seed(0)
    out = T.RandomCrop(9, padding=2)(img)
    random.seed(0)
    top, left = random.randint(0, 13 - 9), random.randint(0, 14 - 9)
    np.testing.assert_array_equal(out, np.pad(img, ((2, 2), (2, 2), (0, 0)))[top:top + 9, left:left + 9])
    with pytest.raises(ValueError, match="larger than the image"):
        T.RandomCrop(20)(img)


def test_random_flips():
    img = _img(3, 4)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(1.0)(img), img[:, ::-1])
    np.testing.assert_array_equal(T.RandomVerticalFlip(1.0)(img), img[::-1])
    np.testing.assert_array_equal(T.RandomHorizontalFlip(0.0)(img), img)
    random.seed(11)
    got = [bool((T.RandomHorizontalFlip(0.5)(img) != img).any()) for _ in range(20)]
    random.seed(11)
    assert got == [random.random() < 0.5 for _ in range(20)] and 0 < sum(got) < 20
    with pytest.raises(ValueError, match="probability"):
        T.RandomVerticalFlip(1.5)


def test_transpose_compose_and_keys():
    img = _img(3, 4)
    np.testing.assert_array_equal(T.Transpose()(Image.fromarray(img)), img.transpose(2, 0, 1))
    assert T.Transpose()(_img(3, 4, 0)).shape == (1, 3, 4)
    pipeline = T.Compose([T.CenterCrop(2), T.Transpose(), T.Normalize(mean=0.0, std=255.0)])
    np.testing.assert_allclose(pipeline(img), img[0:2, 1:3].transpose(2, 0, 1) / 255.0, rtol=1e-6)
    pair = T.RandomHorizontalFlip(1.0, keys=("image", "image"))((img, img + 1, "label"))
    np.testing.assert_array_equal(pair[0], img[:, ::-1])
    np.testing.assert_array_equal(pair[1], (img + 1)[:, ::-1])
    assert pair[2] == "label"
    with pytest.raises(NotImplementedError, match="boxes"):
        T.Resize(3, keys=("image", "boxes"))
    with pytest.raises(ValueError, match="probability") as info:
        T.Compose([T.Resize(3), T.RandomHorizontalFlip(2)])(img)
    failing = T.Compose([T.Resize(3), T.RandomCrop(50)])
    with pytest.raises(ValueError) as info:
        failing(img)
    assert any("RandomCrop" in note for note in info.value.__notes__)


def test_custom_base_transform():
    class AddOne(T.BaseTransform):
        def _get_params(self, inputs):
            return {"n": len(inputs)}

        def _apply_image(self, image):
            return image + self.params["n"]

    assert AddOne()(np.zeros(2)).tolist() == [1.0, 1.0]
    assert AddOne(keys=("image", "image"))((np.zeros(1), np.ones(1))) == (np.array([2.0]), np.array([3.0]))


def test_chw_tensor_images():
    arr = np.random.default_rng(2).random((3, 4, 6)).astype(np.float32)
    with context.static_mode_guard(False):
        t = paddle.to_tensor(arr)
        assert T.ToTensor("HWC")(t).shape == [4, 6, 3]
        np.testing.assert_allclose(T.Resize((8, 12))(t).numpy(),
                                   _bilinear_reference(arr.transpose(1, 2, 0), 8, 12).transpose(2, 0, 1), rtol=1e-5)
        np.testing.assert_array_equal(T.CenterCrop(2)(t).numpy(), arr[:, 1:3, 2:4])
        np.testing.assert_array_equal(F.vflip(t).numpy(), arr[:, ::-1])
        np.testing.assert_array_equal(T.Pad((1, 0))(t).numpy(), np.pad(arr, ((0, 0), (0, 0), (1, 1))))
        random.seed(5)
        out = T.RandomCrop(3)(t).numpy()
        random.seed(5)
        top, left = random.randint(0, 1), random.randint(0, 3)
        np.testing.assert_array_equal(out, arr[:, top:top + 3, left:left + 3])


def test_argument_errors_as_the_reference():
    img = _img(6, 5)
    with pytest.raises(ValueError, match="positive"):
        T.Compose([T.Resize(-1)])(img)
    with pytest.raises(TypeError, match="padding"):
        F.pad(img, "1")
    with pytest.raises(TypeError, match="fill"):
        F.pad(img, 1, {})
    with pytest.raises(TypeError, match="padding_mode"):
        F.pad(img, 1, padding_mode=-1)
    with pytest.raises(ValueError):
        T.Pad([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="keys should be a sequence"):
        T.Resize(3, keys=1)
    with pytest.raises(NotImplementedError):
        T.Resize(3, keys="a")      # a str is a sequence of keys 'a' (no _apply_a), as the reference
    padded = T.Pad(10, keys=("image",))((img, img))
    assert padded[0].shape == (26, 25, 3) and padded[1] is img
    assert "Resize" in str(T.Compose([T.Resize((224, 224))]))


def test_reference_helper_names_for_custom_transforms():
    assert F._is_pil_image(Image.fromarray(_img())) and not F._is_pil_image(_img())
    assert F._is_numpy_image(_img()) and not F._is_numpy_image(np.zeros(3))
