"""saddle: min over x in R^2 of max over y in R^2 of f(x, y) = (x1^2 + y1^2) - (x2^2 + y2^2)
(GradBench evals/saddle, Pearlmutter and Siskind), both by gradient descent from start = (1, 1):
the outer descent differentiates a function that itself runs a descent with derivatives (nested
AD). Output: the argmin x, then the argmax y for that x. GradBench's variants choose forward (f) or
reverse (r) mode for the outer and the inner derivative; here the outer mode varies (rr, fr) and the
inner one is reverse.

Spelling: the natural one passes the cost and its gradient to one generic solver
(benchmarks/gradbench/solver.py). srcad refuses a call of a function-valued argument inside
differentiated code (UnsupportedSyntaxError "a call of a local value"), and lambdas; so the inner
descent, which the outer derivative runs through, is spelled with module-level names
(`inner_argmax`); the outer levels, which are not differentiated, use the generic solver.

Timed: the derivative the outer descent asks for at each of its steps, d inner_max / d p1 at
p1 = start (through the whole inner descent), against the primal inner_max (the inner descent with
srcad's inner gradients); `solve` runs the whole benchmark."""
import numpy as np

import srcad
from benchmarks.gradbench import solver
from benchmarks.gradbench.common import autograd, fd_directional, jax_module, to_numpy, torch_module

SIZES = {"tiny": "rr", "quick": ["rr", "fr"], "full": ["rr", "fr"]}


def label(variant):
    return f"variant {variant}, start (1, 1)"


def data(variant):
    return np.array([1.0, 1.0]), variant


def objective(p1, p2):
    return (p1[0] * p1[0] + p1[1] * p1[1]) - (p2[0] * p2[0] + p2[1] * p2[1])


def neg_objective(p2, p1):
    return -objective(p1, p2)


d_neg_objective = srcad.grad(neg_objective)


def inner_argmax(p1, start):
    """argmax over p2 of objective(p1, p2): solver.argmin on -objective, spelled out."""
    x = start
    eta = 1e-5
    fx = neg_objective(x, p1)
    gx = d_neg_objective(x, p1)
    i = 0
    while True:
        if np.sqrt(np.sum(gx * gx)) <= 1e-5:
            return x
        if i == 10:
            eta = 2.0 * eta
            i = 0
            continue
        x_new = x - eta * gx
        if np.sqrt(np.sum((x - x_new) * (x - x_new))) <= 1e-5:
            return x
        fx_new = neg_objective(x_new, p1)
        if fx_new < fx:
            x = x_new
            fx = fx_new
            gx = d_neg_objective(x_new, p1)
            i = i + 1
        else:
            eta = 0.5 * eta
            i = 0


def inner_max(p1, start):
    return objective(p1, inner_argmax(p1, start))


def grad_r(func):
    return srcad.grad(func)


def grad_f(func):
    def g(x, *rest):
        return np.array([srcad.jvp(func, (x,) + rest, (e,) + tuple(np.zeros_like(np.asarray(r, dtype=float))
                                                                    for r in rest))[1]
                         for e in np.eye(x.shape[0])])
    return g


GRADS = {"r": grad_r, "f": grad_f}


def solve(start, variant, grads=None):
    """The whole benchmark: the outer argmin (derivatives of inner_max through the inner descent),
    then the argmax at the answer."""
    r1 = solver.argmin((grads or GRADS)[variant[0]], inner_max, start, start)
    return np.concatenate([r1, inner_argmax(r1, start)])


def srcad_derivative():
    """The nested derivative the outer descent asks for at each step: d inner_max / d p1 (through
    the inner descent and its own derivatives), in the variant's outer mode."""
    def d(start, variant):
        return GRADS[variant[0]](inner_max)(start, start)
    return d


def primal(start, variant):
    return inner_max(start, start)


def autograd_derivative():
    if autograd is None:
        return None

    def aobj(p1, p2):
        return (p1[0] * p1[0] + p1[1] * p1[1]) - (p2[0] * p2[0] + p2[1] * p2[1])

    def aneg(p2, p1):
        return -aobj(p1, p2)

    def a_inner_max(p1, start):
        return aobj(p1, solver.argmin(autograd.grad, aneg, start, p1))
    g = autograd.grad(a_inner_max)

    def d(start, variant):
        return g(start, start)
    return d


def torch_inner_argmax(torch, p1, start, d_neg):
    """inner_argmax in PyTorch: the inner descent with d_neg(x, p1) a differentiable gradient."""
    x = start
    eta = 1e-5
    fx = -torch_objective(p1, x)
    gx = d_neg(x, p1)
    i = 0
    while True:
        if torch.sqrt(torch.sum(gx * gx)) <= 1e-5:
            return x
        if i == 10:
            eta = 2.0 * eta
            i = 0
            continue
        x_new = x - eta * gx
        if torch.sqrt(torch.sum((x - x_new) * (x - x_new))) <= 1e-5:
            return x
        fx_new = -torch_objective(p1, x_new)
        if fx_new < fx:
            x = x_new
            fx = fx_new
            gx = d_neg(x_new, p1)
            i = i + 1
        else:
            eta = 0.5 * eta
            i = 0


def torch_objective(p1, p2):
    return (p1[0] * p1[0] + p1[1] * p1[1]) - (p2[0] * p2[0] + p2[1] * p2[1])


def torch_derivative():
    """PyTorch eager, outer reverse over inner reverse (create_graph=True); the fr variant (forward
    outer) is not written for PyTorch and raises."""
    torch = torch_module()
    if torch is None:
        return None

    def d_neg(x, p1):
        if not x.requires_grad:
            x = x.clone().requires_grad_()
        return torch.autograd.grad(-torch_objective(p1, x), x, create_graph=True)[0]

    def d(start, variant):
        if variant[0] != "r":
            raise NotImplementedError("only the outer reverse variant is written for PyTorch")
        p1 = torch.from_numpy(start).clone().requires_grad_()
        s = torch.from_numpy(start)
        torch_objective(p1, torch_inner_argmax(torch, p1, s, d_neg)).backward()
        return p1.grad.numpy()
    return d


def jax_derivative():
    """JAX, inner reverse (jax.grad) inside the descent, under one jax.jit. A pass of
    inner_argmax's `while True` is `step`, branch-free (jnp.where; the inner gradient is evaluated at
    every pass, used on accepted ones). fr: jax.jacfwd through jax.lax.while_loop. rr: reverse mode
    cannot go through a while_loop, so a jitted while_loop first counts the passes K, then jax.grad
    runs through a jax.lax.scan of exactly K passes (compiled once per K; both are timed)."""
    jax = jax_module()
    if jax is None:
        return None
    jnp, lax = jax.numpy, jax.lax

    def obj(p1, p2):
        return (p1[0] * p1[0] + p1[1] * p1[1]) - (p2[0] * p2[0] + p2[1] * p2[1])

    def neg(p2, p1):
        return -obj(p1, p2)
    d_neg = jax.grad(neg)

    def init(p1, start):
        return start, neg(start, p1), d_neg(start, p1), jnp.float64(1e-5), jnp.int64(0), jnp.bool_(False)

    def step(p1, st):
        x, fx, gx, eta, i, done = st
        widen = i == 10
        x_new = x - eta * gx
        fx_new = neg(x_new, p1)
        stop = done | (jnp.sqrt(jnp.sum(gx * gx)) <= 1e-5) | (~widen & (jnp.sqrt(jnp.sum((x - x_new) * (x - x_new))) <= 1e-5))
        take = ~stop & ~widen & (fx_new < fx)
        shrink = ~stop & ~widen & ~(fx_new < fx)
        return (jnp.where(take, x_new, x), jnp.where(take, fx_new, fx), jnp.where(take, d_neg(x_new, p1), gx),
                jnp.where(~stop & widen, 2.0 * eta, jnp.where(shrink, 0.5 * eta, eta)),
                jnp.where((~stop & widen) | shrink, jnp.int64(0), jnp.where(take, i + 1, i)), stop)

    def passes(p1, start):
        return lax.while_loop(lambda c: ~c[0][5], lambda c: (step(p1, c[0]), c[1] + 1), (init(p1, start), 0))[1]

    def inner_max_while(p1, start):
        return obj(p1, lax.while_loop(lambda st: ~st[5], lambda st: step(p1, st), init(p1, start))[0])

    def inner_max_scan(p1, start, k):
        return obj(p1, lax.scan(lambda st, _: (step(p1, st), None), init(p1, start), None, length=k)[0][0])
    count = jax.jit(passes)
    rr = jax.jit(jax.grad(inner_max_scan), static_argnums=2)
    fr = jax.jit(jax.jacfwd(inner_max_while))

    def d(start, variant):
        if variant == "fr":
            return to_numpy(fr(start, start))
        return to_numpy(rr(start, start, int(count(start, start))))
    return d


def fd_check(args, g):
    start = args[0]
    return fd_directional(lambda p1: inner_max(p1, start), start, g)
