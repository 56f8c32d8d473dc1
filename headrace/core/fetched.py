"""Fetched size-1 values that the 1.x idioms can print: ``float(loss)``, ``"%f" % acc``.

Classic fluid programs fetch a loss of shape [1] and write ``float(avg_cost)``, ``"%.3f" % acc``,
``"{:.3f}".format(loss)`` or ``loss[0]``.  NumPy >= 2.4 refuses ``float()``/``int()`` and format
specs on an array that is not 0-D.  ``scalar_like(arr)`` returns, for an array of exactly one
element, a view of the same memory as :class:`ScalarArray`: an ``np.ndarray`` subclass that adds
only the scalar conversions.

What it adds (size-1 arrays only): ``float()``, ``int()``, ``complex()``, ``operator.index()``
(integer and bool dtypes only, as a 0-D array), ``%f``/``%d``/``%s`` formatting, ``format()`` and
f-strings with a format spec (an empty spec prints as the array, as NumPy does).

What it does not change: shape, dtype, memory, indexing (``loss[0]`` is the NumPy scalar),
``isinstance(x, np.ndarray)``, ``str()``, ``repr()`` (printed as a plain ``array(...)``), pickling
(unpickles as a ScalarArray with the same data).  NumPy functions and operators on it return plain
ndarrays (``__array_ufunc__`` / ``__array_function__`` unwrap it), so ``loss * 2``,
``np.mean(...)``, ``np.concatenate(...)`` give the same type as for any array; only methods that
keep the array (``copy()``, ``reshape()``, ``astype()``, slicing) keep the subclass.  Arrays of
any other size are returned unchanged, except a column of size-1 rows (below).

Rows of a column (book chapters, issue 17).  1.x programs print a fetched prediction column of
shape ``[n, 1]`` row by row: ``for i, val in enumerate(results[0]): print("%.2f" % val)``; each row
is an array of one element, which NumPy >= 2.4 refuses to format.  ``scalar_like`` therefore
returns an array of two or more dims whose rows hold one element each (shape ``[n, 1]``,
``[n, 1, 1]``) as a :class:`ScalarRows` view: indexing or iterating it gives its rows as
``ScalarArray`` views.  Everything else is as for ``ScalarArray`` (arithmetic and NumPy functions
return plain arrays; ``float()`` of the whole column still fails unless ``n == 1``).
"""
import numpy as np


def _plain(value):
    if isinstance(value, (ScalarArray, ScalarRows)):
        return value.view(np.ndarray)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


class ScalarArray(np.ndarray):
    """An ndarray of one element that also converts to a Python scalar (see the module docstring)."""

    def _item(self, what):
        if self.size != 1:
            raise TypeError(f"only arrays of one element can be converted to Python scalars ({what}), "
                            f"got shape {self.shape}")
        return self.view(np.ndarray).reshape(()).item()

    def __float__(self):
        return float(self._item("float"))

    def __int__(self):
        return int(self._item("int"))

    def __complex__(self):
        return complex(self._item("complex"))

    def __index__(self):
        if self.dtype.kind not in "iub":
            raise TypeError(f"only integer arrays can be used as an index, got dtype {self.dtype}")
        return int(self._item("index"))

    def __format__(self, spec):
        if not spec or self.size != 1:
            return self.view(np.ndarray).__format__(spec)
        return format(self._item("format"), spec)

    def __repr__(self):
        return repr(self.view(np.ndarray))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        if out is None:
            return getattr(ufunc, method)(*_plain(inputs), **kwargs)
        kwargs["out"] = _plain(out)
        getattr(ufunc, method)(*_plain(inputs), **kwargs)
        return out[0] if len(out) == 1 else out   # in place (``x += 1``): x keeps its type

    def __array_function__(self, func, types, args, kwargs):
        return func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})


class ScalarRows(np.ndarray):
    """A column of size-1 rows whose rows convert to Python scalars (see the module docstring)."""

    def __getitem__(self, index):
        item = np.ndarray.__getitem__(self.view(np.ndarray), index)
        return scalar_like(item) if isinstance(item, np.ndarray) else item

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return repr(self.view(np.ndarray))

    __array_ufunc__ = ScalarArray.__array_ufunc__
    __array_function__ = ScalarArray.__array_function__


def scalar_like(value):
    """``value`` as a :class:`ScalarArray` view if it is an ndarray of one element, as a
    :class:`ScalarRows` view if it is a column of one-element rows, else unchanged."""
    if type(value) is not np.ndarray:
        return value
    if value.size == 1:
        return value.view(ScalarArray)
    if value.ndim >= 2 and value.size == len(value):
        return value.view(ScalarRows)
    return value
