"""Derivatives added up, zeros materialised, gradients handed back to the user.

Zero cotangents and tangents are the Python float 0.0 until something real is added to them. An
array that only the caller's variable holds is updated in place (`_sole`): no other name can see it.
"""
import numbers
import sys

import numpy as np
import scipy.sparse as sp

from .. import _kernels
from .rowsparse import RowSparse, add_rowsparse
from .sparse.accumulation import sparse_add, sparse_finalize
from .values import MISSING, _SCALARS, _float_dtype, _is_map, _is_seq, _is_zero, _plain, _rebuild


def _refs_of_a_local():
    """sys.getrefcount of an array inside a runtime helper when the only other reference is
    the caller's local variable (measured, not assumed: it differs between Python versions)."""
    def helper(a):
        return sys.getrefcount(a)

    def caller():
        local = np.empty(1)
        return helper(local)
    return caller()



_SOLE = _refs_of_a_local()



def _sole(a, refs):
    """Is the array a, passed to a runtime helper, referenced only by the caller's variable (and
    not a view of, or viewed by, another array)? Then the helper may update it in place: no
    other name can observe the change. `refs` is sys.getrefcount(a) taken in that helper."""
    return type(a) is np.ndarray and refs <= _SOLE and _kernels.unshared(a) and a.flags.writeable



def add(a, b):
    """a + b for derivatives: zeros, arrays, lists of derivatives, RowSparse, scipy sparse.
    An array that only the caller's variable holds is updated in place (no new allocation)."""
    refs = sys.getrefcount(a)       # first, before anything else refers to a
    ta, tb = type(a), type(b)
    if ta is np.ndarray and tb is np.ndarray:
        # the common case first (an array is never the symbolic zero): in place when a is the
        # caller's alone and b has its dtype and shape
        if _sole(a, refs) and b.dtype == a.dtype and b.shape == a.shape:
            a += b
            return a
        return a + b
    if _is_zero(a):
        return b
    if _is_zero(b):
        return a
    if ta in _SCALARS and tb in _SCALARS:
        return a + b
    if ta is np.ndarray and (tb is float or tb is np.float64):     # (in place: the sum keeps a's dtype)
        if _sole(a, refs) and a.dtype.kind == "f" and (tb is float or a.dtype == np.float64):
            a += b
            return a
        return a + b
    if tb is np.ndarray and (ta is float or ta is np.float64):
        return a + b
    if _sole(a, refs) and isinstance(b, (np.ndarray, np.generic, float)) and \
            np.result_type(a, b) == a.dtype and np.broadcast_shapes(np.shape(b), a.shape) == a.shape:
        a += b
        return a
    if _is_seq(a) or _is_seq(b):
        return [add(u, v) for u, v in zip(a, b)]
    if _is_map(a) or _is_map(b):     # keys missing from one side are zeros there
        out = dict(a)
        for k, v in b.items():
            out[k] = add(out[k], v) if k in out else v
        return out
    if isinstance(a, RowSparse) or isinstance(b, RowSparse):
        return add_rowsparse(a, b)
    if sp.issparse(a) or sp.issparse(b):
        return sparse_add(a, b)
    return a + b



def zeros_like(x):
    """A zero derivative of x's kind, materialised (for tangents that must have x's shape)."""
    if _is_seq(x):
        return [zeros_like(v) for v in x]
    if x is MISSING:
        return x
    if _is_map(x):
        return {k: zeros_like(v) for k, v in x.items()}
    if x is None or isinstance(x, (numbers.Number, str)) and not isinstance(x, np.generic):
        return 0.0
    if sp.issparse(x):
        return sparse_finalize(0.0, x)
    return np.zeros(np.shape(x), _float_dtype(x))



def finalize(bar, x, row_sparse=False):
    """The gradient returned to the user: same shape, type and float dtype as x (a NumPy scalar
    of x's float dtype for a NumPy scalar x, a Python float for a Python number)."""
    if type(x) is np.ndarray and type(bar) is np.ndarray and not row_sparse:
        # the common case first: an array cotangent of x's shape and dtype, owned and writable
        if bar.dtype == x.dtype and bar.shape == x.shape and bar.base is None and bar.flags.writeable \
                and x.dtype.kind == "f":
            return bar
    elif type(x) is float:
        if type(bar) is float:
            return bar if bar else 0.0
    if sp.issparse(x):
        return sparse_finalize(bar, x)
    if _is_seq(x):
        bar = [0.0] * len(x) if _is_zero(bar) else bar
        return _rebuild(x, [finalize(b, xi) for b, xi in zip(bar, x)])
    if _is_map(x):
        bar = {} if _is_zero(bar) else bar
        out = {k: finalize(bar.get(k, 0.0), v) for k, v in x.items()}
        return out if type(x) is dict else type(x)(out)
    if x is None:
        return None
    if isinstance(x, numbers.Number) and not isinstance(x, np.generic):
        return 0.0 if _is_zero(bar) else float(np.sum(bar) if np.ndim(bar) else bar)
    dtype = _float_dtype(x)
    if isinstance(x, np.generic):       # (row_sparse or not: a number has no rows)
        if _is_zero(bar):
            return dtype.type(0)
        if not _plain(bar) and hasattr(bar, "astype"):     # a duck-typed array: keep its kind
            return np.broadcast_to(bar, ()).astype(dtype)
        out = np.asarray(bar, dtype=dtype)
        return (out if out.shape == () else np.broadcast_to(out, ()))[()]
    if row_sparse and np.ndim(x) >= 1:     # (a 0-d array has no rows: its plain gradient)
        if isinstance(bar, RowSparse):
            if bar.factors is not None and bar.dtype == dtype:
                return bar
            return RowSparse(bar.indices, bar.values.astype(dtype, copy=False), bar.shape)
        dense = np.zeros(np.shape(x), dtype) if _is_zero(bar) else np.asarray(bar, dtype)
        return RowSparse(np.arange(dense.shape[0]), dense, dense.shape)
    if _is_zero(bar):
        return np.zeros(np.shape(x), dtype)
    if isinstance(bar, RowSparse):
        bar = bar.todense()
    if not _plain(bar) and hasattr(bar, "astype"):     # a duck-typed array: keep its kind
        return np.broadcast_to(bar, np.shape(x)).astype(dtype)
    out = np.asarray(bar, dtype=dtype)
    if out.shape != np.shape(x):
        out = np.broadcast_to(out, np.shape(x))
    if not out.flags.writeable or out.base is not None and out.strides != np.empty(0, dtype).strides:
        out = np.array(out, copy=True)
    return out



def tangent_list(xs_dot, xs):
    """The tangents of a list's items, zeros materialised with each item's shape."""
    if _is_zero(xs_dot):
        return [zeros_like(x) for x in xs]
    return [zeros_like(x) if _is_zero(d) else d for d, x in zip(xs_dot, xs)]
