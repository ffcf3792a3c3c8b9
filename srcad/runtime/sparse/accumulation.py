"""Adding derivatives of a sparse matrix, the gradient handed to the user, and srcad.accumulate
(in place).

The gradient handed to the user (`sparse_finalize`) shares the argument's index arrays when scipy
never reorders them in place (a canonical CSR/CSC, or COO), as read-only views: an in-place edit
of the gradient's structure (`eliminate_zeros`) then raises instead of corrupting the input
(edit a `.copy()`); a non-canonical input's gradient gets its own copies.
"""
import numpy as np
import scipy.sparse as sp

from ... import _kernels as K
from ...errors import InputError
from .. import pattern_cache as _pc
from ..rowsparse import RowSparse
from .derivative import _like, _own, _take_owned, _values_at
from .pattern import _canonical, _dedup, _entry_coords, _float_dtype, _is_zero, _same_pattern

__all__ = ["sparse_add", "sparse_finalize", "accumulate"]


# ---- accumulation and the user's gradient -------------------------------------------------------
def sparse_add(a, b):
    """a + b for two derivatives of one sparse matrix: .data added, pattern and order kept (never
    scipy's `+`, which may reorder or drop explicit zeros). A dense and a sparse derivative add up
    to a dense array (the dense one is already dense: nothing new is densified)."""
    if _is_zero(a):
        return b
    if _is_zero(b):
        return a
    if sp.issparse(a) and sp.issparse(b):
        if _same_pattern(a, b):
            return _like(a, _own(a.data + b.data))
        # Two patterns: a cotangent srcad made has its value's pattern (whose duplicate entries may
        # hold different cotangents); one from scipy (a sum, a product) is canonical. The one with
        # duplicates is the value's own: the other is read at its entries. Else both are read as
        # matrices and added on the union of their entries.
        if _dedup(b) is not None and _dedup(b)[2]:
            a, b = b, a
        if _dedup(a) is not None and _dedup(a)[2]:
            return _like(a, a.data + _values_at(b, a))
        return (a.tocsr() + b.tocsr()).tocsr()
    dense, sparse = (b, a) if sp.issparse(a) else (a, b)
    out = np.array(dense, dtype=np.result_type(dense, sparse.dtype), copy=True)
    rows, cols = _entry_coords(sparse)
    np.add.at(out, (rows, cols), sparse.data)
    return out


def sparse_finalize(bar, A):
    """The gradient w.r.t. a sparse argument A: A's class, pattern and order (A's index arrays as
    read-only views, or copies when A is not canonical), data in A's float dtype (its own); `bar`
    is 0.0, a derivative with A's pattern, or dense."""
    dtype = _float_dtype(A.dtype)
    if _is_zero(bar):
        data = np.zeros(A.data.shape, dtype)
    else:
        data = _values_at(bar, A)
        if not (isinstance(data, np.ndarray) and data.dtype == dtype and K.unshared(data)
                and data.shape == A.data.shape and _take_owned(data)):
            data = np.array(data, dtype=dtype, copy=True)
    shared = _canonical(A)
    return _like(A, data, fresh=not shared, readonly=shared)


# ---- in-place accumulation -------------------------------------------------------------------------
def _same_shape(acc, g):
    """accumulate adds a gradient of acc's shape, never a broadcast one (that would be the gradient of
    another argument, added everywhere)."""
    shape = None if isinstance(g, (tuple, list, dict)) else tuple(g.shape if hasattr(g, "shape") else np.shape(g))
    if shape != tuple(acc.shape):
        what = type(g).__name__ if shape is None else f"shape {shape}"
        raise InputError(f"srcad.accumulate: the gradient has {what}, the accumulator shape {tuple(acc.shape)}. "
                         f"Pass the gradient of the argument the accumulator stands for.")



def accumulate(acc, g):
    """acc += g in place (dense, RowSparse, scipy sparse with acc's pattern, or a tuple/list of
    these); returns acc. Deterministic: the same bits for any thread count."""
    if _is_zero(g):
        return acc
    if isinstance(acc, (tuple, list)):
        if not isinstance(g, (tuple, list)) or len(g) != len(acc):
            got = f"a {type(g).__name__} of {len(g)}" if isinstance(g, (tuple, list)) else type(g).__name__
            raise InputError(f"srcad.accumulate: the accumulator is a {type(acc).__name__} of {len(acc)} and the "
                             f"gradient {got}; each gradient must go into an accumulator of its own. Pass "
                             f"an accumulator with one entry per gradient (e.g. the first gradient tuple copied).")
        for a, b in zip(acc, g):
            accumulate(a, b)
        return acc
    if isinstance(acc, dict):       # a pytree of accumulators and the gradient of that pytree
        if not isinstance(g, dict) or set(g) - set(acc):
            extra = sorted(set(g) - set(acc), key=str) if isinstance(g, dict) else type(g).__name__
            raise InputError(f"srcad.accumulate: the gradient has keys {extra} that the accumulator has not. "
                             f"Pass an accumulator with the gradient's keys.")
        for key, b in g.items():
            accumulate(acc[key], b)
        return acc
    if sp.issparse(acc):
        if not sp.issparse(g) or not _same_pattern(acc, g):
            raise InputError("srcad.accumulate: a sparse accumulator takes a gradient with its class "
                             "and stored pattern (the gradient of the same sparse argument)")
        K.add_into(acc.data, g.data)
        return acc
    _same_shape(acc, g)
    if isinstance(acc, RowSparse):
        if isinstance(g, RowSparse):
            add_i, add_v = g.indices, g.values
        else:
            dense = np.asarray(g.toarray() if sp.issparse(g) else g)
            add_i, add_v = np.arange(acc.shape[0]), np.broadcast_to(dense, acc.shape)
        acc.indices = np.concatenate([acc.indices, add_i])
        acc.values = np.concatenate([acc.values, np.asarray(add_v, acc.values.dtype)])
        return acc
    if not isinstance(acc, np.ndarray):
        raise TypeError(f"srcad.accumulate needs an accumulator it can update in place (an ndarray, "
                        f"a RowSparse or a scipy sparse matrix), not {type(acc).__name__}")
    if isinstance(g, RowSparse):
        if g.factors is not None:
            return K.scatter_add_outer_into(acc, g.indices, *g.factors)
        return K.scatter_add_rows_into(acc, g.indices, g.values)
    if sp.issparse(g):
        rows, cols = _entry_coords(g)
        np.add.at(acc, (rows, cols), g.data.astype(acc.dtype, copy=False))
        return acc
    return K.add_into(acc, g)


# each helper fingerprints a pattern's index arrays once per call (pattern_cache.py)
_pc.scope_module(globals(), __all__)
