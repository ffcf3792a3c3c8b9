"""Dicts in differentiated code. The tape of item writes into a dict built inside the function:
a write may add a key, so what it replaced is either the old value or MISSING, and undoing it
removes the key. Loops over a value whose type the code does not show (a dict argument runs over
its keys), `sorted`, whose order the adjoint follows back, lists joined with `+` or repeated with
`*`, and dicts joined with `|`."""
from collections.abc import Mapping

import numpy as np

from .accumulate import add, tangent_list
from .broadcasting import as_cotangent, unbroadcast
from .values import MISSING, _is_zero


def saved_item(d, key):
    """What `d[key] = v` replaces, to be put back by restore_item: a copy of the old value, or
    MISSING. On anything but a dict, a copy of d[key] (as for arrays and lists)."""
    if isinstance(d, dict):
        return np.copy(d[key]) if key in d and isinstance(d[key], np.ndarray) else d.get(key, MISSING)
    return np.copy(d[key])


def restore_item(d, key, old):
    """Undo `d[key] = v` in place: put the old value back, or remove a key the write added."""
    if old is MISSING:
        if isinstance(d, dict):
            d.pop(key, None)
        return
    d[key] = old


def loop_sequence(x):
    """What `for t in x` runs over when srcad cannot tell x's type from the code (an argument, a
    subscript, an attribute): a dict's (any mapping's) keys, as a list taken before the loop (keys
    carry no derivative); any other sequence, itself."""
    return list(x) if isinstance(x, Mapping) else x


def loop_sequence_vjp(g, x):
    """The cotangent of x from that of loop_sequence(x): none through a dict's keys."""
    return 0.0 if isinstance(x, Mapping) else g


def loop_sequence_jvp(x_dot, x):
    """The tangent of loop_sequence(x): zeros for a dict's keys, else x's own tangent."""
    return [0.0] * len(x) if isinstance(x, Mapping) else x_dot


def _order(x, key, reverse):
    """The positions of x's items in the order sorted(x, key=key, reverse=reverse) gives them
    (Python's sort is stable, so sorting the positions by the same key gives the same order)."""
    items = list(x)
    pick = (lambda i: items[i]) if key is None else (lambda i: key(items[i]))
    return sorted(range(len(items)), key=pick, reverse=reverse)


def sorted_vjp(g, x, key=None, reverse=False):
    """The cotangent of x from that of sorted(x): each item's back at its place (a dict's keys
    carry none)."""
    if isinstance(x, dict) or _is_zero(g):
        return 0.0
    out = [0.0] * len(x)
    for j, i in enumerate(_order(x, key, reverse)):
        out[i] = g[j]
    if isinstance(x, np.ndarray):
        return np.array([np.broadcast_to(v, x.shape[1:]) for v in out], dtype=np.result_type(x.dtype, float))
    return as_cotangent(out, list(x))


def sorted_jvp(x_dot, x, key=None, reverse=False):
    """The tangent of sorted(x): the items' tangents in the sorted order (zeros for a dict's keys)."""
    if isinstance(x, dict):
        return [0.0] * len(x)
    parts = tangent_list(x_dot, list(x))
    return [parts[i] for i in _order(x, key, reverse)]


def concat(a, b):
    """a + b for lists or tuples the code shows are sequences (`xs + [v]`)."""
    return a + b


def concat_vjp(g, a, b, k):
    """The cotangent of a (k = 0) or b (k = 1) from that of a + b: its own part of g."""
    if _is_zero(g):
        return g
    if not isinstance(g, (list, tuple)):      # a + b of arrays or numbers: the sum's rule
        return unbroadcast(g, (a, b)[k])
    return list(g[:len(a)]) if k == 0 else list(g[len(a):])


def concat_jvp(d, a, b, k):
    """The part of (a + b)'s tangent that a's (k = 0) or b's (k = 1) tangent d gives."""
    if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
        return d        # [1.0, 2.0] + x with an array x: NumPy adds them, entry by entry
    own = tangent_list(d, list((a, b)[k]))
    zeros = tangent_list(None, list((a, b)[1 - k]))
    return own + zeros if k == 0 else zeros + own


def _repeats(xs, n):
    """Is xs * n a repetition (a list or tuple times an integer), not NumPy's product?"""
    return isinstance(xs, (list, tuple)) and isinstance(n, (int, np.integer)) and not isinstance(n, bool)


def repeat(xs, n):
    """xs * n where the code shows xs is a list or tuple (`[v] * n`); NumPy's product when n is
    an array (`[a, b] * z`)."""
    return xs * n


def repeat_vjp(g, xs, n):
    """The cotangent of xs from that of xs * n: the n copies' cotangents added up (for NumPy's
    product, g * n brought back to xs's shape)."""
    if _is_zero(g):
        return g
    if not _repeats(xs, n):
        return unbroadcast(g * n, xs)
    m, out = len(xs), 0.0
    for j in range(n):
        out = add(out, list(g[j * m:(j + 1) * m]))
    return out


def repeat_vjp_times(g, xs, n):
    """The cotangent of n from that of xs * n: none for a repetition, else the product's."""
    if _is_zero(g) or _repeats(xs, n):
        return 0.0
    return unbroadcast(g * np.asarray(xs), n)


def repeat_jvp(d, xs, n):
    """The tangent of xs * n from xs's: repeated (for NumPy's product, d * n)."""
    if not _repeats(xs, n):
        return d if _is_zero(d) else d * n
    return tangent_list(d, list(xs)) * n


def repeat_jvp_times(d, xs, n):
    """The tangent of xs * n from n's: none for a repetition, else d * xs."""
    if _is_zero(d) or _repeats(xs, n):
        return 0.0
    return d * np.asarray(xs)


def union_vjp(g, x, y, k):
    """The cotangent of x (k = 0) or y (k = 1) from that of x | y: the keys whose value came from
    it (y's value wins at a key both have). For integers and masks, none."""
    if _is_zero(g) or not isinstance(x, dict):
        return 0.0 if not isinstance(x, dict) else g
    own = x if k == 0 else y
    return {key: g[key] for key in own if key in g and (k == 1 or key not in y)}


def union_jvp(d, x, y, k):
    """The part of (x | y)'s tangent that x's (k = 0) or y's (k = 1) tangent d gives."""
    if _is_zero(d) or not isinstance(x, dict):
        return 0.0
    own = x if k == 0 else y
    return {key: d[key] for key in own if key in d and (k == 1 or key not in y)}
