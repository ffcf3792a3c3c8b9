"""Central finite differences in float64: the independent reference for every gradient test."""
import numpy as np
import scipy.sparse as sp


def _flat_values(x):
    """A float64 copy of x's differentiable values (stored values for sparse) and a rebuild."""
    if sp.issparse(x):
        data = np.array(x.data, dtype=np.float64)

        def rebuild(v):
            y = x.copy()
            y.data = v.astype(x.dtype, copy=False).reshape(x.data.shape)
            return y
        return data.ravel(), rebuild, lambda g: x.__class__(g)
    if isinstance(x, (float, int, np.floating)) and not isinstance(x, bool):
        return np.array([float(x)]), lambda v: float(v[0]), None
    arr = np.asarray(x, dtype=np.float64)
    return arr.ravel().copy(), lambda v: v.reshape(arr.shape).copy(), None


def numerical_grad(f, args, wrt=0, eps=1e-6):
    """d f(*args) / d args[wrt] by central differences; for sparse args, one entry per stored value."""
    args = list(args)
    flat, rebuild, _ = _flat_values(args[wrt])
    g = np.zeros_like(flat)
    for k in range(flat.size):
        hi, lo = flat.copy(), flat.copy()
        hi[k] += eps
        lo[k] -= eps
        args[wrt] = rebuild(hi)
        fp = float(np.asarray(f(*args), dtype=np.float64).sum())
        args[wrt] = rebuild(lo)
        fm = float(np.asarray(f(*args), dtype=np.float64).sum())
        g[k] = (fp - fm) / (2 * eps)
    return g


def grad_values(g):
    """The values of a srcad gradient as a flat float64 array (stored values for sparse)."""
    if sp.issparse(g):
        return np.asarray(g.data, dtype=np.float64).ravel()
    if hasattr(g, "todense") and hasattr(g, "indices"):  # srcad.RowSparse
        return np.asarray(g.todense(), dtype=np.float64).ravel()
    return np.asarray(g, dtype=np.float64).ravel()


def assert_grad_close(f, args, got, wrt=0, rtol=1e-5, atol=1e-6, eps=1e-6):
    """Assert that srcad's gradient `got` of f w.r.t. args[wrt] matches central differences."""
    want = numerical_grad(f, args, wrt, eps)
    have = grad_values(got)
    assert have.shape == want.shape, f"gradient has {have.size} values, expected {want.size}"
    np.testing.assert_allclose(have, want, rtol=rtol, atol=atol)
