"""Shared pieces of the GradBench problems: the finite-difference reference and the peers' imports.

Every problem module defines:

    SIZES        {"tiny": params, "quick": [params, ...], "full": [params, ...]}
    label(p)     the size as text
    data(p)      the arguments of `primal`, generated in-process (GradBench's generator parameters)
    primal(*a)   the objective, plain NumPy as a user writes it
    srcad_derivative()     a callable(*a) -> the derivative GradBench asks for, through srcad's API
    autograd_derivative()  the same through HIPS autograd (an autograd.numpy spelling), or None
    torch_derivative()     the same through PyTorch eager, or None
    fd_check(a, d)         the worst relative error of d against central finite differences
"""
import numpy as np

try:
    import autograd
    import autograd.numpy as anp
except ImportError:          # optional peer
    autograd = anp = None

_TORCH = []


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


