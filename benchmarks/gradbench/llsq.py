"""llsq: linear least squares objective y(x) = 1/2 sum_i (s_i - sum_j x_j t_i^j)^2 with
t_i = -1 + 2 i / (n - 1), s_i = sign(t_i); gradient (GradBench evals/llsq: m = 128, n up to 16,392,
x uniform in [0, 1))."""
import numpy as np

import srcad
from benchmarks.gradbench.common import anp, autograd, fd_directional, jax_module, to_numpy, torch_module

SIZES = {"tiny": (6, 16), "quick": [(128, 1024)], "full": [(128, 1024), (128, 16392)]}


def label(p):
    return f"m={p[0]},n={p[1]:,}"


def data(p):
    m, n = p
    return np.random.default_rng(31337).random(m), n


def primal(x, n):
    t = np.linspace(-1.0, 1.0, n)
    s = np.sign(t)
    powers = t[:, None] ** np.arange(x.shape[0])[None, :]
    r = s - powers @ x
    return 0.5 * np.sum(r * r)


def srcad_derivative():
    return srcad.grad(primal)


def autograd_derivative():
    if autograd is None:
        return None

    def f(x, n):
        t = np.linspace(-1.0, 1.0, n)
        powers = t[:, None] ** np.arange(x.shape[0])[None, :]
        r = np.sign(t) - anp.dot(powers, x)
        return 0.5 * anp.sum(r * r)
    return autograd.grad(f)


def torch_derivative():
    torch = torch_module()
    if torch is None:
        return None

    def d(x, n):
        xt = torch.from_numpy(x).requires_grad_()
        t = torch.linspace(-1.0, 1.0, n, dtype=torch.float64)
        powers = t[:, None] ** torch.arange(x.shape[0], dtype=torch.float64)[None, :]
        r = torch.sign(t) - powers @ xt
        (0.5 * torch.sum(r * r)).backward()
        return xt.grad.numpy()
    return d


def jax_derivative():
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy

    def f(x, n):
        t = jnp.linspace(-1.0, 1.0, n)
        powers = t[:, None] ** jnp.arange(x.shape[0], dtype=jnp.float64)[None, :]
        r = jnp.sign(t) - powers @ x
        return 0.5 * jnp.sum(r * r)
    g = jax.jit(jax.grad(f), static_argnums=1)        # n fixes the shapes
    return lambda x, n: to_numpy(g(x, n))


def fd_check(args, g):
    x, n = args
    return fd_directional(lambda v: primal(v, n), x, g)
