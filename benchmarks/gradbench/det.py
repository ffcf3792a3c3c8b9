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
    """The first spelling a user writes, with np.delete (refused while np.delete had no rule, as
    PROFILE.md reported; differentiated since). `det` below, with an index array, is the one timed."""
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
    """Expansion by minors with each level of the recursion as one batch: the minors of all r x r
    matrices of a level, (B, r, r) -> (B r, r-1, r-1), down to 1 x 1 (the same products and sums as
    `det`, in whole-array operations). The recursion traced call by call, as `det` is written, took
    91 s to compile at ell=5 (325 calls; load 14), and ell=7 has 8,660 calls."""
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy

    def bdet(M):
        B, r = M.shape[0], M.shape[1]
        if r == 1:
            return M[:, 0, 0]
        keep = np.array([[c for c in range(r) if c != j] for j in range(r)])        # (r, r-1)
        minors = jnp.transpose(M[:, 1:, :][:, :, keep], (0, 2, 1, 3)).reshape(B * r, r - 1, r - 1)
        signs = np.where(np.arange(r) % 2 == 0, 1.0, -1.0)
        return jnp.sum(signs * M[:, 0, :] * bdet(minors).reshape(B, r), axis=1)
    g = jax.jit(jax.grad(lambda A: bdet(A[None])[0]))
    return lambda A: to_numpy(g(A))

def fd_check(args, g):
    (A,) = args
    # an independent analytic reference too: d det / dA = det(A) inv(A)^T
    analytic = np.linalg.det(A) * np.linalg.inv(A).T
    err = float(np.max(np.abs(g - analytic)) / max(1.0, np.max(np.abs(analytic))))
    return max(err, fd_directional(primal, A, g))
