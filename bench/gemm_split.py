"""The measurement behind ops/gemm.py: one set of threads for BLAS and element-wise work.

NumPy's OpenBLAS threads spin ~0.1 s after a matmul and hold the second core that headrace's
intra-op pool (ops/parallel.py) needs.  This bench checks the alternative: OpenBLAS at one thread,
the GEMM split by rows over two Python threads (np.matmul releases the GIL), against OpenBLAS's
own 1- and 2-thread GEMM at zoo shapes; it also checks the bits agree (1 vs 2 BLAS threads, and
the row split vs one call: equal at these float32 shapes; ops/gemm.py's docstring says where they
are not).  Run by hand:

    python bench/gemm_split.py
"""
import ctypes
import glob
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def main():
    libdir = os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs")
    libs = glob.glob(os.path.join(libdir, "libscipy_openblas*")) + glob.glob(os.path.join(libdir, "libopenblas*"))
    lib = ctypes.CDLL(libs[0])
    names = [n for n in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads") if hasattr(lib, n)]
    setn = getattr(lib, names[0]); print(libs[0].split('/')[-1], names[0])
    rng = np.random.default_rng(0)
    for (m, k, n) in [(2048, 256, 1024), (2048, 1024, 256), (32, 256, 1024), (8192, 576, 64)]:
        a = rng.standard_normal((m, k), dtype=np.float32); b = rng.standard_normal((k, n), dtype=np.float32)
        setn(2); ref2 = a @ b
        setn(1); ref1 = a @ b
        pool = ThreadPoolExecutor(2)
        out = np.empty((m, n), np.float32)
        def piece(lo, hi): np.matmul(a[lo:hi], b, out=out[lo:hi])
        h = (m // 2 // 16) * 16 or m // 2
        list(pool.map(lambda r: piece(*r), [(0, h), (h, m)]))
        t = {}
        for name, fn in [("blas2", lambda: (setn(2), a @ b)), ("blas1", lambda: (setn(1), a @ b)),
                         ("pool2", lambda: (setn(1), list(pool.map(lambda r: piece(*r), [(0, h), (h, m)]))))]:
            best = 1e9
            for _ in range(15):
                t0 = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t0)
            t[name] = best * 1e3
        print((m, k, n), "same bits 1thr vs 2thr:", np.array_equal(ref1, ref2), "pool vs 1thr:", np.array_equal(out, ref1),
              {k_: round(v, 3) for k_, v in t.items()})


if __name__ == "__main__":
    main()
