"""Derivatives with a sparse matrix's pattern: building them, and reading a cotangent at the
stored entries of a value.

A sparse matrix's derivative (cotangent or tangent) is a scipy sparse matrix of the same class
with the same stored pattern in the same order: its `.data` holds one derivative per stored
entry (explicit zeros too). Internally such derivatives share the primal's index arrays (no
copy; `_like`). Cotangents of a `_matrix` value are sparse arrays inside the generated code
(`_cot`), so that a template's `g * x` multiplies entrywise; the user's gradient has the
argument's own class (accumulation.py).
"""
import copy
import weakref

import numpy as np
import scipy.sparse as sp

from ...errors import InputError
from .pattern import _entry_coords, _float_dtype, _same_entries, _same_pattern

__all__ = ["check_covers"]


# ---- building derivatives with a pattern -------------------------------------------------------
_OWNED = {}           # id -> weakref: .data arrays that srcad's helpers allocated and nobody else holds


def _own(a):
    """Mark a freshly allocated array as owned by the derivative it goes into (finalize may hand
    it to the user without a copy)."""
    key = id(a)
    try:
        _OWNED[key] = weakref.ref(a, lambda _, key=key: _OWNED.pop(key, None))
    except TypeError:
        pass
    return a


def _take_owned(a):
    ref = _OWNED.pop(id(a), None)
    return ref is not None and ref() is a


def _like(A, data, fresh=False, readonly=False):
    """A sparse matrix of A's class and pattern holding `data`: sharing A's index arrays (a
    derivative, which only srcad's helpers see), as read-only views when `readonly` (a gradient
    handed to the user), or with copies of them when `fresh` (a value the user's code may hand to
    scipy, which may sort a non-canonical pattern in place)."""
    data = np.asarray(data)
    if data.shape != A.data.shape:
        data = np.broadcast_to(data, A.data.shape)
    if not data.flags.c_contiguous or data.strides != (data.itemsize,) * data.ndim:
        data = np.ascontiguousarray(data)
    out = copy.copy(A)         # shallow: the index arrays are shared, the flags stay valid
    out.data = data
    if fresh or readonly:
        new = (lambda a: a.copy()) if fresh else _readonly_view
        if A.format == "coo":
            out.coords = tuple(new(c) for c in A.coords)
        else:
            out.indices, out.indptr = new(A.indices), new(A.indptr)
    return out


class _EntryByEntry:
    """A cotangent's product with a sparse operand of its own stored pattern (`g * A` in the
    adjoint of `B = A * s`, where B keeps A's entries) multiplies entry by entry. scipy's `*`
    would first sum each operand's duplicate entries, and a COO's duplicates would then meet
    each other's values (cross terms). Other products are scipy's."""

    def multiply(self, other):
        if sp.issparse(other) and _same_entries(self, other):
            return _cot(self, self.data * other.data)
        if _dense_operand(other):
            return _cot(self, self.data * _dense_at(other, self))
        return super().multiply(other)

    def __mul__(self, other):
        if sp.issparse(other) and _same_entries(self, other) or _dense_operand(other):
            return self.multiply(other)
        return super().__mul__(other)

    def __rmul__(self, other):
        if sp.issparse(other) and _same_entries(self, other) or _dense_operand(other):
            return self.multiply(other)
        return super().__rmul__(other)

    def __truediv__(self, other):
        # `g / y` in the adjoint of `A / y`: entry by entry, each duplicate keeping its own value
        if _dense_operand(other):
            return _cot(self, self.data / _dense_at(other, self))
        return super().__truediv__(other)

    def __neg__(self):
        return _cot(self, -self.data)


def _dense_operand(v):
    """A dense array or a number that a cotangent's entries are scaled by (NumPy broadcasting)."""
    return isinstance(v, (np.ndarray, np.generic, float, int)) and not isinstance(v, bool) and \
        np.ndim(v) <= 2 and getattr(np.asarray(v).dtype, "kind", "O") in "fiu"


class _CooCot(_EntryByEntry, sp.coo_array):
    """A cotangent with a COO pattern (see _EntryByEntry)."""


class _CsrCot(_EntryByEntry, sp.csr_array):
    """A cotangent with a CSR pattern (see _EntryByEntry)."""


class _CscCot(_EntryByEntry, sp.csc_array):
    """A cotangent with a CSC pattern (see _EntryByEntry)."""


_COT_KIND = {"coo": _CooCot, "csr": _CsrCot, "csc": _CscCot}


def _cot(A, data):
    """A cotangent of the sparse A holding `data`: A's pattern, as a sparse *array* even for a
    `_matrix` A (whose `*` is a matrix product: the adjoint templates' `g * x` must multiply
    entrywise), whose product with a value of its own pattern is entry by entry
    (_EntryByEntry). The user's gradient gets A's own class back (sparse_finalize)."""
    out = _like(A, data)
    if out.format in _COT_KIND and type(out) is not _COT_KIND[out.format]:
        out = _COT_KIND[out.format](out, copy=False)
    return out


def _readonly_view(a):
    v = a.view()
    v.flags.writeable = False
    return v


# ---- a cotangent read at stored entries ---------------------------------------------------------
def _matrix_at(g, rows, cols):
    """The matrix g (sparse: duplicates summed; or dense) evaluated at the points (rows, cols)."""
    if not sp.issparse(g):
        g = np.asarray(g)
        return g[rows, cols] if g.ndim == 2 else np.broadcast_to(g, (len(rows),))
    c = sp.csr_array(g, copy=True)
    c.sum_duplicates()
    n = c.shape[1]
    gr, gc = _entry_coords(c)
    keys = gr.astype(np.int64) * n + gc
    want = np.asarray(rows, np.int64) * n + np.asarray(cols, np.int64)
    at = np.searchsorted(keys, want)
    at_c = np.minimum(at, max(len(keys) - 1, 0))
    hit = (at < len(keys)) & (keys[at_c] == want) if len(keys) else np.zeros(len(want), bool)
    return np.where(hit, c.data[at_c] if len(keys) else 0.0, 0.0).astype(_float_dtype(c.dtype))


def check_covers(g, x):
    """Raise srcad.InputError when the cotangent g of a result of scipy's `x + y`, `x - y` or
    `x * y` (sparse operands) misses a stored entry of x: scipy dropped that entry from the result
    because its value came out zero (an explicit zero, or a sum that cancels), and with it the
    derivative it still has, which srcad cannot recover from scipy's result."""
    if _same_pattern(g, x) or g.shape != x.shape:
        return
    c = sp.csr_array(g)
    c.sum_duplicates()
    gr, gc = _entry_coords(c)
    n = x.shape[1]
    keys = gr.astype(np.int64) * n + gc
    xr, xc = _entry_coords(x)
    want = xr.astype(np.int64) * n + xc
    at = np.minimum(np.searchsorted(keys, want), max(len(keys) - 1, 0))
    if len(want) and (not len(keys) or not np.all(keys[at] == want)):
        raise InputError(
            "srcad: scipy's `A + B`, `A - B` or `A * B` of two sparse matrices dropped stored entries "
            "of an operand whose result came out zero (an explicit zero, or a sum that cancels); "
            "those entries still have a derivative, which scipy's result no longer holds. Write "
            "srcad.sparse.add(A, B) or srcad.sparse.subtract(A, B) for the sum, A.multiply(B) for "
            "the product: srcad keeps every stored entry there.")


def _values_at(g, A):
    """One value of the cotangent g per stored entry of A, in A's order. A sparse g whose entries
    are A's entries in A's order (scipy's `A * y` or `A / y` of a CSR/CSC A is a COO of A's
    entries) gives its values as they are: each duplicate entry its own."""
    if sp.issparse(g) and _same_entries(g, A):
        return g.data
    return _matrix_at(g, *_entry_coords(A))


def _dense_at(D, A):
    """The dense D, broadcast to A's shape, at A's stored entries (in A's order)."""
    D = np.asarray(D)
    if D.ndim == 0:
        return D
    if D.ndim > 2 or np.broadcast_shapes(D.shape, A.shape) != A.shape:
        raise ValueError(f"operands could not be broadcast together: sparse {A.shape} and dense {D.shape}")
    rows, cols = _entry_coords(A)
    D2 = D.reshape((1,) * (2 - D.ndim) + D.shape)
    return D2[rows if D2.shape[0] > 1 else 0, cols if D2.shape[1] > 1 else 0]


def _at(g, out_rows, out_cols, nnz):
    """The cotangent g of a result at its stored entries (out_rows, out_cols): g's own values when
    g has exactly those entries in that order (so a duplicate entry keeps its own cotangent), else
    g read as a matrix there (sparse g's duplicates summed, or dense)."""
    if sp.issparse(g) and g.nnz == nnz and g.format in ("csr", "csc", "coo") and len(g.data) == nnz:
        gr, gc = _entry_coords(g)
        if np.array_equal(gr, out_rows) and np.array_equal(gc, out_cols):
            return np.asarray(g.data)
    return _matrix_at(g, out_rows, out_cols)
