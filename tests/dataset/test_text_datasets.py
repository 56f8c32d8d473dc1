"""paddle.text UCIHousing / Imikolov / Imdb over tiny files in the real formats."""
import collections
import string

import numpy as np
import pytest

import headrace as paddle
from headrace.dataset import common
from headrace.io import Dataset
from tests.datafiles import write_imdb, write_imikolov, write_uci_housing


@pytest.fixture
def data_home(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path))
    return tmp_path


def test_uci_housing(data_home):
    data = write_uci_housing(data_home / "uci_housing", rows=10)["data"]
    mx, mn, avg = data.max(0), data.min(0), data.mean(0)
    norm = (data[:, :13] - avg[:13]) / np.where(mx - mn == 0, 1, mx - mn)[:13]
    train, test = paddle.text.UCIHousing(mode="train"), paddle.text.datasets.UCIHousing(mode="test")
    assert isinstance(train, Dataset) and (len(train), len(test)) == (8, 2)
    x, y = test[1]
    assert x.dtype == np.float32 and x.shape == (13,) and y.dtype == np.float32 and y.shape == (1,)
    np.testing.assert_allclose(x, norm[9], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y, data[9, 13:], rtol=1e-6)
    with pytest.raises(ValueError, match="mode"):
        paddle.text.UCIHousing(mode="dev")


def _dict(counter, cutoff):
    kept = sorted((kv for kv in counter.items() if kv[1] > cutoff),
                  key=lambda kv: (-kv[1], kv[0].encode() if isinstance(kv[0], str) else kv[0]))
    d = {w: i for i, (w, _) in enumerate(kept)}
    d["<unk>"] = len(kept)
    return d


def test_imikolov_ngram_reads_the_test_file_in_mode_test(data_home):
    w = write_imikolov(data_home / "imikolov", name="imikolov%2Fsimple-examples.tgz")
    counter = collections.Counter()
    for words in w["train"] + w["valid"]:
        counter.update(x.encode() for x in words)
        counter.update(["<s>", "<e>"])
    word_idx = _dict(counter, 3)
    ds = paddle.text.Imikolov(data_type="NGRAM", window_size=2, mode="test", min_word_freq=3)
    assert ds.word_idx == word_idx
    unk = word_idx["<unk>"]
    want = []
    for line in w["test"]:
        ids = [word_idx.get(x if x in ("<s>", "<e>") else x.encode(), unk) for x in ["<s>", *line, "<e>"]]
        want += [tuple(ids[i - 2:i]) for i in range(2, len(ids) + 1)]
    assert len(ds) == len(want)
    got = [tuple(int(a) for a in ds[i]) for i in range(len(ds))]
    assert got == want and ds[0][0].shape == ()


def test_imikolov_seq(data_home):
    w = write_imikolov(data_home / "imikolov")
    ds = paddle.text.Imikolov(data_type="seq", window_size=0, mode="train", min_word_freq=3)
    assert len(ds) == len(w["train"])
    src, trg = ds[2]
    assert src[0] == ds.word_idx["<s>"] and trg[-1] == ds.word_idx["<e>"]
    np.testing.assert_array_equal(src[1:], trg[:-1])
    assert len(src) == len(w["train"][2]) + 1
    with pytest.raises(ValueError, match="data type"):
        paddle.text.Imikolov(data_type="CHAR")


def test_imdb(data_home):
    w = write_imdb(data_home / "imdb", per_class=2, words=12)
    ds = paddle.text.Imdb(mode="test", cutoff=3)

    def tokens(text):
        return text.encode().rstrip(b"\n\r").translate(None, string.punctuation.encode()).lower().split()

    counter = collections.Counter(t for split in ("train", "test") for kind in ("pos", "neg")
                                  for text in w[split][kind] for t in tokens(text))
    assert ds.word_idx == _dict(counter, 3)
    texts = w["test"]["pos"] + w["test"]["neg"]
    assert len(ds) == 4
    unk = ds.word_idx["<unk>"]
    for i, text in enumerate(texts):
        doc, label = ds[i]
        assert doc.tolist() == [ds.word_idx.get(t, unk) for t in tokens(text)]
        assert label.tolist() == [0 if i < 2 else 1]


def test_text_missing_files(data_home):
    for cls, name in ((paddle.text.UCIHousing, "housing.data"), (paddle.text.Imdb, "aclImdb_v1.tar.gz"),
                      (paddle.text.Imikolov, "simple-examples.tgz")):
        with pytest.raises(FileNotFoundError, match=name):
            cls()
    with pytest.raises(ValueError, match="downloading automatically is disabled"):
        paddle.text.Imdb(download=False)
