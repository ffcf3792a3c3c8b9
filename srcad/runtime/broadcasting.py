"""Cotangents brought back to their operand's shape and kind (the adjoints of broadcasting,
reshaping and conversions), and tangents brought to their primal's shape."""
import numbers

import numpy as np
import scipy.sparse as sp

from ..errors import UnsupportedSyntaxError
from .accumulate import tangent_list, zeros_like
from .sparse.derivative import check_covers
from .values import _DENSE, _float_dtype, _is_map, _is_seq, _is_zero, _plain
from .sparse.methods import cast_jvp as sparse_cast_jvp, cast_vjp as sparse_cast_vjp


def unbroadcast(g, x):
    """Sum the cotangent g down to the shape of x (undoes NumPy broadcasting)."""
    tg = type(g)
    if tg is np.ndarray:
        if type(x) is np.ndarray and g.shape == x.shape:
            return g
    elif tg is float or tg is np.float64:
        tx = type(x)
        if tx is float or tx is np.float64 or tx is np.ndarray and x.ndim == 0:
            return g
    if _is_zero(g):
        return g
    if not (isinstance(g, _DENSE) and isinstance(x, _DENSE)) and (
            _is_seq(x) or _is_map(x) or sp.issparse(x) or sp.issparse(g)):
        if sp.issparse(x) and sp.issparse(g):      # A + B, A * B: scipy may have dropped entries
            check_covers(g, x)
        if _is_seq(x) and _is_seq(g) and len(g) != len(x):    # which part of g is x's: unknown
            raise UnsupportedSyntaxError(
                "joining lists or tuples with `+` (or repeating one with `*`) where the code does not show "
                "they are lists", hint="write `list(a) + list(b)`, or build a repeated list with a comprehension")
        if not (sp.issparse(g) and isinstance(x, _DENSE)):
            return g
        g = np.asarray(g.sum()) if np.ndim(x) == 0 else g.toarray()   # s in A * s: a dense x's cotangent
    shape = np.shape(x)
    gshape = np.shape(g)
    if gshape == shape:
        return g
    g = np.asarray(g) if _plain(g) else g
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    lead = len(shape) - g.ndim          # > 0 only for a cotangent smaller than x (below)
    for axis, n in enumerate(shape[lead:]):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    if g.shape != shape:
        # smaller than x: a scalar cotangent (the symbolic zero, or a scalar seed) stands for
        # itself broadcast over the result, and scaling it by an operand kept only that
        # operand's shape; the rest of x's shape is the broadcast
        g = np.broadcast_to(g, shape)
    if isinstance(x, numbers.Number) and not isinstance(x, np.generic):
        return float(g)
    return g



def broadcast_shapes(a, b):
    """The shape two arrays of shapes a and b broadcast to (np.broadcast_shapes, quicker when equal)."""
    return a if a == b else np.broadcast_shapes(a, b)



_ZERO_BYTES = bytes(32)
_STAND_IN_FROM = 256      # entries: a smaller array is kept as it is (its reference costs less time)


def shape_stand_in(x):
    """What the tape keeps of an array the adjoint reads only for its type, dtype and shape: an
    array of them that holds no memory (read-only, every entry the one zero of a shared buffer);
    a small array, and anything else, as it is."""
    if type(x) is np.ndarray and x.size >= _STAND_IN_FROM and x.dtype.kind in "biufc" and x.itemsize <= 32:
        return np.ndarray(x.shape, x.dtype, _ZERO_BYTES, 0, (0,) * x.ndim)
    return x



def size_of(shape):
    """How many entries an array of this shape has (its `.size`)."""
    n = 1
    for d in shape:
        n *= d
    return n



def broadcast_like(v, ans):
    """A tangent brought to the shape of its primal (the forward twin of unbroadcast)."""
    if type(v) is np.ndarray and type(ans) is np.ndarray and v.shape == ans.shape:
        return v        # the common case first
    if _is_zero(v) or np.shape(v) == np.shape(ans):
        return v
    return np.broadcast_to(v, np.shape(ans))



def reshape_like(g, x):
    """g reshaped to x's shape (the adjoint of every reshape, squeeze and expand_dims)."""
    return g if _is_zero(g) else np.reshape(g, np.shape(x))



def as_cotangent(g, x):
    """The cotangent of `x` from that of np.asarray(x) / float(x) / x.astype(...)."""
    if _is_zero(g):
        return g
    if _is_seq(x):
        return [as_cotangent(gi, xi) for gi, xi in zip(g, x)]
    if _is_map(x):
        return {k: as_cotangent(g.get(k, 0.0), v) for k, v in x.items()}
    if isinstance(x, numbers.Number) and not isinstance(x, np.generic):
        return float(np.sum(g))
    return np.asarray(g, dtype=_float_dtype(x)) if np.ndim(g) else g



def discrete_result(ans):
    """Is `ans` (the result of a cast) of an integer or bool dtype: piecewise constant in its
    operand, so the cast carries no derivative? Decided from the value, so a dtype known only at
    run time (`x.astype(t)`) is handled as well as a constant one."""
    if isinstance(ans, (bool, int, np.bool_, np.integer)):
        return True
    dt = getattr(ans, "dtype", None)
    return dt is not None and dt.kind in "biu"


def _refuse_complex(ans):
    if np.iscomplexobj(ans) and not _is_seq(ans):
        raise UnsupportedSyntaxError(
            f"a cast to the complex dtype {np.asarray(ans).dtype} of a value that carries a derivative (srcad "
            f"differentiates real functions only: a complex derivative needs a conjugation convention)",
            hint="keep the real and imaginary parts as two real arrays, and write |z| as np.hypot(re, im)")


def cast_vjp(g, x, ans):
    """The cotangent of `x` from that of a cast `ans` of it (np.asarray(x, dtype), x.astype(dtype),
    np.float32(x)): zero when the cast is to an integer or bool dtype, else g in x's float kind;
    a cast to a complex dtype is refused (its cotangent would drop the imaginary part)."""
    _refuse_complex(ans)
    if discrete_result(ans):
        return zeros_like(x)
    if sp.issparse(x) and not _is_zero(g):     # x.astype(dtype) of a sparse x (sparse/methods.py)
        return sparse_cast_vjp(g, x, ans)
    return as_cotangent(g, x)


def as_tangent(x_dot, ans):
    """The tangent of np.asarray(x) from x's tangent (a list of tangents becomes an array); zero
    when `ans` has an integer or bool dtype (such a cast carries no derivative)."""
    if _is_zero(x_dot):
        return x_dot
    _refuse_complex(ans)
    if discrete_result(ans):
        return zeros_like(ans)
    if sp.issparse(ans):
        return sparse_cast_jvp(x_dot, ans)
    if _is_seq(x_dot):
        from ..batching import batch_size_nested, batched_array
        B = batch_size_nested(x_dot)
        if B is not None:           # many tangent directions at once (srcad.batching): one batch
            return batched_array(x_dot, B, _float_dtype(ans), np.shape(ans))
        from ..sparse_trace import trace_array
        traced = trace_array(x_dot, np.shape(ans))
        if traced is not None:      # dependency sets (srcad.sparsity's detection): one trace
            return traced
        parts = tangent_list(x_dot, list(np.asarray(ans)))
        return np.asarray(parts, dtype=object if any(np.asarray(p).dtype == object for p in parts)
                          else _float_dtype(ans))
    if hasattr(x_dot, "zeros_of_kind"):       # a sparsity trace (srcad.sparse_trace): a float cast keeps its sets
        return x_dot
    if np.asarray(x_dot).dtype == object:
        return np.asarray(x_dot)
    return np.asarray(x_dot, dtype=_float_dtype(ans)) if np.ndim(ans) else x_dot



def where_count(where, x, axis=None, keepdims=False):
    """How many entries of x a reduction with `where=where` over `axis` combines (the divisor of
    np.mean(x, where=where)): the mask broadcast to x's shape, counted."""
    return np.sum(np.broadcast_to(where, np.shape(x)), axis=axis, keepdims=keepdims)
