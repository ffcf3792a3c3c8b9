"""What generated derivative code calls. Nothing here imports the transformer.

Zero cotangents and tangents are represented by the Python float 0.0 until something real is
added to them, so a value that receives no derivative costs nothing. Every helper here that
the generated adjoint calls has a rule of its own (srcad/rules/runtime_rules.py), so the
adjoint can be differentiated again (Hessians are forward mode over the emitted adjoint).
"""
import numbers
import sys

import numpy as np
import scipy.sparse as sp

from .. import _kernels
from .rowsparse import RowSparse

__all__ = ["RowSparse", "add", "unbroadcast", "finalize"]


_ZERO_TYPES = (float, np.float64, np.float32, np.float16, int)


def _is_zero(v):
    """The zero derivative: 0.0 (what generated code starts from), None, or a scalar 0 that a
    template computed from it (0.0 * y for a NumPy scalar y is np.float64(0.0), which has lost the
    shape the derivative should have; every helper treats it as the symbolic zero)."""
    return v is None or (type(v) in _ZERO_TYPES and v == 0)


def _is_seq(v):
    return isinstance(v, (list, tuple))


def _is_map(v):
    """A dict argument (a pytree node): its derivative is a dict with (some of) its keys."""
    return isinstance(v, dict)


def _rebuild(x, items):
    """A container of x's type (list, tuple, namedtuple) holding items."""
    return type(x)(*items) if hasattr(type(x), "_fields") else type(x)(items)


def _is_namedtuple(v):
    return isinstance(v, tuple) and hasattr(type(v), "_fields")


_FLOAT_DTYPES = {}      # dtype -> the float dtype of its derivatives (a few entries)


def _float_dtype(x):
    dt = x.dtype if type(x) is np.ndarray else np.result_type(x)
    out = _FLOAT_DTYPES.get(dt)
    if out is None:
        out = _FLOAT_DTYPES[dt] = dt if np.issubdtype(dt, np.floating) or np.issubdtype(dt, np.complexfloating) \
            else np.dtype(np.float64)
    return out


# ---- accumulation --------------------------------------------------------------------------
def _refs_of_a_local():
    """sys.getrefcount of an array inside a runtime helper when the only other reference is
    the caller's local variable (measured, not assumed: it differs between Python versions)."""
    def helper(a):
        return sys.getrefcount(a)

    def caller():
        local = np.empty(1)
        return helper(local)
    return caller()


_SOLE = _refs_of_a_local()


def _sole(a, refs):
    """Is the array a, passed to a runtime helper, referenced only by the caller's variable (and
    not a view of, or viewed by, another array)? Then the helper may update it in place: no
    other name can observe the change. `refs` is sys.getrefcount(a) taken in that helper."""
    return type(a) is np.ndarray and refs <= _SOLE and _kernels.unshared(a) and a.flags.writeable


_SCALARS = {float, int, np.float64, np.float32}


def add(a, b):
    """a + b for derivatives: zeros, arrays, lists of derivatives, RowSparse, scipy sparse.
    An array that only the caller's variable holds is updated in place (no new allocation)."""
    refs = sys.getrefcount(a)       # first, before anything else refers to a
    if _is_zero(a):
        return b
    if _is_zero(b):
        return a
    if type(a) in _SCALARS and type(b) in _SCALARS:
        return a + b
    if type(b) is np.ndarray and _sole(a, refs) and b.dtype == a.dtype and b.shape == a.shape:
        a += b
        return a
    if _sole(a, refs) and isinstance(b, (np.ndarray, np.generic, float)) and \
            np.result_type(a, b) == a.dtype and np.broadcast_shapes(np.shape(b), a.shape) == a.shape:
        a += b
        return a
    if _is_seq(a) or _is_seq(b):
        return [add(u, v) for u, v in zip(a, b)]
    if _is_map(a) or _is_map(b):     # keys missing from one side are zeros there
        out = dict(a)
        for k, v in b.items():
            out[k] = add(out[k], v) if k in out else v
        return out
    if isinstance(a, RowSparse) or isinstance(b, RowSparse):
        if isinstance(a, RowSparse) and isinstance(b, RowSparse):
            return RowSparse(np.concatenate([a.indices, b.indices]),
                             np.concatenate([a.values, b.values]), a.shape)
        rs, dense = (a, b) if isinstance(a, RowSparse) else (b, a)
        acc = np.array(dense, dtype=np.result_type(dense, rs.values), copy=True)
        return _kernels.scatter_add_rows_into(acc, rs.indices, rs.values)
    if sp.issparse(a) or sp.issparse(b):
        from .sparse_ops import sparse_add
        return sparse_add(a, b)
    return a + b


_DENSE = (np.ndarray, np.generic, float, int)


def unbroadcast(g, x):
    """Sum the cotangent g down to the shape of x (undoes NumPy broadcasting)."""
    tg = type(g)
    if tg is np.ndarray:
        if type(x) is np.ndarray and g.shape == x.shape:
            return g
    elif tg is float or tg is np.float64:
        tx = type(x)
        if tx is float or tx is np.float64 or tx is np.ndarray and x.ndim == 0:
            return g
    if _is_zero(g):
        return g
    if not (isinstance(g, _DENSE) and isinstance(x, _DENSE)) and (
            _is_seq(x) or _is_map(x) or sp.issparse(x) or sp.issparse(g)):
        if sp.issparse(x) and sp.issparse(g):      # A + B, A * B: scipy may have dropped entries
            from .sparse_ops import check_covers
            check_covers(g, x)
        if not (sp.issparse(g) and isinstance(x, _DENSE)):
            return g
        g = np.asarray(g.sum()) if np.ndim(x) == 0 else g.toarray()   # s in A * s: a dense x's cotangent
    shape = np.shape(x)
    gshape = np.shape(g)
    if gshape == shape:
        return g
    g = np.asarray(g) if _plain(g) else g
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    lead = len(shape) - g.ndim          # > 0 only for a cotangent smaller than x (below)
    for axis, n in enumerate(shape[lead:]):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    if g.shape != shape:
        # smaller than x: a scalar cotangent (the symbolic zero, or a scalar seed) stands for
        # itself broadcast over the result, and scaling it by an operand kept only that
        # operand's shape; the rest of x's shape is the broadcast
        g = np.broadcast_to(g, shape)
    if isinstance(x, numbers.Number) and not isinstance(x, np.generic):
        return float(g)
    return g


def broadcast_like(v, ans):
    """A tangent brought to the shape of its primal (the forward twin of unbroadcast)."""
    if _is_zero(v) or np.shape(v) == np.shape(ans):
        return v
    return np.broadcast_to(v, np.shape(ans))


def finalize(bar, x, row_sparse=False):
    """The gradient returned to the user: same shape, type and float dtype as x (a NumPy scalar
    of x's float dtype for a NumPy scalar x, a Python float for a Python number)."""
    if type(x) is np.ndarray and type(bar) is np.ndarray and not row_sparse:
        # the common case first: an array cotangent of x's shape and dtype, owned and writable
        if bar.dtype == x.dtype and bar.shape == x.shape and bar.base is None and bar.flags.writeable \
                and x.dtype.kind == "f":
            return bar
    elif type(x) is float:
        if type(bar) is float:
            return bar if bar else 0.0
    if sp.issparse(x):
        from .sparse_ops import sparse_finalize
        return sparse_finalize(bar, x)
    if _is_seq(x):
        bar = [0.0] * len(x) if _is_zero(bar) else bar
        return _rebuild(x, [finalize(b, xi) for b, xi in zip(bar, x)])
    if _is_map(x):
        bar = {} if _is_zero(bar) else bar
        out = {k: finalize(bar.get(k, 0.0), v) for k, v in x.items()}
        return out if type(x) is dict else type(x)(out)
    if x is None:
        return None
    if isinstance(x, numbers.Number) and not isinstance(x, np.generic):
        return 0.0 if _is_zero(bar) else float(np.sum(bar) if np.ndim(bar) else bar)
    dtype = _float_dtype(x)
    if isinstance(x, np.generic) and not row_sparse:
        if _is_zero(bar):
            return dtype.type(0)
        if not _plain(bar) and hasattr(bar, "astype"):     # a duck-typed array: keep its kind
            return np.broadcast_to(bar, ()).astype(dtype)
        out = np.asarray(bar, dtype=dtype)
        return (out if out.shape == () else np.broadcast_to(out, ()))[()]
    if row_sparse:
        if isinstance(bar, RowSparse):
            if bar.factors is not None and bar.dtype == dtype:
                return bar
            return RowSparse(bar.indices, bar.values.astype(dtype, copy=False), bar.shape)
        dense = np.zeros(np.shape(x), dtype) if _is_zero(bar) else np.asarray(bar, dtype)
        return RowSparse(np.arange(dense.shape[0]), dense, dense.shape)
    if _is_zero(bar):
        return np.zeros(np.shape(x), dtype)
    if isinstance(bar, RowSparse):
        bar = bar.todense()
    if not _plain(bar) and hasattr(bar, "astype"):     # a duck-typed array: keep its kind
        return np.broadcast_to(bar, np.shape(x)).astype(dtype)
    out = np.asarray(bar, dtype=dtype)
    if out.shape != np.shape(x):
        out = np.broadcast_to(out, np.shape(x))
    if not out.flags.writeable or out.base is not None and out.strides != np.empty(0, dtype).strides:
        out = np.array(out, copy=True)
    return out


def _plain(v):
    return isinstance(v, (np.ndarray, np.generic, numbers.Number))


def _zeros_of_kind(g, shape, dtype):
    """Zeros of the given shape, of the same kind as g: a plain array, or, for a duck-typed
    array (a batch of tangents, srcad.batching), that kind, so that g can be written into it."""
    if _plain(g) or _is_seq(g):
        return np.zeros(shape, dtype)
    return np.broadcast_to(0.0 * np.sum(g), shape).astype(dtype)


def zeros_like(x):
    """A zero derivative of x's kind, materialised (for tangents that must have x's shape)."""
    if _is_seq(x):
        return [zeros_like(v) for v in x]
    if x is MISSING:
        return x
    if _is_map(x):
        return {k: zeros_like(v) for k, v in x.items()}
    if x is None or isinstance(x, (numbers.Number, str)) and not isinstance(x, np.generic):
        return 0.0
    if sp.issparse(x):
        from .sparse_ops import sparse_finalize
        return sparse_finalize(0.0, x)
    return np.zeros(np.shape(x), _float_dtype(x))


# ---- elementwise ---------------------------------------------------------------------------
def log_or_zero(x):
    """log(x), with 0 where x == 0 (d(x**y)/dy at x == 0 is taken as 0)."""
    x = np.asarray(x, dtype=float)
    return np.log(np.where(x == 0, 1.0, x))


def updates_in_place(v):
    """Does `name op= value` update the object v in place (a NumPy array, a list), rather than
    rebind the name to a new value (a number, a tuple)? Generated code asks this after an
    augmented assignment to a name that another name holds the same object as."""
    return isinstance(v, (np.ndarray, list, dict))


def slices_are_views(v):
    """Does slicing v give a view of its memory (a NumPy array), rather than a copy (a list, a
    tuple, a sparse matrix)? Generated code asks this before writing a changed slice back."""
    return isinstance(v, np.ndarray)


def _shares(a, v):
    """Does a see v's memory: v itself, an array overlapping it, a container holding either?"""
    if a is v:
        return True
    if isinstance(a, np.ndarray) and isinstance(v, np.ndarray):
        return np.may_share_memory(a, v)
    if isinstance(a, (list, tuple)):
        return any(_shares(b, v) for b in a)
    if isinstance(a, dict):
        return any(_shares(b, v) for b in a.values())
    return False


def refuse_shared_update(v, construct, filename, line, col, hint, *readers):
    """Raise UnsupportedSyntaxError before `v op= ...` runs if it would update v in place (v holds
    an array or a list) while one of `readers`, names read later, sees v's memory. srcad's alias
    analysis found that they may; only the values, known now, tell."""
    if updates_in_place(v) and (not readers or any(_shares(r, v) for r in readers)):
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(construct, filename, line, col, hint=hint)


def pick_weight(x, y):
    """The share of max(x, y)'s derivative that goes to x: 1, 0, or 0.5 at a tie."""
    return (np.greater(x, y) + 0.5 * np.equal(x, y)).astype(_float_dtype(np.result_type(x, y)))


def clip_mask(x, lo, hi):
    """1 where clip(x, lo, hi) passes x through, 0 where it clips."""
    m = np.ones(np.shape(x), dtype=bool)
    if lo is not None:
        m &= np.asarray(x) >= lo
    if hi is not None:
        m &= np.asarray(x) <= hi
    return m.astype(_float_dtype(x))


def as_cotangent(g, x):
    """The cotangent of `x` from that of np.asarray(x) / float(x) / x.astype(...)."""
    if _is_zero(g):
        return g
    if _is_seq(x):
        return [as_cotangent(gi, xi) for gi, xi in zip(g, x)]
    if _is_map(x):
        return {k: as_cotangent(g.get(k, 0.0), v) for k, v in x.items()}
    if isinstance(x, numbers.Number) and not isinstance(x, np.generic):
        return float(np.sum(g))
    return np.asarray(g, dtype=_float_dtype(x)) if np.ndim(g) else g


def as_tangent(x_dot, ans):
    """The tangent of np.asarray(x) from x's tangent (a list of tangents becomes an array)."""
    if _is_zero(x_dot):
        return x_dot
    if _is_seq(x_dot):
        parts = tangent_list(x_dot, list(np.asarray(ans)))
        return np.asarray(parts, dtype=object if any(np.asarray(p).dtype == object for p in parts)
                          else _float_dtype(ans))
    if np.asarray(x_dot).dtype == object:
        return np.asarray(x_dot)
    return np.asarray(x_dot, dtype=_float_dtype(ans)) if np.ndim(ans) else x_dot


# ---- reductions ----------------------------------------------------------------------------
def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axis = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axis))


def expand_reduced(v, x, axis, keepdims):
    """A reduction's result reshaped so that it broadcasts against x."""
    if keepdims or np.ndim(x) == 0:
        return v
    return np.expand_dims(v, _axes(axis, np.ndim(x))) if np.ndim(x) else v


def count(x, axis):
    """How many entries of x a reduction over `axis` combines."""
    shape = np.shape(x)
    return int(np.prod([shape[a] for a in _axes(axis, len(shape))]))


_FILL_MAX = 4096


def sum_vjp(g, x, axis=None, keepdims=False):
    """Cotangent of x from that of sum(x, axis): g broadcast back over the reduced axes."""
    if _is_zero(g):
        return g
    if axis is None and type(x) is np.ndarray and (type(g) is float or type(g) is np.float64):
        # the whole array summed: the scalar cotangent everywhere (a small array filled, which is
        # cheaper than a broadcast view; a large one a view, which holds no memory)
        if x.size > _FILL_MAX:
            return np.broadcast_to(np.asarray(g, dtype=_float_dtype(x)), x.shape)
        out = np.empty(x.shape, _float_dtype(x))
        out.fill(g)
        return out
    if sp.issparse(x):
        from .sparse_ops import sparse_sum_vjp
        return sparse_sum_vjp(g, x, axis)
    if _plain(g):      # the cotangent takes x's float dtype (a float32 loss stays float32)
        g = np.asarray(g, dtype=_float_dtype(x))
    return np.broadcast_to(expand_reduced(g, x, axis, keepdims), np.shape(x))


def sum_jvp(x_dot, axis=None, keepdims=False):
    """Tangent of sum(x, axis) (a sparse tangent is summed over its stored values)."""
    if sp.issparse(x_dot):
        from .sparse_ops import sum_jvp as sparse_sum_jvp
        return sparse_sum_jvp(x_dot, axis, keepdims)
    return np.sum(x_dot, axis=axis, keepdims=keepdims)


def _tie_weights(x, ans, axis, keepdims):
    hit = np.equal(x, expand_reduced(ans, x, axis, keepdims))
    return hit / np.sum(hit, axis=_axes(axis, np.ndim(x)), keepdims=True)


def extreme_vjp(g, x, ans, axis=None, keepdims=False):
    """Cotangent of x from that of max(x)/min(x): shared evenly among tied extremes."""
    if _is_zero(g):
        return g
    return expand_reduced(g, x, axis, keepdims) * _tie_weights(x, ans, axis, keepdims)


def extreme_jvp(x_dot, x, ans, axis=None, keepdims=False):
    """Tangent of max(x)/min(x): the mean of the tangents of the tied extremes."""
    if _is_zero(x_dot):
        return x_dot
    return np.sum(x_dot * _tie_weights(x, ans, axis, keepdims), axis=_axes(axis, np.ndim(x)),
                  keepdims=keepdims)


def _prod_others(x, axis):
    """For each entry, the product of the other entries of its reduction group (zeros allowed)."""
    x = np.asarray(x, dtype=_float_dtype(x))
    axes = _axes(axis, x.ndim)
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, rest + list(axes))
    flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), flat.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    others = (left * right).reshape(moved.shape)
    return np.transpose(others, np.argsort(rest + list(axes)))


def prod_others_jvp(x_dot, x, axis=None):
    """Tangent of _prod_others(x, axis) along x_dot (what a Hessian of prod needs): for each
    entry i, the sum over the other entries j of its group of x_dot[j] times the product of the
    entries other than i and j (zeros allowed: no division)."""
    if _is_zero(x_dot):
        return x_dot
    x = np.asarray(x, dtype=_float_dtype(x))
    d = np.broadcast_to(np.asarray(x_dot, dtype=np.result_type(x, x_dot)), x.shape)
    axes = _axes(axis, x.ndim)
    rest = [a for a in range(x.ndim) if a not in axes]
    order = rest + list(axes)
    moved_x, moved_d = np.transpose(x, order), np.transpose(d, order)
    flat_x = moved_x.reshape(moved_x.shape[:len(rest)] + (-1,))
    flat_d = moved_d.reshape(flat_x.shape)
    out = np.zeros(flat_x.shape, dtype=np.result_type(flat_x, flat_d))
    for i in range(flat_x.shape[-1]):
        xi, di = flat_x.copy(), flat_d.copy()
        xi[..., i], di[..., i] = 1.0, 0.0        # entry i left out of both
        out[..., i] = np.sum(di * _prod_others(xi, -1), axis=-1)
    return np.transpose(out.reshape(moved_x.shape), np.argsort(order))


def prod_vjp(g, x, axis=None, keepdims=False):
    """Cotangent of x from that of prod(x, axis)."""
    if _is_zero(g):
        return g
    return expand_reduced(g, x, axis, keepdims) * _prod_others(x, axis)


def prod_jvp(x_dot, x, axis=None, keepdims=False):
    """Tangent of prod(x, axis)."""
    if _is_zero(x_dot):
        return x_dot
    return np.sum(x_dot * _prod_others(x, axis), axis=_axes(axis, np.ndim(x)), keepdims=keepdims)


def var_vjp(g, x, axis=None, ddof=0, keepdims=False):
    """Cotangent of x from that of var(x, axis, ddof)."""
    if _is_zero(g):
        return g
    mean = np.mean(x, axis=axis, keepdims=True)
    return expand_reduced(g, x, axis, keepdims) * 2.0 * (x - mean) / (count(x, axis) - ddof)


def var_jvp(x_dot, x, axis=None, ddof=0, keepdims=False):
    """Tangent of var(x, axis, ddof)."""
    if _is_zero(x_dot):
        return x_dot
    mean = np.mean(x, axis=axis, keepdims=True)
    return np.sum(2.0 * (x - mean) * x_dot, axis=axis, keepdims=keepdims) / (count(x, axis) - ddof)


def _check_norm(ord):
    if ord not in (None, 2, "fro"):
        from ..errors import MissingRuleError
        raise MissingRuleError(f"np.linalg.norm with ord={ord!r}", fix="only the 2-norm (Frobenius norm) has a rule: "
                               "use ord=None, or write the norm out, e.g. np.sum(np.abs(x)) for ord=1")


def norm_vjp(g, x, ans, ord=None, axis=None, keepdims=False):
    """Cotangent of x from that of the 2-norm (Frobenius norm) of x."""
    _check_norm(ord)
    if _is_zero(g):
        return g
    return expand_reduced(g / ans, x, axis, keepdims) * x


def norm_jvp(x_dot, x, ans, ord=None, axis=None, keepdims=False):
    """Tangent of the 2-norm (Frobenius norm) of x."""
    _check_norm(ord)
    if _is_zero(x_dot):
        return x_dot
    return np.sum(x * x_dot, axis=axis, keepdims=keepdims) / ans


def cumsum_vjp(g, x, axis=None):
    """Cotangent of x from that of cumsum(x, axis): a reversed cumulative sum."""
    if _is_zero(g):
        return g
    if axis is None:
        return np.reshape(np.cumsum(np.ravel(g)[::-1])[::-1], np.shape(x))
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def diff_vjp(g, x, n=1, axis=-1):
    """Cotangent of x from that of np.diff(x, n, axis)."""
    if _is_zero(g):
        return g
    for _ in range(n):
        pad = [(0, 0)] * np.ndim(g)
        pad[axis] = (1, 1)
        g = -np.diff(np.pad(g, pad), axis=axis)
    return g


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


def solve_vjp_b(g, a):
    """Cotangent of b in x = np.linalg.solve(a, b)."""
    return g if _is_zero(g) else np.linalg.solve(np.swapaxes(a, -1, -2), g)


def outer_vjp(g, x, y):
    """Cotangent of x in np.outer(x, y)."""
    return g if _is_zero(g) else np.reshape(g @ np.ravel(y), np.shape(x))


def reshape_like(g, x):
    """g reshaped to x's shape (the adjoint of every reshape, squeeze and expand_dims)."""
    return g if _is_zero(g) else np.reshape(g, np.shape(x))


def solve_vjp_a(g, a, ans):
    """Cotangent of a in x = np.linalg.solve(a, b)."""
    if _is_zero(g):
        return g
    b_bar = np.linalg.solve(np.swapaxes(a, -1, -2), g)
    return -np.multiply.outer(b_bar, ans) if np.ndim(ans) == 1 else -(b_bar @ np.swapaxes(ans, -1, -2))


def _einsum_parts(subscripts, n):
    """(input subscripts, output subscript) of an einsum without '...'. A letter may repeat inside
    an operand (a diagonal: 'ii->i', 'ii->', 'iij,j->i')."""
    s = subscripts.replace(" ", "")
    if "..." in s:
        from ..errors import MissingRuleError
        raise MissingRuleError(f"np.einsum with '...' in its subscripts ({subscripts!r})",
                               fix="name every axis with a letter instead of '...'")
    ins, _, out = s.partition("->")
    ins = ins.split(",")
    if not _:
        letters = "".join(ins)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(ins) != n:
        raise ValueError(f"np.einsum({subscripts!r}, ...) names {len(ins)} operands, and {n} are given")
    return ins, out


def einsum_vjp(g, subscripts, operands, k):
    """Cotangent of operand k of np.einsum(subscripts, *operands). A letter repeated inside operand
    k reads a diagonal: the cotangent is written on that diagonal, zeros elsewhere."""
    if _is_zero(g):
        return g
    ins, out = _einsum_parts(subscripts, len(operands))
    others = [(s, a) for j, (s, a) in enumerate(zip(ins, operands)) if j != k]
    known = set(out).union(*[set(s) for s, _ in others]) if others else set(out)
    mine = "".join(dict.fromkeys(ins[k]))               # operand k's letters, each once
    kept = "".join(c for c in mine if c in known)      # letters summed only inside operand k broadcast
    spec = ",".join([out] + [s for s, _ in others]) + "->" + kept
    part = np.einsum(spec, g, *[a for _, a in others])
    xshape = np.shape(operands[k])
    shape = tuple(xshape[ins[k].index(c)] if c in kept else 1 for c in mine)
    order = [kept.index(c) for c in mine if c in kept]
    part = np.transpose(part, order) if order else part
    part = np.reshape(part, shape)
    if mine == ins[k]:
        return unbroadcast(np.broadcast_to(part, xshape), operands[k])
    full = np.zeros(xshape, np.result_type(part, _float_dtype(operands[k])))
    np.einsum(ins[k] + "->" + mine, full)[...] = part      # a writeable view of the diagonal
    return full


def einsum_jvp(subscripts, operands, k, dot):
    """Tangent of np.einsum(subscripts, *operands) along operand k's tangent."""
    return np.einsum(subscripts, *replace_at(operands, k, dot))


def einsum_vjp_dot(g, subscripts, operands, k, operands_dot):
    """Tangent of einsum_vjp(g, subscripts, operands, k) along the other operands' tangents."""
    total = 0.0
    for m, d in enumerate(operands_dot):
        if m != k and not _is_zero(d):
            total = add(total, einsum_vjp(g, subscripts, replace_at(operands, m, d), k))
    return total


def einsum_jvp_dot(subscripts, operands, k, dot, operands_dot):
    """Tangent of einsum_jvp(subscripts, operands, k, dot) along the other operands' tangents."""
    total = 0.0
    for m, d in enumerate(operands_dot):
        if m != k and not _is_zero(d):
            total = add(total, np.einsum(subscripts, *replace_at(replace_at(operands, k, dot), m, d)))
    return total


def replace_at(items, k, value):
    """A list of the items with item k replaced."""
    out = list(items)
    out[k] = value
    return out


# ---- linear algebra and shapes -------------------------------------------------------------
def matmul(x, y):
    """x @ y, through srcad's compiled kernel when x is a scipy sparse matrix."""
    if sp.issparse(x):
        from .sparse_ops import sparse_matmul
        return sparse_matmul(x, y)
    if sp.issparse(y) and _plain(x):          # x @ A = (A.T @ x.T).T, through the transposed kernel
        from .sparse_ops import sparse_rmatmul
        return sparse_rmatmul(y, x) if np.ndim(x) == 1 else sparse_rmatmul(y, np.swapaxes(x, -1, -2)).T
    return x @ y


def matmul_vjp_x(g, x, y):
    """Cotangent of x in x @ y (1-D and 2-D operands, either side sparse)."""
    if _is_zero(g):
        return g
    if sp.issparse(x):
        from .sparse_ops import matmul_vjp_values
        return matmul_vjp_values(g, x, y)
    if sp.issparse(y) and _plain(g):          # x @ A: g @ A.T = (A @ g.T).T
        from .sparse_ops import sparse_matmul
        return sparse_matmul(y, g) if np.ndim(g) == 1 else sparse_matmul(y, np.swapaxes(g, -1, -2)).T
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbroadcast(g * y, x)
    if np.ndim(y) == 1:
        return outer(g, y) if np.ndim(x) >= 2 else g * y
    if np.ndim(x) == 1:
        return y @ g
    return unbroadcast(g @ np.swapaxes(y, -1, -2), x)


def matmul_vjp_y(g, x, y):
    """Cotangent of y in x @ y."""
    if _is_zero(g):
        return g
    if sp.issparse(x):
        if sp.issparse(y):
            from .sparse_struct import spgemm_vjp_y
            return spgemm_vjp_y(g, x, y)
        from .sparse_ops import sparse_rmatmul
        return sparse_rmatmul(x, g)
    if sp.issparse(y) and _plain(g) and _plain(x):   # x @ A: A's cotangent at (i, j) is x[:, i] . g[:, j]
        from .sparse_ops import matmul_vjp_values
        if np.ndim(x) == 1:
            return matmul_vjp_values(np.asarray(x), y, np.asarray(g))
        return matmul_vjp_values(np.swapaxes(x, -1, -2), y, np.swapaxes(g, -1, -2))
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbroadcast(g * x, y)
    if np.ndim(x) == 1:
        return g * x if np.ndim(y) == 1 else outer(x, g)
    xt = np.swapaxes(x, -1, -2)
    if np.ndim(y) == 1:
        return xt @ g
    return unbroadcast(xt @ g, y)


def transpose_vjp(g, axes=None):
    """Cotangent of x from that of np.transpose(x, axes)."""
    if _is_zero(g):
        return g
    return np.transpose(g) if axes is None else np.transpose(g, np.argsort(axes))


def concatenate_vjp(g, arrays, axis=0):
    """Cotangents of the pieces of np.concatenate(arrays, axis)."""
    if _is_zero(g):
        return g
    ends = np.cumsum([np.shape(a)[axis] for a in arrays])[:-1]
    return np.split(g, ends, axis=axis)


def unstack(g, axis, arrays):
    """Cotangents of the pieces of np.stack(arrays, axis) (or of np.array(list))."""
    if _is_zero(g):
        return g
    return [as_cotangent(np.take(g, k, axis=axis), a) for k, a in enumerate(arrays)]


def sum_list_vjp(g, xs):
    """Cotangents of the items of builtins.sum(xs)."""
    if _is_zero(g):
        return g
    return [unbroadcast(g, x) for x in xs]


def tangent_list(xs_dot, xs):
    """The tangents of a list's items, zeros materialised with each item's shape."""
    if _is_zero(xs_dot):
        return [zeros_like(x) for x in xs]
    return [zeros_like(x) if _is_zero(d) else d for d, x in zip(xs_dot, xs)]


# ---- subscripts and containers -------------------------------------------------------------
def _is_row_gather(x, idx):
    return (isinstance(x, np.ndarray) and x.ndim >= 2 and isinstance(idx, np.ndarray)
            and idx.ndim == 1 and np.issubdtype(idx.dtype, np.integer))


def getitem(x, idx):
    """x[idx]; a gather of many rows of a C-contiguous array by an integer array runs as a
    parallel row copy (the same values as numpy's fancy indexing)."""
    if (type(idx) is np.ndarray and type(x) is np.ndarray and idx.ndim == 1 and x.ndim >= 2
            and idx.size >= 1024 and idx.dtype.kind in "iu" and x.flags.c_contiguous
            and not x.dtype.hasobject):
        return _kernels.gather_rows(x, idx)
    try:
        return x[idx]
    except KeyError:
        if type(x) is dict and type(idx) is int and not any(type(k) is int for k in x):
            from ..errors import UnsupportedSyntaxError    # `for k in d:` runs as d[0], d[1], ...
            raise UnsupportedSyntaxError(
                "a for loop over a dict (srcad iterates a loop's sequence by position)",
                hint="loop over the keys written out, `for k in (\"W\", \"b\"):`, or over a list of keys "
                     "passed as an argument") from None
        raise


def outer(a, b):
    """np.multiply.outer(a, b); two large 1-D float arrays of one dtype through the parallel kernel."""
    if (type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 1 and b.ndim == 1
            and a.dtype == b.dtype and a.dtype in _KERNEL_FLOATS and a.size * b.size >= 65536):
        return _kernels.outer(a, b)
    return np.multiply.outer(a, b)


_KERNEL_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def index_vjp(g, x, idx):
    """Cotangent of x from that of x[idx]: repeated indices add up; a row gather stays RowSparse."""
    if _is_zero(g):
        return g
    if sp.issparse(x):
        from .sparse_struct import index_vjp as sparse_index_vjp
        return sparse_index_vjp(g, x, idx)
    if _is_map(x):
        return {idx: g}
    if _is_seq(x):
        out = [0.0] * len(x)
        if isinstance(idx, slice):
            for k, gk in zip(range(*idx.indices(len(x))), g):
                out[k] = gk
        else:
            out[idx] = g
        return out
    if _is_row_gather(x, idx):
        idx = np.where(idx < 0, idx + x.shape[0], idx)
        return RowSparse(idx, np.broadcast_to(g, (len(idx),) + x.shape[1:]), x.shape)
    out = _zeros_of_kind(g, np.shape(x), np.result_type(_float_dtype(x), getattr(g, "dtype", np.float64)))
    if _is_basic(idx):
        out[idx] = g        # ints and slices never repeat an entry
    else:
        np.add.at(out, idx, g)
    return out


def index_matmul_vjp(g, y, E, idx):
    """index_vjp(matmul_vjp_x(g, x, y), E, idx) with x = E[idx], fused: the cotangent of a row
    gather that fed x @ y with a vector y stays factored (row k is g[k] * y) until it is read.
    matmul_vjp_x reads only x's shape, so x is not kept: the fallback gathers it again."""
    if (_is_row_gather(E, idx) and type(g) is np.ndarray and type(y) is np.ndarray and g.ndim == 1
            and y.ndim == 1 and E.ndim == 2 and g.shape == idx.shape and y.shape == E.shape[1:]):
        return RowSparse.outer(np.where(idx < 0, idx + E.shape[0], idx), g, y, E.shape)
    return index_vjp(matmul_vjp_x(g, getitem(E, idx), y), E, idx)


def getitem_matmul(x, idx, y):
    """matmul(getitem(x, idx), y), fused: a gather of many rows of a 2-D float array times a
    vector runs as one parallel kernel that never forms the gathered rows."""
    if (type(x) is np.ndarray and type(y) is np.ndarray and type(idx) is np.ndarray
            and x.ndim == 2 and y.ndim == 1 and idx.ndim == 1 and idx.dtype.kind in "iu"
            and idx.size >= 1024 and x.dtype == y.dtype and x.dtype in _KERNEL_FLOATS
            and y.shape[0] == x.shape[1] and x.flags.c_contiguous):
        return _kernels.gather_matvec(x, idx, y)
    return matmul(getitem(x, idx), y)


def _is_basic(idx):
    parts = idx if isinstance(idx, tuple) else (idx,)
    return all(isinstance(p, (int, np.integer, slice)) or p is None or p is Ellipsis for p in parts)


def index_jvp(x_dot, x, idx):
    """Tangent of x[idx]."""
    if _is_zero(x_dot):
        return x_dot
    if sp.issparse(x):
        from .sparse_struct import index_jvp as sparse_index_jvp
        return sparse_index_jvp(x_dot, x, idx)
    if _is_seq(x_dot) or _is_map(x_dot):
        return x_dot[idx]
    return np.broadcast_to(x_dot, np.shape(x))[idx]


def item(g, k):
    """Entry k of a container's derivative (zero stays zero)."""
    if _is_map(g):          # a dict's cotangent holds only the keys something reached
        return g.get(k, 0.0)
    return g if _is_zero(g) else g[k]


def _field_index(x, name, where):
    if _is_namedtuple(x) and name in type(x)._fields:
        return type(x)._fields.index(name)
    from ..errors import SrcadError
    raise SrcadError(f"{where}: srcad cannot differentiate `.{name}` of a {type(x).__name__}: the attributes it "
                     f"differentiates are the fields of a namedtuple and those of arrays it has rules for. "
                     f"Hold the values in a namedtuple, a dict or a list (a pytree), or pass them as arguments.")


def field_vjp(g, x, name, where=""):
    """Cotangent of a namedtuple x from that of its field x.<name> (read at `where` in the user's code)."""
    k = _field_index(x, name, where)
    return g if _is_zero(g) else index_vjp(g, x, k)


def field_jvp(x_dot, x, name, where=""):
    """Tangent of the field x.<name> of a namedtuple x."""
    k = _field_index(x, name, where)
    return x_dot if _is_zero(x_dot) else x_dot[k]


def item_tangent(v_dot, k, n):
    """The tangent of a container of n items whose item k has tangent v_dot (the others: zero)."""
    if _is_zero(v_dot):
        return v_dot
    out = [0.0] * n
    out[k] = v_dot
    return out


def index_bar(y_bar, idx):
    """The part of y's cotangent that a write `y[idx] = v` sends to v."""
    if _is_zero(y_bar):
        return y_bar
    if _is_map(y_bar):
        return y_bar.get(idx, 0.0)
    if isinstance(y_bar, RowSparse):
        y_bar = y_bar.todense()
    part = y_bar[idx]
    if isinstance(idx, np.ndarray) and np.issubdtype(idx.dtype, np.integer) and idx.ndim == 1:
        # with a repeated index only the last write lands: the earlier ones get no cotangent
        flat = np.where(idx < 0, idx + np.shape(y_bar)[0], idx)
        last = np.zeros(len(flat), bool)
        last[len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]] = True
        if not last.all():
            part = part * last.reshape((-1,) + (1,) * (np.ndim(part) - 1))
    return part


def zero_at(y_bar, idx):
    """y's cotangent with the entries overwritten by `y[idx] = v` cleared (in place when only the
    caller's variable holds it, else in a copy)."""
    refs = sys.getrefcount(y_bar)
    if _is_zero(y_bar):
        return y_bar
    if _is_map(y_bar):
        return {**y_bar, idx: 0.0}
    if _is_seq(y_bar):
        out = list(y_bar)
        if isinstance(idx, slice):
            for k in range(*idx.indices(len(out))):
                out[k] = 0.0
        else:
            out[idx] = 0.0
        return out
    out = y_bar if _sole(y_bar, refs) else (np.array(y_bar, copy=True) if _plain(y_bar) else y_bar.copy())
    out[idx] = 0
    return out


def add_at(x_bar, x, idx, g):
    """x_bar + (the cotangent of x from that of x[idx]), without materialising the latter:
    in place when only the caller's variable holds x_bar."""
    refs = sys.getrefcount(x_bar)
    if type(idx) is int and type(x_bar) is np.ndarray and type(x) is np.ndarray and \
            (type(g) is float or type(g) is np.float64 and x_bar.dtype == np.float64) and \
            x_bar.shape == x.shape and x_bar.dtype.kind == "f" and _sole(x_bar, refs):
        x_bar[idx] += g           # one entry of an array this call owns (the common case first)
        return x_bar
    if _is_zero(g):
        return x_bar
    if _is_zero(x_bar) or not _sole(x_bar, refs) or _is_seq(x) or _is_map(x) or \
            _is_row_gather(x, idx) or np.result_type(x_bar, g) != x_bar.dtype or x_bar.shape != np.shape(x):
        return add(x_bar, index_vjp(g, x, idx))
    if _is_basic(idx):
        x_bar[idx] += g
    else:
        np.add.at(x_bar, idx, g)
    return x_bar


def set_at(y_dot, y, idx, v_dot):
    """The tangent of y after `y[idx] = v`: a copy of y_dot (zeros materialised) with v_dot written."""
    if _is_zero(y_dot):
        out = zeros_like(y)
    elif _is_seq(y_dot):
        out = list(y_dot)
    elif _is_map(y_dot):
        out = dict(y_dot)
    else:   # a writable copy of y_dot in y's shape (np.broadcast_to/astype: also for a batch of tangents)
        dtype = object if y_dot.dtype == object else _float_dtype(y)
        out = np.broadcast_to(y_dot, np.shape(y)).astype(dtype)
    if isinstance(out, np.ndarray) and not _is_zero(v_dot) and not _plain(v_dot) and not _is_seq(v_dot):
        if hasattr(v_dot, "shape"):     # a batch of tangents: y's tangent takes that kind
            out = _zeros_of_kind(v_dot, np.shape(y), out.dtype) + out
        else:                           # an index-set tracer (srcad.sparsity)
            out = out.astype(object)
    elif isinstance(out, np.ndarray) and getattr(v_dot, "dtype", None) == object:
        out = out.astype(object)
    if _is_seq(out) or _is_map(out):
        out[idx] = v_dot
    else:
        out[idx] = 0.0 if _is_zero(v_dot) else v_dot
    return out


def last(xs_bar):
    """The cotangent of the last item appended to a list."""
    return xs_bar if _is_zero(xs_bar) else xs_bar[-1]


def drop_last(xs_bar):
    """A list's cotangent without its last item (undoing an append)."""
    return xs_bar if _is_zero(xs_bar) else list(xs_bar[:-1])


def appended(xs_dot, xs, v_dot):
    """The tangent of a list after xs.append(v) (a new list)."""
    base = [0.0] * (len(xs) - 1) if _is_zero(xs_dot) else list(xs_dot)
    return base + [v_dot]


# ---- user rules and checks -----------------------------------------------------------------
def user_vjp_rule(func):
    """The rule registered with srcad.register_vjp (or custom_vjp) for func."""
    from ..rules.registry import lookup
    return lookup(func).user_vjp


def user_jvp_rule(func):
    """The rule registered with srcad.register_jvp (or custom_jvp) for func."""
    from ..rules.registry import lookup
    return lookup(func).user_jvp


def is_scalar(y):
    """Is y a scalar output: a Python number, a NumPy scalar, or an array of size 1."""
    if isinstance(y, numbers.Number):
        return True
    return isinstance(y, (np.ndarray, np.generic)) and np.size(y) == 1


class ScalarSeed:
    """The seed grad passes: checks that the output is a scalar, then stands for 1.0."""

    def __init__(self, check, has_aux=False):
        self.check, self.has_aux = check, has_aux


def seed(y, s):
    """The output's cotangent: s itself, or 1.0 (with has_aux, (1.0, 0.0)) for grad's checked seed."""
    if isinstance(s, ScalarSeed):
        s.check(y)
        return (1.0, 0.0) if s.has_aux else 1.0
    return s


def snapshot(y):
    """A copy of an output that later in-place restores on the tape cannot change."""
    if type(y) is float or type(y) is np.float64:
        return y
    if isinstance(y, np.ndarray):
        return y.copy()
    if _is_seq(y):
        return _rebuild(y, [snapshot(v) for v in y])
    if _is_map(y):
        return {k: snapshot(v) for k, v in y.items()}
    return y


def check_finite(v, name, where):
    """Raise srcad.NumericsError if a derivative holds NaN or Inf (grad(check_numerics=True))."""
    if _is_zero(v) or _is_seq(v) or _is_map(v):
        return
    data = v.data if sp.issparse(v) else (v.values if isinstance(v, RowSparse) else v)
    if not np.all(np.isfinite(data)):
        from ..errors import NumericsError
        kind = "NaN" if np.any(np.isnan(data)) else "Inf"
        raise NumericsError(f"{where}: the derivative {name} became {kind} in the adjoint of this line "
                            f"(the first one that did, going backwards from the output). Look for a "
                            f"division by zero, a log or sqrt at 0, or an overflow on this line.")


from .mappings import MISSING, restore_item, saved_item  # noqa: E402
from .builtin_ops import (builtin_extreme_jvp, builtin_extreme_vjp, item_jvp, item_vjp,  # noqa: E402
                          sum_items_jvp, sum_items_vjp, tolist_jvp, tolist_vjp)
from . import shapes  # noqa: E402,F401  (helpers of constructors and shape operations)
from . import linalg  # noqa: E402,F401  (helpers of the linear-algebra rules)
from . import special  # noqa: E402,F401  (the scipy.special functions adjoints call)
from .binomial import revolve, entry_state as loop_entry  # noqa: E402,F401  (binomial checkpointing of loops)
