"""paddle.vision.datasets MNIST / FashionMNIST / Cifar10 / Cifar100 over tiny files in the real formats."""
import numpy as np
import pytest
from PIL import Image

import headrace as paddle
from headrace.dataset import common
from headrace.io import Dataset
from headrace.vision.datasets import MNIST, Cifar10, Cifar100, FashionMNIST
from tests.datafiles import write_cifar10, write_cifar100, write_mnist


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path))
    return tmp_path


def test_mnist_pil_backend_from_cache(data_home):
    w = write_mnist(data_home / "mnist", train=6, test=3)
    ds = MNIST(mode="train")
    assert isinstance(ds, Dataset) and len(ds) == 6
    img, label = ds[4]
    assert isinstance(img, Image.Image) and img.mode == "L" and img.size == (28, 28)
    np.testing.assert_array_equal(np.asarray(img), w["train"][0][4])
    assert label.dtype == np.int64 and label.shape == (1,) and label[0] == w["train"][1][4]
    assert len(MNIST(mode="test")) == 3


def test_mnist_cv2_backend_and_explicit_paths(tmp_path):
    w = write_mnist(tmp_path / "anywhere", train=2, test=4)
    image_path, label_path = w["paths"]["test"]
    ds = MNIST(image_path=image_path, label_path=label_path, mode="test", backend="cv2")
    img, label = ds[3]
    assert isinstance(img, np.ndarray) and img.dtype == np.float32 and img.shape == (28, 28)
    np.testing.assert_array_equal(img, w["test"][0][3].astype(np.float32))
    assert label.tolist() == [w["test"][1][3]]


def test_mnist_transform_runs_on_the_pil_image(data_home):
    w = write_mnist(data_home / "mnist", train=3, test=1)
    seen = []
    ds = MNIST(mode="train", transform=lambda im: seen.append(type(im)) or np.asarray(im).sum())
    assert ds[1][0] == int(w["train"][0][1].astype(np.int64).sum()) and seen == [Image.Image]


def test_mnist_quick_start_normalize_gives_chw_float32(data_home):
    # the 2.x quick start: Normalize(mean=[127.5], std=[127.5], data_format='CHW') on the PIL image
    w = write_mnist(data_home / "mnist", train=2, test=1)
    from headrace.vision.transforms import Normalize

    img, _ = MNIST(mode="train", transform=Normalize(mean=[127.5], std=[127.5], data_format="CHW"))[0]
    assert img.shape == (1, 28, 28) and img.dtype == np.float32
    np.testing.assert_allclose(img[0], (w["train"][0][0].astype(np.float32) - 127.5) / 127.5, rtol=1e-6)


def test_fashion_mnist_uses_its_own_cache_dir(data_home):
    with pytest.raises(FileNotFoundError, match="fashion-mnist"):
        FashionMNIST(mode="train")
    w = write_mnist(data_home / "fashion-mnist", train=3, test=2, seed=5)
    img, label = FashionMNIST(mode="test", backend="cv2")[1]
    np.testing.assert_array_equal(img, w["test"][0][1])
    assert label[0] == w["test"][1][1]


def test_mnist_errors(data_home, tmp_path):
    with pytest.raises(ValueError, match="mode should be 'train' or 'test'"):
        MNIST(mode="valid")
    with pytest.raises(ValueError, match="backend"):
        MNIST(backend="opencv")
    with pytest.raises(ValueError, match="image_path is not set and downloading automatically is disabled"):
        MNIST(download=False)
    with pytest.raises(FileNotFoundError, match="image_path .*nope.gz"):
        MNIST(image_path=str(tmp_path / "nope.gz"), label_path=str(tmp_path / "nope2.gz"))
    with pytest.raises(common.DatasetFileNotFoundError) as info:
        MNIST(mode="test")
    assert "t10k-images-idx3-ubyte.gz" in str(info.value) and str(data_home / "mnist") in str(info.value)


def test_image_backend_switch(data_home):
    w = write_mnist(data_home / "mnist", train=2, test=1)
    assert paddle.vision.get_image_backend() == "pil"
    paddle.vision.set_image_backend("cv2")
    try:
        assert isinstance(MNIST()[0][0], np.ndarray)
    finally:
        paddle.vision.set_image_backend("pil")
    with pytest.raises(ValueError):
        paddle.vision.set_image_backend("tk")
    with pytest.raises(NotImplementedError, match="OpenCV"):
        paddle.vision.image_load("x.png", backend="cv2")
    assert w


def test_cifar10_both_backends(data_home):
    w = write_cifar10(data_home / "cifar", per_batch=2, test=3)
    ds = Cifar10(mode="train")
    assert len(ds) == 10
    img, label = ds[7]
    want = w["train"][0][7].reshape(3, 32, 32).transpose(1, 2, 0)
    assert isinstance(img, Image.Image) and img.mode == "RGB" and img.size == (32, 32)
    np.testing.assert_array_equal(np.asarray(img), want)
    assert label.dtype == np.int64 and label.shape == () and int(label) == w["train"][1][7]
    arr, label = Cifar10(mode="test", backend="cv2")[2]
    assert arr.dtype == np.float32 and arr.shape == (32, 32, 3)
    np.testing.assert_array_equal(arr, w["test"][0][2].reshape(3, 32, 32).transpose(1, 2, 0))
    assert int(label) == w["test"][1][2]


def test_cifar10_reads_batches_in_sorted_order(tmp_path):
    # the archive lists data_batch_1..5 in order already; the dataset must not depend on test_batch
    w = write_cifar10(tmp_path, per_batch=1, test=1)
    ds = Cifar10(data_file=w["path"], mode="train", backend="cv2")
    assert [int(ds[i][1]) for i in range(5)] == w["train"][1]


def test_cifar100(data_home):
    w = write_cifar100(data_home / "cifar", train=4, test=2)
    ds = Cifar100(mode="train", backend="cv2")
    assert [int(ds[i][1]) for i in range(4)] == w["train"][1]
    img, _ = Cifar100(mode="test")[1]
    np.testing.assert_array_equal(np.asarray(img), w["test"][0][1].reshape(3, 32, 32).transpose(1, 2, 0))


def test_cifar_wrong_archive_is_a_clear_error(tmp_path):
    w = write_cifar100(tmp_path, train=2, test=1)
    with pytest.raises(common.DatasetFileError, match="no member whose name contains 'data_batch'"):
        Cifar10(data_file=w["path"])


def test_without_pillow_the_pil_backend_says_how_to_install_it(data_home, monkeypatch):
    w = write_mnist(data_home / "mnist", train=2, test=1)
    monkeypatch.setitem(__import__("sys").modules, "PIL", None)   # `from PIL import Image` now fails
    with pytest.raises(ImportError, match=r"Pillow.*headrace\[image\]"):
        MNIST(mode="train")
    img, _ = MNIST(mode="train", backend="cv2")[1]                # the array backend needs no Pillow
    np.testing.assert_array_equal(img, w["train"][0][1])


def test_mnist_with_to_tensor_in_eager_mode(data_home):
    from headrace.core import context
    from headrace.vision.transforms import ToTensor

    w = write_mnist(data_home / "mnist", train=3, test=1)
    with context.static_mode_guard(False):
        for backend, scale in (("pil", 255.0), ("cv2", 1.0)):   # a float32 array is not rescaled (the reference)
            img, label = MNIST(mode="train", transform=ToTensor(), backend=backend)[2]
            assert isinstance(img, paddle.Tensor) and img.shape == [1, 28, 28] and img.dtype == paddle.float32
            np.testing.assert_allclose(img.numpy()[0], w["train"][0][2] / scale, rtol=1e-6)
            assert label.tolist() == [w["train"][1][2]]
