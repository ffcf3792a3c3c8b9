"""Tensor products: np.tensordot, np.inner's axes, np.kron and np.cross."""
import numpy as np

from ..broadcasting import unbroadcast
from ..values import _is_zero
from .linear import _missing


# ---- np.tensordot, np.inner, np.kron ------------------------------------------------------------------
def _td_axes(axes, na, nb):
    if np.ndim(axes) == 0:
        return list(range(na - axes, na)), list(range(axes))
    aa, bb = axes
    aa = [aa] if np.ndim(aa) == 0 else list(aa)
    bb = [bb] if np.ndim(bb) == 0 else list(bb)
    return [x % na for x in aa], [x % nb for x in bb]


def tensordot_vjp_a(g, a, b, axes=2):
    """Cotangent of a in np.tensordot(a, b, axes)."""
    if _is_zero(g) or _is_zero(b):
        return 0.0
    na, nb = np.ndim(a), np.ndim(b)
    aa, bb = _td_axes(axes, na, nb)
    free_a = [k for k in range(na) if k not in aa]
    free_b = [k for k in range(nb) if k not in bb]
    part = np.tensordot(g, b, axes=(list(range(len(free_a), len(free_a) + len(free_b))), free_b))
    return np.transpose(part, np.argsort(free_a + [aa[bb.index(k)] for k in sorted(bb)]))


def tensordot_vjp_b(g, a, b, axes=2):
    """Cotangent of b in np.tensordot(a, b, axes)."""
    if _is_zero(g) or _is_zero(a):
        return 0.0
    na, nb = np.ndim(a), np.ndim(b)
    aa, bb = _td_axes(axes, na, nb)
    free_a = [k for k in range(na) if k not in aa]
    part = np.tensordot(a, g, axes=(free_a, list(range(len(free_a)))))
    order = [bb[aa.index(k)] for k in sorted(aa)] + [k for k in range(nb) if k not in bb]
    return np.transpose(part, np.argsort(order))


def inner_axes(a, b):
    """np.inner(a, b) as np.tensordot(a, b, axes): the last axis of each."""
    return ([np.ndim(a) - 1], [np.ndim(b) - 1]) if np.ndim(a) and np.ndim(b) else 0


def kron_vjp(g, a, b, which="a"):
    """Cotangent of a (or b) in np.kron(a, b) (operands of equal dimension)."""
    if _is_zero(g) or _is_zero(b if which == "a" else a):
        return 0.0
    sa, sb = np.shape(a), np.shape(b)
    d = max(len(sa), len(sb))       # np.kron pads the shorter shape with leading ones
    pa, pb = (1,) * (d - len(sa)) + tuple(sa), (1,) * (d - len(sb)) + tuple(sb)
    if (pa, pb) != (tuple(sa), tuple(sb)):
        out = kron_vjp(g, np.reshape(a, pa), np.reshape(b, pb), which)
        return np.reshape(out, sa if which == "a" else sb)
    gr = np.reshape(g, [n for pair in zip(sa, sb) for n in pair])
    la = "".join(chr(97 + k) for k in range(d))
    lb = "".join(chr(110 + k) for k in range(d))
    spec = "".join(x + y for x, y in zip(la, lb))
    if which == "a":
        return np.einsum(f"{spec},{lb}->{la}", gr, b)
    return np.einsum(f"{spec},{la}->{lb}", gr, a)


def kron_vjp_a(g, a, b):
    """Cotangent of a in np.kron(a, b) (linear in g and in b; a lends its shape)."""
    return kron_vjp(g, a, b, "a")


def kron_vjp_b(g, a, b):
    """Cotangent of b in np.kron(a, b) (linear in g and in a; b lends its shape)."""
    return kron_vjp(g, a, b, "b")


# ---- np.cross: 3-vectors, and 2-vectors (whose cross product is the scalar z component) ----------------
def _cross_dims(a, b):
    na, nb = np.shape(a)[-1], np.shape(b)[-1]
    if na == nb and na in (2, 3):
        return na
    raise _missing(f"np.cross of vectors of lengths {na} and {nb}")


def _perp(v):
    """For 2-vectors v, the vectors w with cross(u, v) = u . w: (v_1, -v_0)."""
    v = np.asarray(v)
    return np.stack([v[..., 1], -v[..., 0]], axis=-1)


def cross_vjp_a(g, a, b):
    """Cotangent of a in np.cross(a, b) (default axes)."""
    if _is_zero(g) or _is_zero(b):
        return 0.0
    if _cross_dims(a, b) == 3:
        return unbroadcast(np.cross(b, g), a)
    return unbroadcast(np.asarray(g)[..., None] * _perp(b), a)


def cross_vjp_b(g, a, b):
    """Cotangent of b in np.cross(a, b) (default axes): cross(a, b) = -cross(b, a)."""
    if _is_zero(g) or _is_zero(a):
        return 0.0
    if _cross_dims(a, b) == 3:
        return unbroadcast(np.cross(g, a), b)
    return unbroadcast(-np.asarray(g)[..., None] * _perp(a), b)


def _cross_axes(a, b, axisa, axisb, axisc, axis):
    if axis is not None:
        axisa = axisb = axisc = axis
    return axisa, axisb, axisc


def cross_vjp(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, which="a"):
    """Cotangent of a (which='a') or b of np.cross(a, b, axisa, axisb, axisc, axis): the vector axes
    moved last, the default-axes adjoint, and the axis moved back."""
    if _is_zero(g) or _is_zero(b if which == "a" else a):
        return 0.0
    axisa, axisb, axisc = _cross_axes(a, b, axisa, axisb, axisc, axis)
    am, bm = np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1)
    gm = np.moveaxis(g, axisc, -1) if _cross_dims(am, bm) == 3 else g
    if which == "a":
        return np.moveaxis(cross_vjp_a(gm, am, bm), -1, axisa)
    return np.moveaxis(cross_vjp_b(gm, am, bm), -1, axisb)


def cross_vjp_a_axes(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cotangent of a in np.cross with vector axes (linear in g and in b; a lends its shape)."""
    return cross_vjp(g, a, b, axisa, axisb, axisc, axis, "a")


def cross_vjp_b_axes(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cotangent of b in np.cross with vector axes (linear in g and in a; b lends its shape)."""
    return cross_vjp(g, a, b, axisa, axisb, axisc, axis, "b")


def cross_jvp(a, b, like, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """np.cross(a, b, ...) broadcast to the result `like`, zero when either operand is the zero tangent."""
    if _is_zero(a) or _is_zero(b):
        return 0.0
    return np.broadcast_to(np.cross(a, b, axisa, axisb, axisc, axis), np.shape(like))
