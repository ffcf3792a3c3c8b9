"""Sparse operations whose result is sparse (or comes from a sparse operand's structure), and
their derivatives: A.diagonal(k), row slices A[i:j], scipy.sparse.hstack/vstack/diags,
srcad.sparse.add/subtract, A.toarray()/todense(). (sparse @ sparse, the elementwise product of two
sparse matrices and A.power(p), whose results have structural patterns too, are in products.py and
elementwise.py.)

Every result here has a *structural* pattern: the entries that the operands' stored entries
reach, whatever their values. scipy drops entries whose value happens to be zero (a product
that cancels, an explicit zero); srcad keeps them as explicit zeros, since they still carry a
derivative (the values are scipy's; `.data` may hold a few more zeros). Where scipy merges
duplicate entries (products, powers, diagonals) the result here merges them too, and each
duplicate stored entry of an operand gets the merged entry's derivative. A derivative of a
sparse operand always has that operand's class and pattern, in its order (derivative.py).
"""
import numpy as np
import scipy.sparse as sp

from ...errors import InputError
from .. import pattern_cache as _pc
from .accumulation import sparse_finalize
from .derivative import _at, _cot, _like, _own, _values_at
from .methods import select_jvp, select_vjp
from .pattern import _build, _check, _entry_coords, _float_dtype, _is_zero, _kind, _keys, _same_pattern

__all__ = ["diagonal_vjp", "diagonal_jvp", "index_vjp", "index_jvp", "stack", "stack_vjp", "stack_jvp", "diags",
           "diags_vjp", "diags_jvp", "dense_vjp", "dense_jvp", "add", "add_vjp", "add_jvp"]


# ---- A.diagonal(k) ------------------------------------------------------------------------------------
def _diag_entries(x, k):
    rows, cols = _entry_coords(x)
    on = (cols.astype(np.int64) - rows) == k
    where = rows if k >= 0 else cols
    return on, where


def diagonal_vjp(g, x, k=0):
    """Cotangent of x from that of x.diagonal(k): g at the diagonal's stored entries (a duplicate
    gets its merged entry's), zero elsewhere; a dense x gets a dense cotangent."""
    if _is_zero(g):
        return g
    g = np.asarray(g)
    if not sp.issparse(x):
        out = np.zeros(np.shape(x), np.result_type(g, _float_dtype(np.result_type(x))))
        np.einsum("ii->i", out[max(0, -k):, max(0, k):][:len(g), :len(g)])[...] = g
        return out
    on, where = _diag_entries(x, k)
    vals = np.zeros(len(x.data), np.result_type(g, _float_dtype(x.dtype)))
    vals[on] = g[where[on]]
    return _cot(x, _own(vals))


def diagonal_jvp(x_dot, x, k=0):
    """Tangent of x.diagonal(k)."""
    if _is_zero(x_dot):
        return x_dot
    if sp.issparse(x_dot):
        on, where = _diag_entries(x, k)
        n = len(np.diagonal(np.empty(x.shape, bool), k))
        t = _values_at(x_dot, x)
        return np.bincount(where[on], weights=t[on], minlength=n).astype(_float_dtype(x.dtype), copy=False)
    return np.diagonal(np.asarray(x_dot), k).copy()


# ---- row slices A[i:j] -------------------------------------------------------------------------------
def _row_slice(x, idx):
    """(i, j) of a row slice idx (a slice with step 1, or (slice, :)), else None."""
    if isinstance(idx, tuple) and len(idx) == 2 and idx[1] == slice(None):
        idx = idx[0]
    if not isinstance(idx, slice):
        return None
    i, j, step = idx.indices(x.shape[0])
    if step != 1:
        return None
    return i, max(i, j)


def _slice_entries(x, idx):
    """Positions of x's entries that x[i:j] keeps, in the result's order, and their rows there."""
    i, j = _row_slice(x, idx)          # other subscripts go through methods.select_vjp
    rows, cols = _entry_coords(x)
    if x.format == "csr":
        sel = np.arange(x.indptr[i], x.indptr[j])
    else:
        sel = np.flatnonzero((rows >= i) & (rows < j))
    return sel, rows[sel] - i, cols[sel]


def index_vjp(g, x, idx):
    """Cotangent of a sparse x from that of x[i:j]: x's class and pattern, g at the kept entries."""
    if _is_zero(g):
        return g
    if _row_slice(x, idx) is None:      # A[i], A[:, j], A[rows], ...: scipy's selection, traced
        return select_vjp(g, x, "index", idx)
    sel, r, c = _slice_entries(x, idx)
    gv = _at(g, r, c, len(sel))
    vals = np.zeros(len(x.data), np.result_type(gv, _float_dtype(x.dtype)))
    vals[sel] = gv
    return _cot(x, _own(vals))


def index_jvp(x_dot, x, idx):
    """Tangent of x[i:j] for a sparse x: the same slice of the tangent (scipy keeps the order)."""
    if _is_zero(x_dot):
        return x_dot
    if _row_slice(x, idx) is None:
        return select_jvp(x_dot, x, "index", idx)
    _slice_entries(x, idx)
    return x_dot[idx]


# ---- hstack / vstack -----------------------------------------------------------------------------------
def _stack_layout(blocks, how, format):
    blocks = list(blocks)
    for b in blocks:
        _check(b, f"scipy.sparse.{how}stack")
    axis = 1 if how == "h" else 0
    other = 1 - axis
    if any(b.shape[other] != blocks[0].shape[other] for b in blocks):
        raise ValueError(f"scipy.sparse.{how}stack: blocks of shapes {[b.shape for b in blocks]} do not line up")
    fmts = {b.format for b in blocks}
    if format is None:          # scipy's choice: CSR (CSC) stays CSR (CSC) when every block has it
        format = fmts.pop() if len(fmts) == 1 and fmts != {"coo"} else "coo"
    if format not in ("csr", "csc", "coo"):
        raise InputError(f"scipy.sparse.{how}stack(..., format={format!r}): srcad computes CSR, CSC or COO "
                         f"results; ask for one of them and convert after the call")
    offsets = np.concatenate([[0], np.cumsum([b.shape[axis] for b in blocks])])
    coords = [_entry_coords(b) for b in blocks]
    rows = np.concatenate([r + (offsets[k] if axis == 0 else 0) for k, (r, c) in enumerate(coords)])
    cols = np.concatenate([c + (offsets[k] if axis == 1 else 0) for k, (r, c) in enumerate(coords)])
    shape = (int(offsets[-1]), blocks[0].shape[1]) if axis == 0 else (blocks[0].shape[0], int(offsets[-1]))
    if format == "csr":
        perm = np.argsort(rows, kind="stable")
    elif format == "csc":
        perm = np.argsort(cols, kind="stable")
    else:
        perm = np.arange(len(rows))
    sizes = [len(b.data) for b in blocks]
    return blocks, format, rows[perm], cols[perm], perm, sizes, shape


def stack(blocks, how, format=None, dtype=None):
    """scipy.sparse.hstack (how='h') / vstack ('v') of sparse blocks, every stored entry kept in
    the blocks' order (scipy's format choice and values)."""
    blocks, format, rows, cols, perm, sizes, shape = _stack_layout(blocks, how, format)
    data = np.concatenate([np.asarray(b.data) for b in blocks])[perm]
    if dtype is not None:
        data = data.astype(dtype)
    return _build(format, _kind(*blocks), rows, cols, data, shape)


def stack_vjp(g, blocks, how, format=None):
    """Cotangents of the blocks of hstack/vstack: one per block, with its class and pattern."""
    if _is_zero(g):
        return g
    blocks, format, rows, cols, perm, sizes, shape = _stack_layout(blocks, how, format)
    gv = _at(g, rows, cols, len(rows))
    flat = np.empty(len(gv), gv.dtype)
    flat[perm] = gv
    parts = np.split(flat, np.cumsum(sizes)[:-1])
    return [_cot(b, _own(p.astype(_float_dtype(b.dtype), copy=False))) for b, p in zip(blocks, parts)]


def stack_jvp(blocks_dot, blocks, how, format=None, dtype=None):
    """Tangent of hstack/vstack: the blocks' tangents (zeros for constant blocks) stacked alike."""
    if _is_zero(blocks_dot):
        return blocks_dot
    tangents = [sparse_finalize(0.0, b) if _is_zero(t) else _like(b, _values_at(t, b))
                for t, b in zip(blocks_dot, blocks)]
    return stack(tangents, how, format, dtype)


# ---- scipy.sparse.diags ------------------------------------------------------------------------------------
def _diags_layout(diagonals, offsets, shape, format):
    single = np.ndim(offsets) == 0 and (np.ndim(diagonals) == 1 or np.ndim(diagonals) == 0)
    diags_list = [diagonals] if single else list(diagonals)
    offs = [int(offsets)] * 1 if np.ndim(offsets) == 0 else [int(o) for o in offsets]
    if len(offs) != len(diags_list):
        raise ValueError(f"scipy.sparse.diags: {len(diags_list)} diagonals and {len(offs)} offsets differ in number")
    if shape is None:
        m = n = len(np.atleast_1d(diags_list[0])) + abs(offs[0])
    else:
        m, n = shape
    if format is None:
        format = "csr"
    if format not in ("csr", "csc", "coo"):
        raise InputError(f"scipy.sparse.diags(..., format={format!r}): srcad computes diags as CSR (CSC, COO "
                         f"on request); ask for one of those and convert after the call")
    rows, cols, src = [], [], []
    for d, (v, k) in enumerate(zip(diags_list, offs)):
        length = max(0, min(m + min(k, 0), n - max(k, 0)))
        size = np.size(v)
        if size not in (1, length):
            raise ValueError(f"scipy.sparse.diags: diagonal {d} has {size} values; offset {k} of a "
                             f"{(m, n)} matrix needs {length}")
        i = np.arange(length)
        rows.append(i + max(0, -k))
        cols.append(i + max(0, k))
        src.append(np.stack([np.full(length, d), i if size == length else np.zeros(length, int)]))
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    src = np.concatenate(src, axis=1) if src else np.zeros((2, 0), int)
    order = np.lexsort((cols, rows)) if format != "csc" else np.lexsort((rows, cols))
    return single, diags_list, format, rows[order], cols[order], src[:, order], (m, n)


def diags(diagonals, offsets=0, shape=None, format=None, dtype=None, kind="matrix"):
    """scipy.sparse.diags (kind='matrix') / diags_array ('array') as a CSR matrix (CSC or COO when
    asked): the same values as scipy's DIA result, one stored entry per diagonal position."""
    single, dl, format, rows, cols, src, shape = _diags_layout(diagonals, offsets, shape, format)
    flat = [np.atleast_1d(np.asarray(v)) for v in dl]
    dt = np.result_type(*flat, np.float32) if dtype is None else np.dtype(dtype)
    data = _gather(flat, src, dt)
    return _build(format, kind, rows, cols, data, shape)


def _gather(flat, src, dt):
    out = np.empty(src.shape[1], dt)
    for d, v in enumerate(flat):
        on = src[0] == d
        out[on] = v[src[1][on]]
    return out


def diags_vjp(g, diagonals, offsets=0, shape=None, format=None):
    """Cotangent of the diagonals of scipy.sparse.diags: an array per diagonal (a list for a list)."""
    if _is_zero(g):
        return g
    single, dl, format, rows, cols, src, shape = _diags_layout(diagonals, offsets, shape, format)
    gv = _at(g, rows, cols, len(rows))
    out = []
    for d, v in enumerate(dl):
        on = src[0] == d
        size = np.size(v)
        acc = np.bincount(src[1][on], weights=gv[on], minlength=size) if size > 1 else np.array([np.sum(gv[on])])
        acc = acc.astype(np.result_type(gv, _float_dtype(np.result_type(np.asarray(v)))), copy=False)
        out.append(acc.reshape(np.shape(v)) if np.ndim(v) else float(acc[0]))
    return out[0] if single else out


def diags_jvp(diagonals_dot, diagonals, offsets=0, shape=None, format=None, dtype=None, kind="matrix"):
    """Tangent of scipy.sparse.diags: diags of the diagonals' tangents (zeros for constant ones)."""
    if _is_zero(diagonals_dot):
        return diagonals_dot
    single = np.ndim(offsets) == 0 and (np.ndim(diagonals) <= 1)
    if single:
        t = diagonals_dot
    else:
        t = [np.zeros(np.shape(v)) if _is_zero(d) else d for d, v in zip(diagonals_dot, diagonals)]
    return diags(t, offsets, shape, format, dtype, kind)


# ---- srcad.sparse.add / subtract ----------------------------------------------------------------------------
def _union(A, B):
    _check(A, "srcad.sparse.add")
    _check(B, "srcad.sparse.add")
    if A.shape != B.shape:
        raise ValueError(f"srcad.sparse.add: shapes {A.shape} and {B.shape} differ")
    fmt = "csc" if A.format == "csc" and B.format == "csc" else "csr"
    (ar, ac), (br, bc) = _entry_coords(A), _entry_coords(B)
    rows, cols = np.concatenate([ar, br]), np.concatenate([ac, bc])
    keys = cols.astype(np.int64) * A.shape[0] + rows if fmt == "csc" else _keys(rows, cols, A.shape[1])
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.reshape(-1)
    first = np.zeros(len(uniq), np.int64)
    first[inv[::-1]] = np.arange(len(inv))[::-1]
    return fmt, rows[first], cols[first], inv[:len(ar)], inv[len(ar):], len(uniq)


def add(A, B, sign=1.0):
    """A + sign * B on the union of the two patterns, every stored entry kept (a sum that comes
    out zero stays as an explicit zero); scipy's class and format (CSR, or CSC for two CSC)."""
    fmt, rows, cols, ia, ib, n = _union(A, B)
    dtype = np.result_type(A.dtype, B.dtype)
    data = np.bincount(ia, weights=A.data, minlength=n) + sign * np.bincount(ib, weights=B.data, minlength=n)
    return _build(fmt, _kind(A, B), rows, cols, data.astype(dtype, copy=False), A.shape)


def add_vjp(g, A, B, which, sign=1.0):
    """Cotangent of A (which=0) or B (which=1) in add(A, B, sign)."""
    if _is_zero(g):
        return g if which == 0 else 0.0
    fmt, rows, cols, ia, ib, n = _union(A, B)
    gv = _at(g, rows, cols, n)
    return _cot(A, _own(gv[ia].copy())) if which == 0 else _cot(B, _own(sign * gv[ib]))


def add_jvp(A_dot, B_dot, A, B, sign=1.0):
    """Tangent of add(A, B, sign)."""
    ta = sparse_finalize(0.0, A) if _is_zero(A_dot) else _like(A, _values_at(A_dot, A))
    tb = sparse_finalize(0.0, B) if _is_zero(B_dot) else _like(B, _values_at(B_dot, B))
    return add(ta, tb, sign)


# ---- A.toarray() / A.todense() ------------------------------------------------------------------------------
def dense_vjp(g, x):
    """Cotangent of x from that of x.toarray()/x.todense(): the dense g at x's stored entries."""
    if _is_zero(g) or not sp.issparse(x):
        return g
    g = np.asarray(g)
    if x.ndim == 1:         # a 1-D sparse array (a row A[i] of a sparse array, A.max(axis=0))
        return _cot(x, _own(g[x.coords[0]].astype(np.result_type(g, _float_dtype(x.dtype)), copy=False)))
    rows, cols = _entry_coords(x)
    return _cot(x, _own(g[rows, cols].astype(np.result_type(g, _float_dtype(x.dtype)), copy=False)))


def dense_jvp(x_dot, x, how="toarray"):
    """Tangent of x.toarray() (how='toarray') or x.todense()."""
    if _is_zero(x_dot):
        return x_dot
    if sp.issparse(x_dot) and x_dot.ndim == 1:
        return x_dot.toarray()
    if sp.issparse(x_dot):
        return getattr(_like(x, _values_at(x_dot, x)) if not _same_pattern(x_dot, x) else x_dot, how)()
    return np.asarray(x_dot) if how == "toarray" else np.asmatrix(x_dot)


# each helper fingerprints a pattern's index arrays once per call (pattern_cache.py)
_pc.scope_module(globals(), __all__)
