"""Derivatives of Python's builtins applied to arrays and lists: `sum`, `max`/`min` with one
argument or several, `.item()` and `.tolist()`. Each adjoint helper is linear in the cotangent it
carries, and each has a rule of its own (srcad/rules/runtime_rules.py) for second derivatives.
"""
import numpy as np

from .accumulate import tangent_list, zeros_like
from .broadcasting import as_cotangent, unbroadcast
from .values import _float_dtype, _is_seq, _is_zero


# ---- sum(xs, start) ------------------------------------------------------------------------
def sum_items_vjp(g, xs):
    """Cotangent of xs from that of builtins.sum(xs): every item (a list's entry, an array's row
    along the first axis) gets g."""
    if _is_zero(g):
        return g
    if _is_seq(xs):
        return [unbroadcast(g, x) for x in xs]
    shape = np.shape(xs)
    if hasattr(g, "shape") and not isinstance(g, (np.ndarray, np.generic)):   # a batch of tangents
        return np.broadcast_to(g, shape)
    return np.broadcast_to(np.asarray(g, dtype=np.result_type(_float_dtype(xs), np.asarray(g).dtype)), shape)


def sum_items_jvp(xs_dot, xs):
    """Tangent of builtins.sum(xs): the sum of the items' tangents (an array's along axis 0)."""
    if _is_seq(xs):
        return sum(tangent_list(xs_dot, xs))
    if _is_zero(xs_dot):
        return zeros_like(np.sum(xs, axis=0))
    return np.sum(xs_dot, axis=0)


# ---- max(xs), max(a, b, ...), and min ------------------------------------------------------
def _tie_share(x, ans, axis=None):
    hit = np.equal(x, ans)
    return hit / np.sum(hit, axis=axis)


def builtin_extreme_vjp(g, ans, x, others, k):
    """Cotangent of one argument of builtins max/min (k = -1: the first, else others[k]).
    With one argument the extreme is over its items; tied extremes share the cotangent evenly."""
    if _is_zero(g):
        return g
    if not others:
        xs = np.asarray(x)
        w = _tie_share(xs, ans, axis=0).astype(_float_dtype(xs))
        return as_cotangent(g * w, x) if _is_seq(x) else g * w
    args = (x,) + tuple(others)
    hits = [np.equal(a, ans) for a in args]
    share = hits[k + 1] / sum(hits)
    return unbroadcast(g * share, args[k + 1])


def builtin_extreme_jvp(d, ans, x, others, k):
    """The part of builtins max/min's tangent that argument k (-1: the first) contributes, d
    being that argument's tangent."""
    if _is_zero(d):
        return d
    if not others:
        xs = np.asarray(x)
        w = _tie_share(xs, ans, axis=0).astype(_float_dtype(xs))
        dots = np.asarray(tangent_list(d, x), dtype=w.dtype) if _is_seq(x) else d
        return np.sum(w * dots, axis=0)
    args = (x,) + tuple(others)
    hits = [np.equal(a, ans) for a in args]
    return d * (hits[k + 1] / sum(hits))


# ---- x.item(), x.tolist() ------------------------------------------------------------------
def _flat_position(shape, args):
    if not args:
        return 0
    if len(args) == 1 and not isinstance(args[0], tuple):
        return int(args[0]) % max(1, int(np.prod(shape, dtype=int)))
    pos = args[0] if len(args) == 1 else args
    return int(np.ravel_multi_index(tuple(int(p) % n for p, n in zip(pos, shape)), shape))


def item_vjp(g, x, args):
    """Cotangent of x from that of x.item(*args): g at that one entry, zeros elsewhere."""
    if _is_zero(g):
        return g
    shape = np.shape(x)
    out = np.zeros(int(np.prod(shape, dtype=int)), _float_dtype(x))
    out[_flat_position(shape, args)] = g
    return out.reshape(shape)


def item_jvp(x_dot, x, args):
    """Tangent of x.item(*args): that entry of x's tangent."""
    if _is_zero(x_dot):
        return 0.0
    return np.reshape(x_dot, (-1,))[_flat_position(np.shape(x), args)]


def tolist_vjp(g, x):
    """Cotangent of x from that of x.tolist(): a (nested) list of cotangents back into x's shape."""
    if _is_zero(g):
        return g
    shape = np.shape(x)
    out = np.zeros(shape, _float_dtype(x))
    if not shape:
        return np.asarray(g, out.dtype)

    def fill(dst, part, depth):
        for i, gi in enumerate(part):
            if _is_zero(gi):
                continue
            if depth + 1 < len(shape):
                fill(dst[i], gi, depth + 1)
            else:
                dst[i] = gi
    fill(out, g, 0)
    return out


def tolist_jvp(x_dot, x):
    """Tangent of x.tolist(): a (nested) list of the entries' tangents."""
    if np.ndim(x) == 0:
        return 0.0 if _is_zero(x_dot) else x_dot
    if _is_zero(x_dot):
        x_dot = zeros_like(x)
    if np.ndim(x) == 1:
        return [x_dot[i] for i in range(len(x))]
    return [tolist_jvp(x_dot[i], x[i]) for i in range(len(x))]
