"""Book chapter 04, word2vec, run as a test: the chapter's code is in ``chapters/word2vec.py``
(verbatim but for imports; it says where it came from).  Training stops, as the chapter does,
once the test cost falls below 5.8 (so the tiny dictionary must be larger than e^5.8 ≈ 330 words
for the untrained model to start above it), then the chapter's ``infer`` loads the saved model and
predicts the next word of 'among a group of' from LoD tensors."""
import importlib
import sys

from tests.book.conftest import chapter_args, costs


def test_word2vec_trains_until_good_enough_then_infers(book_data, in_tmp, monkeypatch, capsys):
    sys.modules.pop("tests.book.chapters.word2vec", None)
    chapter = importlib.import_module("tests.book.chapters.word2vec")
    monkeypatch.setattr(chapter, "args", chapter_args(num_epochs=30), raising=False)
    monkeypatch.setattr(chapter, "PASS_NUM", 30, raising=False)
    chapter.main(use_cuda=False, is_sparse=True)
    out = capsys.readouterr().out
    test_costs = costs(out, r"Step \d+: Average Cost ([-\d.e+]+)")
    assert test_costs[0] > 5.8 and test_costs[-1] < 5.8 and len(test_costs) >= 2, out
    assert (in_tmp / "word2vec.inference.model").is_dir()
    assert "Inference Shape:  (1, %d)" % chapter.dict_size in out
