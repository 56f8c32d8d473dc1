"""The update kernels' learning rate (ops/optim.py ``_lr``): a scalar of the parameter's dtype
holding the LearningRate tensor's value, whatever the two dtypes (the update's arithmetic then
runs in the parameter's dtype)."""
import numpy as np
import pytest

from headrace.ops.optim import _lr

DTYPES = (np.float16, np.float32, np.float64)


@pytest.mark.parametrize("lr_dtype", DTYPES)
@pytest.mark.parametrize("param_dtype", DTYPES)
def test_learning_rate_is_a_scalar_of_the_parameter_dtype(lr_dtype, param_dtype):
    rate = np.array([0.1], lr_dtype)
    got = _lr({"LearningRate": rate}, np.zeros(3, param_dtype))
    assert type(got) is np.dtype(param_dtype).type
    assert got == np.dtype(param_dtype).type(rate[0])
    assert _lr({"LearningRate": rate.reshape(1, 1)}, np.zeros(3, param_dtype)) == got   # any shape of one value
