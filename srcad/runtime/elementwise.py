"""Helpers of elementwise rules: weights of max/min and clip, log that is 0 at 0."""
import numpy as np

from ..errors import MissingRuleError
from .values import _float_dtype


def log_or_zero(x):
    """log(x), with 0 where x == 0 (d(x**y)/dy at x == 0 is taken as 0)."""
    x = np.asarray(x, dtype=float)
    return np.log(np.where(x == 0, 1.0, x))


def power_slope(x, y, scale=1):
    """d(x**y)/dx = y * x**(y - 1) (times `scale`), with 0 where y * scale == 0: x**0 is the
    constant 1, also at x == 0, where y * x**(y - 1) would read 0 * inf. (`scale` carries the
    factor of a second derivative, y * (y - 1) * x**(y - 2) = power_slope(x, y - 1, y).)"""
    c = np.multiply(y, scale)
    if np.ndim(c) == 0 and c == 0:
        return np.zeros(np.shape(x), dtype=_float_dtype(np.result_type(x, 1.0)))
    if np.ndim(c) == 0:
        return c * x ** (y - 1)
    zero = c == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        out = c * np.asarray(x, dtype=np.result_type(x, y, 1.0)) ** (np.asarray(y) - 1)
    return np.where(zero, 0.0, out) if zero.any() else out



def pick_weight(x, y):
    """The share of max(x, y)'s derivative that goes to x: 1, 0, or 0.5 at a tie."""
    return (np.greater(x, y) + 0.5 * np.equal(x, y)).astype(_float_dtype(np.result_type(x, y)))



def clip_mask(x, lo, hi):
    """1 where clip(x, lo, hi) passes x through, 0 where it clips."""
    m = np.ones(np.shape(x), dtype=bool)
    if lo is not None:
        m &= np.asarray(x) >= lo
    if hi is not None:
        m &= np.asarray(x) <= hi
    return m.astype(_float_dtype(x))


def real_only(v, x, name="np.real"):
    """v, after checking that x (the argument of np.real/np.imag/np.conj/np.angle/np.real_if_close)
    is real: srcad differentiates real arrays only, where these are the identity or constant."""
    if np.iscomplexobj(x):
        raise MissingRuleError(f"{name} of a complex array", fix="write the real and imaginary parts as two real "
                               "arrays (srcad differentiates real arrays)")
    return v
