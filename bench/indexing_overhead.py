"""Eager indexing cost: ``x[1:3, 0]`` through the bound ``__getitem__`` (which first checks whether the
index is a basic one) against calling the basic ``slice`` path directly, and a NumPy-style
advanced index (``getitem`` op).  Run by hand: ``python bench/indexing_overhead.py``."""
import timeit

import numpy as np

import headrace as paddle
from headrace.nn import tensor_methods

paddle.disable_static()
x = paddle.to_tensor(np.random.rand(64, 64).astype("float32"))
idx = np.array([3, 1, 7])
cases = {
    "x[1:3, 0] (bound __getitem__)": lambda: x[1:3, 0],
    "basic slice path directly": lambda: tensor_methods.getitem(x, (slice(1, 3), 0)),
    "x[::2, idx] (getitem op)": lambda: x[::2, idx],
    "numpy a[1:3, 0]": lambda a=x.numpy(): a[1:3, 0],
}
for name, fn in cases.items():
    n, total = 2000, min(timeit.repeat(fn, number=2000, repeat=5))
    print(f"{name:34s} {total / n * 1e6:8.2f} us")
