"""Containers: items of a list's derivative, appends undone, and the adjoints of the functions
that join or split arrays (concatenate, stack, vstack/hstack, transpose)."""
from sys import getrefcount

import numpy as np

from .broadcasting import as_cotangent, unbroadcast
from .values import _is_map, _is_zero


def item(g, k):
    """Entry k of a container's derivative (zero stays zero)."""
    t = type(g)
    if t is list or t is tuple:     # the common case first: a tuple's cotangent
        return g[k]
    if _is_map(g):          # a dict's cotangent holds only the keys something reached
        return g.get(k, 0.0)
    return g if _is_zero(g) else g[k]



def item_tangent(v_dot, k, n):
    """The tangent of a container of n items whose item k has tangent v_dot (the others: zero)."""
    if _is_zero(v_dot):
        return v_dot
    out = [0.0] * n
    out[k] = v_dot
    return out



def last(xs_bar):
    """The cotangent of the last item appended to a list."""
    return xs_bar if _is_zero(xs_bar) else xs_bar[-1]



def drop_last(xs_bar):
    """A list's cotangent without its last item (undoing an append). Generated code (and only
    it) calls it as `xs_bar = rt.drop_last(xs_bar)`, rebinding the one name it passes: when that
    name is the list's only holder (no alias, no tape or container holding it: CPython's
    reference count, the test ndarray.resize makes) the item is popped in place, O(1), and the
    list building n appends is undone in O(n), not O(n^2); otherwise a shorter copy, which the
    other holders never see change."""
    if type(xs_bar) is list and getrefcount(xs_bar) <= _SOLE_HOLDER:
        xs_bar.pop()
        return xs_bar
    return xs_bar if _is_zero(xs_bar) else list(xs_bar[:-1])


def _sole_holder_count():
    """The reference count drop_last sees for a list that one local name of its caller holds."""
    seen = []

    def probe(xs_bar):
        seen.append(getrefcount(xs_bar))
        return xs_bar

    def caller():
        xs_bar = [0.0]
        xs_bar = probe(xs_bar)
        return xs_bar
    caller()
    return seen[0]


_SOLE_HOLDER = _sole_holder_count()



def appended(xs_dot, xs, v_dot):
    """The tangent of a list after xs.append(v) (a new list)."""
    base = [0.0] * (len(xs) - 1) if _is_zero(xs_dot) else list(xs_dot)
    return base + [v_dot]



def sum_list_vjp(g, xs):
    """Cotangents of the items of builtins.sum(xs)."""
    if _is_zero(g):
        return g
    return [unbroadcast(g, x) for x in xs]



def unstack(g, axis, arrays):
    """Cotangents of the pieces of np.stack(arrays, axis) (or of np.array(list))."""
    if _is_zero(g):
        return g
    if type(g) is np.ndarray and axis == 0 and g.dtype == np.float64 and g.ndim >= 2 and len(arrays) == len(g) and \
            all(type(a) is np.ndarray and a.dtype == np.float64 for a in arrays):
        return list(g.copy())       # the common case first: float64 rows (views of one copy that only they see)
    return [as_cotangent(np.take(g, k, axis=axis), a) for k, a in enumerate(arrays)]



def concatenate_vjp(g, arrays, axis=0):
    """Cotangents of the pieces of np.concatenate(arrays, axis)."""
    if _is_zero(g):
        return g
    ends = np.cumsum([np.shape(a)[axis] for a in arrays])[:-1]
    return np.split(g, ends, axis=axis)



def joined_vjp(g, tup, how):
    """Cotangents of the pieces of np.vstack(tup) (how='v') or np.hstack(tup) (how='h')."""
    if _is_zero(g):
        return g
    if how == "v":
        axis, sizes = 0, [np.atleast_2d(t).shape[0] for t in tup]
    else:
        axis = 0 if np.ndim(tup[0]) <= 1 else 1
        sizes = [np.shape(np.atleast_1d(t))[axis] for t in tup]
    parts = np.split(g, np.cumsum(sizes)[:-1], axis=axis)
    return [as_cotangent(np.reshape(p, np.shape(t)), t) for p, t in zip(parts, tup)]



def transpose_vjp(g, axes=None):
    """Cotangent of x from that of np.transpose(x, axes)."""
    if _is_zero(g):
        return g
    return np.transpose(g) if axes is None else np.transpose(g, np.argsort(axes))


# ---- np.r_[a, b, ...] and np.c_[a, b, ...] (items that are arrays or numbers) -------------------
def _joined_piece(a, how):
    """Item `a` as np.r_ (how='r': at least 1-D) or np.c_ (how='c': at least 2-D, a 1-D item a
    column) places it before joining along axis 0 ('r') or the last axis ('c')."""
    a = np.asarray(a)
    if how == "r":
        return a.reshape(1) if a.ndim == 0 else a
    if a.ndim == 0:
        return a.reshape(1, 1)
    return a.reshape(-1, 1) if a.ndim == 1 else a


def index_join_vjp(g, items, k, how):
    """The cotangent of item k of np.r_[items] (how='r') or np.c_[items] (how='c')."""
    if _is_zero(g):
        return g
    pieces = [_joined_piece(a, how) for a in items]
    axis = 0 if how == "r" else -1
    ends = np.cumsum([p.shape[axis] for p in pieces])[:-1]
    part = np.split(np.asarray(g), ends, axis=axis)[k]
    return as_cotangent(np.reshape(part, np.shape(items[k])), items[k])


def index_join_jvp(d, items, k, how):
    """The tangent of np.r_[items] / np.c_[items] from item k's tangent d (the others held)."""
    if _is_zero(d):
        return d
    pieces = [np.zeros(_joined_piece(a, how).shape) for a in items]
    pieces[k] = _joined_piece(np.broadcast_to(d, np.shape(items[k])), how).astype(float)
    return np.concatenate(pieces, axis=0 if how == "r" else -1)


# ---- `for row in Y: row /= s` (frontend/loop_items.py: the loop's item written in place) ------------
def items_are_views(seq, indexed=False):
    """Does writing into an item of `for t in seq` write into seq? Yes for the rows of an array
    of two or more axes (views) and for a list or tuple of arrays (the arrays themselves); no for
    the numbers of a 1-D array or a list (`t += 1` rebinds t only). `indexed`: the loop writes
    `t[j] = v`, which srcad follows as seq[i, j] = v, an array's write only."""
    if isinstance(seq, np.ndarray):
        return seq.ndim >= 2
    views = isinstance(seq, (list, tuple)) and len(seq) > 0 and all(
        isinstance(v, np.ndarray) and v.ndim >= 1 for v in seq)
    if views and indexed:
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            "`t[j] = v` on the item `t` of a loop over a list of arrays (the write changes the array the "
            "list holds)", hint="stack the arrays into one (np.stack) and loop over its rows, or build "
            "the changed array and store it back with `items[i] = new`")
    return views


def loop_item(v):
    """An item of a loop whose items are numbers, as a value of its own (`t += 1` rebinds it)."""
    return np.copy(v) if isinstance(v, np.ndarray) else v
