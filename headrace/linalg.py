"""``paddle.linalg``: the linear-algebra names headrace has (a facade over ``paddle.*``)."""
from .nn.tensor import matmul
from .nn.tensor_manip import cross, matrix_transpose
from .nn.tensor_reduce import dot, norm

__all__ = ["cross", "dot", "matmul", "matrix_transpose", "norm"]
