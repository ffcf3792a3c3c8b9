"""The rest of scipy.sparse: sparse @ sparse, dense @ sparse, A.T, A.multiply(B) of two sparse
matrices, A + B, A * scalar, A.power(p), A.diagonal(), row slices A[i:j], scipy.sparse.diags,
hstack/vstack, A.toarray(). For CSR/CSC/COO and the `_array`/`_matrix` classes: values against
scipy, gradients of every argument against central finite differences over the stored values
(the gradient of a sparse argument with its class and pattern), tangents (srcad.jvp) against
finite differences along a direction, and the structural patterns (an entry that cancels keeps
its derivative)."""
import numpy as np
import pytest
import scipy.sparse as sp

import srcad
from fdcheck import grad_values, numerical_grad
from test_sparse import assert_same_pattern

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")

CLS = {("csr", "array"): sp.csr_array, ("csr", "matrix"): sp.csr_matrix, ("csc", "array"): sp.csc_array,
       ("csc", "matrix"): sp.csc_matrix, ("coo", "array"): sp.coo_array, ("coo", "matrix"): sp.coo_matrix}
KINDS = list(CLS)


def rand(fmt, kind, shape=(4, 4), seed=0, zero=True):
    """A random sparse matrix with an explicit zero (when `zero`), entries in scipy's order."""
    rng = np.random.default_rng(seed)
    mask = rng.random(shape) < 0.5
    mask[0, 0] = mask[1, 1] = True
    r, c = np.nonzero(mask)
    v = rng.normal(size=len(r))
    if zero:
        v[len(v) // 2] = 0.0
    A = sp.coo_array((v, (r, c)), shape=shape)
    return CLS[(fmt, kind)](A.asformat(fmt))


ONES4 = np.ones(4)


# ---- user functions, written as people write them ---------------------------------------------------------
def spsp(A, B):
    return np.sum(np.sin((A @ B).toarray()))


def spsp_data(A, B):
    return np.sum((A @ B).data ** 2)


def dense_sp(X, A):
    return np.sum(np.sin(X @ A))


def transposed(A, X):
    return np.sum(np.sin(A.T @ X))


def t_multiply(A, B):
    return np.sum(A.T.multiply(B).data ** 2)


def mul_ss(A, B):
    return np.sum(A.multiply(B).toarray() ** 2)


def mul_self(A, s):
    return np.sum(A.multiply(A) @ ONES4) * s


def added(A, B):
    return np.sum(np.cos((A + B) @ ONES4))


def subtracted(A, B):
    return np.sum(np.cos((A - B) @ ONES4))


def sparse_sum(A, B):
    return np.sum(np.cos(srcad.sparse.add(A, B) @ ONES4)) + np.sum(srcad.sparse.subtract(A, B).data ** 2)


def scaled(A, s):
    return np.sum(((A * s) @ ONES4) ** 2)


def scaled_left(A, s):
    return np.sum(((s * A) @ ONES4) ** 2)


def divided(A, s):
    return np.sum(((A / s) @ ONES4) ** 2)


def cubed(A, s):
    return np.sum(A.power(3).data) * s


def squared(A, s):
    return np.sum(np.sin(A.power(2) @ ONES4)) * s


def diagonal(A, s):
    return np.sum(np.sin(A.diagonal())) * s + np.sum(A.diagonal(1) ** 2)


def rows(A, s):
    return np.sum(np.sin(A[1:3] @ ONES4)) * s


def rows_data(A, s):
    return np.sum(A[1:3].data ** 2) * s


def diag_matrix(v, w):
    return np.sum(np.sin(sp.diags(v) @ w))


def diag_array(v, w):
    return np.sum(np.sin(sp.diags_array(v, offsets=1, shape=(5, 5)) @ w))


def diag_list(v, w):
    return np.sum(np.sin(sp.diags([v[1:], v, v[1:]], [-1, 0, 1]) @ w))


def hstacked(A, B):
    return np.sum(np.sin(sp.hstack([A, B]) @ np.ones(8)))


def vstacked(A, B):
    return np.sum(np.sin(sp.vstack([A, B]) @ ONES4))


def vstacked_data(A, B):
    return np.sum(sp.vstack([A, B]).data ** 3)


def dense_of(A, s):
    return np.sum(np.tanh(A.toarray()) * s) + np.sum(np.asarray(A.todense()) ** 2)


TWO_SPARSE = [spsp, spsp_data, t_multiply, mul_ss, added, subtracted, sparse_sum, hstacked, vstacked,
              vstacked_data]
SPARSE_SCALAR = [mul_self, scaled, scaled_left, divided, cubed, squared, diagonal, rows, rows_data, dense_of]


def args_for(f, fmt, kind):
    if f in (added, subtracted):     # scipy's + drops an explicit zero: see test_scipy_sum_that_drops...
        return rand(fmt, kind, seed=1, zero=False), rand(fmt, kind, seed=2, zero=False)
    if f in TWO_SPARSE:
        return rand(fmt, kind, seed=1), rand(fmt, kind, seed=2)
    if f in SPARSE_SCALAR:
        return rand(fmt, kind, seed=3), 1.7
    if f is dense_sp:
        return np.random.default_rng(4).normal(size=(3, 4)), rand(fmt, kind, seed=5)
    if f is transposed:
        return rand(fmt, kind, seed=6), np.random.default_rng(7).normal(size=(4, 2))
    v = np.random.default_rng(8).normal(size=5 if f is not diag_array else 4)
    return v, np.random.default_rng(9).normal(size=(5, 2))


def check_grads(f, args):
    wrt = tuple(range(len(args)))
    grads = srcad.grad(f, wrt=wrt)(*args)
    for k, (a, g) in enumerate(zip(args, grads)):
        want = numerical_grad(f, args, k)
        np.testing.assert_allclose(grad_values(g), want, rtol=1e-5, atol=1e-6, err_msg=f"{f.__name__} arg {k}")
        if sp.issparse(a):
            assert_same_pattern(g, a)
        elif isinstance(a, float):
            assert isinstance(g, float)
        else:
            assert g.shape == np.shape(a)


def _coo_indexable(kind):
    """Can this SciPy index a COO of this kind (coo_array since SciPy 1.17; coo_matrix not)?"""
    try:
        (sp.coo_array if kind == "array" else sp.coo_matrix)(np.eye(2))[0:1]
    except TypeError:
        return False
    return True


def slicable(f, fmt, kind):
    return not (f in (rows, rows_data) and fmt == "coo" and not _coo_indexable(kind))    # scipy: not subscriptable


@pytest.mark.parametrize("fmt, kind", KINDS)
@pytest.mark.parametrize("f", TWO_SPARSE + SPARSE_SCALAR + [dense_sp, transposed])
def test_gradients(f, fmt, kind):
    if not slicable(f, fmt, kind):
        pytest.skip("this scipy's COO class has no indexing (f cannot run)")
    args = args_for(f, fmt, kind)
    value = srcad.value_and_grad(f)(*args)[0]
    assert np.isclose(value, f(*[a.copy() if sp.issparse(a) else a for a in args]))
    check_grads(f, args)


@pytest.mark.parametrize("f", [diag_matrix, diag_array, diag_list])
def test_diags(f):
    args = args_for(f, None, None)
    assert np.isclose(srcad.value_and_grad(f)(*args)[0], f(*args))
    check_grads(f, args)


# ---- values and classes as scipy's ---------------------------------------------------------------------
def sp_results(A, B):
    return A @ B, A.multiply(B), sp.hstack([A, B]), sp.vstack([A, B]), A.power(2), A[1:3]


@pytest.mark.parametrize("fmt, kind", [k for k in KINDS if k[0] != "coo" or _coo_indexable(k[1])])
def test_results_have_scipys_class_and_values(fmt, kind):
    from srcad.runtime import sparse as ss
    A, B = rand(fmt, kind, seed=1), rand(fmt, kind, seed=2)
    ours = (ss.spgemm(A, B), ss.multiply_ss(A, B), ss.stack([A, B], "h"), ss.stack([A, B], "v"),
            ss.power(A, 2), A[1:3])
    for got, want in zip(ours, sp_results(A.copy(), B.copy())):
        assert type(got) is type(want)
        np.testing.assert_allclose(got.toarray(), want.toarray())
    d = ss.diags(np.arange(3.0), 0, None, None, None, "array")
    assert isinstance(d, sp.csr_array)
    np.testing.assert_array_equal(d.toarray(), sp.diags_array(np.arange(3.0)).toarray())


def test_cancellation_keeps_the_entry_and_its_derivative():
    # (A @ B)[0, 0] = 1*1 + 1*(-1) = 0: scipy drops it, srcad keeps it (an explicit zero)
    A = sp.csr_array(np.array([[1.0, 1.0], [0.0, 2.0]]))
    B = sp.csr_array(np.array([[1.0, 0.0], [-1.0, 3.0]]))
    C = srcad.sparse.matmul(A, B)
    assert C.nnz == 4 and C.data[0] == 0.0 and (A @ B).nnz == 3
    X = np.array([[0.5, -1.0], [2.0, 1.5]])

    def f(A, B):
        return np.sum(np.sin((A @ B) @ X))
    gA, gB = srcad.grad(f, wrt=(0, 1))(A, B)
    np.testing.assert_allclose(gA.data, numerical_grad(f, (A, B), 0), rtol=1e-6)
    np.testing.assert_allclose(gB.data, numerical_grad(f, (A, B), 1), rtol=1e-6)
    # the same through the elementwise product: an explicit zero of A still carries a derivative
    Z = sp.csr_array((np.array([0.0, 2.0]), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2))

    def h(Z, B):
        return np.sum(Z.multiply(B) @ np.ones(2))
    np.testing.assert_allclose(srcad.grad(h)(Z, B).data, numerical_grad(h, (Z, B)), rtol=1e-6)


def test_scipy_sum_that_drops_an_entry_is_an_error_and_srcad_sum_is_exact():
    A, B = rand("csr", "array", seed=1), rand("csr", "array", seed=2)      # A holds an explicit zero
    with pytest.raises(srcad.InputError, match=r"dropped stored entries .* srcad.sparse.add\(A, B\)"):
        srcad.grad(added)(A, B)
    C = B.copy()
    C.data = -C.data                # every shared entry cancels in A + C
    S = srcad.sparse.add(B, C)
    assert S.nnz == B.nnz and np.all(S.data == 0.0)
    for f in (sparse_sum,):
        check_grads(f, (A, C))


def test_sparse_at_sparse_of_coo_times_csr():
    vals, r, c = np.array([1.0, 2.0, -0.5]), np.array([0, 1, 2]), np.array([1, 2, 0])
    X = rand("csr", "array", seed=3, shape=(3, 3))

    def f(vals, X):
        return np.sum((sp.coo_array((vals, (r, c)), shape=(3, 3)) @ X).toarray() ** 2)
    gv, gX = srcad.grad(f, wrt=(0, 1))(vals, X)
    np.testing.assert_allclose(gv, numerical_grad(f, (vals, X), 0), rtol=1e-6)
    np.testing.assert_allclose(gX.data, numerical_grad(f, (vals, X), 1), rtol=1e-6)
    assert_same_pattern(gX, X)


def dup_power_multiply(A, B):
    return np.sum(A.power(2).data) + np.sum(A.multiply(B).data ** 2)


def dup_product_diagonal(A, B):
    return np.sum(np.sin((A @ B).toarray())) + np.sum(A.diagonal(1) ** 2)


def dup_stack(A, B):
    return np.sum(sp.vstack([A, B]) @ np.ones(3)) + np.sum(sp.vstack([A, B]).data ** 2)


def test_duplicates_through_the_new_operations():
    A = sp.coo_array((np.array([1.0, 2.0, -1.0, 0.5]), (np.array([0, 0, 1, 2]), np.array([1, 1, 0, 2]))),
                     shape=(3, 3))
    B = rand("csr", "array", seed=4, shape=(3, 3))
    for f in (dup_power_multiply, dup_product_diagonal, dup_stack):
        g = srcad.grad(f)(A, B)
        np.testing.assert_allclose(g.data, numerical_grad(f, (A, B)), rtol=1e-5, atol=1e-7)
        assert_same_pattern(g, A)
        assert np.isclose(srcad.value_and_grad(f)(A, B)[0], f(A.copy(), B))
    assert A.nnz == 4           # A.power left the input as it was (scipy's merges it in place)


def test_row_slices_and_stacks_of_a_csr_with_duplicates():
    A = sp.csr_array((np.array([1.0, 2.0, 2.5, -1.5, 0.25, 4.0]), np.array([1, 1, 0, 3, 0, 2]),
                      np.array([0, 3, 3, 6, 6])), shape=(4, 4))          # a duplicate, unsorted columns
    for f in (rows, rows_data):
        g = srcad.grad(f)(A, 1.3)
        assert_same_pattern(g, A)
        np.testing.assert_allclose(g.data, numerical_grad(f, (A, 1.3)), rtol=1e-6, atol=1e-8)
    B = rand("csr", "array", seed=5)
    g = srcad.grad(vstacked_data)(A, B)
    np.testing.assert_allclose(g.data, numerical_grad(vstacked_data, (A, B)), rtol=1e-6, atol=1e-8)


def test_step_slice_differentiates():
    """A[::2] (once refused: row slices of step 1 only) goes through srcad/runtime/sparse/methods.py."""
    def f(A):
        return np.sum(np.sin(A[::2] @ np.ones(4)))
    A = rand("csr", "array")
    g = srcad.grad(f)(A)
    assert_same_pattern(g, A)
    np.testing.assert_allclose(g.data, numerical_grad(f, (A,)), rtol=1e-6, atol=1e-8)


# ---- forward mode ------------------------------------------------------------------------------------
def direction(x, rng):
    if sp.issparse(x):
        d = x.copy()
        d.data = rng.normal(size=x.data.shape)
        return d
    return float(rng.normal()) if isinstance(x, float) else rng.normal(size=np.shape(x))


def moved(x, v, t):
    if sp.issparse(x):
        y = x.copy()
        y.data = x.data + t * v.data
        return y
    return x + t * v


@pytest.mark.parametrize("fmt, kind", [("csr", "array"), ("csc", "matrix"), ("coo", "array")])
@pytest.mark.parametrize("f", [spsp, spsp_data, mul_ss, t_multiply, cubed, squared, diagonal, rows, rows_data,
                               hstacked, vstacked_data, dense_of, dense_sp, added, sparse_sum, scaled, divided,
                               transposed])
def test_tangents(f, fmt, kind):
    if not slicable(f, fmt, kind) or (f in (rows, rows_data) and fmt == "coo"):
        pytest.skip("scipy's COO has no row slicing of its own order")
    args = args_for(f, fmt, kind)
    rng = np.random.default_rng(11)
    dirs = tuple(direction(a, rng) for a in args)
    y, y_dot = srcad.jvp(f, args, dirs)
    assert np.isclose(y, f(*args))
    eps = 1e-6
    want = (f(*[moved(a, v, eps) for a, v in zip(args, dirs)])
            - f(*[moved(a, v, -eps) for a, v in zip(args, dirs)])) / (2 * eps)
    np.testing.assert_allclose(y_dot, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [diag_matrix, diag_list])
def test_tangents_of_diags(f):
    args = args_for(f, None, None)
    rng = np.random.default_rng(12)
    dirs = tuple(direction(a, rng) for a in args)
    _, y_dot = srcad.jvp(f, args, dirs)
    eps = 1e-6
    want = (f(*[a + eps * v for a, v in zip(args, dirs)]) - f(*[a - eps * v for a, v in zip(args, dirs)])) / (2 * eps)
    np.testing.assert_allclose(y_dot, want, rtol=1e-5, atol=1e-6)


# ---- second order: forward mode over the generated adjoint ---------------------------------------------------
@pytest.mark.parametrize("f", [spsp, mul_ss, hstacked, dense_of, diagonal, rows, sparse_sum])
def test_hvp_through_the_new_operations(f):
    args = args_for(f, "csr", "array")
    rng = np.random.default_rng(13)
    v = direction(args[0], rng)
    hv = srcad.hvp(f, wrt=0)(*args, v)
    eps = 1e-6
    gp = srcad.grad(f)(moved(args[0], v, eps), *args[1:])
    gm = srcad.grad(f)(moved(args[0], v, -eps), *args[1:])
    want = (gp.data - gm.data) / (2 * eps)
    assert_same_pattern(hv, args[0])
    np.testing.assert_allclose(hv.data, want, rtol=1e-5, atol=1e-6)
