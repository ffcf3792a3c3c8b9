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
from benchmarks.gradbench.common import autograd, fd_directional, torch_module

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


def fd_check(args, g):
    start = args[0]
    return fd_directional(lambda p1: inner_max(p1, start), start, g)
