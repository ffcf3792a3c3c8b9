"""Adjoint helpers of array constructors and shape operations (rules: srcad/rules/numpy_rules.py).

Every helper here is linear in the cotangent (or tangent) it carries; its other arguments lend
only shapes, axes and counts. So the rule of each helper is the helper itself applied to the
tangent of that first argument (srcad/rules/runtime_rules.py), and Hessians go through.
"""
import numpy as np
import scipy.signal
import scipy.sparse as sp

from ..errors import MissingRuleError
from .broadcasting import unbroadcast
from .values import _is_zero


def _missing(what):
    return MissingRuleError(what)


# ---- linspace / geomspace / arange: values that move with their end points ------------------------
def _ramp(num, endpoint, axis, ndim):
    """linspace(0, 1, num, endpoint) shaped to broadcast along `axis` of a result of ndim dims."""
    t = np.linspace(0.0, 1.0, num, endpoint=endpoint)
    shape = [1] * ndim
    shape[axis % ndim] = len(t)
    return t.reshape(shape)


def _no_retstep(retstep):
    if retstep:
        raise _missing("np.linspace(..., retstep=True) (compute the step as (stop - start) / (num - 1))")


def linspace_vjp(g, start, stop, num=50, endpoint=True, retstep=False, axis=0, which="start"):
    """Cotangent of `start` (or `stop`) from that of np.linspace(start, stop, num, endpoint, axis=axis):
    the output is start + (stop - start) * t with t running from 0 to 1."""
    _no_retstep(retstep)
    if _is_zero(g):
        return g
    g = np.asarray(g)
    t = _ramp(num, endpoint, axis, g.ndim)
    part = np.sum(g * (t if which == "stop" else 1.0 - t), axis=axis % g.ndim)
    return unbroadcast(part, start if which == "start" else stop)


def linspace_jvp(v_dot, num=50, endpoint=True, retstep=False, axis=0, which="start", like=None):
    """The part of np.linspace's tangent that comes from the tangent v_dot of `start` (or `stop`);
    `like` is the result."""
    _no_retstep(retstep)
    if _is_zero(v_dot):
        return v_dot
    ndim = np.ndim(like)
    t = _ramp(num, endpoint, axis, ndim)
    v = np.expand_dims(v_dot, axis % ndim) if np.ndim(v_dot) else v_dot
    return np.broadcast_to(v * (t if which == "stop" else 1.0 - t), np.shape(like))


def arange_vjp(g, stop, which="start"):
    """Cotangent of `start` (which='start') or `step` of np.arange(start, stop, step): the values
    are start + k * step. With one argument, np.arange(stop), the values do not move with it."""
    if _is_zero(g) or stop is None:
        return 0.0
    g = np.asarray(g)
    return np.sum(g) if which == "start" else np.sum(g * np.arange(g.shape[0]))


def arange_jvp(v_dot, stop, which="start", like=None):
    """Tangent of np.arange(start, stop, step) from that of `start` or `step`."""
    if _is_zero(v_dot) or stop is None:
        return np.zeros(np.shape(like))
    if which == "start":
        return np.broadcast_to(v_dot, np.shape(like)) * 1.0
    return v_dot * np.arange(np.shape(like)[0])


# ---- gathers ---------------------------------------------------------------------------------------
def bincount_vjp(g, x):
    """Cotangent of `weights` in np.bincount(x, weights): each weight gets its bin's cotangent."""
    return g if _is_zero(g) else np.asarray(g)[x]


def one_if_none(b):
    """Optional weights: b, or 1.0 when none were given."""
    return 1.0 if b is None else b


def _axis_or_flat(x, axis):
    return (np.ravel(x), 0) if axis is None else (x, axis)


def sort_vjp(g, x, axis=-1):
    """Cotangent of x from that of np.sort(x, axis): each entry back to where it came from."""
    if _is_zero(g):
        return g
    xs, ax = _axis_or_flat(x, axis)
    order = np.argsort(xs, axis=ax, kind="stable")
    out = np.zeros(np.shape(xs), np.result_type(g, float))
    np.put_along_axis(out, order, np.reshape(g, np.shape(xs)), axis=ax)
    return np.reshape(out, np.shape(x))


def sort_jvp(x_dot, x, axis=-1):
    """Tangent of np.sort(x, axis): the tangents in sorted order."""
    if _is_zero(x_dot):
        return x_dot
    xs, ax = _axis_or_flat(x, axis)
    order = np.argsort(xs, axis=ax, kind="stable")
    return np.take_along_axis(np.reshape(np.broadcast_to(x_dot, np.shape(x)), np.shape(xs)), order, axis=ax)


def take_indices(a, indices, axis=None, mode="raise"):
    """The positions np.take(a, indices, axis, mode=mode) reads: indices wrapped or clipped into
    range for mode 'wrap'/'clip' (as given for 'raise')."""
    if mode == "raise":
        return indices
    n = np.size(a) if axis is None else np.shape(a)[axis]
    idx = np.asarray(indices)
    return np.mod(idx, n) if mode == "wrap" else np.clip(idx, 0, n - 1)


def take_vjp(g, a, indices, axis=None, mode="raise"):
    """Cotangent of a from that of np.take(a, indices, axis, mode=mode): repeated indices add up."""
    if _is_zero(g):
        return g
    indices = take_indices(a, indices, axis, mode)
    out = np.zeros(np.size(a) if axis is None else np.shape(a), np.result_type(g, float))
    if axis is None:
        np.add.at(out, np.ravel(indices), np.ravel(g))
        return out.reshape(np.shape(a))
    axis = axis % np.ndim(a)
    moved = np.moveaxis(out, axis, 0)          # a view: adding into it fills out
    gm = np.reshape(g, np.shape(a)[:axis] + np.shape(indices) + np.shape(a)[axis + 1:])
    gm = np.moveaxis(gm.reshape(np.shape(a)[:axis] + (-1,) + np.shape(a)[axis + 1:]), axis, 0)
    np.add.at(moved, np.ravel(indices), gm)
    return out


def take_along_axis_vjp(g, arr, indices, axis):
    """Cotangent of arr from that of np.take_along_axis(arr, indices, axis) (repeats add up)."""
    if _is_zero(g):
        return g
    out = np.zeros(np.shape(arr), np.result_type(g, float))
    if axis is None:
        np.add.at(out.reshape(-1), np.ravel(indices), np.ravel(g))
        return out
    axis = axis % np.ndim(arr)
    idx = list(np.ix_(*[np.arange(n) for n in np.shape(indices)]))
    idx[axis] = indices
    np.add.at(out, tuple(np.broadcast_arrays(*idx)), np.broadcast_to(g, np.shape(indices)))
    return out


def tile_vjp(g, a, reps):
    """Cotangent of a from that of np.tile(a, reps): the tiles summed."""
    if _is_zero(g):
        return g
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    shape = np.shape(a)
    d = max(len(shape), len(reps))
    shape = (1,) * (d - len(shape)) + tuple(shape)
    reps = (1,) * (d - len(reps)) + reps
    split = [n for pair in zip(reps, shape) for n in pair]
    summed = np.reshape(g, split).sum(axis=tuple(range(0, 2 * d, 2)))
    return np.reshape(summed, np.shape(a))


def repeat_vjp(g, a, repeats, axis=None):
    """Cotangent of a from that of np.repeat(a, repeats, axis): the copies summed."""
    if _is_zero(g):
        return g
    flat = axis is None
    src = np.ravel(a) if flat else a
    axis = 0 if flat else axis % np.ndim(a)
    n = np.shape(src)[axis]
    counts = np.broadcast_to(repeats, (n,))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    g = np.asarray(g)
    summed = np.add.reduceat(g, starts, axis=axis) if g.shape[axis] else np.zeros(np.shape(src))
    summed = np.where(np.reshape(counts > 0, [-1 if k == axis else 1 for k in range(g.ndim)]), summed, 0.0)
    return np.reshape(summed, np.shape(a))


def _pad_width(pad_width, ndim):
    return np.broadcast_to(np.asarray(pad_width, dtype=int).reshape(-1, 2) if np.size(pad_width) > 1
                           else np.full((1, 2), int(np.ravel(pad_width)[0])), (ndim, 2))


def _check_pad(mode):
    if mode != "constant":
        raise _missing(f"np.pad(..., mode={mode!r}) (only mode='constant' has a rule)")


def pad_vjp(g, array, pad_width, mode="constant"):
    """Cotangent of array from that of np.pad(array, pad_width) (constant mode): the middle."""
    _check_pad(mode)
    if _is_zero(g):
        return g
    pw = _pad_width(pad_width, np.ndim(array))
    return np.asarray(g)[tuple(slice(lo, lo + n) for (lo, _), n in zip(pw, np.shape(array)))]


def pad_jvp(a_dot, pad_width, mode="constant"):
    """Tangent of np.pad(array, pad_width, constant_values=c) along the array's tangent."""
    _check_pad(mode)
    return np.pad(a_dot, pad_width)


def diag_vjp(g, v, k=0):
    """Cotangent of v from that of np.diag(v, k) (either direction: 1-D to 2-D or back)."""
    if _is_zero(g):
        return g
    if np.ndim(v) == 1:
        return np.diagonal(g, k).copy()
    out = np.zeros(np.shape(v), np.result_type(g, float))
    rows, cols = np.shape(v)
    i = np.arange(len(np.ravel(g)))
    out[i + max(-k, 0), i + max(k, 0)] = g
    return out


def diagonal_vjp(g, a, offset=0, axis1=0, axis2=1):
    """Cotangent of a from that of np.diagonal(a, offset, axis1, axis2)."""
    if _is_zero(g):
        return g
    out = np.zeros(np.shape(a), np.result_type(g, float))
    view = np.moveaxis(out, (axis1, axis2), (-2, -1))
    n = np.shape(g)[-1]
    i = np.arange(n)
    view[..., i + max(-offset, 0), i + max(offset, 0)] = g
    return out


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


def select_vjp(g, condlist, choicelist):
    """Cotangents of np.select(condlist, choicelist, default)'s choices: each where it was picked."""
    if _is_zero(g):
        return g
    taken = np.zeros(np.shape(g), bool)
    out = []
    for c in condlist:
        pick = np.logical_and(c, ~taken)
        taken |= pick
        out.append(np.where(pick, g, 0.0))
    return [unbroadcast(o, ch) for o, ch in zip(out, choicelist)]


def select_default_vjp(g, condlist, default):
    """Cotangent of np.select's default: where no condition holds."""
    if _is_zero(g):
        return g
    return unbroadcast(np.where(np.any(np.broadcast_arrays(*condlist), axis=0), 0.0, g), default)


def split_vjp(g, ans, axis=0):
    """Cotangent of the array from those of the pieces of np.split / np.array_split."""
    if _is_zero(g):
        return g
    parts = [np.zeros(np.shape(p)) if _is_zero(gp) else gp for gp, p in zip(g, ans)]
    return np.concatenate(parts, axis=axis)


def kron_vjp_a(g, a, b):
    """Cotangent of a in np.kron(a, b) (linear in g and in b; a lends its shape)."""
    return kron_vjp(g, a, b, "a")


def kron_vjp_b(g, a, b):
    """Cotangent of b in np.kron(a, b) (linear in g and in a; b lends its shape)."""
    return kron_vjp(g, a, b, "b")


def rollaxis_vjp(g, a, axis, start=0):
    """Cotangent of a from that of np.rollaxis(a, axis, start): the axis moved back."""
    if _is_zero(g):
        return g
    n = np.ndim(a)
    axis, start = axis % n, start % (n + 1) if start < 0 else start
    dest = start if start <= axis else start - 1
    return np.moveaxis(g, dest, axis)


def partition_vjp(g, x, kth, axis=-1):
    """Cotangent of x from that of np.partition(x, kth, axis)."""
    if _is_zero(g):
        return g
    xs, ax = _axis_or_flat(x, axis)
    order = np.argpartition(xs, kth, axis=ax)
    out = np.zeros(np.shape(xs), np.result_type(g, float))
    np.put_along_axis(out, order, np.reshape(g, np.shape(xs)), axis=ax)
    return np.reshape(out, np.shape(x))


def partition_jvp(x_dot, x, kth, axis=-1):
    """Tangent of np.partition(x, kth, axis)."""
    if _is_zero(x_dot):
        return x_dot
    xs, ax = _axis_or_flat(x, axis)
    order = np.argpartition(xs, kth, axis=ax)
    return np.take_along_axis(np.reshape(np.broadcast_to(x_dot, np.shape(x)), np.shape(xs)), order, axis=ax)


def stacked_vjp(g, tup, how):
    """Cotangents of the pieces of np.dstack(tup) (how='d') or np.column_stack(tup) (how='c')."""
    if _is_zero(g):
        return g
    if how == "d":
        axis, parts = 2, [np.atleast_3d(t) for t in tup]
    else:
        axis, parts = 1, [np.reshape(t, (-1, 1)) if np.ndim(t) < 2 else t for t in tup]
    pieces = np.split(g, np.cumsum([np.shape(p)[axis] for p in parts])[:-1], axis=axis)
    return [np.reshape(p, np.shape(t)) for p, t in zip(pieces, tup)]


# ---- linear shape operations of a derivative that may be the zero 0.0 ----------------------------------
def lin(op, d, *args):
    """op(d, *args) for a NumPy shape operation op that is linear in d (np.swapaxes,
    np.flip, np.tril, np.moveaxis, np.take, ...); the zero derivative 0.0 (a cotangent nothing
    reached, say on a branch not taken) stays 0.0: op of it would fail for want of axes, and
    is zero anyway. Rules whose templates pass a derivative straight into such an op go through
    here, so no shape rule meets a bare 0.0. Only for ops whose other arguments are discrete (axes,
    counts, indices, shapes): lin's own rule carries no derivative through them."""
    if _is_zero(d):
        return 0.0
    if sp.issparse(d) and op is np.trace:       # scipy's trace takes the offset only (2-D: the axes swap it)
        offset, axis1, axis2 = (tuple(args) + (0, 0, 1)[len(args):])[:3]
        return d.trace(offset if axis1 % 2 == 0 and axis2 % 2 == 1 else -offset)
    if sp.issparse(d) and hasattr(d, getattr(op, "__name__", "")):   # a sparse tangent: scipy's own method
        return getattr(d, op.__name__)(*args)                          # (np.trace(A) fails on one)
    return op(d, *args)


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


# ---- np.trace with offset and axes -----------------------------------------------------------------
def trace_vjp(g, x, offset=0, axis1=0, axis2=1):
    """Cotangent of x from that of np.trace(x, offset, axis1, axis2): g on the chosen diagonal."""
    if _is_zero(g):
        return g
    g = np.asarray(g)
    out = np.moveaxis(np.zeros(np.shape(x), dtype=np.result_type(g, float)), (axis1, axis2), (-2, -1))
    m = np.diagonal(out, offset, -2, -1).shape[-1]
    rows, cols = np.arange(m) + max(-offset, 0), np.arange(m) + max(offset, 0)
    out[..., rows, cols] = g[..., None]
    return np.moveaxis(out, (-2, -1), (axis1, axis2))


# ---- np.append ----------------------------------------------------------------------------------------
def append_vjp(g, arr, values, axis=None, which="arr"):
    """Cotangent of arr (or values) of np.append(arr, values, axis)."""
    if _is_zero(g):
        return g
    g = np.asarray(g)
    if axis is None:
        n = np.size(arr)
        part = g[:n] if which == "arr" else g[n:]
        return np.reshape(part, np.shape(arr if which == "arr" else values))
    n = np.shape(arr)[axis]
    ax = axis % g.ndim
    idx = [slice(None)] * g.ndim
    idx[ax] = slice(None, n) if which == "arr" else slice(n, None)
    return g[tuple(idx)]


def append_jvp(d, arr, values, axis=None, which="arr"):
    """The part of np.append's tangent that comes from the tangent d of arr (or of values)."""
    if _is_zero(d):
        return d
    if which == "arr":
        return np.append(d, np.zeros(np.shape(values)), axis)
    return np.append(np.zeros(np.shape(arr)), d, axis)


def delete_vjp(g, arr, obj, axis=None):
    """Cotangent of arr of np.delete(arr, obj, axis): g back at the positions np.delete keeps, zero
    at the deleted ones (for axis None, arr read flat, as NumPy does)."""
    if _is_zero(g):
        return g
    shape = np.shape(arr)
    if axis is None:
        out = np.zeros(int(np.prod(shape)), dtype=np.result_type(g, float))
        out[np.delete(np.arange(out.size), obj)] = g
        return out.reshape(shape)
    ax = axis % len(shape)
    out = np.zeros(shape, dtype=np.result_type(g, float))
    idx = [slice(None)] * len(shape)
    idx[ax] = np.delete(np.arange(shape[ax]), obj)
    out[tuple(idx)] = g
    return out


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


# ---- np.add.at / np.subtract.at: written as y[...] = add_at_value(y, idx, v) (frontend/inplace.py) ----------
def add_at_value(y, idx, v, op="add"):
    """A copy of y with v added (op='subtract': subtracted) at idx, repeated indices accumulated."""
    out = np.array(y, copy=True)
    (np.subtract if op == "subtract" else np.add).at(out, idx, v)
    return out


def add_at_vjp_v(g, idx, v, op="add"):
    """Cotangent of v in add_at_value(y, idx, v, op): g read at idx (each repeat its own), to v's shape."""
    if _is_zero(g):
        return g
    part = unbroadcast(np.asarray(g)[idx], v)
    return -part if op == "subtract" else part


def add_at_jvp_v(d, like, idx, op="add"):
    """The tangent of add_at_value from the tangent d of v: zeros shaped like the result, d added at idx."""
    if _is_zero(d):
        return d
    return add_at_value(np.zeros(np.shape(like), dtype=np.result_type(d, float)), idx, d, op)
