"""Helpers of elementwise rules: weights of max/min and clip, log that is 0 at 0."""
import numpy as np

from ..errors import MissingRuleError
from .values import _float_dtype


def log_or_zero(x):
    """log(x), with 0 where x == 0 (d(x**y)/dy at x == 0 is taken as 0)."""
    x = np.asarray(x, dtype=float)
    return np.log(np.where(x == 0, 1.0, x))



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
