"""Matrix products with a sparse operand and their derivatives: a sparse matrix times a dense
array through srcad's compiled kernels (`A @ X`, `A.T @ G`, the cotangent of A's values), and
sparse @ sparse (`spgemm`), whose result keeps its structural pattern (structure.py says why)."""
import numpy as np
import scipy.sparse as sp

from ... import _kernels as K
from ...batching import Batched
from ...inputs import sparse_format_error
from .. import pattern_cache as _pc
from .derivative import _cot, _matrix_at, _own
from .pattern import (_build, _cached, _canonical, _check, _entry_coords, _fmt, _is_zero, _kind, col_groups,
                      row_groups)

__all__ = ["sparse_matmul", "sparse_rmatmul", "matmul_vjp_values", "spgemm", "spgemm_vjp_x", "spgemm_vjp_y"]


# ---- a sparse matrix times a dense array, through the kernels -----------------------------------
def _group_apply(groups, data, X, plan=None):
    """Y[b] = sum over group b of data[pos] * X[idx]: one owner per output row, no atomics."""
    if groups.pos is None:
        return K.csr_matmul(groups.ptr, groups.idx, data, X, groups.n, plan)
    return K.csr_matmul_t(groups.ptr, groups.idx, groups.pos, data, X, groups.n)


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
    return sparse_matmul(B_T.T.tocsr(), G.T).T if G.ndim == 2 else None


def spgemm_vjp_x(g, A, B):
    """Cotangent of A in A @ B (both sparse): (G @ B.T) at A's entries."""
    if _is_zero(g):
        return g
    M = _left_product(g, B.T)
    return _cot(A, _own(_matrix_at(M, *_entry_coords(A))))


def spgemm_vjp_y(g, A, B):
    """Cotangent of B in A @ B (both sparse): (A.T @ G) at B's entries."""
    if _is_zero(g):
        return g
    M = (A.T.tocsr() @ g.tocsr()) if sp.issparse(g) else sparse_rmatmul(A, np.asarray(g))
    return _cot(B, _own(_matrix_at(M, *_entry_coords(B))))


# each helper fingerprints a pattern's index arrays once per call (pattern_cache.py)
_pc.scope_module(globals(), __all__)
