"""Forward over reverse carries no tangent that is zero by construction: the seed's (rt.seed's
output depends on the seed only, so activity does not flow through the value it checks), and the
value's (grad's "checked" adjoint returns the gradient only). Compared with an analytic Hessian
and central differences of the gradient."""
import numpy as np

import srcad


def kmeans_cost(P, C):
    dist = np.sum(P * P, axis=1)[:, None] - 2.0 * P @ C.T + np.sum(C * C, axis=1)[None, :]
    return np.sum(np.min(dist, axis=1))


def data():
    P = np.random.default_rng(3).random((40, 2))
    return P, P[-4:].copy() + 0.01


def test_grad_and_hessian_diagonal_in_one_sweep():
    P, C = data()
    J, HC = srcad.jvp(srcad.grad(kmeans_cost, wrt=1), (P, C), (None, np.ones_like(C)))
    dist = np.sum((P[:, None, :] - C[None, :, :]) ** 2, axis=2)
    near = np.argmin(dist, axis=1)
    counts = np.bincount(near, minlength=C.shape[0])
    assert np.allclose(HC, 2.0 * counts[:, None] * np.ones_like(C))
    J_ref = np.stack([2.0 * np.sum(C[j] - P[near == j], axis=0) for j in range(C.shape[0])])
    assert np.allclose(J, J_ref)
    assert np.allclose(srcad.hvp(kmeans_cost, wrt=1)(P, C, np.ones_like(C)), HC)


def test_forward_over_reverse_skips_zero_tangents():
    P, C = data()
    text = srcad.emit(srcad.grad(kmeans_cost, wrt=1), args=(P, C), wrt=1, mode="forward")
    assert "bar_dot = rt.zeros_like" not in text        # the seed's tangent
    assert "min_dist_dot" not in text and "dist_dot" not in text     # the value's


def test_hvp_of_a_smooth_function_matches_differences():
    def f(x, y):
        return np.sum(np.sin(x) * y) ** 2 + np.sum(x ** 3)
    x, y, v = np.array([0.3, -0.5, 0.9]), np.array([1.0, 2.0, -1.0]), np.array([0.2, 0.1, -0.4])
    g = srcad.grad(f)
    eps = 1e-6
    fd = (g(x + eps * v, y) - g(x - eps * v, y)) / (2 * eps)
    assert np.allclose(srcad.hvp(f)(x, y, v), fd, atol=1e-7)
    H = srcad.hessian(f)(x, y)
    assert np.allclose(H @ v, fd, atol=1e-7)
