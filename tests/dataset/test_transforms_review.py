"""Edge cases of the vision transforms found in review."""
import numpy as np
import pytest

import headrace.vision.transforms as T
from headrace.core import context
import headrace.vision.transforms.functional as F


def test_center_crop_larger_than_array_or_tensor_raises():
    img = np.arange(20, dtype="uint8").reshape(4, 5)
    # slicing with a negative start used to return a (1, 5) array for a 6x6 crop
    with pytest.raises(ValueError, match="larger than the image 4x5"):
        F.center_crop(img, 6)
    with context.static_mode_guard(False), pytest.raises(ValueError, match="larger than the image 4x5"):
        T.CenterCrop((5, 5))(F.to_tensor(img))
    np.testing.assert_array_equal(F.center_crop(img, (2, 3)), img[1:3, 1:4])
