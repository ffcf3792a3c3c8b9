"""jacobian (forward, reverse, auto, sparse), hessian and hvp against finite differences."""
import numpy as np
import pytest
import scipy.sparse as sp

import srcad
import jh_cases as jc


def fd_jacobian(f, args, k=0, eps=1e-6):
    """Central-difference Jacobian, shape y.shape + x.shape."""
    x = np.asarray(args[k], dtype=float)
    y0 = np.asarray(f(*args))
    J = np.zeros(y0.shape + x.shape)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        a_hi, a_lo = list(args), list(args)
        a_hi[k], a_lo[k] = hi, lo
        J[(Ellipsis,) + idx] = (np.asarray(f(*a_hi)) - np.asarray(f(*a_lo))) / (2 * eps)
    return J


def fd_hessian(f, args, k=0, eps=1e-4):
    """Central differences of central differences (a reference independent of srcad)."""
    x = np.asarray(args[k], dtype=float)
    n = x.size
    H = np.zeros((n, n))
    flat = x.reshape(-1)

    def at(v):
        a = list(args)
        a[k] = v.reshape(x.shape)
        return float(f(*a))
    for i in range(n):
        for j in range(n):
            def shifted(si, sj):
                v = flat.copy()
                v[i] += si * eps
                v[j] += sj * eps
                return at(v)
            H[i, j] = (shifted(1, 1) - shifted(1, -1) - shifted(-1, 1) + shifted(-1, -1)) / (4 * eps * eps)
    return H.reshape(x.shape + x.shape)


rng = np.random.default_rng(7)
X22, W64 = rng.normal(size=(2, 2)), rng.normal(size=(6, 4))
CASES = [
    ("matrix_map", jc.matrix_map, (X22, W64)),
    ("looped_map", jc.looped_map, (rng.normal(size=5),)),
    ("sliced_map", jc.sliced_map, (rng.normal(size=(2, 3)),)),
    ("tridiagonal", jc.tridiagonal, (rng.normal(size=6),)),
]


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
@pytest.mark.parametrize("name, f, args", CASES, ids=[c[0] for c in CASES])
def test_jacobian_modes(name, f, args, mode):
    J = srcad.jacobian(f, mode=mode)(*args)
    want = fd_jacobian(f, args)
    assert J.shape == np.shape(f(*args)) + np.shape(args[0])
    np.testing.assert_allclose(J, want, rtol=1e-5, atol=1e-6)


def test_jacobian_shape_MNQP():
    J = srcad.jacobian(jc.matrix_map)(X22, W64)
    assert J.shape == (2, 3, 2, 2)


@pytest.mark.parametrize("name, f, args", CASES, ids=[c[0] for c in CASES])
def test_sparse_jacobian_equals_dense(name, f, args):
    Js = srcad.jacobian(f, sparsity="auto")(*args)
    assert isinstance(Js, sp.csr_array)
    want = fd_jacobian(f, args)
    m, n = int(np.size(f(*args))), int(np.size(args[0]))
    np.testing.assert_allclose(Js.toarray(), want.reshape(m, n), rtol=1e-5, atol=1e-6)


def test_tridiagonal_needs_three_colours():
    from srcad.sparsity import color_columns, detect
    x = rng.normal(size=10_000)
    mod_call = srcad.api._module(jc.tridiagonal, "forward", 0)
    fn = getattr(mod_call, mod_call.srcad_main)
    _, rows, cols, m, n = detect(lambda v: fn(x, v), x)
    colors = color_columns(rows, cols, m, n)
    assert colors.max() + 1 == 3
    assert len(rows) == 3 * 10_000 - 2
    J = srcad.jacobian(jc.tridiagonal, sparsity="auto")(x)
    d = np.diag(J.toarray()[:50, :50])
    np.testing.assert_allclose(d, 2 * x[:50] - 0.5 * x[1:51], rtol=1e-12)   # analytic dy_i/dx_i
    np.testing.assert_allclose(J.diagonal(-1)[:50], np.cos(x[:50]), rtol=1e-12)   # dy_{i+1}/dx_i
    np.testing.assert_allclose(J.diagonal(1)[:50], -0.5 * x[:50], rtol=1e-12)     # dy_i/dx_{i+1}


HESS = [
    ("logistic", None),
    ("energy", (rng.normal(size=5), rng.normal(size=(5, 5)))),
]


def test_hessian_logistic_analytic():
    from examples_for_tests import logistic
    X = rng.normal(size=(8, 3))
    w = rng.normal(size=3)
    y = (rng.random(8) > 0.5) * 1.0
    p = 1.0 / (1.0 + np.exp(-X @ w))
    want = X.T @ (X * (p * (1 - p))[:, None]) / 8      # analytic Hessian of the mean log-loss
    np.testing.assert_allclose(srcad.hessian(logistic)(w, X, y), want, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hessian_loops_branches_slices(seed):
    r = np.random.default_rng(seed)
    x, A = r.normal(size=5), r.normal(size=(5, 5))
    H = srcad.hessian(jc.energy)(x, A)
    np.testing.assert_allclose(H, fd_hessian(jc.energy, (x, A)), rtol=1e-4, atol=1e-5)
    v = r.normal(size=5)
    np.testing.assert_allclose(srcad.hvp(jc.energy)(x, A, v), H @ v, rtol=1e-10, atol=1e-10)


def test_hvp_matches_fd_of_gradient():
    x, A = rng.normal(size=6), rng.normal(size=(6, 6))
    v = rng.normal(size=6)
    eps = 1e-6
    g = srcad.grad(jc.energy)
    want = (g(x + eps * v, A) - g(x - eps * v, A)) / (2 * eps)
    np.testing.assert_allclose(srcad.hvp(jc.energy)(x, A, v), want, rtol=1e-5, atol=1e-6)


def test_hessian_of_matrix_input():
    X = rng.normal(size=(2, 2))
    H = srcad.hessian(jc.matrix_sum_cubed)(X)
    assert H.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(H, fd_hessian(jc.matrix_sum_cubed, (X,)), rtol=1e-4, atol=1e-5)


def test_sparse_pattern_is_detected_again_when_a_branch_changes_it():
    jac = srcad.jacobian(jc.switching, sparsity="auto")
    x_pos = np.abs(rng.normal(size=6)) + 0.1
    x_neg = -x_pos
    for x in (x_pos, x_neg, x_pos):
        J = jac(x)
        np.testing.assert_allclose(J.toarray(), fd_jacobian(jc.switching, (x,)), rtol=1e-6, atol=1e-8)


def _tangent_sweep(f, args, k=0, adjoint=False):
    from srcad.api import _call_jvp, _module, _params, _vjp_function
    g = _vjp_function(f, k) if adjoint else f
    mod = _module(g, "forward", k)
    fn = getattr(mod, mod.srcad_main)
    name = _params(f)[k]
    return lambda v: _call_jvp(fn, tuple(args), {name + "_dot": v})


@pytest.mark.parametrize("name, f, args", CASES, ids=[c[0] for c in CASES])
def test_batched_directions_need_no_fallback(name, f, args):
    """All directions travel through the tangent code together (strict: no per-direction loop)."""
    from srcad.api import _forward_columns
    y = f(*args)
    J = _forward_columns(_tangent_sweep(f, args), np.asarray(args[0]), np.shape(y), strict=True, chunk=3)
    np.testing.assert_allclose(J.reshape(np.shape(y) + np.shape(args[0])), fd_jacobian(f, args), rtol=1e-5, atol=1e-6)


def test_batched_hessian_through_the_adjoint():
    from srcad.api import _forward_columns
    x, A = rng.normal(size=5), rng.normal(size=(5, 5))
    H = _forward_columns(_tangent_sweep(jc.energy, (x, A), adjoint=True), x, x.shape, strict=True)
    np.testing.assert_allclose(H, fd_hessian(jc.energy, (x, A)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name, f, args", CASES, ids=[c[0] for c in CASES])
def test_batched_cotangents_through_the_adjoint(name, f, args):
    """Reverse mode: all output cotangents travel through the adjoint together where the code allows
    (strict: the cases here must not fall back to one sweep per output entry)."""
    from srcad.api import _forward_columns, _module
    mod = _module(f, "reverse", 0)
    fn = getattr(mod, mod.srcad_main)
    y = f(*args)
    Jt = _forward_columns(lambda s: (None, fn(*args, s)), y, np.shape(args[0]), strict=name != "looped_map")
    np.testing.assert_allclose(Jt.T.reshape(np.shape(y) + np.shape(args[0])), fd_jacobian(f, args),
                               rtol=1e-5, atol=1e-6)


def test_hessian_through_max_and_norm():
    x = np.array([0.3, -1.2, 0.9, 2.0, -0.5, 1.1])
    np.testing.assert_allclose(srcad.hessian(jc.extremes_and_norm)(x), fd_hessian(jc.extremes_and_norm, (x,)),
                               rtol=1e-5, atol=1e-5)
