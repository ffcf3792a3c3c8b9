"""Sparse inputs: every operation's gradient per stored value against central finite differences,
for CSR/CSC/COO, `_array`/`_matrix`, float32/float64, int32/int64 indices; ties and empty rows
against hand-computed values; the gradient's class, pattern and order; 1 vs 2 threads."""
import numpy as np
import pytest
import scipy.sparse as sp

import srcad
from fdcheck import assert_grad_close, numerical_grad
from sparse_cases import (  # noqa: F401  (user functions shared with the other sparse tests)
    lsq, lsq_kernel, transposed, total, row_sums, col_sums, scaled, scaled_data, values_weighted,
    from_csr_parts, from_csr_parts_matrix, from_coo_parts, csr_from_pairs, row_max, col_min,
    seg_sum, seg_max, seg_min, two_uses, product)

CLASSES = {("csr", "array"): sp.csr_array, ("csr", "matrix"): sp.csr_matrix,
           ("coo", "array"): sp.coo_array, ("coo", "matrix"): sp.coo_matrix,
           ("csc", "array"): sp.csc_array, ("csc", "matrix"): sp.csc_matrix}


def make(fmt="csr", kind="array", dtype=np.float64, idx=np.int32, shape=(6, 7), density=0.4, seed=0,
         empty_row=True, explicit_zero=True, shuffle=True, distinct=True):
    """A random sparse matrix of the given class with unsorted COO order, an explicit zero and an
    empty row; distinct values (no ties) unless asked."""
    rng = np.random.default_rng(seed)
    m, n = shape
    mask = rng.random(shape) < density
    mask[0, :2] = True
    if empty_row:
        mask[m - 1] = False
    rows, cols = np.nonzero(mask)
    vals = rng.permutation(len(rows)) / len(rows) + 0.25 if distinct else rng.normal(size=len(rows))
    vals = vals * np.where(rng.random(len(rows)) < 0.5, -1, 1)
    if explicit_zero:
        vals[len(vals) // 2] = 0.0
    cls = CLASSES[(fmt, kind)]
    if fmt == "coo":
        order = rng.permutation(len(rows)) if shuffle else np.arange(len(rows))
        A = cls((vals[order].astype(dtype), (rows[order].astype(idx), cols[order].astype(idx))), shape=shape)
    else:
        major, minor = (rows, cols) if fmt == "csr" else (cols, rows)
        order = np.lexsort((rng.random(len(rows)) if shuffle else minor, major))   # unsorted within rows
        indptr = np.searchsorted(major[order], np.arange(shape[0 if fmt == "csr" else 1] + 1)).astype(idx)
        A = cls((vals[order].astype(dtype), minor[order].astype(idx), indptr), shape=shape)
    assert A.nnz == len(vals)
    return A


def assert_same_pattern(G, A):
    """G has A's class, shape, index arrays and order (explicit zeros kept), A's float dtype."""
    assert type(G) is type(A)
    assert G.shape == A.shape and G.nnz == A.nnz
    assert G.dtype == (A.dtype if A.dtype.kind == "f" else np.float64)
    if A.format == "coo":
        np.testing.assert_array_equal(G.row, A.row)
        np.testing.assert_array_equal(G.col, A.col)
        assert G.row.dtype == A.row.dtype
    else:
        np.testing.assert_array_equal(G.indices, A.indices)
        np.testing.assert_array_equal(G.indptr, A.indptr)
        assert G.indices.dtype == A.indices.dtype


def tol(dtype):
    return dict(rtol=2e-2, atol=2e-2, eps=1e-2) if dtype == np.float32 else dict(rtol=1e-5, atol=1e-6)


ALL = [(f, k, d, i) for f in ("csr", "coo") for k in ("array", "matrix")
       for d in (np.float32, np.float64) for i in (np.int32, np.int64)]


# ---- user functions, written naturally ------------------------------------------------------------


def all_max(A):
    return srcad.sparse.reduce_max(A) * 2.0 + srcad.sparse.reduce_min(A)


def gather(E, idx, w):
    h = E[idx]
    return np.sum(np.tanh(h @ w))


def gather_take(E, idx, w):
    h = np.take(E, idx, axis=0)
    return np.sum(np.tanh(h @ w))


# ---- products ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,kind,dtype,idx", ALL)
@pytest.mark.parametrize("ndim", [1, 2])
def test_matmul(fmt, kind, dtype, idx, ndim):
    A = make(fmt, kind, dtype, idx)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, 3)[:ndim])
    T = rng.normal(size=(6, 3)[:ndim])
    for f in (lsq, lsq_kernel):
        gA, gX = srcad.grad(f, wrt=(0, 1))(A, X, T)
        assert_same_pattern(gA, A)
        assert_grad_close(f, (A, X, T), gA, wrt=0, **tol(dtype))
        assert_grad_close(f, (A, X, T), gX, wrt=1, **tol(dtype))
        assert type(gX) is np.ndarray and gX.shape == X.shape


@pytest.mark.parametrize("fmt,kind,dtype,idx", ALL)
def test_transposed_product(fmt, kind, dtype, idx):
    A = make(fmt, kind, dtype, idx)
    G = np.random.default_rng(2).normal(size=(6, 2))
    gA, gG = srcad.grad(transposed, wrt=(0, 1))(A, G)
    assert_same_pattern(gA, A)
    assert_grad_close(transposed, (A, G), gA, wrt=0, **tol(dtype))
    assert_grad_close(transposed, (A, G), gG, wrt=1, **tol(dtype))


def test_products_match_scipy_and_return_ndarray():
    for fmt in ("csr", "csc", "coo"):
        for kind in ("array", "matrix"):
            A = make(fmt, kind)
            for X in (np.arange(7.0), np.arange(14.0).reshape(7, 2)):
                Y = srcad.sparse.matmul(A, X)
                assert type(Y) is np.ndarray
                np.testing.assert_allclose(Y, np.asarray(A @ X).reshape(Y.shape), rtol=1e-12)
            G = np.arange(12.0).reshape(6, 2)
            np.testing.assert_allclose(srcad.sparse.matmul(A.T, G), np.asarray(A.T @ G), rtol=1e-12)


def test_csc_matmul_grad():
    A = make("csc", "array")
    X, T = np.ones((7, 2)), np.zeros((6, 2))
    gA = srcad.grad(lsq)(A, X, T)
    assert_same_pattern(gA, A)
    assert_grad_close(lsq, (A, X, T), gA)


# ---- sums, multiply, .data ----------------------------------------------------------------------------
def _coo_sum_sorts_in_place():
    """Does this SciPy's COO .sum() sort an unsorted COO in place (SciPy >= 1.16 does, 1.15 not)?"""
    A = make("coo")
    row = A.row.copy()
    A.sum()
    return not np.array_equal(A.row, row)


@pytest.mark.parametrize("fmt,kind,dtype,idx", ALL)
def test_sums(fmt, kind, dtype, idx):
    A = make(fmt, kind, dtype, idx)
    if fmt == "coo" and _coo_sum_sorts_in_place():
        # scipy's A.sum() sorts an unsorted COO in place mid-function: srcad refuses rather than
        # pair derivatives with moved entries (tests/test_user_trials.py has the asymmetric case)
        with pytest.raises(srcad.SrcadError, match="sorted it in place"):
            srcad.grad(total)(A)
        A = make(fmt, kind, dtype, idx)
        A.sum_duplicates()
    g = srcad.grad(total)(A)
    assert_same_pattern(g, A)
    np.testing.assert_array_equal(g.data, np.full(A.nnz, 3.0, dtype))
    w6, w7 = np.linspace(-1, 1, 6), np.linspace(1, 2, 7)
    for f, w in ((row_sums, w6), (col_sums, w7)):
        gA, gw = srcad.grad(f, wrt=(0, 1))(A, w)
        assert_same_pattern(gA, A)
        assert_grad_close(f, (A, w), gA, **tol(dtype))
        assert_grad_close(f, (A, w), gw, wrt=1, **tol(dtype))


@pytest.mark.parametrize("fmt,kind,dtype,idx", ALL)
@pytest.mark.parametrize("dshape", [(6, 7), (7,), (1, 7), (6, 1), ()])
def test_multiply(fmt, kind, dtype, idx, dshape):
    A = make(fmt, kind, dtype, idx)
    D = np.random.default_rng(3).normal(size=dshape)
    for f in (scaled, scaled_data):
        gA, gD = srcad.grad(f, wrt=(0, 1))(A, D)
        assert_same_pattern(gA, A)
        assert_grad_close(f, (A, D), gA, **tol(dtype))
        assert_grad_close(f, (A, D), gD, wrt=1, **tol(dtype))
        assert np.shape(gD) == dshape


@pytest.mark.parametrize("fmt,kind,dtype,idx", ALL)
def test_data(fmt, kind, dtype, idx):
    A = make(fmt, kind, dtype, idx)
    w = np.linspace(-2, 2, A.nnz)
    gA = srcad.grad(values_weighted)(A, w)
    assert_same_pattern(gA, A)
    np.testing.assert_allclose(gA.data, np.cos(A.data.astype(np.float64)) * w, rtol=1e-6)
    assert_grad_close(values_weighted, (A, w), gA, **tol(dtype))


def test_gradient_keeps_order_and_explicit_zeros():
    A = make("coo", "array", shuffle=True)
    assert not np.all(np.diff(A.row) >= 0)           # really unsorted
    zero_at = int(np.flatnonzero(A.data == 0)[0])
    X, T = np.ones(7), np.zeros(6)
    gA = srcad.grad(lsq)(A, X, T)
    assert_same_pattern(gA, A)
    want = 2 * (A @ X - T)[A.row] * X[A.col]           # d/dA_p of sum((AX - T)^2), entry by entry
    np.testing.assert_allclose(gA.data, want, rtol=1e-12)
    assert gA.data[zero_at] != 0.0                     # the explicit zero gets its derivative
    # the gradient shares A's coordinates read-only: editing it never touches A
    assert not gA.row.flags.writeable and not gA.col.flags.writeable
    rows = A.row.copy()
    gA.eliminate_zeros()                               # COO: new arrays, A intact
    gA.sum_duplicates()
    assert (A.row == rows).all() and A.nnz == len(rows)


def test_gradient_index_arrays_never_alias_writably():
    """A canonical CSR's gradient shares its index arrays as read-only views (in-place structural
    edits raise rather than corrupt A; a .copy() is editable); a non-canonical one's gets copies."""
    A = make("csr", "array", shuffle=False)
    A.sum_duplicates()
    assert A.has_canonical_format
    X, T = np.ones(7), np.zeros(6)
    gA = srcad.grad(lsq)(A, X, T)
    assert not gA.indices.flags.writeable and not gA.indptr.flags.writeable
    gA.data[:2] = 0.0
    indices, data = A.indices.copy(), A.data.copy()
    with pytest.raises(ValueError):
        gA.eliminate_zeros()
    assert (A.indices == indices).all() and (A.data == data).all()
    c = gA.copy()
    c.eliminate_zeros()
    assert c.nnz == A.nnz - 2 and (A.indices == indices).all()
    B = sp.csr_array((A.data, A.indices[::-1].copy(), A.indptr), shape=A.shape)  # unsorted rows
    B.has_sorted_indices = False
    gB = srcad.grad(lsq)(B, X, T)
    assert gB.indices.flags.writeable and not np.shares_memory(gB.indices, B.indices)


def test_two_uses_add_on_the_pattern():
    for fmt in ("csr", "coo", "csc"):
        A = make(fmt, "array")
        X = np.random.default_rng(4).normal(size=(7, 2))
        gA, gX = srcad.grad(two_uses, wrt=(0, 1))(A, X)
        assert_same_pattern(gA, A)
        assert_grad_close(two_uses, (A, X), gA)
        assert_grad_close(two_uses, (A, X), gX, wrt=1)


# ---- construction from differentiable values ----------------------------------------------------------
@pytest.mark.parametrize("idx", [np.int32, np.int64])
def test_construction(idx):
    A = make("csr", "array", idx=idx, shuffle=False)
    X = np.random.default_rng(5).normal(size=(7, 2))
    vals = A.data.copy()
    for f in (from_csr_parts, from_csr_parts_matrix):
        args = (vals, A.indices, A.indptr, X)
        gv, gX = srcad.grad(f, wrt=(0, 3))(*args)
        assert type(gv) is np.ndarray and gv.shape == vals.shape
        assert_grad_close(f, args, gv)
        assert_grad_close(f, args, gX, wrt=3)
    C = make("coo", "array", idx=idx)
    for f in (from_coo_parts, csr_from_pairs):
        args = (C.data.copy(), C.row, C.col, X)
        gv, gX = srcad.grad(f, wrt=(0, 3))(*args)
        assert_grad_close(f, args, gv)
        assert_grad_close(f, args, gX, wrt=3)


def test_construction_with_duplicates():
    row, col = np.array([0, 2, 0, 5]), np.array([1, 3, 1, 6])
    vals = np.array([1.0, 2.0, 3.0, -1.0])
    X = np.random.default_rng(6).normal(size=(7, 2))
    for f in (from_coo_parts, csr_from_pairs):
        gv = srcad.grad(f)(vals, row, col, X)
        assert_grad_close(f, (vals, row, col, X), gv)


# ---- max / min over stored entries ---------------------------------------------------------------------
@pytest.mark.parametrize("fmt,kind,dtype,idx", ALL)
def test_reduce_fd(fmt, kind, dtype, idx):
    A = make(fmt, kind, dtype, idx)
    w5, w7 = np.linspace(1, 2, 5), np.linspace(-1, 1, 7)
    for f, args in ((row_max, (A, w5)), (col_min, (A, w7)), (all_max, (A,))):
        g = srcad.grad(f)(*args)
        assert_same_pattern(g, A)
        assert_grad_close(f, args, g, **tol(dtype))


def test_reduce_values_and_empty():
    A = make("csr", "array", empty_row=True)
    D = A.toarray()
    stored = np.zeros(A.shape, bool)
    stored[A.tocoo().row, A.tocoo().col] = True
    m = srcad.sparse.reduce_max(A, axis=1)
    want = np.array([D[i][stored[i]].max() if stored[i].any() else -np.inf for i in range(6)])
    np.testing.assert_array_equal(m, want)
    n = srcad.sparse.reduce_min(A, axis=0)
    want = np.array([D[:, j][stored[:, j]].min() if stored[:, j].any() else np.inf for j in range(7)])
    np.testing.assert_array_equal(n, want)
    assert srcad.sparse.reduce_max(A) == D[stored].max()
    E = sp.csr_array((3, 4))
    assert srcad.sparse.reduce_max(E) == -np.inf and srcad.sparse.reduce_min(E) == np.inf
    np.testing.assert_array_equal(srcad.sparse.reduce_max(E, axis=1), [-np.inf] * 3)


def rowmax_all(A):
    m = srcad.sparse.reduce_max(A, axis=1)
    return np.sum(np.where(np.isfinite(m), m, 0.0) * np.arange(1.0, 5.0))


def colmin_all(A):
    m = srcad.sparse.reduce_min(A, axis=0)
    return np.sum(np.where(np.isfinite(m), m, 0.0) * np.arange(1.0, 4.0))


@pytest.mark.parametrize("fmt", ["csr", "coo", "csc"])
@pytest.mark.parametrize("kind", ["array", "matrix"])
def test_reduce_ties_and_empty_rows(fmt, kind):
    # row 0: three tied maxima, row 1: two tied maxima, row 2: empty, row 3: one explicit zero
    rows, cols = np.array([0, 0, 0, 1, 1, 1, 3]), np.array([0, 1, 2, 0, 1, 2, 1])
    vals = np.array([2.0, 2.0, 2.0, 5.0, -1.0, 5.0, 0.0])
    C = sp.coo_array((vals, (rows, cols)), shape=(4, 3))
    A = CLASSES[(fmt, kind)](C.asformat(fmt))
    if fmt == "coo":
        A = CLASSES[(fmt, kind)]((vals, (rows, cols)), shape=(4, 3))
    g = srcad.grad(rowmax_all)(A)
    assert_same_pattern(g, A)
    r, c = (A.row, A.col) if fmt == "coo" else (A.tocoo().row, A.tocoo().col)
    want = {(0, 0): 1 / 3, (0, 1): 1 / 3, (0, 2): 1 / 3, (1, 0): 2 / 2, (1, 1): 0.0, (1, 2): 2 / 2, (3, 1): 4.0}
    got = {(int(i), int(j)): v for i, j, v in zip(r, c, g.data)}
    assert got == pytest.approx(want)
    # column minima: col 0 {2, 5} -> 2; col 1 {2, -1, 0} -> -1; col 2 {2, 5} -> 2
    g = srcad.grad(colmin_all)(A)
    want = {(0, 0): 1.0, (0, 1): 0.0, (0, 2): 3.0, (1, 0): 0.0, (1, 1): 2.0, (1, 2): 0.0, (3, 1): 0.0}
    got = {(int(i), int(j)): v for i, j, v in zip(r, c, g.data)}
    assert got == pytest.approx(want)
    # all-entry max: 5.0 twice
    g = srcad.grad(all_max)(A)
    got = {(int(i), int(j)): v for i, j, v in zip(r, c, g.data)}
    want = {(0, 0): 0.0, (0, 1): 0.0, (0, 2): 0.0, (1, 0): 1.0, (1, 1): 1.0, (1, 2): 1.0, (3, 1): 0.0}
    assert got == pytest.approx(want)


# ---- segment reductions ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ids_dtype", [np.int32, np.int64])
def test_segments_fd(dtype, ids_dtype):
    rng = np.random.default_rng(7)
    data = rng.permutation(24).reshape(8, 3).astype(dtype) / 7 - 1.5
    ids = np.array([3, 0, 3, 1, 0, 3, 1, 0], ids_dtype)      # segments 2 and 4 are empty
    W = rng.normal(size=(5, 3))
    for f in (seg_sum, seg_max, seg_min):
        g, gW = srcad.grad(f, wrt=(0, 2))(data, ids, W)
        assert g.shape == data.shape and g.dtype == dtype
        assert_grad_close(f, (data, ids, W), g, **tol(dtype))
        assert_grad_close(f, (data, ids, W), gW, wrt=2, **tol(dtype))
    s = srcad.sparse.segment_sum(data, ids, 5)
    assert s.shape == (5, 3) and np.all(s[[2, 4]] == 0)
    assert np.all(srcad.sparse.segment_max(data, ids, 5)[[2, 4]] == -np.inf)
    assert np.all(srcad.sparse.segment_min(data, ids, 5)[[2, 4]] == np.inf)


def seg_max_1d(data, ids):
    m = srcad.sparse.segment_max(data, ids, 3)
    return np.sum(np.where(np.isfinite(m), m, 0.0) * np.array([1.0, 10.0, 100.0]))


def test_segment_ties():
    data = np.array([4.0, 1.0, 4.0, 4.0, 7.0, 7.0])
    ids = np.array([0, 0, 0, 0, 2, 2])          # segment 1 empty; three tied 4s, two tied 7s
    g = srcad.grad(seg_max_1d)(data, ids)
    np.testing.assert_allclose(g, [1 / 3, 0, 1 / 3, 1 / 3, 50.0, 50.0])


# ---- row gathers -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("f", [gather, gather_take])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_gather(f, dtype):
    rng = np.random.default_rng(8)
    E = rng.normal(size=(10, 4)).astype(dtype)
    idx = np.array([3, 1, 3, 9, 0, 3, -1])
    w = rng.normal(size=4)
    g = srcad.grad(f, row_sparse=True)(E, idx, w)
    assert isinstance(g, srcad.RowSparse)
    assert g.values.shape == (len(idx), 4) and g.shape == E.shape and g.values.dtype == dtype
    dense = srcad.grad(f)(E, idx, w)
    assert type(dense) is np.ndarray
    np.testing.assert_allclose(g.todense(), dense, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g), dense, rtol=1e-6)
    assert_grad_close(f, (E, idx, w), g, **tol(dtype))


def embedding_loss(E, idx, w, y):
    h = E[idx]
    return np.sum((h @ w - y) ** 2)


def test_embedding_batches_through_the_parallel_paths():
    """A batch large enough for the fused parallel gather-matvec (rt.getitem_matmul) and the
    owner-partitioned scatter of the factored cotangent: equal to the hand-written gradient, accumulated over
    batches, and the same bits for 1 and 2 threads."""
    rng = np.random.default_rng(31)
    E = rng.normal(size=(100_000, 16)).astype(np.float32)
    w = rng.normal(size=16).astype(np.float32)
    batches = [(idx, rng.normal(size=len(idx)).astype(np.float32))
               for idx in (np.minimum(rng.zipf(1.3, 20_000), len(E)) - 1 for _ in range(3))]
    df = srcad.grad(embedding_loss, row_sparse=True)
    assert "rt.getitem_matmul(E, idx, w)" in srcad.emit(embedding_loss)
    want = np.zeros(E.shape)
    for idx, y in batches:                                    # by hand, in float64
        r = E[idx].astype(np.float64) @ w - y
        np.add.at(want, idx, 2 * r[:, None] * w[None, :].astype(np.float64))
    saved, accs = srcad.get_num_threads(), []
    try:
        for threads in (1, 2):
            srcad.set_num_threads(threads)
            acc = np.zeros_like(E)
            for idx, y in batches:
                srcad.accumulate(acc, df(E, idx, w, y))
            np.testing.assert_allclose(acc, want, rtol=2e-4, atol=2e-3)
            accs.append(acc)
    finally:
        srcad.set_num_threads(saved)
    assert accs[0].tobytes() == accs[1].tobytes()


def embedding_loss_reused(E, idx, w, y):
    h = E[idx]
    return np.sum((h @ w - y) ** 2) + 0.5 * np.sum(h ** 2)


def test_gather_matvec_cotangent_is_fused_and_exact():
    """`E[idx] @ w`: the generated code fuses the gather with the product (rt.getitem_matmul) and
    the adjoint's two helpers (rt.index_matmul_vjp), whose RowSparse keeps the outer-product
    factors: its values equal the hand-written rows 2 r[k] * w, accumulating adds the same bits
    as np.add.at with the formed values; when the gathered block has a second use the helpers
    stay apart, and the gradient still matches."""
    rng = np.random.default_rng(32)
    E = rng.normal(size=(3000, 8))
    w = rng.normal(size=8)
    idx = np.concatenate([rng.integers(-3000, 3000, 2000), np.zeros(500, int)])
    y = rng.normal(size=len(idx))
    src = srcad.emit(embedding_loss)
    assert "rt.index_matmul_vjp(" in src and "rt.matmul_vjp_x(" not in src
    assert "rt.getitem_matmul(E, idx, w)" in src and "rt.getitem(" not in src
    g = srcad.grad(embedding_loss, row_sparse=True)(E, idx, w, y)
    assert g.factors is not None and g.dtype == np.float64      # not formed yet
    r = E[idx] @ w - y
    coef, vec = g.factors
    np.testing.assert_allclose(coef, 2 * r, rtol=1e-12, atol=1e-12)
    assert vec is w or np.array_equal(vec, w)
    acc = rng.normal(size=E.shape)
    want = acc.copy()
    np.add.at(want, idx, np.multiply.outer(coef, vec))
    srcad.accumulate(acc, g)
    assert acc.tobytes() == want.tobytes()
    np.testing.assert_array_equal(g.indices, np.where(idx < 0, idx + 3000, idx))
    np.testing.assert_allclose(g.values, np.multiply.outer(2 * r, w), rtol=1e-12)  # formed on read
    assert g.factors is None
    # a second use of the gathered rows: no fusion, the same exact gradient (dense, vs by hand)
    assert "rt.index_matmul_vjp(" not in srcad.emit(embedding_loss_reused)
    dense = srcad.grad(embedding_loss_reused)(E, idx, w, y)
    by_hand = np.zeros_like(E)
    np.add.at(by_hand, idx, np.multiply.outer(2 * r, w) + E[idx])
    np.testing.assert_allclose(dense, by_hand, rtol=1e-12, atol=1e-12)
    # Hessian-vector products differentiate through the fused helper: H v = 2 S^T S v w w^T rows
    small = E[:50]
    sidx = rng.integers(0, 50, 40)
    sy = rng.normal(size=40)
    v = rng.normal(size=small.shape)
    hv = srcad.hvp(embedding_loss)(small, sidx, w, sy, v)
    want_hv = np.zeros_like(small)
    np.add.at(want_hv, sidx, np.multiply.outer(2 * (v[sidx] @ w), w))
    np.testing.assert_allclose(np.asarray(hv), want_hv, rtol=1e-12, atol=1e-12)


def test_fused_gather_matvec_derivatives_on_the_kernel_path():
    """A batch big enough for rt.getitem_matmul's kernel (float32 rows and vector): the gradient
    w.r.t. (E, w), forward mode and a Hessian-vector product, against hand-written float64
    formulas (r = E[idx] w - y; dL/dE rows 2 r_k w, dL/dw = 2 E[idx]^T r)."""
    rng = np.random.default_rng(33)
    E = rng.normal(size=(4000, 12)).astype(np.float32)
    w = rng.normal(size=12).astype(np.float32)
    idx = np.minimum(rng.zipf(1.4, 5000), len(E)) - 1
    y = rng.normal(size=len(idx)).astype(np.float32)
    H, w64 = E[idx].astype(np.float64), w.astype(np.float64)
    r = H @ w64 - y
    gE, gw = srcad.grad(embedding_loss, wrt=(0, 2))(E, idx, w, y)
    want_E = np.zeros(E.shape)
    np.add.at(want_E, idx, 2 * np.multiply.outer(r, w64))
    np.testing.assert_allclose(gE, want_E, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(gw, 2 * H.T @ r, rtol=1e-4, atol=1e-2)
    dE, dw = rng.normal(size=E.shape).astype(np.float32), rng.normal(size=12).astype(np.float32)
    val, dot = srcad.jvp(embedding_loss, (E, idx, w, y), (dE, np.zeros_like(idx), dw, np.zeros_like(y)))
    dr = dE[idx].astype(np.float64) @ w64 + H @ dw
    np.testing.assert_allclose(val, np.sum(r ** 2), rtol=1e-5)
    np.testing.assert_allclose(dot, 2 * r @ dr, rtol=1e-4)
    hv = srcad.hvp(embedding_loss)(E, idx, w, y, dE)
    want_hv = np.zeros(E.shape)
    np.add.at(want_hv, idx, 2 * np.multiply.outer(dE[idx].astype(np.float64) @ w64, w64))
    np.testing.assert_allclose(np.asarray(hv), want_hv, rtol=1e-4, atol=1e-3)


# ---- accumulate -------------------------------------------------------------------------------------------
def test_accumulate_kinds():
    rng = np.random.default_rng(9)
    E = rng.normal(size=(10, 4))
    w = rng.normal(size=4)
    acc = np.zeros_like(E)
    want = np.zeros_like(E)
    df = srcad.grad(gather, row_sparse=True)
    for b in range(3):
        idx = rng.integers(0, 10, 6)
        g = df(E, idx, w)
        assert srcad.accumulate(acc, g) is acc
        want += g.todense()
    np.testing.assert_allclose(acc, want, rtol=1e-12)
    assert srcad.accumulate(acc, want) is acc
    np.testing.assert_allclose(acc, 2 * want, rtol=1e-12)
    # RowSparse accumulator
    rs = df(E, np.array([1, 2]), w)
    total = rs.todense()
    g = df(E, np.array([2, 2, 5]), w)
    assert srcad.accumulate(rs, g) is rs
    np.testing.assert_allclose(rs.todense(), total + g.todense(), rtol=1e-12)
    # sparse accumulator with the pattern of the argument
    for fmt in ("csr", "coo"):
        A = make(fmt, "matrix")
        X, T = np.ones((7, 2)), np.zeros((6, 2))
        acc = srcad.grad(lsq)(A, X, T)
        g = srcad.grad(lsq)(A, 2 * X, T)
        first = acc.data.copy()
        assert srcad.accumulate(acc, g) is acc
        np.testing.assert_array_equal(acc.data, first + g.data)
        assert_same_pattern(acc, A)
        with pytest.raises(ValueError):
            srcad.accumulate(acc, make(fmt, "matrix", seed=5))


# ---- value_and_grad, vjp -----------------------------------------------------------------------------------
def test_value_and_grad_and_vjp():
    A = make("csr", "array")
    rng = np.random.default_rng(10)
    X, T = rng.normal(size=(7, 3)), rng.normal(size=(6, 3))
    v, (gA, gX) = srcad.value_and_grad(lsq, wrt=(0, 1))(A, X, T)
    assert v == pytest.approx(lsq(A, X, T))
    y, pb = srcad.vjp(lsq, A, X, T)
    cA, cX, cT = pb(1.0)
    assert_same_pattern(cA, A)
    np.testing.assert_allclose(cA.data, gA.data, rtol=1e-12)
    np.testing.assert_allclose(cX, gX, rtol=1e-12)
    np.testing.assert_allclose(cT, -2 * (A @ X - T), rtol=1e-12)


def test_vjp_of_a_nonscalar_product():
    for fmt in ("csr", "coo"):
        A = make(fmt, "array")
        X = np.random.default_rng(11).normal(size=(7, 2))
        y, pb = srcad.vjp(product, A, X)
        assert type(y) is np.ndarray
        dy = np.random.default_rng(12).normal(size=y.shape)
        cA, cX = pb(dy)
        assert_same_pattern(cA, A)
        r, c = (A.row, A.col) if fmt == "coo" else (A.tocoo().row, A.tocoo().col)
        np.testing.assert_allclose(cA.data, np.sum(dy[r] * X[c], axis=1), rtol=1e-12)
        np.testing.assert_allclose(cX, A.T @ dy, rtol=1e-12)


def test_generated_code_never_densifies():
    text = srcad.emit(lsq, wrt=(0, 1)) + srcad.emit(transposed, wrt=(0, 1)) + srcad.emit(row_max)
    assert "rt.matmul(A, X)" in text
    for bad in ("toarray", "todense", ".A1"):
        assert bad not in text


# ---- same bits for 1 and 2 threads --------------------------------------------------------------------------
def _skewed(n, nnz, seed, fmt="csr"):
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.zipf(1.8, n), n // 2)
    lengths = np.maximum((lengths * nnz / lengths.sum()).astype(np.int64), 0)
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.integers(0, n, len(rows))
    vals = rng.normal(size=len(rows))
    vals[::7] = np.round(vals[::7])          # some ties
    A = sp.coo_array((vals, (rows, cols)), shape=(n, n))
    return A if fmt == "coo" else A.asformat(fmt)


def big_loss(A, X, T, E, idx, data, ids):
    r = A @ X - T
    z = A.T @ r
    m = srcad.sparse.reduce_max(A, axis=1)
    s = srcad.sparse.segment_max(data, ids, 300)
    h = E[idx]
    return (np.sum(r ** 2) + np.sum(z * X) + np.sum(np.where(np.isfinite(m), m, 0.0))
            + np.sum(np.where(np.isfinite(s), s, 0.0)) + np.sum(np.tanh(h)) + A.multiply(T[:, :1]).sum())


@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_threads_bit_identical(fmt):
    n = 6000
    A = _skewed(n, 120_000, 13, fmt)
    rng = np.random.default_rng(14)
    X, T = rng.normal(size=(n, 8)), rng.normal(size=(n, 8))
    E = rng.normal(size=(5000, 16))
    idx = np.minimum(rng.zipf(1.5, 40_000), 5000) - 1
    data = np.round(rng.normal(size=(20_000, 4)), 1)
    ids = rng.integers(0, 300, 20_000)
    df = srcad.value_and_grad(big_loss, wrt=(0, 1, 3, 5), row_sparse=True)
    old = srcad.get_num_threads()
    results = []
    try:
        for nt in (1, 2):
            srcad.set_num_threads(nt)
            v, (gA, gX, gE, gd) = df(A, X, T, E, idx, data, ids)
            acc = np.zeros_like(E)
            srcad.accumulate(acc, gE)
            results.append((v, gA.data.copy(), np.asarray(gX), acc, np.asarray(gd)))
    finally:
        srcad.set_num_threads(old)
    (v1, *r1), (v2, *r2) = results
    assert v1 == v2
    for a, b in zip(r1, r2):
        assert a.tobytes() == b.tobytes()


def test_rule_is_exact_at_larger_size():
    A = _skewed(3000, 30_000, 15)
    rng = np.random.default_rng(16)
    X, T = rng.normal(size=(3000, 4)), rng.normal(size=(3000, 4))
    gA, gX = srcad.grad(lsq, wrt=(0, 1))(A, X, T)
    R = 2 * (A @ X - T)
    C = A.tocoo()
    np.testing.assert_allclose(gA.data, np.sum(R[C.row] * X[C.col], axis=1), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gX, A.T @ R, rtol=1e-10, atol=1e-10)


def test_numerical_reference_sees_one_value_per_entry():
    A = make("coo", "matrix")
    g = numerical_grad(total, (A,))
    assert g.shape == (A.nnz,)


# ---- dense @ sparse --------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_dense_times_sparse(fmt):
    from sparse_cases import dense_times_sparse
    A = make(fmt, "array")
    X = np.random.default_rng(5).normal(size=(3, A.shape[0]))
    gX, gA = srcad.grad(dense_times_sparse, wrt=(0, 1))(X, A)
    assert_same_pattern(gA, A)
    assert_grad_close(dense_times_sparse, (X, A), gX, wrt=0)
    assert_grad_close(dense_times_sparse, (X, A), gA, wrt=1)
    from srcad import runtime as rt
    np.testing.assert_allclose(rt.matmul(X, A), X @ A.toarray(), rtol=1e-12)     # through the kernel
