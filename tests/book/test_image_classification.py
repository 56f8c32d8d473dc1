"""Book chapter 03, image_classification (ResNet-32 and VGG with batch norm and dropout on
CIFAR-10), run as a test: the chapter's code is in ``chapters/`` (verbatim but for imports; the
files say where they came from).  The chapter trains on 128-image batches; the tiny training set
here is one batch, so every pass is one step on the same images and its printed cost must fall."""
import numpy
import pytest
from PIL import Image

from tests.book.chapters import image_classification as chapter
from tests.book.conftest import chapter_args, costs


@pytest.mark.parametrize("net", ["resnet", "vgg"])
def test_image_classification_trains_saves_and_infers(net, book_data, in_tmp, monkeypatch, capsys):
    monkeypatch.setattr(Image, "ANTIALIAS", Image.LANCZOS, raising=False)   # removed in Pillow 10
    monkeypatch.setitem(vars(chapter), "__file__", str(in_tmp / "train.py"))
    if net == "vgg":
        monkeypatch.setattr(chapter, "inference_network", chapter.inference_network_vgg)
    (in_tmp / "image").mkdir()
    dog = numpy.random.default_rng(2).integers(0, 256, size=(40, 40, 3), dtype=numpy.uint8)
    Image.fromarray(dog, mode="RGB").save(in_tmp / "image" / "dog.png")
    monkeypatch.setattr(chapter, "args", chapter_args(num_epochs=6), raising=False)
    chapter.main(use_cuda=False)
    out = capsys.readouterr().out
    train_costs = costs(out, r"Pass 0, Batch \d+, Cost ([-\d.e+]+)")
    assert len(train_costs) == 6 and train_costs[-1] < 0.8 * train_costs[0], out
    assert len(costs(out, r"Test with Pass \d+, Loss ([-\d.e+]+)")) == 6
    assert "infer results: " in out and (in_tmp / "image_classification_resnet.inference.model").is_dir()
