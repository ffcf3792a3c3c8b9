"""Building a sparse matrix inside the differentiated function (`csr_array((values, indices,
indptr))`, ...) and reading its `.data`, with their derivatives.

scipy sorts and merges a matrix in place (`A.sum()` sums its duplicate entries): the matrix is
built from copies of the caller's arrays, and one built unsorted or with duplicates is
remembered (`_BUILT_RAW`), so that a later read of its `.data` knows which entries it saw.
"""
import weakref

import numpy as np
import scipy.sparse as sp

from ...errors import InputError
from .. import pattern_cache as _pc
from .derivative import _cot, _like, _matrix_at, _values_at
from .pattern import _dedup, _entry_coords, _float_dtype, _fmt, _is_zero, _same_pattern

__all__ = ["data_vjp", "data_jvp", "construct", "construct_vjp", "construct_jvp"]


# ---- .data and construction -----------------------------------------------------------------
def data_vjp(g, x):
    """Cotangent of a sparse x from that of x.data."""
    if _is_zero(g):
        return g
    rec = _BUILT_RAW.get(id(x))
    size = np.size(g)
    if rec is not None and rec[0]() is x:
        nnz0 = rec[1]
        if x.data.size != nnz0:        # merged since it was built: the read's size says when it was
            pre = size == nnz0
        else:                          # sorted since (same entries, another order): not known
            pre = x.format != "coo" and bool(x.has_sorted_indices)
        if pre:
            raise InputError(
                "this line reads `.data` of a sparse matrix built inside the function with unsorted or "
                "duplicate indices, which scipy sorted or merged in place later (in `.sum()`, `.power()`, ...): "
                "srcad cannot tell which stored entries the read saw. Call `.sum_duplicates()` on the "
                "matrix right after building it, so its entries stay put")
    if size != x.data.size:
        raise InputError(f"this line reads `.data` of a sparse matrix with {size} stored entries, and the matrix "
                         f"now stores {x.data.size} (scipy merged or dropped entries in place since). Call "
                         f"`.sum_duplicates()` on the matrix right after building it, so its entries stay put")
    return _cot(x, np.asarray(g))


def data_jvp(x_dot, x):
    """Tangent of x.data."""
    if _is_zero(x_dot):
        return x_dot
    if sp.issparse(x_dot):    # a tangent from scipy's `+` may have its own pattern: read it at x's
        return x_dot.data if _same_pattern(x_dot, x) else _values_at(x_dot, x)
    return np.asarray(x_dot)[_entry_coords(x)]


def _is_triple(arg1):
    return isinstance(arg1, (tuple, list)) and len(arg1) == 3


def _is_coo_pair(arg1):
    return (isinstance(arg1, (tuple, list)) and len(arg1) == 2
            and isinstance(arg1[1], (tuple, list)) and len(arg1[1]) == 2)


_BUILT_RAW = {}     # id(matrix) -> (weakref, stored entries then): built by `construct` unsorted or with duplicates


def construct(kind, arg1, shape=None, dtype=None):
    """scipy.sparse.<kind>(arg1, shape=shape, dtype=dtype) as the user's code builds it, but from copies
    of (values, indices, indptr) / (values, (row, col)): scipy sorts and merges a matrix in place
    (`A.sum()` sums its duplicate entries), and would then rewrite the caller's arrays, which the
    derivative code reads for the pattern the matrix was built with (construct_vjp)."""
    cls = getattr(sp, kind)
    if _is_triple(arg1):
        arg1 = (np.array(arg1[0], copy=True), np.array(arg1[1], copy=True), np.array(arg1[2], copy=True))
    elif _is_coo_pair(arg1):
        arg1 = (np.array(arg1[0], copy=True), (np.array(arg1[1][0], copy=True), np.array(arg1[1][1], copy=True)))
    else:
        return cls(arg1, shape=shape, dtype=dtype)
    out = cls(arg1, shape=shape, dtype=dtype)
    if _fmt(out) is not None and not _canonical_now(out):
        key = id(out)
        try:
            _BUILT_RAW[key] = (weakref.ref(out, lambda _, key=key: _BUILT_RAW.pop(key, None)), out.data.size)
        except TypeError:
            pass
    return out


def _canonical_now(A):
    """Are A's entries sorted with no duplicates (checked, not read from scipy's cached flag)?"""
    d = _dedup(A)
    return d is None or not d[2] and (A.format == "coo" or bool(A.has_sorted_indices))


def _built_coords(arg1, ans):
    """(rows, cols) of the entries csr/csc/coo(arg1) was built with, in arg1's order."""
    if _is_coo_pair(arg1):
        return np.asarray(arg1[1][0]).ravel(), np.asarray(arg1[1][1]).ravel()
    indices, indptr = np.asarray(arg1[1]), np.asarray(arg1[2])
    major = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))[:len(indices)]
    return (major, indices) if ans.format == "csr" else (indices, major)


def _pattern_kept(arg1, ans):
    """Does ans still store the entries arg1 built it with, in that order?"""
    if ans.data.shape != np.shape(arg1[0]) and ans.data.size != np.size(arg1[0]):
        return False
    if ans.format == "coo":
        return _is_coo_pair(arg1) and np.array_equal(ans.row, np.ravel(arg1[1][0])) and \
            np.array_equal(ans.col, np.ravel(arg1[1][1]))
    return _is_triple(arg1) and np.array_equal(ans.indices, arg1[1]) and np.array_equal(ans.indptr, arg1[2])


def construct_vjp(g, arg1, ans):
    """Cotangent of the argument of csr_array(arg1)/coo_array(arg1)/... (and the _matrix forms).
    For (values, indices, indptr) it is [values_bar, 0.0, 0.0], for (values, (row, col)) it is
    [values_bar, [0.0, 0.0]]: integer index arrays carry no derivative."""
    if _is_zero(g):
        return g
    if (_is_triple(arg1) or _is_coo_pair(arg1) and ans.format == "coo") and not _pattern_kept(arg1, ans):
        # scipy sorted or merged ans in place after building it: each value the matrix was built
        # from gets the cotangent of the entry it went into (a merged entry is the sum of its parts)
        vals = _matrix_at(g, *_built_coords(arg1, ans))
        parts = [_as_values(vals, arg1[0]), 0.0, 0.0] if _is_triple(arg1) else [_as_values(vals, arg1[0]), [0.0, 0.0]]
        return parts
    if _is_triple(arg1):
        vals = _values_at(g, ans)                     # a CSR/CSC keeps the values' order
        return [_as_values(vals, arg1[0]), 0.0, 0.0]
    if _is_coo_pair(arg1):
        if ans.format == "coo":
            vals = _values_at(g, ans)                 # COO keeps order and duplicates
        else:                                         # CSR from (values, (row, col)): summed duplicates
            vals = _matrix_at(g, np.asarray(arg1[1][0]), np.asarray(arg1[1][1]))
        return [_as_values(vals, arg1[0]), [0.0, 0.0]]
    if sp.issparse(arg1):                             # a format conversion
        return _cot(arg1, _matrix_at(g, *_entry_coords(arg1)))
    if isinstance(arg1, tuple):                       # a shape: an empty matrix
        return [0.0] * len(arg1)
    return g.toarray() if sp.issparse(g) else g       # a dense argument is already dense


def _as_values(vals, values):
    shape = np.shape(values)
    vals = np.asarray(vals)
    if isinstance(values, np.ndarray):
        return vals.astype(_float_dtype(values.dtype), copy=False).reshape(shape)
    return vals.reshape(shape)


def construct_jvp(arg1_dot, arg1, ans):
    """Tangent of csr_array(arg1) / coo_array(arg1): ans's class and pattern, the values' tangents."""
    if _is_zero(arg1_dot):
        return arg1_dot
    if _is_triple(arg1) or _is_coo_pair(arg1):
        v_dot = arg1_dot[0]
        if _is_zero(v_dot):
            return 0.0
        v_dot = np.broadcast_to(np.asarray(v_dot), np.shape(arg1[0])).reshape(-1)
        if ans.format == "coo" or _is_triple(arg1):
            # index arrays of its own: scipy may sort or merge ans in place later (`A.sum()`), and the
            # tangent keeps the entries ans was built with (read back at ans's entries: data_jvp)
            return _like(ans, v_dot, fresh=True)
        rest = (arg1[1][0], arg1[1][1])
        return type(ans)((v_dot, rest), shape=ans.shape)
    if sp.issparse(arg1):
        return type(ans)(arg1_dot, shape=ans.shape)
    return type(ans)(np.asarray(arg1_dot), shape=ans.shape) if not isinstance(arg1, tuple) else 0.0


# each helper fingerprints a pattern's index arrays once per call (pattern_cache.py)
_pc.scope_module(globals(), ["data_vjp", "data_jvp", "construct_vjp", "construct_jvp"])
