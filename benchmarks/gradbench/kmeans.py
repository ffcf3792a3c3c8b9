"""kmeans: cost(P, C) = sum_i min_j |P_i - C_j|^2; the derivative asked is the Newton direction
J / H with J the gradient with respect to the centroids C and H the Hessian's diagonal (the
Hessian is diagonal here, so H = H @ ones) (GradBench evals/kmeans: points uniform in [0, 1)^d,
the centroids the last k points, k in {10, 100, 1000}, n in {10^3, 10^4, 10^5}, d in {8, 16})."""
import numpy as np

import srcad
from benchmarks.gradbench.common import anp, autograd, fd_directional, jax_module, to_numpy, torch_module

SIZES = {"tiny": (3, 30, 2), "quick": [(10, 1000, 8)], "full": [(100, 10_000, 8), (1000, 10_000, 8)]}


def label(p):
    return "k={},n={:,},d={}".format(*p)


def data(p):
    k, n, d = p
    P = np.random.default_rng(31337).random((n, d))
    return P, P[-k:].copy()


def primal(P, C):
    dist = np.sum(P * P, axis=1)[:, None] - 2.0 * P @ C.T + np.sum(C * C, axis=1)[None, :]
    return np.sum(np.min(dist, axis=1))


def srcad_derivative():
    # the gradient and H @ ones from one forward-over-reverse sweep (JAX's jvp(grad(f))): the
    # tangent of the gradient along ones is the Hessian's diagonal here
    g = srcad.grad(primal, wrt=1)

    def direction(P, C):
        J, H = srcad.jvp(g, (P, C), (None, np.ones_like(C)))
        return J / H
    return direction


def autograd_derivative():
    if autograd is None:
        return None

    def f(P, C):
        dist = anp.sum(P * P, axis=1)[:, None] - 2.0 * anp.dot(P, C.T) + anp.sum(C * C, axis=1)[None, :]
        return anp.sum(anp.min(dist, axis=1))
    g = autograd.grad(f, 1)
    hv = autograd.grad(lambda P, C, v: anp.sum(g(P, C) * v), 1)

    def direction(P, C):
        return g(P, C) / hv(P, C, np.ones_like(C))
    return direction


def torch_derivative():
    torch = torch_module()
    if torch is None:
        return None

    def direction(P, C):
        Pt, Ct = torch.from_numpy(P), torch.from_numpy(C).requires_grad_()
        dist = (Pt * Pt).sum(1)[:, None] - 2.0 * Pt @ Ct.T + (Ct * Ct).sum(1)[None, :]
        cost = dist.min(1).values.sum()
        (J,) = torch.autograd.grad(cost, Ct, create_graph=True)
        (H,) = torch.autograd.grad(J, Ct, torch.ones_like(Ct))
        return (J / H).detach().numpy()
    return direction


def jax_derivative():
    """J / H by forward over reverse (jax.jvp of jax.grad along ones: the gradient and the Hessian's
    diagonal in one sweep, as srcad's)."""
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy

    def f(P, C):
        dist = jnp.sum(P * P, axis=1)[:, None] - 2.0 * P @ C.T + jnp.sum(C * C, axis=1)[None, :]
        return jnp.sum(jnp.min(dist, axis=1))

    @jax.jit
    def direction(P, C):
        J, H = jax.jvp(lambda c: jax.grad(f, argnums=1)(P, c), (C,), (jnp.ones_like(C),))
        return J / H
    return lambda P, C: to_numpy(direction(P, C))


def fd_check(args, d):
    """The gradient by finite differences; the Hessian's diagonal is 2 x (points nearest centroid j),
    exactly (the cost is piecewise quadratic)."""
    P, C = args
    dist = np.sum((P[:, None, :] - C[None, :, :]) ** 2, axis=2) if P.shape[0] * C.shape[0] <= 10**6 else None
    if dist is None:
        return 0.0
    counts = np.bincount(np.argmin(dist, axis=1), minlength=C.shape[0])
    H = 2.0 * counts[:, None] * np.ones_like(C)
    J = d * H
    return fd_directional(lambda c: primal(P, c), C, J, h=1e-7)
