"""paddle.dataset 1.x readers (mnist, uci_housing) over tiny files in the real formats, found in
the reference's cache layout DATA_HOME/<module>/<file>; values compared with what the writer wrote."""
import gzip
import os

import numpy as np
import pytest

import headrace as paddle
from headrace.dataset import common
from tests.datafiles import idx_images_bytes, write_gzip, write_mnist, write_uci_housing


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path))
    return tmp_path


def test_mnist_train_and_test_samples(data_home):
    written = write_mnist(data_home / "mnist", train=7, test=3)
    for creator, mode in ((paddle.dataset.mnist.train, "train"), (paddle.dataset.mnist.test, "test")):
        samples = list(creator()())
        images, labels = written[mode]
        assert len(samples) == len(labels)
        for (img, label), want_img, want_label in zip(samples, images, labels):
            assert img.dtype == np.float32 and img.shape == (784,)
            np.testing.assert_allclose(img, want_img.reshape(-1).astype(np.float64) / 255 * 2 - 1, atol=1e-6)
            assert type(label) is int and label == int(want_label)
        assert min(s[0].min() for s in samples) >= -1 and max(s[0].max() for s in samples) <= 1


def test_mnist_reader_is_reiterable(data_home):
    write_mnist(data_home / "mnist", train=4, test=2)
    reader = paddle.dataset.mnist.train()
    first = [label for _, label in reader()]
    assert [label for _, label in reader()] == first


def test_mnist_missing_file_says_what_to_put_where(data_home):
    with pytest.raises(FileNotFoundError) as info:
        paddle.dataset.mnist.train()
    msg = str(info.value)
    assert "train-images-idx3-ubyte.gz" in msg and str(data_home / "mnist") in msg
    assert "https://dataset.bj.bcebos.com/mnist/train-images-idx3-ubyte.gz" in msg
    assert isinstance(info.value, common.DatasetFileNotFoundError)


def test_mnist_truncated_gzip_names_the_file(data_home):
    paths = write_mnist(data_home / "mnist", train=4, test=2)["paths"]["train"]
    data = open(paths[0], "rb").read()
    open(paths[0], "wb").write(data[: len(data) // 2])
    with pytest.raises(common.DatasetFileError, match="train-images-idx3-ubyte.gz.*gzip"):
        list(paddle.dataset.mnist.train()())


def test_mnist_wrong_magic_and_wrong_size(data_home):
    paths = write_mnist(data_home / "mnist", train=4, test=2)["paths"]["train"]
    label_bytes = gzip.open(paths[1]).read()
    write_gzip(paths[0], label_bytes)   # a labels file where the images file should be
    with pytest.raises(common.DatasetFileError, match="magic number 2049, expected 2051"):
        list(paddle.dataset.mnist.train()())
    images = np.zeros((4, 28, 28), np.uint8)
    write_gzip(paths[0], idx_images_bytes(images)[:-5])
    with pytest.raises(common.DatasetFileError, match="header says 4 images"):
        list(paddle.dataset.mnist.train()())
    write_gzip(paths[0], idx_images_bytes(np.zeros((3, 28, 28), np.uint8)))
    with pytest.raises(common.DatasetFileError, match="3 images but .* 4 labels"):
        list(paddle.dataset.mnist.train()())


def test_data_home_default_is_the_reference_cache():
    assert common.DATA_HOME == os.path.expanduser("~/.cache/paddle/dataset")


def _normalised(data):
    data = data.copy()
    mx, mn, avg = data.max(0), data.min(0), data.mean(0)
    for i in range(13):
        span = mx[i] - mn[i]
        data[:, i] = (data[:, i] - avg[i]) / (span if span else 1.0)
    return data


def test_uci_housing_train_test_split_and_normalisation(data_home):
    written = write_uci_housing(data_home / "uci_housing", rows=20)["data"]
    want = _normalised(written)
    train = list(paddle.dataset.uci_housing.train()())
    test = list(paddle.dataset.uci_housing.test()())
    assert len(train) == 16 and len(test) == 4
    for (x, y), row in zip(train + test, want):
        assert x.shape == (13,) and y.shape == (1,)
        np.testing.assert_allclose(x, row[:13], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(y, row[13:], rtol=1e-12)
    # the price is not normalised: it is exactly the written value
    np.testing.assert_array_equal(np.array([y[0] for _, y in train]), written[:16, 13])
    np.testing.assert_allclose(paddle.dataset.uci_housing.predict_reader()[0], want[16, :13])


def test_uci_housing_constant_column_is_zero_not_nan(data_home):
    written = write_uci_housing(data_home / "uci_housing", rows=10)["data"]
    assert np.ptp(written[:, 3]) in (0.0, 1.0)
    np.savetxt(data_home / "uci_housing" / "housing.data", np.concatenate([written[:, :3], np.full((10, 1), 0.5),
                                                                            written[:, 4:]], 1))
    xs = np.array([x for x, _ in paddle.dataset.uci_housing.train()()])
    assert np.isfinite(xs).all() and (xs[:, 3] == 0).all()


def test_uci_housing_bad_files(data_home):
    os.makedirs(data_home / "uci_housing")
    path = data_home / "uci_housing" / "housing.data"
    path.write_text("1 2 3\n")
    with pytest.raises(common.DatasetFileError, match="not a multiple of 14"):
        paddle.dataset.uci_housing.train()
    path.write_text("1 2 x\n")
    with pytest.raises(common.DatasetFileError, match="housing.data"):
        paddle.dataset.uci_housing.train()
    path.unlink()
    with pytest.raises(common.DatasetFileNotFoundError, match="housing.data"):
        paddle.dataset.uci_housing.test()
