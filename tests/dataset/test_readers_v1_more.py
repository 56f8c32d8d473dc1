"""paddle.dataset 1.x cifar / imikolov / imdb over tiny files in the real formats (values compared
with what the writers wrote; dictionaries recomputed here with collections.Counter)."""
import collections
import os
import pickle
import string

import numpy as np
import pytest

import headrace as paddle
from headrace.dataset import common
from tests.datafiles import py2_pickle, write_cifar10, write_cifar100, write_imdb, write_imikolov, write_tar


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path))
    return tmp_path


def test_cifar10_train_and_test(data_home):
    w = write_cifar10(data_home / "cifar", per_batch=2, test=3)
    train = list(paddle.dataset.cifar.train10()())
    assert len(train) == 10
    for (img, label), want, want_label in zip(train, w["train"][0], w["train"][1]):
        assert img.dtype == np.float32 and img.shape == (3072,)
        np.testing.assert_allclose(img, want / 255.0, rtol=1e-6)
        assert type(label) is int and label == want_label
    test = list(paddle.dataset.cifar.test10()())
    assert [label for _, label in test] == w["test"][1]
    np.testing.assert_allclose(np.stack([img for img, _ in test]), w["test"][0] / 255.0, rtol=1e-6)


def test_cifar10_cycle_starts_over(data_home):
    w = write_cifar10(data_home / "cifar", per_batch=1, test=2)
    it = paddle.dataset.cifar.test10(cycle=True)()
    labels = [next(it)[1] for _ in range(5)]
    assert labels == (w["test"][1] * 3)[:5]


def test_cifar100(data_home):
    w = write_cifar100(data_home / "cifar", train=5, test=2)
    train = list(paddle.dataset.cifar.train100()())
    assert [label for _, label in train] == w["train"][1]
    np.testing.assert_allclose(train[3][0], w["train"][0][3] / 255.0, rtol=1e-6)
    assert [label for _, label in paddle.dataset.cifar.test100()()] == w["test"][1]


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


def test_malicious_pickle_in_cifar_tarball_is_refused_without_running(data_home, monkeypatch):
    monkeypatch.chdir(data_home)
    os.makedirs(data_home / "cifar")
    evil = pickle.dumps({b"data": np.zeros((1, 3072), np.uint8), b"labels": [_Evil()]}, protocol=2)
    write_tar(data_home / "cifar" / "cifar-10-python.tar.gz", {"cifar-10-batches-py/data_batch_1": evil})
    with pytest.raises(common.DatasetFileError, match=r"data_batch_1.*refused.*(posix|os)\.system"):
        list(paddle.dataset.cifar.train10()())
    assert not (data_home / "PWNED").exists()


def test_cifar_corrupt_and_missing(data_home):
    with pytest.raises(common.DatasetFileNotFoundError, match="cifar-10-python.tar.gz"):
        paddle.dataset.cifar.train10()
    w = write_cifar10(data_home / "cifar", per_batch=1, test=1)
    data = open(w["path"], "rb").read()
    open(w["path"], "wb").write(data[:200])
    with pytest.raises(common.DatasetFileError, match="cifar-10-python.tar.gz"):
        list(paddle.dataset.cifar.train10()())
    write_tar(w["path"], {"cifar-10-batches-py/data_batch_1": py2_pickle([1, 2])})
    with pytest.raises(common.DatasetFileError, match="expected a pickled dict"):
        list(paddle.dataset.cifar.train10()())


def _ranked(counter, cutoff):
    kept = sorted((item for item in counter.items() if item[1] > cutoff),
                  key=lambda kv: (-kv[1], kv[0].encode() if isinstance(kv[0], str) else kv[0]))
    d = {w: i for i, (w, _) in enumerate(kept)}
    d["<unk>"] = len(kept)
    return d


def _ptb_dict(w, cutoff):
    counter = collections.Counter()
    for words in w["train"] + w["valid"]:
        counter.update(x.encode() for x in words)
        counter.update(["<s>", "<e>"])
    return _ranked(counter, cutoff)


def test_imikolov_dict_ngram_and_seq(data_home):
    w = write_imikolov(data_home / "imikolov", name="imikolov%2Fsimple-examples.tgz")
    word_idx = paddle.dataset.imikolov.build_dict(min_word_freq=5)
    assert word_idx == _ptb_dict(w, 5)
    assert b"the" in word_idx and word_idx["<unk>"] == len(word_idx) - 1
    unk = word_idx["<unk>"]

    def ids(words):
        return [word_idx.get(x if x in ("<s>", "<e>") else x.encode(), unk) for x in words]

    want = [tuple(ids(s)[i - 3:i]) for s in (["<s>", *line, "<e>"] for line in w["train"])
            for i in range(3, len(s) + 1)]
    assert list(paddle.dataset.imikolov.train(word_idx, 3)()) == want
    seq = list(paddle.dataset.imikolov.test(word_idx, 6, paddle.dataset.imikolov.DataType.SEQ)())
    want_seq = [([word_idx["<s>"], *ids(line)], [*ids(line), word_idx["<e>"]]) for line in w["valid"]
                if len(line) + 1 <= 6]
    assert seq == want_seq and 0 < len(seq) < len(w["valid"])


def test_imikolov_default_cutoff_and_plain_file_name(data_home):
    w = write_imikolov(data_home / "imikolov")   # the original name simple-examples.tgz is accepted too
    assert paddle.dataset.imikolov.build_dict() == _ptb_dict(w, 50)
    with pytest.raises(ValueError, match="gram length"):
        list(paddle.dataset.imikolov.train(paddle.dataset.imikolov.build_dict(), -1)())


def test_imikolov_missing_names_both_file_names(data_home):
    with pytest.raises(common.DatasetFileNotFoundError) as info:
        paddle.dataset.imikolov.build_dict()
    msg = str(info.value)
    assert "imikolov%2Fsimple-examples.tgz" in msg and "'simple-examples.tgz'" in msg
    assert str(data_home / "imikolov") in msg


def _tokens(text):
    return text.encode().rstrip(b"\n\r").translate(None, string.punctuation.encode()).lower().split()


def test_imdb_dict_and_samples(data_home):
    w = write_imdb(data_home / "imdb", per_class=3, words=40, name="imdb%2FaclImdb_v1.tar.gz")
    counter = collections.Counter(t for split in ("train", "test") for kind in ("pos", "neg")
                                  for text in w[split][kind] for t in _tokens(text))
    import re
    word_idx = paddle.dataset.imdb.build_dict(re.compile(r"aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$"), 5)
    assert word_idx == _ranked(counter, 5)
    assert b"plot" in word_idx and b"Plot" not in word_idx   # lower-cased
    assert not any(b"," in k or b"<" in k for k in word_idx if isinstance(k, bytes))   # punctuation removed
    unk = word_idx["<unk>"]
    for split, creator in (("train", paddle.dataset.imdb.train), ("test", paddle.dataset.imdb.test)):
        want = [([word_idx.get(t, unk) for t in _tokens(text)], label)
                for label, kind in ((0, "pos"), (1, "neg")) for text in w[split][kind]]
        assert list(creator(word_idx)()) == want


def test_imdb_word_dict_cutoff_150(data_home):
    write_imdb(data_home / "imdb", per_class=2, words=10)
    assert paddle.dataset.imdb.word_dict() == {"<unk>": 0}   # nothing passes 150 (the reference raises)
    write_imdb(data_home / "imdb", per_class=8, words=80)
    d = paddle.dataset.imdb.word_dict()
    assert 1 < len(d) and d["<unk>"] == len(d) - 1
