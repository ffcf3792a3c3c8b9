"""ode: y_0' = x_0, y_i' = (x_1 + ... + x_i) y_{i-1}, y(0) = 0, integrated to t = 2 by s classic
Runge-Kutta (RK4) steps; the gradient of the last entry of y(2) with respect to x (GradBench
evals/ode, from cmpad's an_ode: x uniform in [0, 1), n in {10^3, 10^4, 10^5}, s in {1, 10, 100})."""
import numpy as np

import srcad
from benchmarks.gradbench.common import anp, autograd, fd_directional, jax_module, to_numpy, torch_module

SIZES = {"tiny": (6, 3), "quick": [(1000, 10)], "full": [(10_000, 10), (100_000, 10)]}


def label(p):
    return "n={:,},s={}".format(*p)


def data(p):
    n, s = p
    return np.random.default_rng(31337).random(n), s


def rhs(x, y):
    rates = np.cumsum(x[1:])
    return np.concatenate((x[:1], rates * y[:-1]))


def solve(x, s):
    h = 2.0 / s
    y = np.zeros_like(x)
    for _ in range(s):
        k1 = rhs(x, y)
        k2 = rhs(x, y + 0.5 * h * k1)
        k3 = rhs(x, y + 0.5 * h * k2)
        k4 = rhs(x, y + h * k3)
        y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y


def primal(x, s):
    return solve(x, s)[-1]


def srcad_derivative():
    return srcad.grad(primal)


def autograd_derivative():
    if autograd is None:
        return None

    def f_rhs(x, y):
        return anp.concatenate((x[:1], anp.cumsum(x[1:]) * y[:-1]))

    def f(x, s):
        h = 2.0 / s
        y = anp.zeros(x.shape[0])
        for _ in range(s):
            k1 = f_rhs(x, y)
            k2 = f_rhs(x, y + 0.5 * h * k1)
            k3 = f_rhs(x, y + 0.5 * h * k2)
            k4 = f_rhs(x, y + h * k3)
            y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return y[-1]
    return autograd.grad(f)


def torch_derivative():
    torch = torch_module()
    if torch is None:
        return None

    def t_rhs(x, y):
        return torch.cat((x[:1], torch.cumsum(x[1:], 0) * y[:-1]))

    def d(x, s):
        xt = torch.from_numpy(x).requires_grad_()
        h = 2.0 / s
        y = torch.zeros_like(xt)
        for _ in range(s):
            k1 = t_rhs(xt, y)
            k2 = t_rhs(xt, y + 0.5 * h * k1)
            k3 = t_rhs(xt, y + 0.5 * h * k2)
            k4 = t_rhs(xt, y + h * k3)
            y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        y[-1].backward()
        return xt.grad.numpy()
    return d


def jax_derivative():
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy

    def j_rhs(x, y):
        return jnp.concatenate((x[:1], jnp.cumsum(x[1:]) * y[:-1]))

    def f(x, s):
        h = 2.0 / s
        y = jnp.zeros_like(x)
        for _ in range(s):                 # s is static: the s RK4 steps are unrolled in the trace
            k1 = j_rhs(x, y)
            k2 = j_rhs(x, y + 0.5 * h * k1)
            k3 = j_rhs(x, y + 0.5 * h * k2)
            k4 = j_rhs(x, y + h * k3)
            y = y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return y[-1]
    g = jax.jit(jax.grad(f), static_argnums=1)
    return lambda x, s: to_numpy(g(x, s))


def fd_check(args, g):
    x, s = args
    return fd_directional(lambda v: primal(v, s), x, g)
