"""The stored pattern of a scipy sparse matrix (the bottom of srcad/runtime/sparse/): its checks,
its groupings by row and by column (for the kernels), its duplicate entries and how scipy merges
them, and building a matrix whose stored entries are exactly given.

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

Zero derivatives are the Python float 0.0 (`_is_zero`); every helper passes them through unchanged.
"""
import numpy as np
import scipy.sparse as sp

from ... import _kernels as K
from ...errors import InputError
from ...inputs import sparse_format_error
from .. import pattern_cache as _pc

__all__ = ["clear_cache", "check_pattern", "row_groups", "col_groups", "merged", "unmerged"]


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


def _same_entries(a, b):
    """Do the sparse a and b store the same entries in the same order (any formats)?"""
    if _same_pattern(a, b):
        return True
    if a.shape != b.shape or a.data.shape != b.data.shape or _fmt(a) is None or _fmt(b) is None:
        return False
    ar, ac = _entry_coords(a)
    br, bc = _entry_coords(b)
    return bool(np.array_equal(ar, br) and np.array_equal(ac, bc))


# ---- building a matrix with given stored entries ------------------------------------------------
def _kind(*mats):
    """'array' when any operand is a sparse array (scipy's rule), else 'matrix'."""
    return "array" if any(isinstance(m, sp.sparray) for m in mats) else "matrix"


_CLASSES = {("csr", "array"): sp.csr_array, ("csc", "array"): sp.csc_array, ("coo", "array"): sp.coo_array,
            ("csr", "matrix"): sp.csr_matrix, ("csc", "matrix"): sp.csc_matrix, ("coo", "matrix"): sp.coo_matrix}


def _build(fmt, kind, rows, cols, data, shape):
    """A sparse matrix of the given format and kind whose stored entries are exactly (rows, cols,
    data), in that order: for CSR the entries must come row by row, for CSC column by column."""
    itype = np.int32 if max(shape + (len(data),)) < 2 ** 31 - 1 else np.int64
    cls = _CLASSES[(fmt, kind)]
    if fmt == "coo":
        return cls((data, (rows.astype(itype), cols.astype(itype))), shape=shape)
    major, minor, n = (rows, cols, shape[0]) if fmt == "csr" else (cols, rows, shape[1])
    indptr = np.zeros(n + 1, itype)
    if len(major):
        np.cumsum(np.bincount(major, minlength=n), out=indptr[1:])
    return cls((data, minor.astype(itype), indptr), shape=shape)


def _check(A, where):
    if not sp.issparse(A) or A.format not in ("csr", "csc", "coo") or A.ndim != 2:
        if sp.issparse(A):
            raise sparse_format_error(A, where)
        raise InputError(f"{where} takes scipy sparse CSR, CSC or COO matrices, not {type(A).__name__}")
    check_pattern(A)


def _keys(rows, cols, n):
    return rows.astype(np.int64) * n + cols


# each helper fingerprints a pattern's index arrays once per call (pattern_cache.py)
_pc.scope_module(globals(), __all__)
