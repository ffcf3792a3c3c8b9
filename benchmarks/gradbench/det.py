"""det: the determinant of an ell x ell matrix by expansion by minors along the first row
(recursive), gradient with respect to A (GradBench evals/det, from cmpad's det_by_minor: A uniform
in [0, 1), ell from 5 to 11)."""
import numpy as np

import srcad
from benchmarks.gradbench.common import anp, autograd, fd_directional, jax_module, to_numpy, torch_module

SIZES = {"tiny": 3, "quick": [5], "full": [6, 7]}


def label(ell):
    return f"ell={ell}"


def data(ell):
    return (np.random.default_rng(31337).random((ell, ell)),)


def det_delete(A):
    """The first spelling a user writes; srcad refuses it (no rule for np.delete: MissingRuleError,
    reported in PROFILE.md). `det` below is the second spelling, with an index array."""
    n = A.shape[0]
    if n == 1:
        return A[0, 0]
    total = 0.0
    sign = 1.0
    for j in range(n):
        minor = np.delete(A[1:], j, axis=1)
        total = total + sign * A[0, j] * det_delete(minor)
        sign = -sign
    return total


def det(A):
    n = A.shape[0]
    if n == 1:
        return A[0, 0]
    total = 0.0
    sign = 1.0
    for j in range(n):
        keep = np.concatenate((np.arange(j), np.arange(j + 1, n)))
        total = total + sign * A[0, j] * det(A[1:, keep])
        sign = -sign
    return total


def primal(A):
    return det(A)


def srcad_derivative():
    return srcad.grad(primal)


def autograd_derivative():
    if autograd is None:
        return None

    def adet(A):
        n = A.shape[0]
        if n == 1:
            return A[0, 0]
        total = 0.0
        sign = 1.0
        for j in range(n):
            keep = [c for c in range(n) if c != j]
            total = total + sign * A[0, j] * adet(A[1:, keep])
            sign = -sign
        return total
    return autograd.grad(adet)


def torch_derivative():
    torch = torch_module()
    if torch is None:
        return None

    def tdet(A):
        n = A.shape[0]
        if n == 1:
            return A[0, 0]
        total = 0.0
        sign = 1.0
        for j in range(n):
            keep = [c for c in range(n) if c != j]
            total = total + sign * A[0, j] * tdet(A[1:, keep])
            sign = -sign
        return total

    def d(A):
        At = torch.from_numpy(A).requires_grad_()
        tdet(At).backward()
        return At.grad.numpy()
    return d


def jax_derivative():
    """The same recursion traced by jax.jit: every minor is unrolled into one XLA program (ell=7:
    8,660 calls of jdet in the trace; the compile is the first call)."""
    jax = jax_module()
    if jax is None:
        return None

    def jdet(A):
        n = A.shape[0]
        if n == 1:
            return A[0, 0]
        total = 0.0
        sign = 1.0
        for j in range(n):
            keep = np.concatenate((np.arange(j), np.arange(j + 1, n)))
            total = total + sign * A[0, j] * jdet(A[1:, keep])
            sign = -sign
        return total
    g = jax.jit(jax.grad(jdet))
    return lambda A: to_numpy(g(A))


def fd_check(args, g):
    (A,) = args
    # an independent analytic reference too: d det / dA = det(A) inv(A)^T
    analytic = np.linalg.det(A) * np.linalg.inv(A).T
    err = float(np.max(np.abs(g - analytic)) / max(1.0, np.max(np.abs(analytic))))
    return max(err, fd_directional(primal, A, g))
