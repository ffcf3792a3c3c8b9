"""Operations that move, select or repeat elements (sort, take, tile, repeat, pad, diag, select,
split, partition, trace, append, delete, ...): each adjoint sends the cotangent back to the
elements it came from."""
import numpy as np

from ..broadcasting import unbroadcast
from ..values import _is_zero
from .linear import _missing


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
