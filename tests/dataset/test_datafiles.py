"""The test-data writers produce the real formats: read back here with the standard library only
(struct/gzip, pickle with encoding='bytes' as the reference loads CIFAR, tarfile), not with headrace."""
import gzip
import pickle
import struct
import tarfile

import numpy as np

from tests import datafiles


def test_mnist_idx_layout(tmp_path):
    w = datafiles.write_mnist(tmp_path, train=3, test=2)
    img_path, lab_path = w["paths"]["train"]
    assert img_path.endswith("train-images-idx3-ubyte.gz") and lab_path.endswith("train-labels-idx1-ubyte.gz")
    buf = gzip.open(img_path).read()
    assert struct.unpack(">IIII", buf[:16]) == (2051, 3, 28, 28)
    assert buf[16:] == w["train"][0].tobytes()
    lab = gzip.open(lab_path).read()
    assert struct.unpack(">II", lab[:8]) == (2049, 3) and list(lab[8:]) == list(w["train"][1])
    assert w["paths"]["test"][0].endswith("t10k-images-idx3-ubyte.gz")


def test_cifar10_tarball_loads_as_the_reference_does(tmp_path):
    w = datafiles.write_cifar10(tmp_path, per_batch=2, test=3)
    with tarfile.open(w["path"]) as tar:
        names = sorted(m.name for m in tar.getmembers())
        assert names == ["cifar-10-batches-py/batches.meta"] + [
            f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6)] + ["cifar-10-batches-py/test_batch"]
        batch = pickle.load(tar.extractfile("cifar-10-batches-py/data_batch_2"), encoding="bytes")
        test = pickle.load(tar.extractfile("cifar-10-batches-py/test_batch"), encoding="bytes")
    assert batch[b"data"].dtype == np.uint8 and batch[b"data"].shape == (2, 3072)
    np.testing.assert_array_equal(batch[b"data"], w["train"][0][2:4])
    assert batch[b"labels"] == w["train"][1][2:4]
    np.testing.assert_array_equal(test[b"data"], w["test"][0])
    assert w["path"].endswith("cifar-10-python.tar.gz")


def test_cifar_pickles_are_python2_style():
    data = datafiles.py2_pickle({b"data": np.zeros((1, 2), np.uint8)})
    assert data[:2] == b"\x80\x02" and b"U\x04data" in data and b"cnumpy.core.multiarray\n" in data
    assert b"_codecs" not in data


def test_cifar100_tarball(tmp_path):
    w = datafiles.write_cifar100(tmp_path, train=3, test=2)
    with tarfile.open(w["path"]) as tar:
        train = pickle.load(tar.extractfile("cifar-100-python/train"), encoding="bytes")
    assert train[b"fine_labels"] == w["train"][1]
    np.testing.assert_array_equal(train[b"data"], w["train"][0])


def test_text_formats(tmp_path):
    rows = datafiles.write_uci_housing(tmp_path, rows=5)
    np.testing.assert_array_equal(np.fromfile(rows["path"], sep=" ").reshape(5, 14), rows["data"])
    ptb = datafiles.write_imikolov(tmp_path, train=4, valid=2, test=2)
    with tarfile.open(ptb["path"]) as tar:
        text = tar.extractfile("./simple-examples/data/ptb.valid.txt").read().decode()
    assert text.splitlines() == [" " + " ".join(words) + " " for words in ptb["valid"]]
    imdb = datafiles.write_imdb(tmp_path, per_class=2, words=6)
    with tarfile.open(imdb["path"]) as tar:
        names = [m.name for m in tar.getmembers()]
        assert tar.extractfile("aclImdb/test/neg/1_2.txt").read().decode() == imdb["test"]["neg"][1]
    assert names[0] == "aclImdb/train/pos/0_7.txt" and len(names) == 8


def test_write_data_home_fills_the_reference_cache_layout(tmp_path, monkeypatch):
    import headrace as paddle
    from headrace.dataset import common

    written = datafiles.write_data_home(tmp_path)
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path))
    assert len(list(paddle.dataset.mnist.test()())) == len(written["mnist"]["test"][1])
    assert len(paddle.vision.datasets.FashionMNIST(mode="train", backend="cv2")) == 12
    assert len(list(paddle.dataset.cifar.test100()())) == 4 and len(list(paddle.dataset.cifar.train10()())) == 15
    assert len(list(paddle.dataset.uci_housing.train()())) == 16
    assert paddle.dataset.imikolov.build_dict()["<unk>"] >= 1       # the default cutoff 50 keeps a few words
    assert len(paddle.text.Imdb(mode="train", cutoff=5)) == 6
