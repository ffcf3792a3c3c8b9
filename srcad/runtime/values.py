"""What kind of derivative value a helper holds: the symbolic zero, a sequence, a mapping, a plain
array or number. Every other runtime module builds on these tests; this one imports no other."""
import numbers

import numpy as np


_ZERO_TYPES = (float, np.float64, np.float32, np.float16, int)



def _is_zero(v):
    """The zero derivative: 0.0 (what generated code starts from), None, or a scalar 0 that a
    template computed from it (0.0 * y for a NumPy scalar y is np.float64(0.0), which has lost the
    shape the derivative should have; every helper treats it as the symbolic zero)."""
    return v is None or (type(v) in _ZERO_TYPES and v == 0)



def _is_seq(v):
    return isinstance(v, (list, tuple))



def _is_map(v):
    """A dict argument (a pytree node): its derivative is a dict with (some of) its keys."""
    return isinstance(v, dict)



def _rebuild(x, items):
    """A container of x's type (list, tuple, namedtuple) holding items."""
    return type(x)(*items) if hasattr(type(x), "_fields") else type(x)(items)



def _is_namedtuple(v):
    return isinstance(v, tuple) and hasattr(type(v), "_fields")



_FLOAT_DTYPES = {}      # dtype -> the float dtype of its derivatives (a few entries)



def _float_dtype(x):
    if type(x) is np.ndarray:
        dt = x.dtype
    elif isinstance(x, (list, tuple)):   # np.result_type would read a list as a structured dtype's fields
        dt = np.result_type(*[_float_dtype(v) for v in x]) if len(x) else np.dtype(np.float64)
    else:
        dt = np.result_type(x)
    out = _FLOAT_DTYPES.get(dt)
    if out is None:
        out = _FLOAT_DTYPES[dt] = dt if np.issubdtype(dt, np.floating) or np.issubdtype(dt, np.complexfloating) \
            else np.dtype(np.float64)
    return out



def _plain(v):
    return isinstance(v, (np.ndarray, np.generic, numbers.Number))



def _zeros_of_kind(g, shape, dtype):
    """Zeros of the given shape, of the same kind as g: a plain array, or, for a duck-typed
    array (a batch of tangents, srcad.batching), that kind, so that g can be written into it."""
    if _plain(g) or _is_seq(g):
        return np.zeros(shape, dtype)
    zeros = getattr(g, "zeros_of_kind", None)       # a kind that makes its own (a sparsity trace)
    if zeros is not None:
        return zeros(shape)
    return np.broadcast_to(0.0 * np.sum(g), shape).astype(dtype)



_SCALARS = {float, int, np.float64, np.float32}



_DENSE = (np.ndarray, np.generic, float, int)



_KERNEL_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class _Missing:
    """What a dict held at a key it did not have (a tape entry, never a value users see)."""
    __slots__ = ()

    def __repr__(self):
        return "rt.MISSING"


MISSING = _Missing()
