"""particle: a charged particle starts at (0, 8) with velocity (0.75, 0) in the field of charges at
(10, 10 - w) and (10, 0); naive Euler steps of 0.1 (the force is minus the gradient of the potential:
the inner derivative) until it crosses the x axis, then linear interpolation to the crossing; the
control w minimises the crossing's x^2 by gradient descent from w = 0 (the outer derivative, through
the whole simulation: nested AD). GradBench evals/particle; the expected answer is
w = 0.2071918746486116. Variants: outer reverse or forward mode (rr, fr), inner reverse.

Spelling: srcad refuses a lambda or a function-valued argument inside differentiated code, so the
force is `d_neg_potential`, a module-level srcad.grad, called with the charges as arguments.

Timed: the derivative the outer descent asks for at each of its steps (d crossing_cost / d w at
w0 = 0) against the primal crossing_cost (one simulation with its inner gradients); `solve` runs
the whole benchmark (tested against GradBench's expected answer in the full run's check)."""
import numpy as np

import srcad
from benchmarks.gradbench import solver
from benchmarks.gradbench.common import anp, autograd, fd_directional, jax_module, to_numpy, torch_module
from benchmarks.gradbench.saddle import GRADS

SIZES = {"tiny": "rr", "quick": ["rr"], "full": ["rr", "fr"]}
EXPECTED = 0.2071918746486116


def label(variant):
    return f"variant {variant}, w0 = 0"


def data(variant):
    return np.array([0.0]), variant


def neg_potential(x, c1, c2):
    d1 = x - c1
    d2 = x - c2
    return -(1.0 / np.sqrt(np.sum(d1 * d1)) + 1.0 / np.sqrt(np.sum(d2 * d2)))


d_neg_potential = srcad.grad(neg_potential)


def crossing_cost(w):
    c1 = np.array([10.0, 10.0]) - w[0] * np.array([0.0, 1.0])
    c2 = np.array([10.0, 0.0])
    dt = 0.1
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    while True:
        xddot = d_neg_potential(x, c1, c2)
        x_new = x + dt * xdot
        if x_new[1] > 0.0:
            x = x_new
            xdot = xdot + dt * xddot
        else:
            dt_f = -x[1] / xdot[1]
            x_f = x + dt_f * xdot
            return x_f[0] * x_f[0]


def solve(w0, variant):
    """The whole benchmark: gradient descent on w (about 100 outer gradients of a simulation of
    about 100 Euler steps, each with an inner gradient)."""
    return solver.argmin(GRADS[variant[0]], crossing_cost, w0)


def srcad_derivative():
    """The nested derivative the outer descent asks for at each step: d crossing_cost / d w, through
    the whole simulation and its inner gradients, in the variant's outer mode."""
    def d(w0, variant):
        return GRADS[variant[0]](crossing_cost)(w0)
    return d


def primal(w0, variant):
    return crossing_cost(w0)


def autograd_derivative():
    if autograd is None:
        return None

    def a_neg_potential(x, c1, c2):
        d1 = x - c1
        d2 = x - c2
        return -(1.0 / anp.sqrt(anp.sum(d1 * d1)) + 1.0 / anp.sqrt(anp.sum(d2 * d2)))
    force = autograd.grad(a_neg_potential)

    def cost(w):
        c1 = np.array([10.0, 10.0]) - w[0] * np.array([0.0, 1.0])
        c2 = np.array([10.0, 0.0])
        dt = 0.1
        x = np.array([0.0, 8.0])
        xdot = np.array([0.75, 0.0])
        while True:
            xddot = force(x, c1, c2)
            x_new = x + dt * xdot
            if x_new[1] > 0.0:
                x = x_new
                xdot = xdot + dt * xddot
            else:
                x_f = x + (-x[1] / xdot[1]) * xdot
                return x_f[0] * x_f[0]
    g = autograd.grad(cost)

    def d(w0, variant):
        return g(w0)
    return d


def torch_derivative():
    """PyTorch eager, outer reverse over inner reverse (create_graph=True); the fr variant (forward
    outer) is not written for PyTorch and raises."""
    torch = torch_module()
    if torch is None:
        return None

    def neg_pot(x, c1, c2):
        d1 = x - c1
        d2 = x - c2
        return -(1.0 / torch.sqrt(torch.sum(d1 * d1)) + 1.0 / torch.sqrt(torch.sum(d2 * d2)))

    def cost(w):
        c1 = torch.tensor([10.0, 10.0]) - w[0] * torch.tensor([0.0, 1.0])
        c2 = torch.tensor([10.0, 0.0])
        dt = 0.1
        x = torch.tensor([0.0, 8.0], requires_grad=True)
        xdot = torch.tensor([0.75, 0.0])
        while True:
            xddot = torch.autograd.grad(neg_pot(x, c1, c2), x, create_graph=True)[0]
            x_new = x + dt * xdot
            if x_new[1] > 0.0:
                x = x_new
                xdot = xdot + dt * xddot
            else:
                dt_f = -x[1] / xdot[1]
                x_f = x + dt_f * xdot
                return x_f[0] * x_f[0]

    def d(w0, variant):
        if variant[0] != "r":
            raise NotImplementedError("only the outer reverse variant is written for PyTorch")
        w = torch.from_numpy(w0).clone().requires_grad_()
        cost(w).backward()
        return w.grad.numpy()
    return d


def jax_derivative():
    """JAX, the force by jax.grad of the potential inside the Euler loop, under one jax.jit. fr:
    jax.jacfwd through jax.lax.while_loop. rr: reverse mode cannot go through a while_loop, so a
    jitted while_loop first counts the Euler steps K, then jax.grad runs through a jax.lax.scan of
    exactly K steps (compiled once per K; both are timed)."""
    jax = jax_module()
    if jax is None:
        return None
    jnp, lax = jax.numpy, jax.lax
    dt = 0.1

    def neg_pot(x, c1, c2):
        d1 = x - c1
        d2 = x - c2
        return -(1.0 / jnp.sqrt(jnp.sum(d1 * d1)) + 1.0 / jnp.sqrt(jnp.sum(d2 * d2)))
    force = jax.grad(neg_pot)

    def start(w):
        c1 = jnp.array([10.0, 10.0]) - w[0] * jnp.array([0.0, 1.0])
        return (jnp.array([0.0, 8.0]), jnp.array([0.75, 0.0])), (c1, jnp.array([10.0, 0.0]))

    def euler(st, c):
        x, xdot = st
        return x + dt * xdot, xdot + dt * force(x, *c)

    def above(st):
        x, xdot = st
        return (x + dt * xdot)[1] > 0.0

    def cost(st):
        x, xdot = st
        x_f = x + (-x[1] / xdot[1]) * xdot
        return x_f[0] * x_f[0]

    def steps(w):
        st, c = start(w)
        return lax.while_loop(lambda s: above(s[0]), lambda s: (euler(s[0], c), s[1] + 1), (st, 0))[1]

    def cost_while(w):
        st, c = start(w)
        return cost(lax.while_loop(above, lambda s: euler(s, c), st))

    def cost_scan(w, k):
        st, c = start(w)
        return cost(lax.scan(lambda s, _: (euler(s, c), None), st, None, length=k)[0])
    count = jax.jit(steps)
    rr = jax.jit(jax.grad(cost_scan), static_argnums=1)
    fr = jax.jit(jax.jacfwd(cost_while))

    def d(w0, variant):
        if variant == "fr":
            return to_numpy(fr(w0))
        return to_numpy(rr(w0, int(count(w0))))
    return d


def fd_check(args, g):
    return fd_directional(crossing_cost, args[0], g)
