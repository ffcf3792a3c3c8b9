"""Sparse operations whose result is sparse (or comes from a sparse operand's structure), and
their derivatives: sparse @ sparse, the elementwise product of two sparse matrices, A.power(p),
A.diagonal(k), row slices A[i:j], scipy.sparse.hstack/vstack/diags, A.toarray()/todense().

Every result here has a *structural* pattern: the entries that the operands' stored entries
reach, whatever their values. scipy drops entries whose value happens to be zero (a product
that cancels, an explicit zero); srcad keeps them as explicit zeros, since they still carry a
derivative (the values are scipy's; `.data` may hold a few more zeros). Where scipy merges
duplicate entries (products, powers, diagonals) the result here merges them too, and each
duplicate stored entry of an operand gets the merged entry's derivative. A derivative of a
sparse operand always has that operand's class and pattern, in its order (sparse_ops.py).
"""
import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from . import pattern_cache as _pc
from . import sparse_ops as so
from .sparse_ops import (_entry_coords, _float_dtype, _is_zero, _like, _matrix_at, _own, _same_pattern,
                         check_pattern, merged, unmerged)
from .sparse_methods import select_jvp, select_vjp

__all__ = ["spgemm", "spgemm_vjp_x", "spgemm_vjp_y", "multiply_ss", "multiply_ss_vjp_x", "multiply_ss_vjp_y",
           "power", "power_vjp", "power_vjp_n", "power_vjp_jvp", "power_jvp", "power_jvp_n", "diagonal_vjp", "diagonal_jvp",
           "index_vjp", "index_jvp", "stack", "stack_vjp", "stack_jvp", "diags", "diags_vjp", "diags_jvp",
           "dense_vjp", "dense_jvp", "add", "add_vjp", "add_jvp"]


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


def _at(g, out_rows, out_cols, nnz):
    """The cotangent g of a result at its stored entries (out_rows, out_cols): g's own values when
    g has exactly those entries in that order (so a duplicate entry keeps its own cotangent), else
    g read as a matrix there (sparse g's duplicates summed, or dense)."""
    if sp.issparse(g) and g.nnz == nnz and g.format in ("csr", "csc", "coo") and len(g.data) == nnz:
        gr, gc = _entry_coords(g)
        if np.array_equal(gr, out_rows) and np.array_equal(gc, out_cols):
            return np.asarray(g.data)
    return _matrix_at(g, out_rows, out_cols)


def _check(A, where):
    if not sp.issparse(A) or A.format not in ("csr", "csc", "coo") or A.ndim != 2:
        if sp.issparse(A):
            from ..inputs import sparse_format_error
            raise sparse_format_error(A, where)
        raise InputError(f"{where} takes scipy sparse CSR, CSC or COO matrices, not {type(A).__name__}")
    check_pattern(A)


def _keys(rows, cols, n):
    return rows.astype(np.int64) * n + cols


# ---- sparse @ sparse ------------------------------------------------------------------------------
def _ones(A):
    """A's pattern with every value 1 (CSR): products of these never cancel."""
    B = sp.csr_array(A, copy=True).astype(np.float64)
    B.data[:] = 1.0
    return B


def spgemm(A, B):
    """A @ B for two sparse matrices: scipy's class and format, the structural pattern of the
    product (an entry that cancels to zero is kept as an explicit zero), scipy's values."""
    _check(A, "A @ B")
    _check(B, "A @ B")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"matmul: dimension mismatch, a sparse {A.shape} matrix times a sparse {B.shape} matrix")
    C = A @ B                                  # scipy's values, class and format
    P = _ones(A) @ _ones(B)                    # every entry the product reaches
    P.sort_indices()
    rows, cols = _entry_coords(P)
    vals = _matrix_at(C, rows, cols).astype(np.result_type(A.dtype, B.dtype, np.float32), copy=False)
    out = _build("csr", _kind(A, B), rows, cols, vals, P.shape)
    return out if C.format == "csr" else out.asformat(C.format)


def _left_product(G, B_T):
    """G @ B.T as something _matrix_at reads: sparse for a sparse G, dense for a dense one."""
    if sp.issparse(G):
        return G.tocsr() @ B_T
    G = np.asarray(G)
    return so.sparse_matmul(B_T.T.tocsr(), G.T).T if G.ndim == 2 else None


def spgemm_vjp_x(g, A, B):
    """Cotangent of A in A @ B (both sparse): (G @ B.T) at A's entries."""
    if _is_zero(g):
        return g
    M = _left_product(g, B.T)
    return so._cot(A, _own(_matrix_at(M, *_entry_coords(A))))


def spgemm_vjp_y(g, A, B):
    """Cotangent of B in A @ B (both sparse): (A.T @ G) at B's entries."""
    if _is_zero(g):
        return g
    M = (A.T.tocsr() @ g.tocsr()) if sp.issparse(g) else so.sparse_rmatmul(A, np.asarray(g))
    return so._cot(B, _own(_matrix_at(M, *_entry_coords(B))))


# ---- elementwise product of two sparse matrices ------------------------------------------------------
def _intersect(x, y):
    """(merged x, merged y, positions ia in x's and ib in y's merged entries of the common
    coordinates, rows, cols) in row-major order."""
    if x.shape != y.shape:
        raise ValueError(f"A.multiply(B): shapes {x.shape} and {y.shape} differ")
    xm, ym = merged(x, sort=True), merged(y, sort=True)
    n = x.shape[1]
    kx, ky = _keys(*_entry_coords(xm), n), _keys(*_entry_coords(ym), n)
    common, ia, ib = np.intersect1d(kx, ky, assume_unique=True, return_indices=True)
    return xm, ym, ia, ib, common // n, common % n


def multiply_ss(x, y):
    """x.multiply(y) for two sparse matrices: scipy's class (CSR, or CSC for a CSC x) and values,
    on the structural intersection of the two patterns (duplicates summed first, as scipy)."""
    _check(x, "A.multiply(B)")
    _check(y, "A.multiply(B)")
    xm, ym, ia, ib, rows, cols = _intersect(x, y)
    data = xm.data[ia] * ym.data[ib]
    out = _build("csr", _kind(x), rows, cols, data, x.shape)
    return out.asformat("csc") if x.format == "csc" else out


def _multiply_ss_vjp(g, x, y, mine):
    xm, ym, ia, ib, rows, cols = _intersect(x, y)
    fmt = "csc" if x.format == "csc" else "csr"
    if fmt == "csc":           # the result's entries come column by column
        order = np.lexsort((rows, cols))
        ia, ib, rows, cols = ia[order], ib[order], rows[order], cols[order]
    gv = _at(g, rows, cols, len(rows))
    if mine == "x":
        out = np.zeros(len(xm.data), np.result_type(gv, _float_dtype(x.dtype)))
        out[ia] = gv * ym.data[ib]
        return so._cot(x, _own(unmerged(out, x, sort=True)))
    out = np.zeros(len(ym.data), np.result_type(gv, _float_dtype(y.dtype)))
    out[ib] = gv * xm.data[ia]
    return so._cot(y, _own(unmerged(out, y, sort=True)))


def multiply_ss_vjp_x(g, x, y):
    """Cotangent of x in x.multiply(y), both sparse."""
    return g if _is_zero(g) else _multiply_ss_vjp(g, x, y, "x")


def multiply_ss_vjp_y(g, x, y):
    """Cotangent of y in x.multiply(y), both sparse."""
    return 0.0 if _is_zero(g) else _multiply_ss_vjp(g, x, y, "y")


# ---- A.power(p) -------------------------------------------------------------------------------------
def power(x, n, dtype=None):
    """x.power(n) as scipy computes it (duplicates summed, the entries sorted), without scipy's side
    effect of canonicalising x in place."""
    if not sp.issparse(x):
        return x.power(n, dtype=dtype) if dtype is not None else x.power(n)
    _check(x, "A.power(n)")
    xm = merged(x, sort=True)
    data = xm.data ** n
    if dtype is not None:
        data = data.astype(dtype)
    return _like(xm, data, fresh=True)


def power_vjp(g, x, n, ans):
    """Cotangent of x in x.power(n): n x^(n-1) times the merged entry's cotangent."""
    if _is_zero(g):
        return g
    xm = merged(x, sort=True)
    gv = so._values_at(g, ans) if sp.issparse(ans) else g
    return so._cot(x, _own(unmerged(gv * n * xm.data ** (n - 1), x, sort=True)))


def power_vjp_n(g, x, n, ans):
    """Cotangent of the exponent n in x.power(n): sum of g x^n log x over the stored entries."""
    if _is_zero(g):
        return 0.0
    xm = merged(x, sort=True)
    gv = so._values_at(g, ans)
    logs = np.log(np.where(xm.data == 0, 1.0, xm.data))
    return float(np.sum(gv * ans.data * logs)) if not isinstance(n, np.ndarray) else np.sum(gv * ans.data * logs)


def power_vjp_jvp(g, x, n, ans, x_dot):
    """Tangent of power_vjp(g, x, n, ans) along a tangent x_dot of x (a Hessian of A.power(n))."""
    if _is_zero(g) or _is_zero(x_dot):
        return 0.0
    xm = merged(x, sort=True)
    t = _like(x, so._values_at(x_dot, x))
    tm = merged(t, sort=True) if t.format != "coo" or xm is not x else t
    tv = so._values_at(tm, xm) if xm is not x else t.data
    gv = so._values_at(g, ans) if sp.issparse(ans) else g
    return so._cot(x, _own(unmerged(gv * n * (n - 1) * xm.data ** (n - 2) * tv, x, sort=True)))


def power_jvp(x_dot, x, n, ans):
    """Tangent of x.power(n): n x^(n-1) times the merged tangent, on the result's pattern."""
    if _is_zero(x_dot):
        return x_dot
    xm = merged(x, sort=True)
    t = _like(x, so._values_at(x_dot, x))
    tm = merged(t, sort=True) if t.format != "coo" or xm is not x else t
    tv = so._values_at(tm, xm) if xm is not x else t.data
    return _like(ans, n * xm.data ** (n - 1) * tv)


def power_jvp_n(n_dot, x, n, ans):
    """Tangent of x.power(n) along a tangent n_dot of the exponent: x^n log x n_dot on the result's
    pattern (an entry whose merged value is 0 has x^n = 0 there, for n > 0)."""
    if _is_zero(n_dot):
        return n_dot
    xm = merged(x, sort=True)
    logs = np.log(np.where(xm.data == 0, 1.0, xm.data))
    return _like(ans, np.asarray(ans.data) * logs * n_dot)


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
    return so._cot(x, _own(vals))


def diagonal_jvp(x_dot, x, k=0):
    """Tangent of x.diagonal(k)."""
    if _is_zero(x_dot):
        return x_dot
    if sp.issparse(x_dot):
        on, where = _diag_entries(x, k)
        n = len(np.diagonal(np.empty(x.shape, bool), k))
        t = so._values_at(x_dot, x)
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
    i, j = _row_slice(x, idx)          # other subscripts go through sparse_methods.select_vjp
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
    return so._cot(x, _own(vals))


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
    return [so._cot(b, _own(p.astype(_float_dtype(b.dtype), copy=False))) for b, p in zip(blocks, parts)]


def stack_jvp(blocks_dot, blocks, how, format=None, dtype=None):
    """Tangent of hstack/vstack: the blocks' tangents (zeros for constant blocks) stacked alike."""
    if _is_zero(blocks_dot):
        return blocks_dot
    tangents = [so.sparse_finalize(0.0, b) if _is_zero(t) else _like(b, so._values_at(t, b))
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
    return so._cot(A, _own(gv[ia].copy())) if which == 0 else so._cot(B, _own(sign * gv[ib]))


def add_jvp(A_dot, B_dot, A, B, sign=1.0):
    """Tangent of add(A, B, sign)."""
    ta = so.sparse_finalize(0.0, A) if _is_zero(A_dot) else _like(A, so._values_at(A_dot, A))
    tb = so.sparse_finalize(0.0, B) if _is_zero(B_dot) else _like(B, so._values_at(B_dot, B))
    return add(ta, tb, sign)


# ---- A.toarray() / A.todense() ------------------------------------------------------------------------------
def dense_vjp(g, x):
    """Cotangent of x from that of x.toarray()/x.todense(): the dense g at x's stored entries."""
    if _is_zero(g) or not sp.issparse(x):
        return g
    g = np.asarray(g)
    if x.ndim == 1:         # a 1-D sparse array (a row A[i] of a sparse array, A.max(axis=0))
        return so._cot(x, _own(g[x.coords[0]].astype(np.result_type(g, _float_dtype(x.dtype)), copy=False)))
    rows, cols = _entry_coords(x)
    return so._cot(x, _own(g[rows, cols].astype(np.result_type(g, _float_dtype(x.dtype)), copy=False)))


def dense_jvp(x_dot, x, how="toarray"):
    """Tangent of x.toarray() (how='toarray') or x.todense()."""
    if _is_zero(x_dot):
        return x_dot
    if sp.issparse(x_dot) and x_dot.ndim == 1:
        return x_dot.toarray()
    if sp.issparse(x_dot):
        return getattr(so._like(x, so._values_at(x_dot, x)) if not _same_pattern(x_dot, x) else x_dot, how)()
    return np.asarray(x_dot) if how == "toarray" else np.asmatrix(x_dot)


# each helper fingerprints a pattern's index arrays once per call (pattern_cache.py)
_pc.scope_module(globals(), __all__)
