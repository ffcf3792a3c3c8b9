"""Forward mode and Hessians through sparse operations.

Tangents (srcad.jvp) of functions using every differentiable sparse operation, w.r.t. the dense
arguments and w.r.t. a sparse argument's stored values (a tangent of a sparse argument is a sparse
matrix of its class and pattern whose data are the tangent values), against central finite
differences along the same direction; ties and empty rows against their analytic tangents.
Hessians and Hessian-vector products (forward mode over the generated adjoint, which calls the
sparse runtime helpers) against analytic values and against finite differences of srcad.grad.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import srcad
from test_sparse import CLASSES, assert_same_pattern, make
from sparse_cases import (  # noqa: F401  (user functions shared with the other sparse tests)
    lsq, lsq_kernel, transposed, total, row_sums, col_sums, scaled, scaled_data, values_weighted,
    from_csr_parts, from_csr_parts_matrix, from_coo_parts, csr_from_pairs, row_max, col_min,
    seg_sum, seg_max, seg_min, two_uses, product)

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")   # np.matrix of the _matrix sums

FORMATS = [("csr", "array"), ("csr", "matrix"), ("coo", "array"), ("coo", "matrix"), ("csc", "array")]


# ---- helpers -------------------------------------------------------------------------------------------
def with_data(A, data):
    """A copy of A (its own index arrays, same order) holding `data`."""
    B = A.copy()
    B.data = np.asarray(data, dtype=A.dtype).reshape(A.data.shape)
    return B


def direction(x, rng):
    if sp.issparse(x):
        return with_data(x, rng.normal(size=x.data.shape))
    if isinstance(x, float):
        return float(rng.normal())
    return rng.normal(size=np.shape(x))


def zero_tangent(x):
    if sp.issparse(x):
        return with_data(x, np.zeros(x.data.shape))
    return np.zeros(np.shape(x)) if np.ndim(x) else 0.0


def moved(x, v, t):
    """x + t v (for a sparse x: its stored values moved, its pattern kept), computed in float64."""
    if sp.issparse(x):      # (not x.astype: scipy sorts a non-canonical x in place there)
        B = x.copy()
        B.data = x.data.astype(np.float64) + t * v.data.astype(np.float64)
        return B
    return np.asarray(x, dtype=np.float64) + t * v


def dense(y):
    return np.asarray(y.toarray() if sp.issparse(y) else y, dtype=np.float64)


def directional_fd(f, args, v, eps=1e-6):
    """d/dt f(args + t v) at t = 0 by central differences (v: one direction per argument, None: fixed)."""
    hi = [a if d is None else moved(a, d, eps) for a, d in zip(args, v)]
    lo = [a if d is None else moved(a, d, -eps) for a, d in zip(args, v)]
    return (dense(f(*hi)) - dense(f(*lo))) / (2 * eps)


def differentiable(a):
    return srcad.api._differentiable_arg(a)


def check_jvp(f, args, which, seed=0, rtol=1e-5, atol=1e-6):
    """srcad.jvp of f along a random direction of the arguments in `which` (the other differentiable
    arguments get zero tangents), against central finite differences along it."""
    rng = np.random.default_rng(seed)
    v = [direction(a, rng) if k in which else None for k, a in enumerate(args)]
    tangents = [d if d is not None else (zero_tangent(a) if differentiable(a) else None)
                for a, d in zip(args, v)]
    y, y_dot = srcad.jvp(f, args, tangents)
    value_tol = 1e-12 if rtol < 1e-4 else 1e-6      # the kernels sum in their own order
    np.testing.assert_allclose(dense(y), dense(f(*args)), rtol=value_tol, atol=value_tol)
    np.testing.assert_allclose(dense(y_dot), directional_fd(f, args, v), rtol=rtol, atol=atol)
    return y, y_dot, v


# ---- user functions, written naturally ------------------------------------------------------------------


def rproduct(A, G):
    return A.T @ G


def scaled_matrix(A, D):
    return A.multiply(D)


def all_extremes(A):
    return srcad.sparse.reduce_max(A) * 2.0 + srcad.sparse.reduce_min(A)


def gather(E, idx, w):
    return np.sum(np.tanh(E[idx] @ w))


def gather_take(E, idx, w):
    return np.sum(np.tanh(np.take(E, idx, axis=0) @ w))


# ---- forward mode: every operation, w.r.t. the dense and the sparse arguments ------------------------------
@pytest.mark.parametrize("fmt,kind", FORMATS)
def test_jvp_sparse_operations(fmt, kind):
    rng = np.random.default_rng(1)
    A = make(fmt, kind, idx=np.int64 if kind == "matrix" else np.int32)
    X, T, G = rng.normal(size=(7, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    cases = [(lsq, (A, X, T)), (lsq_kernel, (A, X, T)), (transposed, (A, G)),
             (product, (A, X)), (product, (A, X[:, 0])), (rproduct, (A, G)), (rproduct, (A, G[:, 0])),
             (total, (A,)), (row_sums, (A, rng.normal(size=6))), (col_sums, (A, rng.normal(size=7))),
             (scaled, (A, rng.normal(size=(6, 7)))), (scaled_data, (A, rng.normal(size=(1, 7)))),
             (scaled_data, (A, rng.normal(size=(6, 1)))), (values_weighted, (A, rng.normal(size=A.nnz))),
             (row_max, (A, rng.normal(size=5))), (col_min, (A, rng.normal(size=7))), (all_extremes, (A,)),
             (two_uses, (A, rng.normal(size=(7, 7))))]
    for f, args in cases:
        for which in [{k} for k in range(len(args))] + [set(range(len(args)))]:
            check_jvp(f, args, which, seed=len(which))


@pytest.mark.parametrize("fmt,kind", [("csr", "array"), ("coo", "matrix")])
def test_jvp_float32(fmt, kind):
    rng = np.random.default_rng(2)
    A = make(fmt, kind, dtype=np.float32)
    X, T = rng.normal(size=(7, 3)).astype(np.float32), rng.normal(size=(6, 3)).astype(np.float32)
    for f, args in [(lsq, (A, X, T)), (transposed, (A, T[:, :2])), (scaled_data, (A, X[:, :1].T)),
                    (row_max, (A, rng.normal(size=5).astype(np.float32)))]:
        check_jvp(f, args, set(range(len(args))), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("fmt,kind", FORMATS)
def test_jvp_multiply_keeps_class_and_pattern(fmt, kind):
    """A sparse result's tangent has the result's class, pattern and order (explicit zeros kept)."""
    rng = np.random.default_rng(3)
    A = make(fmt, kind)
    D = rng.normal(size=(6, 7))
    for which in ({0}, {1}, {0, 1}):
        y, y_dot, v = check_jvp(scaled_matrix, (A, D), which)
        assert_same_pattern(y_dot, A)
        want = (v[0].data if v[0] is not None else 0.0) * D[_coords(A)] + \
            (A.data * v[1][_coords(A)] if v[1] is not None else 0.0)
        np.testing.assert_allclose(y_dot.data, want, rtol=1e-13, atol=1e-13)


def _coords(A):
    C = A.tocoo() if A.format != "coo" else A
    if A.format == "coo":
        return C.row, C.col
    major = np.repeat(np.arange(len(A.indptr) - 1), np.diff(A.indptr))
    return (major, A.indices) if A.format == "csr" else (A.indices, major)


def test_jvp_construction():
    rng = np.random.default_rng(4)
    A, C = make("csr"), make("coo")
    x = rng.normal(size=7)
    cases = [(from_csr_parts, (A.data.copy(), A.indices, A.indptr, x)),
             (from_csr_parts_matrix, (A.data.copy(), A.indices, A.indptr, x)),
             (from_coo_parts, (C.data.copy(), C.row, C.col, x)),
             (csr_from_pairs, (C.data.copy(), C.row, C.col, x))]
    for f, args in cases:
        for which in ({0}, {3}, {0, 3}):
            check_jvp(f, args, which)


def test_jvp_segments_and_gathers():
    rng = np.random.default_rng(5)
    data, ids = rng.normal(size=(9, 2)), np.array([3, 0, 1, 3, 0, 4, 1, 3, 0])
    W = rng.normal(size=(5, 2))
    E, idx, w = rng.normal(size=(8, 3)), np.array([1, 4, 1, 7, 0]), rng.normal(size=3)
    for f, args in [(seg_sum, (data, ids, W)), (seg_max, (data, ids, W)), (seg_min, (data, ids, W)),
                    (gather, (E, idx, w)), (gather_take, (E, idx, w))]:
        for which in ({0}, {2}, {0, 2}):
            check_jvp(f, args, which)


def test_jvp_ties_and_empty_rows():
    """At a tie the tangent is the mean of the tied entries' tangents; an empty row's is 0."""
    A = sp.csr_array((np.array([2.0, 1.0, 2.0, 5.0, -3.0, -3.0]), np.array([0, 1, 3, 2, 0, 3]),
                      np.array([0, 3, 4, 4, 6])), shape=(4, 4))      # row 2 empty
    V = with_data(A, np.array([1.0, 10.0, 3.0, 7.0, -1.0, 4.0]))
    _, d = srcad.jvp(lambda_rowmax, (A,), (V,))
    np.testing.assert_array_equal(d, [2.0, 7.0, 0.0, 1.5])
    _, d = srcad.jvp(lambda_rowmin, (A,), (V,))
    np.testing.assert_array_equal(d, [10.0, 7.0, 0.0, 1.5])
    _, d = srcad.jvp(lambda_allmin, (A,), (V,))
    assert d == 1.5
    data, ids = np.array([1.0, 4.0, 4.0, 0.5]), np.array([0, 0, 0, 2])
    _, d = srcad.jvp(lambda_segmax, (data, ids), (np.array([5.0, 1.0, 2.0, 9.0]), None))
    np.testing.assert_array_equal(d, [1.5, 0.0, 9.0])


def lambda_rowmax(A):
    return srcad.sparse.reduce_max(A, axis=1)


def lambda_rowmin(A):
    return srcad.sparse.reduce_min(A, axis=1)


def lambda_allmin(A):
    return srcad.sparse.reduce_min(A)


def lambda_segmax(data, ids):
    return srcad.sparse.segment_max(data, ids, 3)


# ---- Hessians w.r.t. the dense argument ---------------------------------------------------------------
def fd_of_grad(f, args, k, eps=1e-5):
    """The Hessian by central differences of srcad.grad (columns along the unit directions)."""
    x = np.asarray(args[k], dtype=np.float64)
    g = srcad.grad(f, wrt=k)
    H = np.zeros((x.size, x.size))
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = eps
        a, b = list(args), list(args)
        a[k], b[k] = x + e.reshape(x.shape), x - e.reshape(x.shape)
        H[:, j] = (np.ravel(g(*a)) - np.ravel(g(*b))) / (2 * eps)
    return H


def h_tanh(A, x):
    return np.sum(np.tanh(A @ x))


def h_tanh_t(A, t):
    return np.sum(np.tanh(A.T @ t) ** 2)


def h_rowmax(A, x):
    m = srcad.sparse.reduce_max(A.multiply(x[None, :]), axis=1)
    return np.sum(np.sin(m[:-1]))


def h_colmin(A, t):
    m = srcad.sparse.reduce_min(A.multiply(np.exp(t)[:, None]), axis=0)
    return np.sum(np.where(np.isfinite(m), m, 0.0) ** 2)


def h_allmax(A, t):
    return srcad.sparse.reduce_max(A.multiply(np.sin(t)[:, None])) ** 2


def h_data(A, x):
    return np.sum(np.sin(A.multiply(x[None, :]).data) * A.data)


def h_sums(A, x):
    s = np.asarray(A.multiply(np.outer(x[:6], x)).sum(axis=0)).ravel()
    return np.sum(s ** 2) + np.sum(np.asarray(A.multiply(x[None, :] ** 2).sum(axis=1)).ravel() ** 3)


def h_kernel(A, x):
    return np.sum(np.cos(srcad.sparse.matmul(A, x)))


def h_construct(v, indices, indptr, X):
    B = sp.csr_array((np.sin(v), indices, indptr), shape=(6, 7))
    return np.sum((B @ X) ** 2) + np.sum(B.data ** 3)


def h_construct_coo(v, row, col, x):
    B = sp.coo_array((v ** 2, (row, col)), shape=(6, 7))
    return np.sum(np.tanh(B @ x))


def h_segments(x, ids):
    top = srcad.sparse.segment_max(np.sin(x), ids, 5)[:4]
    return np.sum(np.sin(srcad.sparse.segment_sum(x ** 2, ids, 5))) + np.sum(top ** 2)


def h_gather(E, idx, w):
    return np.sum(np.tanh(E[idx] @ w)) + np.sum(np.take(E, idx, axis=0) ** 3)


@pytest.mark.parametrize("fmt,kind", FORMATS)
def test_hessian_least_squares_is_exact(fmt, kind):
    rng = np.random.default_rng(6)
    A = make(fmt, kind)
    x, t, v = rng.normal(size=7), rng.normal(size=6), rng.normal(size=7)
    Ad = A.toarray()
    H = srcad.hessian(lsq, wrt=1)(A, x, t)
    np.testing.assert_allclose(H, 2 * Ad.T @ Ad, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(srcad.hvp(lsq, wrt=1)(A, x, t, v), 2 * Ad.T @ (Ad @ v), rtol=1e-13, atol=1e-13)
    X, T = rng.normal(size=(7, 2)), rng.normal(size=(6, 2))
    H2 = srcad.hessian(lsq_kernel, wrt=1)(A, X, T)
    np.testing.assert_allclose(H2, _lsq_hessian_2d(Ad, 2), rtol=1e-13, atol=1e-13)


def _lsq_hessian_2d(Ad, k):
    """Hessian of sum((A X - T)**2) w.r.t. X (n, k): 2 (A^T A)[j, j'] delta(c, c'), shape (n, k, n, k)."""
    M = 2 * Ad.T @ Ad
    return np.einsum("ab,cd->acbd", M, np.eye(k))


@pytest.mark.parametrize("fmt,kind", FORMATS)
def test_hessian_tanh_analytic(fmt, kind):
    rng = np.random.default_rng(7)
    A = make(fmt, kind)
    x, v = rng.normal(size=7), rng.normal(size=7)
    Ad = A.toarray()
    y = np.tanh(Ad @ x)
    want = Ad.T @ np.diag(-2 * y * (1 - y ** 2)) @ Ad
    np.testing.assert_allclose(srcad.hessian(h_tanh, wrt=1)(A, x), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(srcad.hvp(h_tanh, wrt=1)(A, x, v), want @ v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt,kind", FORMATS)
def test_hessian_sparse_operations_fd(fmt, kind):
    rng = np.random.default_rng(8)
    A = make(fmt, kind)
    x, t = rng.normal(size=7), rng.normal(size=6)
    for f, args in [(h_tanh_t, (A, t)), (h_rowmax, (A, x)), (h_colmin, (A, t)), (h_allmax, (A, t)),
                    (h_data, (A, x)), (h_sums, (A, x)), (h_kernel, (A, x))]:
        H = srcad.hessian(f, wrt=1)(*args)
        np.testing.assert_allclose(H, fd_of_grad(f, args, 1), rtol=1e-5, atol=1e-5, err_msg=f.__name__)
        v = rng.normal(size=np.shape(args[1]))
        np.testing.assert_allclose(srcad.hvp(f, wrt=1)(*args, v), H @ v, rtol=1e-10, atol=1e-10)


def test_hessian_construction_segments_gathers_fd():
    rng = np.random.default_rng(9)
    A, C = make("csr"), make("coo")
    cases = [(h_construct, (A.data.copy(), A.indices, A.indptr, rng.normal(size=(7, 2)))),
             (h_construct_coo, (C.data.copy(), C.row, C.col, rng.normal(size=7))),
             (h_segments, (rng.normal(size=9), np.array([3, 0, 1, 3, 0, 2, 1, 3, 0]))),
             (h_gather, (rng.normal(size=(6, 3)), np.array([1, 4, 1, 5]), rng.normal(size=3)))]
    for f, args in cases:
        H = srcad.hessian(f, wrt=0)(*args)
        n = np.size(args[0])
        np.testing.assert_allclose(H.reshape(n, n), fd_of_grad(f, args, 0), rtol=1e-5, atol=1e-5,
                                   err_msg=f.__name__)
        v = rng.normal(size=np.shape(args[0]))
        np.testing.assert_allclose(np.ravel(srcad.hvp(f, wrt=0)(*args, v)), H.reshape(n, n) @ v.ravel(),
                                   rtol=1e-10, atol=1e-10)


# ---- Hessian-vector products w.r.t. a sparse argument's stored values ------------------------------------
def hvp_sparse(f, args, V):
    """Forward mode over the generated adjoint w.r.t. args[0] (sparse), along the sparse direction V."""
    adjoint = srcad.api._vjp_function(f, 0)
    tangents = [V] + [zero_tangent(a) if differentiable(a) else None for a in args[1:]]
    _, hv = srcad.jvp(adjoint, tuple(args), tuple(tangents))
    return hv


@pytest.mark.parametrize("fmt,kind", FORMATS)
def test_hvp_wrt_sparse_values(fmt, kind):
    rng = np.random.default_rng(10)
    A = make(fmt, kind)
    x, t, X = rng.normal(size=7), rng.normal(size=6), rng.normal(size=(7, 7))
    V = with_data(A, rng.normal(size=A.nnz))
    rows, cols = _coords(A)
    # sum((A x - t)^2): d grad_p [V] = 2 (V x)_i x_j at p = (i, j)
    hv = hvp_sparse(lsq, (A, x, t), V)
    assert_same_pattern(hv, A)
    np.testing.assert_allclose(hv.data, 2 * (V.toarray() @ x)[rows] * x[cols], rtol=1e-13, atol=1e-13)
    for f, args in [(h_tanh, (A, x)), (h_rowmax, (A, x)), (h_data, (A, x)), (h_sums, (A, x)),
                    (two_uses, (A, X))]:
        hv = hvp_sparse(f, args, V)
        assert_same_pattern(hv, A)
        g = srcad.grad(f)
        eps = 1e-6
        ref = (g(moved(A, V, eps), *args[1:]).data - g(moved(A, V, -eps), *args[1:]).data) / (2 * eps)
        np.testing.assert_allclose(hv.data, ref, rtol=1e-5, atol=1e-5, err_msg=f.__name__)


@pytest.mark.parametrize("fmt,kind", [("csr", "array"), ("coo", "matrix"), ("csc", "array")])
def test_hessian_batches_directions_through_the_products(fmt, kind):
    """The seed directions of a Hessian go through the sparse products together (a batch folded into
    the columns of one product): no fallback to one sweep per direction, and the same bits."""
    rng = np.random.default_rng(11)
    A = make(fmt, kind)
    for f, args in [(lsq, (A, rng.normal(size=7), rng.normal(size=6))),
                    (lsq, (A, rng.normal(size=(7, 2)), rng.normal(size=(6, 2)))),
                    (h_tanh_t, (A, rng.normal(size=6))), (h_kernel, (A, rng.normal(size=7)))]:
        mod = srcad.api._module(srcad.api._vjp_function(f, 1), "forward", 1)
        fn = getattr(mod, mod.srcad_main)
        name = srcad.api._params(f)[1]

        def sweep(v):
            return srcad.api._call_jvp(fn, tuple(args), {name + "_dot": v})
        x = np.asarray(args[1])
        batched = srcad.api._forward_columns(sweep, x, x.shape, strict=True)
        one_by_one = srcad.api._forward_columns(sweep, x, x.shape, batched=False)
        np.testing.assert_array_equal(batched, one_by_one)
