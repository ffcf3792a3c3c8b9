"""Runtime helpers for scipy sparse values: products, reductions and their derivatives.

A sparse matrix's derivative (cotangent or tangent) is a scipy sparse matrix of the same class
with the same stored pattern in the same order: its `.data` holds one derivative per stored
entry (explicit zeros too). Internally such derivatives share the primal's index arrays (no
copy). The gradient handed to the user (`sparse_finalize`) shares them too when scipy never
reorders them in place (a canonical CSR/CSC, or COO), as read-only views: an in-place edit of
the gradient's structure (`eliminate_zeros`) then raises instead of corrupting the input (edit
a `.copy()`); a non-canonical input's gradient gets its own copies.

Every product goes through srcad's compiled kernels, through a *grouping* of the stored
entries: by row (for `A @ X`) or by column (for `A.T @ G`). For CSR the row grouping is the
matrix itself and the column grouping is a transposed index (`csr_transpose_index`); for CSC
the other way round; for COO both are a stable sort of the coordinates (or the coordinates
themselves when already sorted). Derived groupings are built once per pattern and cached
(pattern_cache.py): found by the identity of the index buffers, used only while a fingerprint of
their content matches, so index arrays refilled in place between calls get their facts built
again.

Duplicate entries (a COO, or a non-canonical CSR/CSC) are summed where scipy sums them
(`merged`, a map cached per pattern), and each duplicate gets its summed entry's derivative
(`unmerged`). Every pattern is checked once (`check_pattern`: its indices fit its shape).
Cotangents of a `_matrix` value are sparse arrays inside the generated code (`_cot`), so that a
template's `g * x` multiplies entrywise; the user's gradient has the argument's own class.

Zero derivatives are the Python float 0.0 and every helper passes them through unchanged.
"""
import copy
import weakref

import numpy as np
import scipy.sparse as sp

from .. import _kernels as K
from ..batching import Batched
from ..errors import InputError
from ..inputs import sparse_format_error
from . import pattern_cache as _pc
from .rowsparse import RowSparse

__all__ = [
    "sparse_matmul", "sparse_rmatmul", "matmul_vjp_values", "sparse_add", "sparse_finalize",
    "sparse_sum_vjp", "sum_jvp", "multiply", "multiply_vjp_x", "multiply_vjp_y", "data_vjp",
    "data_jvp", "construct_vjp", "construct_jvp", "reduce", "reduce_vjp", "reduce_jvp",
    "segment", "segment_vjp", "segment_jvp", "accumulate", "clear_cache",
]


def _is_zero(v):
    return v is None or (type(v) is float and v == 0.0)


def _float_dtype(dt):
    dt = np.dtype(dt)
    return dt if dt.kind in "fc" else np.dtype(np.float64)


# ---- cached groupings of a pattern ------------------------------------------------------------
class _Groups:
    """Stored entries grouped: group b holds entries ptr[b]:ptr[b+1] of the arrays `idx` (the
    other coordinate) and `pos` (their positions in .data; None means pos[q] == q)."""
    __slots__ = ("ptr", "idx", "pos", "n")

    def __init__(self, ptr, idx, pos, n):
        self.ptr, self.idx, self.pos, self.n = ptr, idx, pos, n


def clear_cache():
    """Forget every cached transposed index / sort / check of a sparsity pattern."""
    _pc.clear()


def _buf(a):
    return (a.__array_interface__["data"][0], a.shape[0], a.dtype.str, a.strides)


def _canonical(A):
    """Can scipy reorder A's index arrays in place? Not when A is canonical (sorted, no duplicates):
    then sum_duplicates/sort_indices are no-ops. scipy never reorders COO coordinates in place."""
    if A.format == "coo":
        return True
    try:
        return bool(A.has_canonical_format)
    except AttributeError:      # formats that do not keep the flag (DIA, LIL, DOK, ...)
        return False


_cached, _cached_by_id = _pc.cached, _pc.cached_by_id
_CACHE = _pc._CACHE      # (kind, n, buffers) -> ((arrays, fingerprints), value), for tests that look in


def _transpose(indptr, indices, n_minor, cache):
    def build():
        tp, tr, tq = K.csr_transpose_index(indptr, indices, n_minor)
        return _Groups(tp, tr, tq, n_minor)
    return _cached("T", (indptr, indices), n_minor, build, cache)


def _coo_groups(major, minor, n):
    def build():
        nnz = len(major)
        dtype = major.dtype if nnz < 2 ** 31 - 1 and major.dtype == np.int32 else np.dtype(np.int64)
        ptr = np.zeros(n + 1, dtype)
        if nnz:
            np.cumsum(np.bincount(major, minlength=n), out=ptr[1:])
        if nnz < 2 or bool(np.all(major[1:] >= major[:-1])):
            return _Groups(ptr, np.ascontiguousarray(minor, dtype), None, n)
        perm = np.argsort(major, kind="stable").astype(dtype)
        return _Groups(ptr, np.ascontiguousarray(minor[perm], dtype), perm, n)
    return _cached("coo", (major, minor), n, build)


def _fmt(A):
    f = A.format
    if f not in ("csr", "csc", "coo") or A.ndim != 2:
        return None
    return f


def _require_format(A, where):
    if not sp.issparse(A) or _fmt(A) is None:
        if sp.issparse(A):
            raise sparse_format_error(A, where)
        raise InputError(f"{where} takes a scipy sparse CSR, CSC or COO matrix, not {type(A).__name__}")


def _bounds_error(A, what, bad, lo, hi):
    return InputError(
        f"srcad: a sparse {A.format.upper()} matrix of shape {A.shape} stores {what} {bad}, outside "
        f"{lo}..{hi}: its index arrays do not fit its shape. Fix how it is built (scipy checks them "
        f"with A.check_format(full_check=True)).")


def check_pattern(A):
    """Raise srcad.InputError unless A's index arrays fit its shape: one vectorised pass over the
    indices, done once per pattern (cached with it)."""
    f = A.format
    if f not in ("csr", "csc", "coo") or len(A.shape) != 2:
        raise sparse_format_error(A, "srcad: a sparse operand")
    arrays = (A.row, A.col) if f == "coo" else (A.indptr, A.indices)
    n = A.shape[1 if f == "csr" else 0]

    def build():
        if f == "coo":
            for c, size, what in ((A.row, A.shape[0], "a row index"), (A.col, A.shape[1], "a column index")):
                if len(c) and (c.min() < 0 or c.max() >= size):
                    raise _bounds_error(A, what, c.min() if c.min() < 0 else c.max(), 0, size - 1)
            return True
        ptr, idx = A.indptr, A.indices
        n_major = A.shape[0 if f == "csr" else 1]
        minor = "a column index" if f == "csr" else "a row index"
        if len(ptr) != n_major + 1 or ptr[0] != 0 or np.any(ptr[1:] < ptr[:-1]) or ptr[-1] > len(idx):
            raise InputError(f"srcad: a sparse {f.upper()} matrix of shape {A.shape} has an index "
                             f"pointer array (indptr) that is not 0, ..., nnz non-decreasing with "
                             f"{n_major + 1} entries. Fix how it is built.")
        used = idx[:ptr[-1]]
        if len(used) and (used.min() < 0 or used.max() >= n):
            raise _bounds_error(A, minor, used.min() if used.min() < 0 else used.max(), 0, n - 1)
        return True
    _cached_by_id("ok", arrays, A.shape, build)


def row_groups(A):
    """A's stored entries grouped by row."""
    check_pattern(A)
    f = A.format
    if f == "csr":
        return _Groups(A.indptr, A.indices, None, A.shape[0])
    if f == "csc":
        return _transpose(A.indptr, A.indices, A.shape[0], _canonical(A))
    return _coo_groups(A.row, A.col, A.shape[0])


def col_groups(A):
    """A's stored entries grouped by column."""
    check_pattern(A)
    f = A.format
    if f == "csc":
        return _Groups(A.indptr, A.indices, None, A.shape[1])
    if f == "csr":
        return _transpose(A.indptr, A.indices, A.shape[1], _canonical(A))
    return _coo_groups(A.col, A.row, A.shape[1])


def _entry_coords(A):
    """(rows, cols) of A's stored entries, in A's order."""
    check_pattern(A)
    f = A.format
    if f == "coo":
        return A.row, A.col
    major = _cached("major", (A.indptr,), len(A.indices),
                    lambda: np.repeat(np.arange(len(A.indptr) - 1, dtype=A.indices.dtype),
                                      np.diff(A.indptr))[:len(A.indices)], _canonical(A))
    return (major, A.indices) if f == "csr" else (A.indices, major)


# ---- duplicate entries: scipy sums them wherever it merges ----------------------------------------
_NO_DUPLICATES = ("no duplicates",)


def _dedup(A):
    """None when A is canonical (sorted, no coordinate twice), else (inv, index arrays of the
    canonical matrix, whether A has duplicates): entry p of A goes to entry inv[p] of the merged
    matrix, sorted with one entry per coordinate, in A's format. One sort per pattern, cached."""
    f = A.format
    if f != "coo" and _canonical(A):
        return None
    check_pattern(A)
    m, n = A.shape
    arrays = A.coords if f == "coo" else (A.indptr, A.indices)

    def build():
        rows, cols = _entry_coords(A)
        major, minor, n_major, n_minor = (cols, rows, n, m) if f == "csc" else (rows, cols, m, n)
        key = major.astype(np.int64) * n_minor + minor
        if len(key) < 2 or bool(np.all(key[1:] > key[:-1])):
            return _NO_DUPLICATES
        uniq, inv = np.unique(key, return_inverse=True)
        itype = minor.dtype
        u_major, u_minor = (uniq // n_minor).astype(itype), (uniq % n_minor).astype(itype)
        if f == "coo":
            index = (u_major, u_minor)
        else:
            index = (u_minor, np.searchsorted(u_major, np.arange(n_major + 1)).astype(itype))
        return inv.reshape(-1), index, len(uniq) < len(key)
    hit = _cached_by_id("dedup", arrays, A.shape, build, f == "coo")
    return None if hit is _NO_DUPLICATES else hit


def merged(A, sort=False):
    """A with its duplicate entries summed (as scipy's sum_duplicates, without touching A): A
    itself when it has none, else a canonical matrix of A's class; with `sort`, also a sorted copy
    of an unsorted A (scipy's canonical form)."""
    d = _dedup(A)
    if d is None or not (sort or d[2]):
        return A
    inv, index, _ = d
    data = np.bincount(inv, weights=A.data, minlength=len(index[0])).astype(A.dtype, copy=False)
    if A.format == "coo":
        M = type(A)((data, index), shape=A.shape)
    else:
        M = type(A)((data, index[0], index[1]), shape=A.shape)
    M.has_canonical_format = True
    return M


def unmerged(vals, A, sort=False):
    """Values on merged(A, sort)'s entries brought back to A's: each duplicate gets its merged
    entry's."""
    d = _dedup(A)
    return vals if d is None or not (sort or d[2]) else np.asarray(vals)[d[0]]


def _group_apply(groups, data, X, plan=None):
    """Y[b] = sum over group b of data[pos] * X[idx]: one owner per output row, no atomics."""
    if groups.pos is None:
        return K.csr_matmul(groups.ptr, groups.idx, data, X, groups.n, plan)
    return K.csr_matmul_t(groups.ptr, groups.idx, groups.pos, data, X, groups.n)


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


_ARRAY_KIND = {"csr": sp.csr_array, "csc": sp.csc_array, "coo": sp.coo_array}


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


def _same_pattern(a, b):
    if a is b:
        return True
    if a.format != b.format or a.shape != b.shape or a.data.shape != b.data.shape:
        return False
    if a.format == "coo":
        pairs = ((a.row, b.row), (a.col, b.col))
    else:
        pairs = ((a.indptr, b.indptr), (a.indices, b.indices))
    return all(_buf(u) == _buf(v) or np.array_equal(u, v) for u, v in pairs)


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


def _same_entries(a, b):
    """Do the sparse a and b store the same entries in the same order (any formats)?"""
    if _same_pattern(a, b):
        return True
    if a.shape != b.shape or a.data.shape != b.data.shape or _fmt(a) is None or _fmt(b) is None:
        return False
    ar, ac = _entry_coords(a)
    br, bc = _entry_coords(b)
    return bool(np.array_equal(ar, br) and np.array_equal(ac, bc))


# ---- products ---------------------------------------------------------------------------------
def _kernel_ok(A, X):
    if _fmt(A) is None or sp.issparse(X) or not isinstance(X, np.ndarray) or X.ndim not in (1, 2):
        return False
    if X.dtype.kind not in "fiub" or A.dtype.kind not in "fiub":
        return False
    return np.result_type(A.dtype, X.dtype).kind in "fiub"


def _check_shapes(A, X, n):
    if X.shape[0] != n:
        raise ValueError(f"matmul: dimension mismatch, a sparse {A.shape} matrix times an array of shape "
                         f"{X.shape}")


def _batch_of(X):
    """The class srcad.batching.Batched when X is a batch of tangents (B of them: X.data has shape
    (B,) + X.shape), else None."""
    if type(X).__name__ != "Batched":
        return None
    return Batched if isinstance(X, Batched) else None


def _batched_product(apply, A, Xb, Batched):
    """apply(A, X) for each of the B tangents in the batch Xb, as one product: the batch is folded
    into the columns of a 2-D right operand, (n, k, B) -> (n, k*B), and unfolded from the result."""
    d = Xb.data
    if d.ndim not in (2, 3) or isinstance(d, Batched):
        raise TypeError("a batch of tangents of this shape does not go through a sparse product")
    cols = np.moveaxis(d, 0, -1)
    Y = apply(A, np.ascontiguousarray(cols.reshape(cols.shape[0], -1)))
    return Batched(np.moveaxis(Y.reshape((Y.shape[0],) + cols.shape[1:]), -1, 0))


def sparse_matmul(A, X):
    """A @ X for a scipy sparse A (CSR, CSC or COO) and a dense 1-D or 2-D X, as a dense ndarray,
    through the compiled kernel (other operands fall back to scipy). A batch of tangents X
    (srcad.batching) goes through as one product."""
    if _is_zero(A) or _is_zero(X):
        return 0.0
    batch = sp.issparse(A) and _batch_of(X)
    if batch:
        return _batched_product(sparse_matmul, A, X, batch)
    if not sp.issparse(A):
        return np.matmul(A, X)
    if sp.issparse(X):
        from .sparse_struct import spgemm
        return spgemm(A, X)
    X = X if isinstance(X, np.ndarray) and type(X) is np.ndarray else (X if sp.issparse(X) else np.asarray(X))
    if not _kernel_ok(A, X):
        out = A @ X
        return out if sp.issparse(out) else np.asarray(out)
    _check_shapes(A, X, A.shape[1])
    groups = row_groups(A)
    return _group_apply(groups, A.data, X, _panel_plan(A, groups, X))


def _panel_plan(A, groups, X):
    """The cached column-panel plan of A's row grouping for a product with X (a 2-D X large
    enough to leave the caches), or None."""
    if X.ndim != 2 or groups.pos is not None or not _canonical(A):
        return None
    row_bytes = X.shape[1] * (8 if np.result_type(A.dtype, X.dtype, np.float32).itemsize > 4 else 4)
    if X.shape[0] * row_bytes < K.PANEL_MIN_X:
        return None
    return _cached("panels", (groups.ptr, groups.idx), (X.shape[0], row_bytes),
                   lambda: K.csr_panel_plan(groups.ptr, groups.idx, X.shape[0], row_bytes))


def sparse_rmatmul(A, G):
    """A.T @ G for a scipy sparse A, without atomics: each output row summed by one owner through
    the cached column grouping of A's pattern."""
    if _is_zero(G) or _is_zero(A):
        return 0.0
    batch = _batch_of(G)
    if batch:
        return _batched_product(sparse_rmatmul, A, G, batch)
    G = G if sp.issparse(G) else np.asarray(G)
    if not _kernel_ok(A, G):
        out = A.T @ G
        return out if sp.issparse(out) else np.asarray(out)
    _check_shapes(A.T, G, A.shape[0])
    return _group_apply(col_groups(A), A.data, G)


def matmul_vjp_values(g, A, X):
    """Cotangent of A in A @ X: A's class and pattern, data[p] = g[i] . X[j] at entry p = (i, j)."""
    if _is_zero(g) or _is_zero(X):
        return 0.0
    if A.ndim != 2:             # a 1-D sparse array (a row A[i] of a sparse array): a named error
        raise sparse_format_error(A, "srcad: the sparse operand of `@`")
    if sp.issparse(X):
        from .sparse_struct import spgemm_vjp_x
        return spgemm_vjp_x(g, A, X)
    g, X = np.asarray(g), np.asarray(X)
    if g.ndim != X.ndim:       # A @ x with a (n, 1) x and a (m,) cotangent, and the like
        g = g.reshape(g.shape[0], -1)
        X = X.reshape(X.shape[0], -1)
    f = A.format
    if f == "csr":
        vals = K.sddmm(A.indptr, A.indices, g, X, _panel_plan(A, row_groups(A), X))
    elif f == "csc":
        vals = K.sddmm(A.indptr, A.indices, X, g)
    else:
        grp = row_groups(A)
        vals = K.sddmm(grp.ptr, grp.idx, g, X)
        if grp.pos is not None:
            out = np.empty_like(vals)
            out[grp.pos] = vals
            vals = out
    return _cot(A, _own(vals[:len(A.data)].copy() if len(vals) != len(A.data) else vals))


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


# ---- sums -------------------------------------------------------------------------------------
def _axis(axis, where="srcad: a sparse reduction"):
    """axis None, 0 or 1 (a tuple of both: None), checked: a clear error for anything else."""
    if axis is None:
        return None
    ok = (lambda a: isinstance(a, (int, np.integer)) and not isinstance(a, bool) and -2 <= a < 2)
    if isinstance(axis, tuple) and 1 <= len(axis) <= 2 and all(ok(a) for a in axis):
        if len({a % 2 for a in axis}) == 2:
            return None
        if len(axis) == 1:
            return axis[0] % 2
    elif ok(axis):
        return axis % 2
    raise InputError(f"{where}: axis={axis!r} is not an axis of a 2-D sparse matrix; use axis=None "
                     f"(every stored entry), axis=0 (one value per column) or axis=1 (one per row)")


def sparse_sum_vjp(g, A, axis=None):
    """Cotangent of A from that of A.sum(axis): one value per stored entry: g, g[row] or g[col]."""
    if _is_zero(g):
        return g
    axis = _axis(axis)
    dtype = np.result_type(_float_dtype(A.dtype), np.asarray(g).dtype)
    if axis is None:
        return _cot(A, np.full(A.data.shape, np.asarray(g).reshape(-1)[0], dtype))
    g = np.asarray(g).reshape(-1)
    rows, cols = _entry_coords(A)
    return _cot(A, np.take(g, cols if axis == 0 else rows).astype(dtype, copy=False))


def sum_jvp(x_dot, axis=None, keepdims=False):
    """Tangent of sum(x, axis): scipy's own sum for a sparse tangent (its result type), np.sum else."""
    if _is_zero(x_dot):
        return x_dot
    if sp.issparse(x_dot):     # as scipy's x.sum(axis), without letting scipy canonicalise x_dot
        axis = _axis(axis)
        if axis is None:
            return np.sum(x_dot.data)
        rows, cols = _entry_coords(x_dot)
        n = x_dot.shape[1 - axis]
        out = np.bincount(cols if axis == 0 else rows, weights=x_dot.data, minlength=n).astype(
            _float_dtype(x_dot.dtype), copy=False)
        if isinstance(x_dot, sp.spmatrix):
            return np.matrix(out.reshape((1, n) if axis == 0 else (n, 1)))
        return out
    return np.sum(x_dot, axis=axis, keepdims=keepdims)


# ---- elementwise product with a dense operand ---------------------------------------------------
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


def multiply(x, y):
    """x.multiply(y): for a sparse x and a dense (or scalar) y, a matrix of x's class with x's stored
    pattern in x's order (scipy returns COO here; the values are the same)."""
    if _is_zero(x):           # a zero tangent of x
        return x
    if sp.issparse(x) and sp.issparse(y):
        from .sparse_struct import multiply_ss
        return multiply_ss(x, y)
    if not sp.issparse(x) or _fmt(x) is None:
        return x.multiply(y)
    if x.format == "coo":     # scipy sums a COO's duplicate entries here (a CSR/CSC's it keeps)
        x = merged(x)
    return _like(x, x.data * _dense_at(y, x), fresh=not _canonical(x))


def multiply_vjp_x(g, x, y):
    """Cotangent of the sparse x in x.multiply(y)."""
    if _is_zero(g):
        return g
    if sp.issparse(y):
        from .sparse_struct import multiply_ss_vjp_x
        return multiply_ss_vjp_x(g, x, y)
    return _cot(x, _values_at(g, x) * _dense_at(y, x))


def multiply_vjp_y(g, x, y):
    """Cotangent of the dense y in x.multiply(y): x's entries times g, summed to y's shape."""
    if _is_zero(g) or _is_zero(x):
        return 0.0
    if sp.issparse(y):
        from .sparse_struct import multiply_ss_vjp_y
        return multiply_ss_vjp_y(g, x, y)
    w = _values_at(g, x) * x.data
    y_arr = np.asarray(y)
    dtype = np.result_type(_float_dtype(y_arr.dtype), w.dtype)
    if y_arr.ndim == 0:
        s = np.sum(w, dtype=dtype)
        return float(s) if not isinstance(y, (np.ndarray, np.generic)) else s
    rows, cols = _entry_coords(x)
    shape2 = (1,) * (2 - y_arr.ndim) + y_arr.shape
    r = rows.astype(np.int64) if shape2[0] > 1 else 0
    c = cols.astype(np.int64) if shape2[1] > 1 else 0
    flat = np.bincount(np.broadcast_to(r * shape2[1] + c, w.shape), weights=w, minlength=shape2[0] * shape2[1])
    return flat.astype(dtype, copy=False).reshape(y_arr.shape)


def quotient_jvp_y(d, q, y):
    """-d * q / y: the tangent piece of q = x / y along y's tangent d. For a sparse q (x sparse, y
    dense), entry by entry in q's stored pattern and order, as the piece along x's tangent is
    (scipy's `*` would merge the duplicate entries of q, a COO, and `rt.add` would then give each
    duplicate the merged value; for np.matrix-style classes `*` is a matrix product)."""
    if sp.issparse(q) and not sp.issparse(d) and not sp.issparse(y) and _fmt(q) is not None:
        return _like(q, -q.data * _dense_at(np.asarray(d) / np.asarray(y), q), fresh=True)
    return -d * q / y


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


def power(x, n, dtype=None):
    """x.power(n) as scipy runs it, side effect included for a matrix built inside the function
    (`construct`): scipy sums x's duplicate entries (and sorts them) in place first, and the code
    may read x again after. The result comes from rt.sparse_struct.power; the derivative helpers
    then see x as scipy left it. An argument's pattern is left as it was passed (its derivative is
    one per entry passed)."""
    from .sparse_struct import power as _power
    out = _power(x, n, dtype)
    rec = _BUILT_RAW.get(id(x))
    if rec is not None and rec[0]() is x and not _canonical_now(x):
        x.sum_duplicates()      # a matrix built in the function; an argument is left as it was passed
    return out


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


# ---- max/min over stored entries -----------------------------------------------------------------
_TIES = {}   # id(a result) -> (weakref to it, what its vjp needs: segment tie counts, positions)


def _remember(ans, counts):
    key = id(ans)
    try:
        ref = weakref.ref(ans, lambda _, key=key: _TIES.pop(key, None))
    except TypeError:
        return
    _TIES[key] = (ref, counts)


def _recall(ans):
    hit = _TIES.get(id(ans))
    if hit is not None and hit[0]() is ans:
        return hit[1]
    return None


def _reduce_groups(A, axis):
    axis = _axis(axis)
    if axis is None:
        nnz = len(A.data)
        return _Groups(np.array([0, nnz], np.int64), None, None, 1)
    return row_groups(A) if axis == 1 else col_groups(A)


def _group_reduce(grp, data, op):
    if grp.pos is None:
        return K.csr_row_reduce(grp.ptr, data, grp.n, op)
    return K.csr_col_reduce(grp.ptr, grp.pos, data, grp.n, op)


def reduce(A, axis, op, locate=False):
    """Max (op="max") or min of A's stored entries: a scalar (axis None), or a dense 1-D array with
    one entry per row (axis=1) or column (axis=0); an empty row/column gives -inf/+inf.
    `locate` (the generated code's forward sweep): where the groups are A's contiguous rows, keep
    the position of each one's extreme for reduce_vjp, which then needs no search."""
    where = f"srcad.sparse.reduce_{op}"
    _require_format(A, where)
    _axis(axis, where)
    check_pattern(A)
    A = merged(A)             # duplicates are one entry, their sum (as scipy's A.max)
    grp = _reduce_groups(A, axis)
    if locate and grp.pos is None and _axis(axis) is not None:
        vals, at = K.csr_row_reduce(grp.ptr, A.data, grp.n, op, locate=True)
        _remember(vals, _Located((at, _buf(A.data), op)))
        return vals
    vals = _group_reduce(grp, A.data, op)
    return vals[0] if _axis(axis) is None else vals


class _Located(tuple):
    """What reduce(..., locate=True) keeps for its result: (positions, A.data's buffer, op)."""


def reduce_vjp(g, A, ans, axis, op):
    """Cotangent of A from that of reduce(A, axis, op): g shared evenly among tied entries."""
    if _is_zero(g):
        return g
    A0, A = A, merged(A)
    grp = _reduce_groups(A, axis)
    vals = np.asarray(ans).reshape(-1)
    g = np.broadcast_to(np.asarray(g, dtype=_float_dtype(np.asarray(g).dtype)), (grp.n,))
    if grp.pos is None:
        kept = _recall(ans)
        at = None
        if (isinstance(kept, _Located) and kept[1] == _buf(A.data) and kept[2] == op
                and len(kept[0]) == grp.n):
            at = kept[0]
        gdata = K.csr_row_reduce_vjp(grp.ptr, A.data, vals, g, at)
    else:
        gdata = K.csr_col_reduce_vjp(grp.ptr, grp.pos, A.data, vals, g)
    return _cot(A0, _own(unmerged(gdata, A0)))


def reduce_jvp(A_dot, A, ans, axis, op):
    """Tangent of reduce(A, axis, op): the mean of the tied entries' tangents (0 for an empty group)."""
    if _is_zero(A_dot):
        return A_dot
    grp = _reduce_groups(A, axis)
    w = reduce_vjp(np.ones(grp.n), A, ans, axis, op).data * _values_at(A_dot, A)
    ax = _axis(axis)
    if ax is None:
        return np.sum(w)
    rows, cols = _entry_coords(A)
    return np.bincount(rows if ax == 1 else cols, weights=w, minlength=grp.n).astype(w.dtype, copy=False)


# ---- segment reductions ------------------------------------------------------------------------
def segment(data, segment_ids, num_segments, op):
    """sum/max/min of the rows of data by segment id; an empty segment gives 0/-inf/+inf."""
    out, counts = K.segment_reduce(data, segment_ids, int(num_segments), op)
    if op != "sum":
        _remember(out, counts)
    return out


def segment_vjp(g, data, segment_ids, ans, op):
    """Cotangent of data from that of segment(data, segment_ids, n, op)."""
    if _is_zero(g):
        return g
    g = np.broadcast_to(np.asarray(g), np.shape(ans))
    if op == "sum":
        return K.segment_reduce_vjp(data, segment_ids, None, None, g, "sum").reshape(np.shape(data))
    counts = _recall(ans)
    if not isinstance(counts, np.ndarray):
        _, counts = K.segment_reduce(data, segment_ids, len(ans), op)
    return K.segment_reduce_vjp(data, segment_ids, ans, counts, g, op)


def segment_jvp(data_dot, data, segment_ids, ans, op):
    """Tangent of segment(data, segment_ids, n, op): sums of tangents, or means over tied rows."""
    if _is_zero(data_dot):
        return data_dot
    data_dot = np.broadcast_to(np.asarray(data_dot), np.shape(data))
    if op != "sum":
        w = segment_vjp(np.ones(np.shape(ans)), data, segment_ids, ans, op)
        data_dot = w * data_dot
    return K.segment_reduce(data_dot, segment_ids, len(ans), "sum")[0]


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
_pc.scope_module(globals(), __all__ + ["check_pattern", "row_groups", "col_groups", "merged", "unmerged"])
