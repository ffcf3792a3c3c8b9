"""The methods users call on a differentiated scipy sparse matrix (issue 23): abs, max/min (with
axis, implicit zeros taking part), astype, format conversions (also `A = A.tocsr()` inside f),
rows and columns (`A[i]`, `A[i, :]`, `A[:, j]`, `A[rows]`, `getrow`), mean, power, the
zero-preserving elementwise methods, dot, transpose, reshape, trace, sum, multiply, diagonal.
For CSR/CSC/COO, `_array` and `_matrix`, canonical and non-canonical inputs (unsorted indices,
duplicates): the gradient keeps the argument's class and stored pattern and matches central
finite differences per stored entry; the forward tangent matches finite differences along a
direction; a Hessian-vector product where second order is supported."""
import numpy as np
import pytest
import scipy.sparse as sp

import srcad
from fdcheck import grad_values, numerical_grad

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")

CLS = {("csr", "array"): sp.csr_array, ("csr", "matrix"): sp.csr_matrix, ("csc", "array"): sp.csc_array,
       ("csc", "matrix"): sp.csc_matrix, ("coo", "array"): sp.coo_array, ("coo", "matrix"): sp.coo_matrix}


def make(fmt, kind, canonical, zero=True):
    """A 4x5 matrix with an explicit zero (with `zero`; no extreme ties it with an implicit zero);
    non-canonical: a duplicate at (0, 1) and unsorted indices."""
    r = np.array([0, 0, 1, 2, 2, 3, 3, 1])
    c = np.array([1, 3, 0, 4, 2, 0, 3, 2])
    v = np.array([0.7, 0.4, 0.3, 0.9, -0.6, -0.45, 0.0 if zero else 0.15, 0.2])
    A = sp.coo_array((v, (r, c)), shape=(4, 5))
    if canonical:
        B = CLS[(fmt, kind)](A.asformat(fmt))
        B.sum_duplicates()
        return B
    r2, c2, v2 = np.r_[r, 0], np.r_[c, 1], np.r_[v, -0.25]      # a duplicate of (0, 1)
    if fmt == "coo":
        order = np.array([3, 0, 8, 5, 1, 7, 2, 6, 4])
        return CLS[(fmt, kind)]((v2[order], (r2[order], c2[order])), shape=(4, 5))
    major, minor, n = (r2, c2, 4) if fmt == "csr" else (c2, r2, 5)
    order = np.lexsort((-minor, major))          # every group's indices in decreasing order
    indptr = np.r_[0, np.cumsum(np.bincount(major, minlength=n))]
    return CLS[(fmt, kind)]((v2[order], minor[order], indptr), shape=(4, 5))


def _dense(y):
    return np.asarray(y.toarray() if sp.issparse(y) else y)


V5, V4 = np.linspace(0.5, 1.5, 5), np.linspace(-1.0, 1.0, 4)
W45 = np.arange(20.0).reshape(4, 5) / 10.0 - 1.0


# ---- functions as users write them ------------------------------------------------------------------------
def f_abs(A):
    return np.sum(abs(A).toarray() * W45)


def f_max(A):
    return A.max() * 2.0 + A.min()


def f_max0(A):
    return np.sum(_dense(A.max(axis=0)).ravel() * V5)


def f_min1(A):
    return np.sum(_dense(A.min(axis=1)).ravel() * V4)


def f_argmax(A):
    return A.sum() * float(A.argmax()) + float(A.argmin(axis=None))


def f_astype32(A):
    return float(np.sum(A.astype(np.float32).toarray() * W45))


def f_astype(A):
    return np.sum(A.astype(float).toarray() ** 2 * W45)


def f_astype_int(A):
    return A.sum() * float(A.astype(np.int64).sum() + 1)


def f_tocsr(A):
    A = A.tocsr()
    return np.sum((A @ V5) ** 2)


def f_tocsc(A):
    return np.sum(np.sin(A.tocsc().toarray()) * W45)


def f_tocoo(A):
    return np.sum(A.tocoo().T @ V4 * V5)


def f_row(A):
    return np.sum(_dense(A.tocsr()[1]) ** 2) + np.sum(_dense(A.tocsr()[0, :]) * V5)


def f_col(A):
    return np.sum(_dense(A.tocsc()[:, 2]) * np.r_[1.0, 2.0, 3.0, 4.0].reshape(_dense(A.tocsc()[:, 2]).shape))


def f_rows(A):
    B = A.tocsr()[np.array([2, 0, 2])]
    return np.sum(B.toarray() ** 2 * np.arange(1.0, 16.0).reshape(3, 5))


def f_mean(A):
    return A.mean() * 3.0 + np.sum(np.asarray(A.mean(axis=0)).ravel() * V5) + np.sum(
        np.asarray(A.mean(axis=1)).ravel() ** 2)


def f_power(A):
    return np.sum(A.power(3).toarray() * W45)


def f_dot(A):
    return np.sum(np.sin(A.dot(V5)))


def f_transpose(A):
    return np.sum((A.transpose() @ V4) ** 2) + np.sum(A.T.toarray() * W45.T)


def f_reshape(A):
    return np.sum(A.reshape((5, 4)).toarray() ** 2 * W45.reshape(5, 4))


def f_trace(A):
    return A.trace() ** 2 + A.trace()


def f_count(A):
    return A.sum() * A.count_nonzero()


def f_sum(A):
    return np.sum(np.asarray(A.sum(axis=1)).ravel() ** 2) + np.sum(np.asarray(A.sum(axis=0)).ravel() * V5)


def f_multiply(A):
    return np.sum(A.multiply(W45).toarray() ** 2) + np.sum(A.multiply(A).toarray())


def f_diagonal(A):
    return np.sum(A.diagonal() ** 2) + np.sum(A.diagonal(1))


def f_sin(A):
    return np.sum(A.sin().toarray() * W45)


def f_tan(A):
    return np.sum(A.tan().toarray() * W45)


def f_arcsin(A):
    return np.sum(A.arcsin().toarray() * W45)


def f_arctan(A):
    return np.sum(A.arctan().toarray() * W45)


def f_sinh(A):
    return np.sum(A.sinh().toarray() * W45)


def f_tanh(A):
    return np.sum(A.tanh().toarray() * W45)


def f_expm1(A):
    return np.sum(A.expm1().toarray() * W45)


def f_log1p(A):
    return np.sum(A.log1p().toarray() * W45)


def f_deg2rad(A):
    return np.sum(A.deg2rad().toarray() * W45)


def f_rad2deg(A):
    return np.sum(A.rad2deg().toarray() * W45)


def f_arcsinh(A):
    return np.sum(A.arcsinh().toarray() * W45)


def f_arctanh(A):
    return np.sum(A.arctanh().toarray() * W45)


UNARY = {n: globals()["f_" + n] for n in ('sin', 'tan', 'arcsin', 'arctan', 'sinh', 'tanh', 'expm1', 'log1p', 'deg2rad', 'rad2deg', 'arcsinh', 'arctanh')}


def f_sqrt(A):
    return np.sum(abs(A).sqrt().toarray() * W45)


def f_steps(A):
    return A.sum() * (A.floor().sum() + A.ceil().sum() + A.trunc().sum() + A.rint().sum() + A.sign().sum())


FUNCS = [f_abs, f_max, f_max0, f_min1, f_argmax, f_astype32, f_astype, f_astype_int, f_tocsr, f_tocsc, f_tocoo,
         f_row, f_col, f_rows, f_mean, f_power, f_dot, f_transpose, f_reshape, f_trace, f_count, f_sum,
         f_multiply, f_diagonal, f_sqrt, f_steps, *UNARY.values()]
# three of the six classes in the quick run (every format, both kinds); the other three marked slow
_QUICK = {("csr", "array"), ("csc", "matrix"), ("coo", "array")}
FORMATS = [(fmt, kind) if (fmt, kind) in _QUICK else pytest.param(fmt, kind, marks=pytest.mark.slow)
           for fmt in ("csr", "csc", "coo") for kind in ("array", "matrix")]


# step functions (and sqrt|x|, count_nonzero) are not differentiable at an explicit zero: finite
# differences there measure the jump
AT_ZERO = (f_steps, f_sqrt, f_count)
# scipy's A.sum(), A.argmax(), A.count_nonzero(), A.floor() merge a non-canonical matrix's duplicates in
# place: srcad refuses (srcad.InputError naming the fix) rather than pair derivatives with moved entries
# (a non-canonical CSR/CSC merged in place that way is not refused today: the gradient then has the
# merged pattern, see the report of the `sparse` branch; those cases are left out below)
REFUSED = {("coo", False): (f_argmax, f_count, f_astype_int, f_steps)}
MERGED_IN_PLACE = (f_argmax, f_count, f_astype_int, f_steps)


def assert_pattern(g, A):
    assert type(g) is type(A)
    assert g.shape == A.shape and g.nnz == A.nnz
    if A.format == "coo":
        np.testing.assert_array_equal(g.row, A.row)
        np.testing.assert_array_equal(g.col, A.col)
    else:
        np.testing.assert_array_equal(g.indptr, A.indptr)
        np.testing.assert_array_equal(g.indices, A.indices)


@pytest.mark.parametrize("canonical", [True, False], ids=["canonical", "noncanonical"])
@pytest.mark.parametrize("fmt,kind", FORMATS)
@pytest.mark.parametrize("f", FUNCS, ids=lambda f: f.__name__)
def test_reverse_per_stored_entry(f, fmt, kind, canonical):
    zero = f not in AT_ZERO
    A = make(fmt, kind, canonical, zero)
    if fmt != "coo" and not canonical and f in MERGED_IN_PLACE:
        # scipy merges A in place during the call; the gradient has A's pattern as it is after the call
        # (as tests/test_sparse_edge.py checks for A.sum()), its values right there
        g = srcad.grad(f)(A)
        assert_pattern(g, A)
        np.testing.assert_allclose(grad_values(g), numerical_grad(f, [A.copy()], 0), rtol=1e-5, atol=1e-6)
        return
    if f in REFUSED.get((fmt, canonical), ()):
        with pytest.raises(srcad.InputError, match="sorted it in place"):
            srcad.grad(f)(A)
        return
    eps, tol = (1e-3, 1e-3) if f is f_astype32 else (1e-6, 1e-5)
    want = numerical_grad(f, [A.copy()], 0, eps=eps)
    g = srcad.grad(f)(A)
    assert_pattern(g, make(fmt, kind, canonical, zero))
    np.testing.assert_allclose(grad_values(g), want, rtol=tol, atol=tol / 10)


@pytest.mark.parametrize("canonical", [True, False], ids=["canonical", "noncanonical"])
@pytest.mark.parametrize("fmt,kind", [("csr", "array"), ("coo", "matrix"), ("csc", "array")])
@pytest.mark.parametrize("f", FUNCS, ids=lambda f: f.__name__)
def test_forward_along_a_direction(f, fmt, kind, canonical):
    A = make(fmt, kind, canonical, f not in AT_ZERO)
    if f in REFUSED.get((fmt, canonical), ()):
        return
    t = A.copy()
    t.data = np.linspace(-1.0, 1.0, len(A.data))
    eps, tol = (1e-3, 1e-3) if f is f_astype32 else (1e-6, 1e-5)
    hi, lo = A.copy(), A.copy()
    hi.data = A.data + eps * t.data
    lo.data = A.data - eps * t.data
    want = (f(hi) - f(lo)) / (2 * eps)
    y, dy = srcad.jvp(f, (A,), (t,))
    np.testing.assert_allclose(float(y), float(f(make(fmt, kind, canonical, f not in AT_ZERO))), rtol=1e-12)
    np.testing.assert_allclose(float(dy), want, rtol=tol, atol=tol / 10)


SECOND = [f_abs, f_max0, f_astype, f_tocsr, f_tocsc, f_row, f_col, f_rows, f_power, f_reshape, f_transpose,
          UNARY["sin"], UNARY["tanh"], UNARY["arcsin"], UNARY["log1p"], f_sqrt]


@pytest.mark.parametrize("canonical", [True], ids=["canonical"])
@pytest.mark.parametrize("fmt,kind", [("csr", "array"), ("coo", "matrix")])
@pytest.mark.parametrize("f", SECOND, ids=lambda f: f.__name__)
def test_hessian_vector_product(f, fmt, kind, canonical):
    """srcad.hvp (forward over the generated adjoint) against finite differences of srcad's gradient
    (itself checked against finite differences above). Canonical inputs: srcad.hvp first runs f as
    written, and scipy's A.sin() (say) merges a non-canonical A in place there."""
    A = make(fmt, kind, canonical, f not in (f_abs, f_sqrt))
    v = A.copy()
    v.data = np.linspace(-1.0, 1.0, len(A.data))
    eps = 1e-6
    hi, lo = A.copy(), A.copy()
    hi.data = A.data + eps * v.data
    lo.data = A.data - eps * v.data
    want = (grad_values(srcad.grad(f)(hi)) - grad_values(srcad.grad(f)(lo))) / (2 * eps)
    hv = srcad.hvp(f)(A, v)
    np.testing.assert_allclose(grad_values(hv), want, rtol=1e-4, atol=1e-5)


def test_built_inside_the_function():
    """A matrix built from differentiated values inside f, then its methods."""
    idx, ptr = np.array([0, 2, 1, 0, 2]), np.array([0, 2, 3, 5])

    def f(x):
        A = sp.csr_array((np.sin(x), idx, ptr), shape=(3, 3))
        return np.sum(abs(A).toarray() ** 2) + A.max() + np.sum(A[1].toarray()) + abs(A).tocsc().sqrt().sum() \
            + np.sum(A.astype(float).T.toarray() ** 2) + A.expm1().sum()

    x = np.array([0.3, -0.2, 0.5, 0.1, 0.9])
    np.testing.assert_allclose(srcad.grad(f)(x), numerical_grad(f, [x], 0), rtol=1e-5, atol=1e-6)
    t = np.linspace(0.5, 1.0, 5)
    _, dy = srcad.jvp(f, (x,), (t,))
    np.testing.assert_allclose(dy, numerical_grad(f, [x], 0) @ t, rtol=1e-5)


def test_ties_split_evenly_with_implicit_zeros():
    """A.max() is 0, reached by an explicit zero and by the implicit zero: as A.toarray().max()
    under srcad's dense rule, each of the 2 tied elements gets a half (the implicit one is constant)."""
    A = sp.csr_array((np.array([-1.0, 0.0, -2.0]), np.array([0, 1, 0]), np.array([0, 2, 3])), shape=(2, 2))
    g = srcad.grad(lambda A: A.max())(A)
    np.testing.assert_allclose(g.data, [0.0, 0.5, 0.0])
    dense = srcad.grad(lambda D: D.max())(A.toarray())
    np.testing.assert_allclose(g.data, dense[[0, 0, 1], [0, 1, 0]])


def f_step_slices(A):
    return np.sum(A[0:4:2].data ** 2) + np.sum(A[::-1].toarray() * W45) + np.sum(A[1:3, 1:4].toarray() ** 2)


@pytest.mark.parametrize("canonical", [True, False], ids=["canonical", "noncanonical"])
@pytest.mark.parametrize("kind", ["array", "matrix"])
def test_other_subscripts(kind, canonical):
    """Slices with a step, reversed rows, row and column ranges of a CSR (today's `A[0:3:2]` error is gone)."""
    A = make("csr", kind, canonical)
    g = srcad.grad(f_step_slices)(A)
    assert_pattern(g, make("csr", kind, canonical))
    np.testing.assert_allclose(grad_values(g), numerical_grad(f_step_slices, [A.copy()], 0), rtol=1e-5, atol=1e-6)
    t = A.copy()
    t.data = np.linspace(-1.0, 1.0, len(A.data))
    _, dy = srcad.jvp(f_step_slices, (A,), (t,))
    np.testing.assert_allclose(dy, numerical_grad(f_step_slices, [A.copy()], 0) @ t.data, rtol=1e-5)


def row_times(A, v):
    return np.sum(A[2].multiply(v).toarray())


def row_times_2d(A, v):
    return np.sum(A[[2]].multiply(v).toarray())


def test_one_dimensional_row_named_with_a_fix_that_works():
    """A[i] of a sparse array is a 1-D COO, which the entrywise product does not take: the message says
    so (not "COO ... srcad differentiates COO"), and its fix A[[i]] differentiates."""
    A, v = make("csr", "array", True), np.linspace(0.5, 1.5, 5)
    with pytest.raises(srcad.InputError, match=r"1-D scipy sparse array .*A\[\[i\]\]") as info:
        srcad.grad(row_times)(A, v)
    assert "differentiates the CSR, CSC and COO formats" not in str(info.value)
    g = srcad.grad(row_times_2d)(A, v)
    assert_pattern(g, A)
    np.testing.assert_allclose(g.data, numerical_grad(row_times_2d, [A.copy(), v], 0), rtol=1e-5, atol=1e-6)


def rows_cols(A):
    return np.sum(A.getrow(1).toarray() * V5) + np.sum(A.getcol(2).toarray() ** 2)


@pytest.mark.parametrize("canonical", [True, False], ids=["canonical", "noncanonical"])
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_getrow_getcol_of_a_matrix(fmt, canonical):
    """A.getrow(i) / A.getcol(j) (the `_matrix` classes have them)."""
    A = make(fmt, "matrix", canonical)
    g = srcad.grad(rows_cols)(A)
    assert_pattern(g, make(fmt, "matrix", canonical))
    want = numerical_grad(rows_cols, [A.copy()], 0)
    np.testing.assert_allclose(g.data, want, rtol=1e-5, atol=1e-6)
    t = A.copy()
    t.data = np.linspace(-1.0, 1.0, len(A.data))
    _, dy = srcad.jvp(rows_cols, (A,), (t,))
    np.testing.assert_allclose(dy, want @ t.data, rtol=1e-5)


def row_matvec(A, v):
    return np.sum(A[1] @ v)


def test_one_dimensional_row_in_a_product_is_named():
    """`A[i] @ v` with A a sparse array: a 1-D sparse operand, refused by name (was an IndexError)."""
    with pytest.raises(srcad.InputError, match=r"1-D scipy sparse array .*A\[\[i\]\]"):
        srcad.grad(row_matvec)(make("csr", "array", True), V5)
