"""Shared pieces of the GradBench problems: the finite-difference reference and the peers' imports.

Every problem module defines:

    SIZES        {"tiny": params, "quick": [params, ...], "full": [params, ...]}
    label(p)     the size as text
    data(p)      the arguments of `primal`, generated in-process (GradBench's generator parameters)
    primal(*a)   the objective, plain NumPy as a user writes it
    srcad_derivative()     a callable(*a) -> the derivative GradBench asks for, through srcad's API
    autograd_derivative()  the same through HIPS autograd (an autograd.numpy spelling), or None
    torch_derivative()     the same through PyTorch eager, or None
    jax_derivative()       the same through JAX, the whole derivative under jax.jit in float64, or None
                           (JAX not installed); takes and returns NumPy arrays (scipy sparse for ba)
    fd_check(a, d)         the worst relative error of d against central finite differences
"""
import contextlib
import os

import numpy as np

try:
    import autograd
    import autograd.numpy as anp
except ImportError:          # optional peer
    autograd = anp = None

_TORCH = []
_JAX = []


def jax_module(threads=None):
    """JAX with float64 enabled, imported on first use, or None when it is not installed.

    XLA's CPU client sizes its thread pool once, when the backend starts, from the CPUs the process
    may run on (measured with JAX 0.10.2: XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
    intra_op_parallelism_threads=1" still spread one jitted matmul over 3 threads; the affinity cut
    it to one). So with `threads` given, the backend is started while the process's affinity is cut
    to that many CPUs, and then every thread's affinity is restored (the pool's threads too: a new
    thread inherits its creator's mask): the pool keeps that many threads, and every tool may run
    on every core. The count is fixed for the life of the process
    (`jax_threads()` says which)."""
    if not _JAX:
        try:
            import jax
        except ImportError:      # optional peer
            _JAX.append(None)
            return None
        jax.config.update("jax_enable_x64", True)
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        if threads and cpus and threads < len(cpus):
            os.sched_setaffinity(0, sorted(cpus)[:threads])
            try:
                jax.jit(lambda v: v + 1.0)(np.ones(2)).block_until_ready()   # starts the CPU backend
            finally:          # every thread, the pool's too (a new thread inherits its creator's mask)
                for tid in os.listdir("/proc/self/task"):
                    with contextlib.suppress(OSError):
                        os.sched_setaffinity(int(tid), cpus)
        else:
            threads = len(cpus) if cpus else os.cpu_count()
        _JAX.append(jax)
        _JAX.append(threads)
    return _JAX[0]


def jax_threads():
    """How many threads XLA's CPU pool was started with (None: JAX not started or not installed)."""
    return _JAX[1] if len(_JAX) > 1 else None


def to_numpy(out):
    """A JAX result (array or tuple of arrays) as NumPy arrays; waits for the computation."""
    if isinstance(out, tuple):
        return tuple(np.asarray(o) for o in out)
    return np.asarray(out)


def torch_module():
    """PyTorch (float64 by default), imported on first use (it takes seconds), or None."""
    if not _TORCH:
        try:
            import torch
            torch.set_default_dtype(torch.float64)
        except ImportError:      # optional peer
            torch = None
        _TORCH.append(torch)
    return _TORCH[0]


def rel_err(a, b):
    if hasattr(a, "tocsr") or hasattr(b, "tocsr"):        # scipy sparse: never densified
        diff = abs(a - b)
        big = abs(b).max() if hasattr(b, "tocsr") else np.max(np.abs(b))
        return float(diff.max() / max(1.0, float(big)))
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def fd_directional(f, x, g, ndirs=3, h=1e-6, seed=0):
    """Worst error of the directional derivatives <g, v> against (f(x + h v) - f(x - h v)) / 2h for
    a few random unit directions v (a scalar f)."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(ndirs):
        v = rng.normal(size=np.shape(x))
        v /= np.linalg.norm(v)
        want = (f(x + h * v) - f(x - h * v)) / (2 * h)
        got = float(np.sum(np.asarray(g) * v))
        worst = max(worst, abs(got - want) / max(1.0, abs(want)))
    return worst


def fd_jacobian_columns(f, x, J, cols, h=1e-6):
    """Worst error of the given columns of a Jacobian J (dense or scipy sparse) of a vector f."""
    J = J.tocsc() if hasattr(J, "tocsc") else np.asarray(J).reshape(-1, x.size)   # never densify a sparse J
    worst = 0.0
    for c in cols:
        e = np.zeros_like(x)
        e[c] = h
        want = (np.asarray(f(x + e)) - np.asarray(f(x - e))).ravel() / (2 * h)
        col = J[:, [c]].toarray().ravel() if hasattr(J, "toarray") else J[:, c]
        worst = max(worst, rel_err(col, want))
    return worst


