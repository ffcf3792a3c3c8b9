"""hello: the square of a scalar, f(x) = x * x, and its derivative 2 x (GradBench's smoke eval)."""
import numpy as np

import srcad
from benchmarks.gradbench.common import autograd, jax_module, to_numpy, torch_module

SIZES = {"tiny": 1, "quick": [1], "full": [1]}


def label(p):
    return "scalar"


def data(p):
    return (np.array(1.5),)


def primal(x):
    return x * x


def srcad_derivative():
    return srcad.grad(primal)


def autograd_derivative():
    return autograd.grad(primal) if autograd else None


def torch_derivative():
    torch = torch_module()
    if torch is None:
        return None

    def d(x):
        t = torch.tensor(float(x), requires_grad=True)
        (t * t).backward()
        return t.grad.numpy()
    return d


def jax_derivative():
    jax = jax_module()
    if jax is None:
        return None
    g = jax.jit(jax.grad(lambda x: x * x))
    return lambda x: to_numpy(g(x))


def fd_check(args, d):
    (x,) = args
    want = (primal(x + 1e-6) - primal(x - 1e-6)) / 2e-6
    return abs(float(d) - want) / max(1.0, abs(want))
