"""Linear filters along an axis: np.gradient's finite differences, np.convolve and
scipy.signal.convolve."""
import numpy as np
import scipy.signal

from ..values import _is_zero


# ---- np.gradient: linear in f along each axis ------------------------------------------------------------
def _gradient_axes(f, axis):
    n = np.ndim(f)
    if axis is None:
        return list(range(n)), False
    if isinstance(axis, (tuple, list)):
        return [a % n for a in axis], len(axis) == 1
    return [axis % n], True


def _gradient_matrix(n, spacing, edge_order):
    """M with np.gradient(v, spacing) == M @ v for vectors v of length n."""
    return np.gradient(np.eye(n), *spacing, axis=0, edge_order=edge_order)


def _spacings(varargs, k, naxes):
    if not varargs:
        return ()
    if len(varargs) == 1:
        return (varargs[0],)
    return (varargs[k],) if len(varargs) == naxes else varargs


def gradient_vjp(g, f, varargs=(), axis=None, edge_order=1):
    """Cotangent of f from that of np.gradient(f, *varargs, axis=axis, edge_order=edge_order): each
    axis's difference operator transposed (its matrix is np.gradient of the identity)."""
    if _is_zero(g):
        return g
    axes, single = _gradient_axes(f, axis)
    gs = [g] if single or len(axes) == 1 and not isinstance(g, (list, tuple)) else list(g)
    out = np.zeros(np.shape(f))
    for k, (ax, gk) in enumerate(zip(axes, gs)):
        if _is_zero(gk):
            continue
        m = _gradient_matrix(np.shape(f)[ax], _spacings(varargs, k, len(axes)), edge_order)
        out = out + np.moveaxis(np.tensordot(m.T, np.moveaxis(gk, ax, 0), axes=1), 0, ax)
    return out


def gradient_jvp(d, f, varargs=(), axis=None, edge_order=1):
    """np.gradient of the tangent d (zero stays zero)."""
    if _is_zero(d):
        axes, single = _gradient_axes(f, axis)
        return 0.0 if single or len(axes) == 1 else [0.0] * len(axes)
    return np.gradient(d, *varargs, axis=axis, edge_order=edge_order)


# ---- np.convolve and scipy.signal.convolve ----------------------------------------------------------------
def _full_cotangent(g, a, v, kind):
    """g placed in a zero array of the full convolution's shape, at the offset the mode cut."""
    g = np.asarray(g)
    full = tuple(p + q - 1 for p, q in zip(np.shape(a), np.shape(v))) if np.ndim(a) else ()
    if g.shape == full:
        return g
    out = np.zeros(full, dtype=np.result_type(g, float))
    start = tuple((n - m) // 2 for n, m in zip(full, g.shape))
    out[tuple(slice(s, s + m) for s, m in zip(start, g.shape))] = g
    return out


def _flipped(v):
    return np.flip(np.asarray(v))


def convolve_vjp_a(g, a, v, mode="full", kind="np"):
    """Cotangent of a in convolve(a, v, mode) (linear in g and in v; a lends its shape): the
    full-shaped cotangent convolved with v flipped, its 'valid' part."""
    if _is_zero(g) or _is_zero(v):
        return 0.0
    gf = _full_cotangent(g, a, v, kind)
    if kind == "np":
        return np.convolve(gf, _flipped(v), "valid")
    return scipy.signal.convolve(gf, _flipped(v), "valid")


def convolve_vjp_v(g, a, v, mode="full", kind="np"):
    """Cotangent of v in convolve(a, v, mode) (linear in g and in a; v lends its shape)."""
    if _is_zero(g) or _is_zero(a):
        return 0.0
    gf = _full_cotangent(g, a, v, kind)
    if kind == "np":
        return np.convolve(gf, _flipped(a), "valid")
    return scipy.signal.convolve(gf, _flipped(a), "valid")


def convolve_jvp(a, v, mode="full", kind="np"):
    """convolve(a, v, mode) with either operand a tangent (zero stays zero)."""
    if _is_zero(a) or _is_zero(v):
        return 0.0
    if kind == "np":
        return np.convolve(a, v, mode)
    return scipy.signal.convolve(a, v, mode)
