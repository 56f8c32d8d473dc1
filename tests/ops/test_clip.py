"""clip, squared_l2_norm, clip_by_norm, sign: forward against NumPy references written here,
gradients against float64 central differences, build-time errors."""
import numpy as np
import pytest

from headrace.core.errors import AttrError
from tests.ops.gradcheck import check_grad
from tests.ops.harness import Case, check_build_error, check_forward, check_infer_batch, ids

rng = np.random.default_rng(5)
X = rng.normal(size=(4, 3)).astype(np.float32)


def _clip_by_norm_ref(x, max_norm):
    norm = np.sqrt((x.astype(np.float64) ** 2).sum())
    return (x * float(max_norm / norm)).astype(x.dtype) if norm > max_norm else x


CASES = [
    Case("clip", {"X": X}, lambda ins, a: {"Out": np.minimum(np.maximum(ins["X"], -0.5), 0.7)},
         {"min": -0.5, "max": 0.7}, id="clip"),
    Case("squared_l2_norm", {"X": X}, lambda ins, a: {"Out": np.array([(ins["X"].astype(np.float64) ** 2).sum()], np.float32)},
         id="squared_l2_norm", rtol=1e-6, batch_outputs=()),
    Case("clip_by_norm", {"X": X}, lambda ins, a: {"Out": _clip_by_norm_ref(ins["X"], 1.0)}, {"max_norm": 1.0},
         id="clip_by_norm-clipped", rtol=1e-6),
    Case("clip_by_norm", {"X": X}, lambda ins, a: {"Out": ins["X"]}, {"max_norm": 100.0}, id="clip_by_norm-kept"),
    Case("sign", {"X": np.array([[-2.0, 0.0, 3.0]], np.float32)},
         lambda ins, a: {"Out": np.array([[-1.0, 0.0, 1.0]], np.float32)}, id="sign"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_forward(case):
    check_forward(case)


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_unknown_batch(case):
    check_infer_batch(case)


def test_clip_gradient():
    x = rng.uniform(-2, 2, size=(5, 4))
    x[np.abs(np.abs(x) - 0.8) < 0.05] = 0.0   # keep finite differences away from the kinks
    check_grad("clip", {"X": x}, {"min": -0.8, "max": 0.8})


def test_squared_l2_norm_gradient():
    check_grad("squared_l2_norm", {"X": rng.normal(size=(3, 4))})


def test_bad_attributes():
    check_build_error("clip", {"X": X}, {"min": 1.0, "max": 0.0}, AttrError, "min")
    check_build_error("clip_by_norm", {"X": X}, {"max_norm": 0.0}, AttrError, "max_norm")
