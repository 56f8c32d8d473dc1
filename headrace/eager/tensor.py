"""The eager Tensor: a NumPy array with a gradient, and the Parameter layers create in dygraph mode.

A Tensor made by ``to_tensor`` or a creation op is ``stop_gradient=True``; a Parameter is
``stop_gradient=False`` (unless not trainable).  An op's output requires grad iff an input does and
the op is differentiable (``runner.py``); such an output remembers the tape node that made it.
Only leaves (tensors no recorded op produced) keep a ``.grad``; it accumulates across
``backward()`` calls until ``clear_gradient()``.

Python operators (``+``, ``@``, ``<`` ..., and ``astype``/``cast``) and math and shape methods
(``mean``, ``reshape``, indexing ...) are bound by ``headrace.nn`` at import time, onto Tensor and
static Variable alike (``nn/operators.py``, ``nn/tensor_methods.py``).
"""
from __future__ import annotations

import numpy as np

from ..core import names
from ..core.fetched import scalar_like
from ..core.dtypes import convert_dtype


class Tensor:
    """An eager tensor (see the module docstring)."""

    __slots__ = ("_value", "stop_gradient", "_node", "_out_index", "_grad", "_grad_owned", "_name",
                 "persistable", "__weakref__")

    def __init__(self, value, stop_gradient=True, name=None):
        self._value = np.asarray(value)
        self.stop_gradient = bool(stop_gradient)
        self._node = None
        self._out_index = 0
        self._grad = None
        self._grad_owned = False
        self._name = name
        self.persistable = False

    @classmethod
    def _wrap(cls, value, stop_gradient=True):
        """Fast constructor for runner outputs (no conversion)."""
        t = object.__new__(cls)
        t._value = value
        t.stop_gradient = stop_gradient
        t._node = None
        t._out_index = 0
        t._grad = None
        t._grad_owned = False
        t._name = None
        t.persistable = False
        return t

    # --- metadata -----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        if self._name is None:
            self._name = names.generate("generated_tensor")
        return self._name

    @name.setter
    def name(self, value):
        self._name = str(value)

    @property
    def shape(self) -> list:
        return list(self._value.shape)

    @property
    def dtype(self):
        return convert_dtype(self._value.dtype)

    @property
    def ndim(self) -> int:
        return self._value.ndim

    dim = ndim

    @property
    def size(self) -> int:
        return int(self._value.size)

    @property
    def place(self):
        return "Place(cpu)"

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    def numpy(self) -> np.ndarray:
        """A copy of the data (one element: also usable as a Python scalar, see ``core/fetched.py``)."""
        return scalar_like(np.array(self._value, copy=True))

    def item(self, *index):
        if not index and self._value.size != 1:
            raise ValueError(f"item(): only a Tensor of one element can be converted to a Python scalar, "
                             f"got shape {self.shape}")
        return self._value.item(*index)

    def tolist(self):
        return self._value.tolist()

    def __array__(self, dtype=None, copy=None):
        return self._value if dtype is None else self._value.astype(dtype)

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError("len() of a 0-D Tensor")
        return self._value.shape[0]

    def __iter__(self):
        # explicit: without it Python iterates by indexing 0, 1, ... until IndexError, so a 0-D
        # Tensor (whose indexing raises IndexError) would iterate as empty
        if self._value.ndim == 0:
            raise TypeError("iteration over a 0-D Tensor")
        return (self[i] for i in range(self._value.shape[0]))

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._value.dtype.kind not in "iu":
            raise TypeError(f"only integer Tensors can be used as an index, got {self.dtype}")
        return int(self.item())

    def __bool__(self):
        if self._value.size != 1:
            raise ValueError(f"the truth value of a Tensor with {self._value.size} elements is ambiguous")
        return bool(self._value.item())

    __hash__ = object.__hash__   # by identity: ``==`` builds an op (nn/operators.py)

    def __repr__(self):
        body = np.array2string(self._value, separator=", ", prefix="       ")
        return (f"Tensor(shape={self.shape}, dtype={self.dtype}, place={self.place}, "
                f"stop_gradient={self.stop_gradient},\n       {body})")

    __str__ = __repr__

    # --- gradients ----------------------------------------------------------------------------
    @property
    def grad(self):
        """The accumulated gradient (a Tensor), or None."""
        return self._grad

    def _grad_ivar(self):
        return self._grad

    def gradient(self):
        """The accumulated gradient as a NumPy array, or None."""
        return None if self._grad is None else self._grad.numpy()

    def _accumulate_grad(self, grad) -> None:
        if tuple(grad.shape) != self._value.shape:
            raise ValueError(f"gradient of shape {list(grad.shape)} for tensor {self.name!r} of shape "
                             f"{self.shape}")
        if grad.dtype != self._value.dtype:
            grad = grad.astype(self._value.dtype)
        if self._grad is None:
            # kept as is: a gradient array may be a view shared with another tensor's gradient,
            # so it is never written in place until replaced by a buffer of our own
            self._grad = Tensor._wrap(grad)
            self._grad_owned = False
        elif self._grad_owned:
            np.add(self._grad._value, grad, out=self._grad._value)
        else:
            self._grad._value = self._grad._value + grad
            self._grad_owned = True

    def clear_gradient(self, set_to_zero=True) -> None:
        """Zero the gradient (``set_to_zero``) or drop it."""
        if self._grad is None:
            return
        if set_to_zero:
            if self._grad_owned:
                self._grad._value.fill(0)          # reuse the buffer (gradients keep their storage)
            else:
                self._grad._value = np.zeros_like(self._value)
                self._grad_owned = True
        else:
            self._grad = None

    clear_grad = clear_gradient

    def backward(self, grad_tensor=None, retain_graph=False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``; a non-scalar starts from ones
        (or from ``grad_tensor``)."""
        from . import tape

        if self.stop_gradient:
            raise RuntimeError(f"backward() on tensor {self.name!r}, which has stop_gradient=True: no "
                               "gradient flows to it (did all its inputs have stop_gradient=True, or "
                               "was it computed under paddle.no_grad()?)")
        if grad_tensor is None:
            seed = np.ones(self._value.shape, self._value.dtype)
        else:
            seed = np.asarray(grad_tensor._value if isinstance(grad_tensor, Tensor) else grad_tensor,
                              dtype=self._value.dtype)
            if seed.shape != self._value.shape:
                raise ValueError(f"backward(): grad_tensor has shape {list(seed.shape)}, the tensor has "
                                 f"shape {self.shape}")
        tape.run_backward([self], [seed], retain_graph=retain_graph)

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (``stop_gradient=True``)."""
        return Tensor._wrap(self._value, True)

    # --- data ----------------------------------------------------------------------------------
    def set_value(self, value) -> None:
        """Replace the data (same shape and dtype), e.g. to load weights.  An ndarray or Tensor of
        another dtype is an error (as the reference's); Python numbers and lists are converted."""
        from ..core.errors import DTypeError, ShapeError

        typed = isinstance(value, (Tensor, np.ndarray, np.generic))
        value = np.asarray(value._value if isinstance(value, Tensor) else value)
        if value.shape != self._value.shape:
            raise ShapeError(f"set_value: tensor {self.name!r} has shape {self.shape}, got {list(value.shape)}")
        if typed and value.dtype != self._value.dtype:
            raise DTypeError(f"set_value: tensor {self.name!r} has dtype {self._value.dtype}, got {value.dtype}; "
                             f"convert it first (value.astype('{self._value.dtype}'))")
        self._value = value.astype(self._value.dtype, copy=True)


class Parameter(Tensor):
    """A trainable eager tensor created by a layer: named (``linear_0.w_0``), persistable, with
    the optimizer options of its ParamAttr."""

    __slots__ = ("optimize_attr", "regularizer", "do_model_average", "need_clip", "is_distributed")

    def __init__(self, value, name, trainable=True, optimize_attr=None, regularizer=None,
                 do_model_average=None, need_clip=True):
        super().__init__(value, stop_gradient=not trainable, name=name)
        self.persistable = True
        self.optimize_attr = dict(optimize_attr) if optimize_attr else {"learning_rate": 1.0}
        self.regularizer = regularizer
        self.do_model_average = do_model_average
        self.need_clip = need_clip
        self.is_distributed = False

    @property
    def trainable(self) -> bool:
        return not self.stop_gradient

    @trainable.setter
    def trainable(self, value):
        self.stop_gradient = not value

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__
