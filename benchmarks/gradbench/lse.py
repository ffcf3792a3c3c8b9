"""lse: log-sum-exp of a vector, gradient (GradBench evals/lse; x uniform in [0, 1) as the generator,
n from 2,500 to 1,280,000)."""
import numpy as np

import srcad
from benchmarks.gradbench.common import anp, autograd, fd_directional, jax_module, to_numpy, torch_module

SIZES = {"tiny": 20, "quick": [10_000], "full": [10_000, 1_280_000]}


def label(n):
    return f"n={n:,}"


def data(n):
    return (np.random.default_rng(31337).random(n),)


def primal(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def srcad_derivative():
    return srcad.grad(primal)


def autograd_derivative():
    if autograd is None:
        return None

    def f(x):
        m = anp.max(x)
        return m + anp.log(anp.sum(anp.exp(x - m)))
    return autograd.grad(f)


def torch_derivative():
    torch = torch_module()
    if torch is None:
        return None

    def d(x):
        t = torch.from_numpy(x).requires_grad_()
        m = torch.max(t)
        (m + torch.log(torch.sum(torch.exp(t - m)))).backward()
        return t.grad.numpy()
    return d


def jax_derivative():
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy

    def f(x):
        m = jnp.max(x)
        return m + jnp.log(jnp.sum(jnp.exp(x - m)))
    g = jax.jit(jax.grad(f))
    return lambda x: to_numpy(g(x))


def fd_check(args, g):
    return fd_directional(primal, args[0], g)
