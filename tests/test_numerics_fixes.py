"""Numerical rules that were silently wrong or crashed (issue 28, "Found wrong"), each checked
against float64 central finite differences of what NumPy/SciPy compute (tests/fdcheck.py,
tests/fd_second.py): reverse mode, forward mode, and second order where the rule has one."""
import numpy as np
import pytest
import scipy.linalg

import srcad
from fd_second import numerical_hessian
from fdcheck import numerical_grad

RNG = np.random.default_rng(28)
A2 = np.array([[2.0, 1.0], [0.5, 3.0]])                       # not symmetric: NumPy reads one triangle
_B = RNG.normal(size=(3, 3))
B3 = _B @ _B.T + 3.0 * np.eye(3)
B3[0, 2] += 0.7                                               # positive definite lower part, upper differs
S3 = RNG.normal(size=(3, 2, 2)) + 2.0 * np.eye(2)             # a stack of three 2x2 matrices
M24 = RNG.normal(size=(2, 4))
T223 = RNG.normal(size=(2, 2, 3))
RHS = np.arange(6.0).reshape(3, 2, 1) + 1.0


def check(f, x, second=True, atol=1e-5):
    """srcad's grad, jvp (along a random direction) and hessian of f at x against differences."""
    want = numerical_grad(f, (x,)).reshape(np.shape(x))
    got = srcad.grad(f)(x)
    np.testing.assert_allclose(np.asarray(got, dtype=float), want, rtol=1e-5, atol=atol)
    d = RNG.normal(size=np.shape(x)) if np.ndim(x) else 0.7
    _, t = srcad.jvp(f, (x,), (d,))
    np.testing.assert_allclose(float(t), float(np.sum(want * d)), rtol=1e-5, atol=atol)
    if second:
        H = srcad.hessian(f)(x)
        np.testing.assert_allclose(H, numerical_hessian(f, (x,)), rtol=1e-3, atol=2e-4)


# ---- linear algebra that reads one triangle ---------------------------------------------------------
def eigh_w(a):
    return np.sum(np.linalg.eigh(a)[0] ** 2)


def eigh_w_upper(a):
    return np.sum(np.linalg.eigh(a, UPLO="U")[0] ** 3)


def eigh_v(a):
    return np.sum(np.linalg.eigh(a)[1][:, 0] ** 2 * np.arange(3.0)) + np.sum(np.linalg.eigh(a)[0] ** 2)


def eigh_v_upper(a):
    return np.sum(np.linalg.eigh(a, "U")[1][:, 1] ** 3)


def eigvalsh_lower(a):
    return np.sum(np.linalg.eigvalsh(a) ** 3)


def eigvalsh_upper(a):
    return np.sum(np.linalg.eigvalsh(a, UPLO="U") ** 3)


def cholesky_lower(a):
    return np.sum(np.linalg.cholesky(a) ** 3)


def cholesky_upper(a):
    return np.sum(np.linalg.cholesky(a, upper=True) ** 3)


@pytest.mark.parametrize("f, x", [(eigh_w, A2), (eigh_w, B3), (eigh_w_upper, B3), (eigh_v, B3), (eigh_v_upper, B3),
                                  (eigvalsh_lower, B3), (eigvalsh_upper, B3), (cholesky_lower, B3),
                                  (cholesky_upper, B3.T)])
def test_one_triangle(f, x):
    check(f, x)


def test_eigh_gradient_has_zeros_where_numpy_does_not_read():
    g = srcad.grad(eigh_w)(A2)
    assert g[0, 1] == 0.0
    gu = srcad.grad(eigh_w_upper)(B3)
    assert np.all(np.tril(gu, -1) == 0.0)


# ---- stacks of matrices -------------------------------------------------------------------------------
def det_stack(a):
    return np.sum(np.linalg.det(a) ** 2)


def scipy_det_stack(a):
    return np.sum(scipy.linalg.det(a) ** 2)


def slogdet_stack(a):
    return np.sum(np.linalg.slogdet(a)[1])


def inv_stack(a):
    return np.sum(np.linalg.inv(a) ** 2)


def solve_stack_vector(a):
    return np.sum(np.linalg.solve(a, np.array([1.0, 2.0])) ** 2)


def solve_stack_matrix(a):
    return np.sum(np.linalg.solve(a, RHS) ** 2)


def solve_broadcast_a(a):
    return np.sum(np.linalg.solve(a, RHS) ** 3)


def solve_b_vector(b):
    return np.sum(np.linalg.solve(S3, b) ** 3)


def solve_b_matrix(b):
    return np.sum(np.linalg.solve(S3, b) ** 2)


@pytest.mark.parametrize("f, x", [(det_stack, S3), (scipy_det_stack, S3), (slogdet_stack, S3), (inv_stack, S3),
                                  (solve_stack_vector, S3), (solve_stack_matrix, S3), (solve_broadcast_a, A2),
                                  (solve_b_vector, np.array([1.0, 2.0])), (solve_b_matrix, np.array([[1.0], [2.0]]))])
def test_stacks(f, x):
    check(f, x)


# ---- np.dot is not matmul for >= 3-D operands ----------------------------------------------------------
def dot3_vector(a):
    return np.sum(np.dot(a, np.array([1.0, -2.0])) ** 2)


def dot3_matrix(a):
    return np.sum(np.dot(a, M24) ** 2)


def dot3_matrix_y(b):
    return np.sum(np.dot(S3, b) ** 2)


def dot3_3(a):
    return np.sum(np.dot(a, T223) ** 2)


def dot3_3_y(b):
    return np.sum(np.dot(S3, b) ** 2)


def dot2_3_y(b):
    return np.sum(np.dot(M24.T, b) ** 2)


def dot_method(a):
    return np.sum(a.dot(T223) ** 2)


def dot_self(a):
    return np.sum(np.dot(a, a) ** 2)


def dot_scalar_left(a):
    return np.sum(np.dot(a, M24) ** 2)


def dot_scalar_right(a):
    return np.sum(np.dot(a, 2.0) ** 2)


def dot_scalar_const(a):
    return np.sum(np.dot(2.0, a) ** 2)


@pytest.mark.parametrize("f, x", [(dot3_vector, S3), (dot3_matrix, S3), (dot3_matrix_y, M24), (dot3_3, S3),
                                  (dot3_3_y, T223), (dot2_3_y, T223), (dot_method, S3), (dot_self, S3),
                                  (dot_scalar_left, 1.3), (dot_scalar_right, S3), (dot_scalar_const, S3)])
def test_dot(f, x):
    check(f, x)


# ---- square roots at zero: the subgradient 0 (autograd, PyTorch), not NaN ------------------------------
def std_all(x):
    return np.std(x)


def std_rows(x):
    return np.sum(np.std(x, axis=1) * np.array([1.0, 2.0]))


def norm2(x):
    return np.linalg.norm(x)


def norm_rows(x):
    return np.sum(np.linalg.norm(x, axis=1) * np.array([1.0, 2.0]))


def norm3(x):
    return np.linalg.norm(x, ord=3)


def fro(x):
    return np.linalg.norm(x, "fro")


@pytest.mark.parametrize("f, x, want", [
    (std_all, np.array([1.0]), np.array([0.0])),
    (std_all, np.array([2.0, 2.0, 2.0]), np.zeros(3)),
    (std_rows, np.array([[1.0, 1.0], [1.0, 3.0]]), np.array([[0.0, 0.0], [-1.0, 1.0]])),
    (norm2, np.zeros(3), np.zeros(3)),
    (norm_rows, np.array([[0.0, 0.0], [3.0, 4.0]]), np.array([[0.0, 0.0], [1.2, 1.6]])),
    (norm3, np.zeros(2), np.zeros(2)),
    (fro, np.zeros((2, 2)), np.zeros((2, 2))),
])
def test_sqrt_at_zero_takes_subgradient_zero(f, x, want):
    np.testing.assert_allclose(srcad.grad(f)(x), want, atol=1e-12)
    d = np.ones_like(x)
    _, t = srcad.jvp(f, (x,), (d,))
    assert np.isfinite(t) and abs(float(t) - float(np.sum(want * d))) < 1e-12
    H = srcad.hessian(f)(x)
    assert np.all(np.isfinite(H))


def test_std_one_number_matches_differences():
    check(std_all, np.array([1.0]), second=False)
    check(std_rows, np.array([[1.0, 1.5], [1.0, 3.0]]))
    check(norm_rows, np.array([[0.5, -1.0], [3.0, 4.0]]))


# ---- second order of a vector-valued f, misshaped directions and cotangents: named errors ---------------
def square(x):
    return x ** 2


def cube_sum(x):
    return np.sum(x ** 3)


def test_hessian_of_vector_output_is_refused():
    x = np.array([0.3, 1.2])
    with pytest.raises(srcad.NonScalarOutputError, match=r"jacobian\(srcad.jacobian\(square\)\)"):
        srcad.hessian(square)(x)
    with pytest.raises(srcad.NonScalarOutputError, match="hvp"):
        srcad.hvp(square)(x, np.ones(2))


def test_misshaped_hvp_direction_and_vjp_cotangent():
    x = np.array([0.3, 1.2])
    with pytest.raises(srcad.InputError, match=r"direction v .* shape \(3,\)"):
        srcad.hvp(cube_sum)(x, np.ones(3))
    with pytest.raises(srcad.InputError, match=r"direction v .* shape \(1,\)"):
        srcad.hvp(cube_sum)(x, np.ones(1))          # would broadcast
    np.testing.assert_allclose(srcad.hvp(cube_sum)(x, np.array([1.0, -1.0])), 6.0 * x * np.array([1.0, -1.0]))
    y, pb = srcad.vjp(square, x)
    with pytest.raises(srcad.InputError, match=r"cotangent .* shape \(3,\)"):
        pb(np.ones(3))
    with pytest.raises(srcad.InputError, match=r"cotangent .* shape \(\)"):
        pb(1.0)                                     # would broadcast: the gradient of sum(f)
    np.testing.assert_allclose(pb(np.array([1.0, 2.0]))[0], 2.0 * x * np.array([1.0, 2.0]))


# ---- custom rules: what they return is checked ----------------------------------------------------------
def sin_bare(x):
    return np.sin(x)


def sin_count(x):
    return np.sin(x)


def sin_shape(x):
    return np.sin(x)


def sin_good(x):
    return np.sin(x)


def sin_jvp_bad(x):
    return np.sin(x)


srcad.register_vjp(sin_bare, lambda x: (np.sin(x), lambda g: g * np.cos(x)))            # a bare array
srcad.register_vjp(sin_count, lambda x: (np.sin(x), lambda g: (g * np.cos(x), None)))   # two for one argument
srcad.register_vjp(sin_shape, lambda x: (np.sin(x), lambda g: (np.sum(g * np.cos(x), keepdims=True),)))
srcad.register_vjp(sin_good, lambda x: (np.sin(x), lambda g: (g * np.cos(x),)))
srcad.register_jvp(sin_jvp_bad, lambda p, t: (np.sin(p[0]), np.sum(t[0] * np.cos(p[0]))))   # summed tangent


@srcad.custom_vjp
def csin(x):
    return np.sin(x)


csin.defvjp(lambda x: (np.sin(x), x), lambda x, g: g * np.cos(x))      # bwd returns a bare array


@srcad.custom_vjp
def csin_ok(x):
    return np.sin(x)


csin_ok.defvjp(lambda x: (np.sin(x), x), lambda x, g: (g * np.cos(x),))


@srcad.custom_jvp
def csin_jvp(x):
    return np.sin(x)


csin_jvp.defjvp(lambda p, t: (np.sin(p[0]), t[0][:1] * np.cos(p[0][:1])))       # wrong shape


def use(fn):
    return lambda x: np.sum(fn(x) * np.array([1.0, 2.0]))


X2 = np.array([0.3, 1.2])


@pytest.mark.parametrize("fn, pattern", [
    (sin_bare, r"pullback .* `sin_bare` returned ndarray of shape \(2,\); expected a tuple of 1 cotangent"),
    (sin_count, r"returned 2 cotangents for a call with 1 positional argument"),
    (sin_shape, r"cotangent of argument 0 of shape \(1,\), but it stands for ndarray of shape \(2,\)"),
])
def test_bad_reverse_rules_raise(fn, pattern):
    with pytest.raises(srcad.RuleError, match=pattern) as info:
        srcad.grad(use(fn))(X2)
    assert "test_numerics_fixes.py" in str(info.value)        # placed on the user's line


@pytest.mark.parametrize("fn", [sin_jvp_bad, csin_jvp])
def test_bad_forward_rules_raise(fn):
    with pytest.raises(srcad.RuleError, match=r"output's tangent of shape"):
        srcad.jvp(use(fn), (X2,), (np.ones(2),))


@pytest.mark.parametrize("fn", [sin_good, csin_ok])
def test_good_custom_rules_still_work(fn):
    f = use(fn)
    np.testing.assert_allclose(srcad.grad(f)(X2), numerical_grad(f, (X2,)), rtol=1e-6)


def test_custom_vjp_checked_rule_second_order():
    f = use(csin_ok)
    np.testing.assert_allclose(srcad.hessian(f)(X2), numerical_hessian(f, (X2,)), rtol=1e-3, atol=2e-4)


# ---- accumulate: every gradient goes somewhere, of its accumulator's shape --------------------------------
def test_accumulate_refuses_longer_and_misshaped_gradients():
    acc = (np.zeros(2), np.zeros(3))
    with pytest.raises(srcad.InputError, match="a tuple of 2 and the gradient a tuple of 3"):
        srcad.accumulate(acc, (np.ones(2), np.ones(3), np.ones(4)))
    with pytest.raises(srcad.InputError, match="tuple of 2 and the gradient a tuple of 1"):
        srcad.accumulate(acc, (np.ones(2),))
    with pytest.raises(srcad.InputError, match=r"shape \(\), the accumulator shape \(2,\)"):
        srcad.accumulate(np.zeros(2), 1.5)                 # would be added to every entry
    with pytest.raises(srcad.InputError, match=r"shape \(3,\)"):
        srcad.accumulate(np.zeros(2), np.ones(3))
    out = srcad.accumulate(acc, (np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])))
    assert out is acc
    np.testing.assert_array_equal(acc[0], [1.0, 2.0])
    np.testing.assert_array_equal(acc[1], [3.0, 4.0, 5.0])


# ---- sparse: entries a CSR/CSC stores twice keep one derivative each through `A * y`, `A / y` -------------
import scipy.sparse as sp  # noqa: E402

from fdcheck import grad_values  # noqa: E402

V3 = np.array([1.0, 2.0, 3.0])
Y3 = np.array([1.5, 2.0, 0.5])


def _dup(kind):
    """A 3x3 matrix storing (0, 0) twice."""
    data, indices, indptr = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 0, 2, 1]), np.array([0, 2, 3, 4])
    return (sp.csr_array if kind == "csr" else sp.csc_array)((data, indices, indptr), shape=(3, 3))


def sp_div_vec(A, y):
    return np.sum((A / y) @ V3)


def sp_mul_vec(A, y):
    return np.sum((A * y) @ V3)


def sp_div_col(A, y):
    return np.sum((A / y[:, None]) @ V3)


def sp_div_data(A, y):
    return np.sum((A / y).data * np.arange(4.0))


def sp_mul_sum(A, y):
    return (A * y).sum() + np.sum((A * y) @ V3)


@pytest.mark.parametrize("kind", ["csr", "csc"])
@pytest.mark.parametrize("f", [sp_div_vec, sp_mul_vec, sp_div_col, sp_div_data, sp_mul_sum])
def test_sparse_duplicates_through_dense_scaling(kind, f):
    A = _dup(kind)
    for wrt in (0, 1):
        g = srcad.grad(f, wrt=wrt)(A, Y3)
        np.testing.assert_allclose(grad_values(g), numerical_grad(f, (A, Y3), wrt), rtol=1e-6, atol=1e-6)
    d = A.copy()
    d.data = np.array([1.0, -0.5, 0.3, 2.0])
    _, t = srcad.jvp(f, (A, Y3), (d, None))
    np.testing.assert_allclose(t, np.sum(numerical_grad(f, (A, Y3), 0) * d.data), rtol=1e-6, atol=1e-6)


# ---- sparse matrices built inside f that scipy sorts or merges in place ------------------------------------
_IDX = np.array([2, 0, 0, 1, 1])          # row 0 stores columns 2, 0, 0 (unsorted, a duplicate); row 1: 1, 1
_PTR = np.array([0, 3, 5])
_W = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
_D = np.array([[1.0, -2.0, 0.5], [3.0, 0.7, -1.0]])
_R, _C = np.array([0, 0, 1, 1, 1]), np.array([2, 0, 1, 1, 0])


def _build(v):
    return sp.csr_array((v, _IDX.copy(), _PTR.copy()), shape=(2, 3))


def built_sum(v):
    A = _build(v)
    t = A.sum()                                       # scipy merges A's duplicates in place here
    return t + np.sum(A.data * _W[:len(A.data)] ** 2)


def built_sum_axis(v):
    A = _build(v)
    t = A.sum(axis=1)
    return np.sum(t * np.array([1.0, 2.0])) + np.sum(A.data * _W[:len(A.data)] ** 2)


def built_power(v):
    A = sp.csr_array((v, _IDX.copy(), _PTR.copy()), shape=(2, 3))
    B = A.power(2)                                    # and here
    return np.sum(B.data * _W[:len(B.data)]) + np.sum(A.data * _W[:len(A.data)] ** 2) + B.sum()


def built_power_matvec(v):
    A = sp.csr_array((v, _IDX.copy(), _PTR.copy()), shape=(2, 3))
    B = A.power(3)
    return np.sum(A @ np.array([1.0, 2.0, 3.0]) * np.array([1.0, -1.0])) + np.sum(A.data * _W[:len(A.data)]) + B.sum()


def built_multiply(v):
    A = _build(v)
    B = A.multiply(_D)
    return np.sum(B.data * _W[:len(B.data)]) + np.sum(B @ np.array([1.0, 2.0, 3.0])) + np.sum(A.data * _W[:len(A.data)])


def built_coo_sum(v):
    A = sp.coo_array((v, (_R.copy(), _C.copy())), shape=(2, 3))
    t = A.sum()
    return t * 2.0 + np.sum(A.data * _W[:len(A.data)] ** 2)


def built_coo_power(v):
    A = sp.coo_array((v, (_R.copy(), _C.copy())), shape=(2, 3))
    B = A.power(2)
    return B.sum() + np.sum(A.data * _W[:len(A.data)] ** 2)


def built_read_before_merge(v):
    A = _build(v)
    d = A.data * 1.0                                  # the five entries, before scipy merges them
    t = A.sum()
    return t + np.sum(d * _W)


V5 = np.array([0.5, -1.2, 0.8, 1.5, 0.3])


@pytest.mark.parametrize("f", [built_sum, built_sum_axis, built_power, built_power_matvec, built_multiply,
                               built_coo_sum, built_coo_power])
def test_sparse_built_inside_and_merged_in_place(f):
    want = numerical_grad(f, (V5,))
    np.testing.assert_allclose(srcad.grad(f)(V5), want, rtol=1e-6, atol=1e-6)
    d = np.array([1.0, 0.5, -0.3, 0.2, 0.9])
    _, t = srcad.jvp(f, (V5,), (d,))
    np.testing.assert_allclose(t, np.sum(want * d), rtol=1e-6, atol=1e-6)


def test_sparse_read_before_an_in_place_merge_is_refused():
    with pytest.raises(srcad.InputError, match=r"\.sum_duplicates\(\)"):
        srcad.grad(built_read_before_merge)(V5)
    d = np.array([1.0, 0.5, -0.3, 0.2, 0.9])       # forward mode follows it
    _, t = srcad.jvp(built_read_before_merge, (V5,), (d,))
    np.testing.assert_allclose(t, np.sum(numerical_grad(built_read_before_merge, (V5,)) * d), rtol=1e-6, atol=1e-6)


# ---- a zero derivative (0.0) reaching a shape operation: a branch not taken ---------------------------------
_SHAPE_OPS = {
    "swapaxes": "np.swapaxes(z, 0, 1)", "flip": "np.flip(z, 0)", "fliplr": "np.fliplr(z)", "flipud": "np.flipud(z)",
    "rot90": "np.rot90(z)", "roll": "np.roll(z, 1)", "moveaxis": "np.moveaxis(z, 0, 1)", "tril": "np.tril(z)",
    "triu": "np.triu(z)", "transpose": "np.transpose(z)", "trace": "np.trace(z)", "einsum": "np.einsum('ij->ji', z)",
    "solve": "np.linalg.solve(z + 3.0 * np.eye(2), np.ones(2))", "take": "np.take(z, [1, 0], axis=0)",
    "tile": "np.tile(z, 2)", "repeat": "np.repeat(z, 2)", "diagonal": "np.diagonal(z)", "cumsum": "np.cumsum(z, axis=0)",
    "diff": "np.diff(z, axis=0)", "broadcast_to": "np.broadcast_to(z, (3, 2, 2))", "det": "np.linalg.det(z + 3.0 * np.eye(2))",
    "solve_triangular": "scipy.linalg.solve_triangular(np.triu(z) + 3.0 * np.eye(2), np.ones(2))",
    "dot3": "np.dot(z, np.ones((2, 2, 2)))", "eigh": "np.linalg.eigh(z + z.T)[0]",
}


@pytest.fixture(scope="module")
def zero_module(tmp_path_factory):
    import importlib
    import sys
    src = ["import numpy as np", "import scipy.linalg", ""]
    for k, e in _SHAPE_OPS.items():
        src += [f"def rev_{k}(x, flag):", "    z = x * 2.0", f"    w = {e}", "    if flag:",
                "        out = np.sum(w ** 2)", "    else:", "        out = np.sum(x ** 2)", "    return out", ""]
    d = tmp_path_factory.mktemp("zeros")
    (d / "numerics_zero_cases.py").write_text("\n".join(src))
    sys.path.insert(0, str(d))
    try:
        return importlib.import_module("numerics_zero_cases")
    finally:
        sys.path.remove(str(d))


@pytest.mark.parametrize("op", sorted(_SHAPE_OPS))
@pytest.mark.parametrize("flag", [False, True])
def test_zero_cotangent_through_shape_ops(zero_module, op, flag):
    f = getattr(zero_module, "rev_" + op)
    x = np.array([[0.3, -0.7], [0.5, 0.9]])
    want = numerical_grad(f, (x, flag)).reshape(2, 2)
    np.testing.assert_allclose(srcad.grad(f)(x, flag), want, rtol=1e-5, atol=1e-6)
    d = np.array([[1.0, 0.5], [-0.3, 0.2]])
    _, t = srcad.jvp(f, (x, flag), (d, None))
    np.testing.assert_allclose(t, np.sum(want * d), rtol=1e-5, atol=1e-6)
    H = srcad.hessian(f)(x, flag)
    np.testing.assert_allclose(H, numerical_hessian(f, (x, flag)), rtol=1e-3, atol=2e-4)


# ---- cumprod through a zero entry (its rule divided by x) ---------------------------------------------------
def cumprod_weighted(x):
    return np.sum(np.cumprod(x) * np.array([1.0, 2.0, 3.0, -1.0]))


def cumprod_axis(x):
    return np.sum(np.cumprod(x, axis=1) ** 2)


@pytest.mark.parametrize("f, x", [(cumprod_weighted, np.array([0.5, 0.0, 2.0, 1.5])),
                                  (cumprod_weighted, np.array([0.0, 0.0, 2.0, -1.5])),
                                  (cumprod_weighted, np.array([0.5, -1.2, 2.0, 1.5])),
                                  (cumprod_axis, np.array([[0.5, 0.0, 2.0], [1.1, -0.4, 0.7]]))])
def test_cumprod_with_zeros(f, x):
    check(f, x)


# ---- np.cross of 2-vectors (a scalar per pair) and 3-vectors ------------------------------------------------
_B2 = np.array([[1.0, 2.0], [3.0, -1.0]])
_B3 = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]])


def cross2_a(a):
    return np.sum(np.cross(a, _B2) * np.array([1.0, 2.0]))


def cross2_b(b):
    return np.sum(np.cross(_B2 * 0.5, b) ** 2)


def cross3_a(a):
    return np.sum(np.cross(a, _B3) ** 2)


def cross3_both(a):
    return np.sum(np.cross(a, a[::-1] + 1.0) * np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("f, x", [(cross2_a, np.array([[0.3, -0.7], [0.5, 0.9]])),
                                  (cross2_b, np.array([[0.3, -0.7], [0.5, 0.9]])),
                                  (cross3_a, np.array([[0.3, -0.7, 1.1], [0.5, 0.9, -0.2]])),
                                  (cross3_both, np.array([[0.3, -0.7, 1.1], [0.5, 0.9, -0.2]]))])
@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
def test_cross(f, x):
    check(f, x)


def cumprod_flat(x):
    return np.sum(np.cumprod(x) * np.arange(1.0, 7.0))


def test_cumprod_flat_with_zero():
    check(cumprod_flat, np.array([[0.5, 0.0, 2.0], [1.1, -0.4, 0.7]]))
