"""Special functions for kernels, vectorised over NumPy arrays: ``erf`` and ``erfc``.

Not an op family: a helper module (NumPy has no erf, and headrace does not depend on SciPy).

The approximations are W. J. Cody's rational Chebyshev approximations ("Rational Chebyshev
Approximations for the Error Function", Math. Comp. 23 (1969) 631-638), with the coefficients
and the evaluation scheme of his SPECFUN routine CALERF (netlib specfun/erf):

1. ``|x| <= 0.46875``: ``erf(x) = x * R1(x**2)``;
2. ``0.46875 < |x| <= 4``: ``erfc(|x|) = exp(-x**2) * R2(|x|)``;
3. ``|x| > 4``: ``erfc(|x|) = exp(-x**2) / |x| * (1/sqrt(pi) + R3(1/x**2) / x**2)``,
   and ``erfc(|x|) = 0`` once it underflows (``|x| >= 26.543``).

``exp(-x**2)`` is evaluated as ``exp(-t**2) * exp(-(x - t)(x + t))`` with ``t`` = x rounded down
to a multiple of 1/16, which avoids the rounding error of forming ``x**2``.  Every result is
accurate to a few units in the last place of float64.  Inputs are computed in float64; the result
has the input's floating dtype (float64 for integer input).
"""
from __future__ import annotations

import math

import numpy as np

_THRESH = 0.46875
_XSMALL = 1.11e-16      # below this, x**2 is negligible in region 1
_XBIG = 26.543          # erfc(x) underflows to 0 for x >= _XBIG
_ONE_OVER_SQRT_PI = 5.6418958354775628695e-1

# Region 1, erf: numerator A[0..4], denominator B[0..3].
_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
      3.20937758913846947e03, 1.85777706184603153e-1)
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
      2.84423683343917062e03)
# Region 2, erfc: numerator C[0..8], denominator D[0..7].
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
      2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
      2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
      3.43936767414372164e03, 1.23033935480374942e03)
# Region 3, erfc: numerator P[0..5], denominator Q[0..4].
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
      1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
      6.05183413124413191e-2, 2.33520497626869185e-3)


def _rational(z, num, den, n_loop):
    """CALERF's Horner scheme: num[-1] and a monic denominator lead, num/den[n_loop] close."""
    xnum = num[-1] * z
    xden = z.copy()
    for i in range(n_loop):
        xnum = (xnum + num[i]) * z
        xden = (xden + den[i]) * z
    return (xnum + num[n_loop]) / (xden + den[n_loop])


def _exp_minus_square(y):
    """exp(-y**2) without the rounding error of forming y**2 (y >= 0)."""
    t = np.trunc(y * 16.0) / 16.0
    return np.exp(-t * t) * np.exp(-(y - t) * (y + t))


def _erf_small(x):
    """erf on |x| <= 0.46875 (region 1)."""
    y = np.abs(x)
    ysq = np.where(y > _XSMALL, y * y, 0.0)
    return x * _rational(ysq, _A, _B, 3)


def _erfc_positive(y):
    """erfc(y) for y > 0.46875 (regions 2 and 3); 0 where it underflows."""
    out = np.zeros_like(y)
    mid = y <= 4.0
    if mid.any():
        ym = y[mid]
        out[mid] = _exp_minus_square(ym) * _rational(ym, _C, _D, 7)
    far = (~mid) & (y < _XBIG)
    if far.any():
        yf = y[far]
        ysq = 1.0 / (yf * yf)
        r = ysq * _rational(ysq, _P, _Q, 4)
        out[far] = _exp_minus_square(yf) * ((_ONE_OVER_SQRT_PI - r) / yf)
    return out


def _as_float64(x):
    x = np.asarray(x)
    out_dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    return x.astype(np.float64, copy=False), out_dtype


def erf(x) -> np.ndarray:
    """The error function, elementwise; a 0-D array for a 0-D input.  NaN stays NaN."""
    x, out_dtype = _as_float64(x)
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    small = np.abs(flat) <= _THRESH
    out[small] = _erf_small(flat[small])
    large = ~small
    y = np.abs(flat[large])
    erf_y = (0.5 - _erfc_positive(y)) + 0.5      # 1 - erfc(y), as CALERF rounds it
    out[large] = np.where(flat[large] < 0, -erf_y, erf_y)
    nan = np.isnan(flat)
    out[nan] = np.nan
    return out.reshape(x.shape).astype(out_dtype, copy=False)


def erfc(x) -> np.ndarray:
    """The complementary error function 1 - erf(x), accurate also where it is tiny (x >> 0)."""
    x, out_dtype = _as_float64(x)
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    small = np.abs(flat) <= _THRESH
    out[small] = 1.0 - _erf_small(flat[small])
    large = ~small
    values = flat[large]
    tail = _erfc_positive(np.abs(values))
    out[large] = np.where(values < 0, 2.0 - tail, tail)
    nan = np.isnan(flat)
    out[nan] = np.nan
    return out.reshape(x.shape).astype(out_dtype, copy=False)


# --- the standard normal CDF to float32 accuracy, fast -------------------------------------------
# erfc(a) = t * exp(-a**2 + P(t)), t = k / (k + a), a >= 0, k = 2.05: P (degree 11) fitted by
# scripts/fit_erfc.py (least squares on Chebyshev nodes; |P - log(erfc(a) / t) - a**2| <= 5.9e-9 on
# all of a >= 0, so erfc's relative error is <= 6e-9, a tenth of float32's half-ulp 6e-8).
_ERFC_K = 2.05
_ERFC_P = (-1.29020473089933208e+00, 9.99998243202674164e-01, 3.81121306028908757e-01,
           9.32471527691028229e-02, -4.77684110164781905e-02, -2.89055161452896114e-01,
           5.31966574391713909e-01, -1.60882189750212090e+00, 2.73901545725692852e+00,
           -2.33268015054817202e+00, 9.95503399217932849e-01, -1.72321786453484477e-01)
# Evaluated in u = s t, s = |c11| ** (1 / 11), as Q(u) = P(u / s) = -u**11 + q10 u**10 + ... + q0
# (c11 < 0): Horner starts with one pass (q10 - u), and the factor t / 2 = u / (2 s) (times sqrt 2 for
# |x| Phi(-|x|) = sqrt 2 a erfc(a) / 2) joins the exponent's constant term.
_ERFC_S = abs(_ERFC_P[-1]) ** (1.0 / (len(_ERFC_P) - 1))
_ERFC_Q = tuple(c / _ERFC_S ** i for i, c in enumerate(_ERFC_P))
_ERFC_Q0 = {False: _ERFC_Q[0] - math.log(2.0 * _ERFC_S), True: _ERFC_Q[0] - math.log(math.sqrt(2.0) * _ERFC_S)}
_SQRT_HALF = 0.70710678118654752440


def normal_tail(a, u, p, times_abs=False):
    """p = Phi(-|x|) (times |x| with ``times_abs``) from a = |x| / sqrt 2, in place: a, u, p are
    float64 arrays of one shape; a ends as x**2 / 2, u as scratch.  Phi(-|x|) = erfc(a) / 2 has a
    relative error <= 1e-8 everywhere (no 1 - erf cancellation in the tail).  One pass over memory
    a step, no masks and no temporaries; |x| = inf gives nan with ``times_abs`` (0 * inf)."""
    np.add(a, _ERFC_K, out=u)
    np.divide(_ERFC_S * _ERFC_K, u, out=u)         # u = s t
    np.subtract(_ERFC_Q[-2], u, out=p)             # Horner on Q, leading coefficient -1
    for c in _ERFC_Q[-3:0:-1]:
        p *= u
        p += c
    p *= u
    p += _ERFC_Q0[times_abs]
    if times_abs:
        u *= a
    np.square(a, out=a)
    p -= a
    np.exp(p, out=p)                          # exp(Q(u) - a**2 + log(1 / (2 s)) [+ log(sqrt 2)])
    p *= u
    return p


def normal_cdf(x, density=False):
    """Phi(x) = erfc(-x / sqrt 2) / 2 for float64 ``x``, relative error <= 1e-8 everywhere (the
    left tail included: no 1 + erf cancellation); float64 arithmetic, so a float32 rounding of it
    is correctly rounded but for rare ties.  With ``density``, also exp(-x**2 / 2) (the normal
    density times sqrt(2 pi)), which the formula computes on the way (``normal_tail``)."""
    a = np.abs(x)
    a *= _SQRT_HALF
    half_erfc = normal_tail(a, np.empty_like(a), np.empty_like(a))   # h = Phi(-|x|); a = x**2 / 2
    g = np.exp(np.negative(a, out=a), out=a) if density else None
    np.copysign(half_erfc, x, out=half_erfc)
    np.subtract(~np.signbit(x), half_erfc, out=half_erfc)   # 1 - h where x's sign is +, 0 + h where -
    return (half_erfc, g) if density else half_erfc
