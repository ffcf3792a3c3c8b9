"""scipy.sparse methods on a differentiated matrix: the zero-preserving elementwise methods
(`A.sin()`, `abs(A)`, ...), casts (`A.astype(np.float32)`), max/min (implicit zeros taking
part, as scipy's do), and the *selections*: format conversions, transposes, reshapes and
subscripts (`A.tocsc()`, `A.T`, `A[i]`, `A[:, j]`, `A[rows]`, `A.getrow(i)`).

A derivative of a sparse operand has its class and stored pattern, in its order (derivative.py);
each duplicate entry gets the derivative of the entry scipy sums it into.

Selections are linear and copy stored values without arithmetic, so srcad learns which entry
goes where by running the same scipy operation on a copy of the pattern whose values are the
entries' labels 1..nnz (`_route`): the labels that come out name the source of each result
entry. When scipy keeps every entry as it is (a transpose, a COO reshape) the map is exact per
entry, duplicates included; when scipy merges duplicates, srcad labels the merged matrix instead
and each duplicate gets its merged entry's derivative.
"""
import numpy as np
import scipy.sparse as sp

from .derivative import _cot, _dense_at, _like, _matrix_at, _own, _values_at
from .pattern import (_dedup, _entry_coords, _float_dtype, _fmt, _is_zero, _require_format, _same_entries,
                      merged, unmerged)
from .reductions import _axis

__all__ = ["unary", "unary_vjp", "unary_jvp", "unary_vjp_jvp", "abs_", "extreme", "abs_vjp", "abs_jvp", "cast_vjp", "cast_jvp",
           "select", "select_vjp", "select_jvp", "extreme_vjp", "extreme_jvp"]


# ---- the zero-preserving elementwise methods ---------------------------------------------------------
# name: (function, derivative(x, y), second derivative(x, y)), y the result
_UNARY = {
    "sin": (np.sin, lambda x, y: np.cos(x), lambda x, y: -y),
    "tan": (np.tan, lambda x, y: 1.0 + y ** 2, lambda x, y: 2.0 * y * (1.0 + y ** 2)),
    "arcsin": (np.arcsin, lambda x, y: 1.0 / np.sqrt(1.0 - x ** 2), lambda x, y: x / (1.0 - x ** 2) ** 1.5),
    "arctan": (np.arctan, lambda x, y: 1.0 / (1.0 + x ** 2), lambda x, y: -2.0 * x / (1.0 + x ** 2) ** 2),
    "arcsinh": (np.arcsinh, lambda x, y: 1.0 / np.sqrt(1.0 + x ** 2), lambda x, y: -x / (1.0 + x ** 2) ** 1.5),
    "arctanh": (np.arctanh, lambda x, y: 1.0 / (1.0 - x ** 2), lambda x, y: 2.0 * x / (1.0 - x ** 2) ** 2),
    "sinh": (np.sinh, lambda x, y: np.cosh(x), lambda x, y: y),
    "tanh": (np.tanh, lambda x, y: 1.0 - y ** 2, lambda x, y: -2.0 * y * (1.0 - y ** 2)),
    "sqrt": (np.sqrt, lambda x, y: 0.5 / y, lambda x, y: -0.25 / y ** 3),
    "expm1": (np.expm1, lambda x, y: y + 1.0, lambda x, y: y + 1.0),
    "log1p": (np.log1p, lambda x, y: 1.0 / (1.0 + x), lambda x, y: -1.0 / (1.0 + x) ** 2),
    "deg2rad": (np.deg2rad, lambda x, y: np.full(np.shape(x), np.pi / 180), lambda x, y: np.zeros(np.shape(x))),
    "rad2deg": (np.rad2deg, lambda x, y: np.full(np.shape(x), 180 / np.pi), lambda x, y: np.zeros(np.shape(x))),
    "abs": (np.abs, lambda x, y: np.sign(x), lambda x, y: np.zeros(np.shape(x))),
}
STEPS = ("trunc", "floor", "ceil", "rint", "sign")      # piecewise constant: no derivative


def _merged_tangent(t, x, xm):
    """Per-entry values t of x (x's order) summed onto merged(x, sort=True)'s entries."""
    d = _dedup(x)
    if d is None:
        return np.asarray(t)
    return np.bincount(d[0], weights=np.asarray(t, np.float64), minlength=len(xm.data))


def unary(x, name):
    """x.<name>() as scipy computes it (duplicates summed, entries sorted), without scipy's side
    effect of canonicalising a non-canonical x in place."""
    if not sp.issparse(x):
        return getattr(x, name)()
    _require_format(x, f"A.{name}()")
    xm = merged(x, sort=True)
    fn = _UNARY[name][0] if name in _UNARY else getattr(np, name)
    return _like(xm, fn(xm.data), fresh=True)


def unary_vjp(g, x, name, ans):
    """Cotangent of x from that of x.<name>(): f'(merged entry) times its cotangent, per entry."""
    if _is_zero(g):
        return g
    xm = merged(x, sort=True)
    gv = _values_at(g, ans)
    return _cot(x, _own(unmerged(gv * _UNARY[name][1](xm.data, np.asarray(ans.data)), x, sort=True)))


def unary_vjp_jvp(g, x, name, ans, x_dot):
    """Tangent of unary_vjp(g, x, name, ans) along x_dot (a Hessian through x.<name>())."""
    if _is_zero(g) or _is_zero(x_dot):
        return 0.0
    xm = merged(x, sort=True)
    tv = _merged_tangent(_values_at(x_dot, x), x, xm)
    gv = _values_at(g, ans)
    return _cot(x, _own(unmerged(gv * _UNARY[name][2](xm.data, np.asarray(ans.data)) * tv, x, sort=True)))


def unary_jvp(x_dot, x, name, ans):
    """Tangent of x.<name>(): f'(merged entry) times the merged tangent, on the result's pattern."""
    if _is_zero(x_dot):
        return x_dot
    xm = merged(x, sort=True)
    tv = _merged_tangent(_values_at(x_dot, x), x, xm)
    return _like(ans, _UNARY[name][1](xm.data, np.asarray(ans.data)) * tv)


def _scipy_merged(x, ans):
    """Did scipy compute `ans` from x with duplicates summed (its entries those of merged(x))?"""
    return not _same_entries(ans, x)


def abs_(x):
    """abs(x); for a sparse x as scipy computes it (duplicates summed, sorted), without scipy's side
    effect of canonicalising a non-canonical x in place."""
    if not sp.issparse(x) or _fmt(x) is None:
        return abs(x)
    xm = merged(x, sort=True)
    return _like(xm, np.abs(xm.data), fresh=True)


def extreme(x, op, axis=None, out=None, keepdims=False):
    """x.max(...) / x.min(...) (op 'max' / 'min'); for a sparse x scipy's own, on a merged copy of a
    non-canonical x (scipy's would merge x's duplicates in place)."""
    if not sp.issparse(x):
        kw = {k: v for k, v in (("axis", axis), ("out", out), ("keepdims", keepdims)) if v is not None and v is not False}
        return getattr(x, op)(**kw)
    if _fmt(x) is not None and not (_dedup(x) is None if x.format == "coo" else x.has_canonical_format):
        x = merged(x, sort=True)
    return getattr(x, op)(axis=axis, out=out)


def abs_vjp(g, x, ans):
    """Cotangent of x from that of abs(x) (dense: g * sign(x))."""
    if _is_zero(g):
        return g
    if not sp.issparse(x):
        return g * np.sign(x)
    return _elementwise_vjp(g, x, ans, np.sign)


def abs_jvp(x_dot, x, ans):
    """Tangent of abs(x) (dense: x_dot * sign(x))."""
    if _is_zero(x_dot):
        return x_dot
    if not sp.issparse(x):
        return x_dot * np.sign(x)
    return _elementwise_jvp(x_dot, x, ans, np.sign)


def _elementwise_vjp(g, x, ans, deriv):
    """Cotangent of x from that of scipy's entrywise map `ans` of it (same entries as x, or those
    of merged x): deriv(merged value) times the cotangent read at the entry."""
    if not _scipy_merged(x, ans):
        return _cot(x, _own(_values_at(g, ans) * deriv(np.asarray(x.data))))
    xm = merged(x, sort=True)
    gm = _values_at(g, xm)
    return _cot(x, _own(unmerged(gm * deriv(xm.data), x, sort=True)))


def _elementwise_jvp(x_dot, x, ans, deriv):
    if not _scipy_merged(x, ans):
        return _like(ans, _values_at(x_dot, x) * deriv(np.asarray(x.data)))
    xm = merged(x, sort=True)
    tv = _merged_tangent(_values_at(x_dot, x), x, xm)
    return _like(ans, _values_at(_like(xm, tv * deriv(xm.data)), ans))


# ---- casts -------------------------------------------------------------------------------------------------
def cast_vjp(g, x, ans):
    """Cotangent of a sparse x from that of x.astype(dtype) (a float dtype): g at x's entries, in
    x's float dtype (scipy keeps x's entries, or sums duplicates: each gets its merged entry's)."""
    vals = _values_at(g, x)
    return _cot(x, _own(np.array(vals, dtype=np.result_type(_float_dtype(x.dtype), np.asarray(vals).dtype))))


def cast_jvp(x_dot, ans):
    """Tangent of a cast `ans` of a sparse value: x_dot read at ans's entries, in ans's dtype."""
    vals = _values_at(x_dot, ans) if sp.issparse(x_dot) else _dense_at(x_dot, ans)
    return _like(ans, np.asarray(vals, dtype=_float_dtype(ans.dtype)))


# ---- selections: conversions, transposes, reshapes, subscripts ---------------------------------------------
def _labelled(x):
    """x's pattern (own copies of the index arrays) holding the labels n+1..2n in float64 (n = nnz):
    a sum of two or more labels exceeds 2n, so a result entry scipy summed is no label."""
    n = len(x.data)
    labels = np.arange(n + 1, 2 * n + 1, dtype=np.float64)
    if x.format == "coo":
        return type(x)((labels, tuple(c.copy() for c in x.coords)), shape=x.shape)
    return type(x)((labels, x.indices.copy(), x.indptr.copy()), shape=x.shape)


def _apply(L, how, args):
    if how == "index":
        return L[args[0]]
    if how == "reshape":
        return L.reshape(*args)
    return getattr(L, how)(*args)


def _sources(R, n):
    """The entries of the labelled operand (n entries) each of R's entries came from, or None when
    scipy summed entries into one."""
    if not sp.issparse(R):
        raise TypeError(f"srcad: a sparse selection gave a {type(R).__name__}")
    lab = np.asarray(R.data)
    src = lab.astype(np.int64) - (n + 1)
    return src if np.all(lab == src + (n + 1)) and np.all((src >= 0) & (src < n)) else None


def _route(x, how, args):
    """(R, src, exact): the result of the selection on x's labels (its pattern that of the
    result), and for each of R's entries its source: an entry of x (exact: scipy summed nothing)
    or of merged(x, sort=True) (scipy merged x's duplicates: each gets its merged entry's)."""
    _require_format(x, "a selection of a sparse matrix")
    R = _apply(_labelled(x), how, args)
    src = _sources(R, len(x.data))
    if src is not None:
        return R, src, True
    xm = merged(x, sort=True)
    R = _apply(_labelled(xm), how, args)
    src = _sources(R, len(xm.data))
    if src is None:
        raise TypeError(f"srcad: the sparse selection {how} combined stored entries")
    return R, src, False


def _coords(R):
    if R.format == "coo":
        return tuple(R.coords)
    return _entry_coords(R)


def _read(g, R):
    """The cotangent g of a selection's result at R's entries, in R's order."""
    if sp.issparse(g):
        if g.shape == R.shape and len(g.data) == len(R.data) and g.ndim == R.ndim:
            gc, rc = _coords(g if g.format in ("coo", "csr", "csc") else g.tocoo()), _coords(R)
            if all(np.array_equal(a, b) for a, b in zip(gc, rc)):
                return np.asarray(g.data)
        if g.ndim == 1:
            return np.asarray(g.toarray())[R.coords[0]]
        return _matrix_at(g, *_coords(R))
    g = np.asarray(g)
    if g.shape != R.shape:
        g = np.broadcast_to(g, R.shape) if g.ndim == 0 else g.reshape(R.shape)
    return g[_coords(R)]


def select(x, how, *args):
    """Run the selection on x (scipy's own operation)."""
    return _apply(x, how, args)


def select_vjp(g, x, how, *args):
    """Cotangent of a sparse x from that of a selection of it (x.tocsc(), x[idx], x.reshape(s), ...)."""
    if _is_zero(g):
        return g
    R, src, exact = _route(x, how, args)
    gv = np.asarray(_read(g, R), dtype=np.float64)
    if exact:
        vals = np.bincount(src, weights=gv, minlength=len(x.data))
    else:
        vals = unmerged(np.bincount(src, weights=gv, minlength=len(merged(x, sort=True).data)), x, sort=True)
    return _cot(x, _own(np.asarray(vals, dtype=np.result_type(_float_dtype(x.dtype), gv.dtype))))


def select_jvp(x_dot, x, how, *args):
    """Tangent of a selection of a sparse x: the tangent's values moved as the entries are."""
    if _is_zero(x_dot):
        return x_dot
    R, src, exact = _route(x, how, args)
    t = np.asarray(_values_at(x_dot, x) if sp.issparse(x_dot) else _dense_at(x_dot, x), np.float64)
    if not exact:
        t = _merged_tangent(t, x, merged(x, sort=True))
    out = R.copy()
    out.data = t[src].astype(_float_dtype(x.dtype), copy=False)
    return out


# ---- max / min ---------------------------------------------------------------------------------------------
def _extreme_parts(x, ans, axis):
    """(merged x, group of each merged entry, number of groups, axis, weight per merged entry) of
    scipy's x.max(axis)/x.min(axis) = ans, implicit zeros taking part: a group's derivative is split
    evenly among its elements equal to the extreme, each implicit zero one of them (as for
    x.toarray().max(axis), whose implicit zeros carry no derivative)."""
    axis = _axis(axis, "A.max(axis) / A.min(axis)")
    xm = merged(x, sort=True)
    rows, cols = _entry_coords(xm)
    if axis is None:
        group, ngroups, size = np.zeros(len(xm.data), np.int64), 1, x.shape[0] * x.shape[1]
    else:
        group, ngroups, size = (cols, x.shape[1], x.shape[0]) if axis == 0 else (rows, x.shape[0], x.shape[1])
        group = np.asarray(group, np.int64)
    best = _group_values(ans, ngroups)
    data = np.asarray(xm.data, np.float64)
    implicit = size - np.bincount(group, minlength=ngroups)
    tied = data == best[group]
    ties = np.bincount(group, weights=tied, minlength=ngroups) + np.where(best == 0.0, implicit, 0)
    w = np.where(tied, 1.0 / np.maximum(ties[group], 1), 0.0)
    return xm, group, ngroups, axis, w


def _group_values(g, ngroups):
    """A reduction's result or cotangent (scalar, 1-D, np.matrix, sparse) as one float per group."""
    if sp.issparse(g):
        g = g.toarray()
    g = np.asarray(g, np.float64).reshape(-1)
    return np.broadcast_to(g, (ngroups,)) if g.size == 1 else g


def extreme_vjp(g, x, ans, axis=None):
    """Cotangent of a sparse x from that of x.max(axis)/x.min(axis) = ans."""
    if _is_zero(g):
        return g
    xm, group, ngroups, axis, w = _extreme_parts(x, ans, axis)
    gv = _group_values(g, ngroups)
    return _cot(x, _own(np.asarray(unmerged(gv[group] * w, x, sort=True), _float_dtype(x.dtype))))


def extreme_jvp(x_dot, x, ans, axis=None):
    """Tangent of x.max(axis)/x.min(axis) = ans: dense, in the shape of the result (scipy's sparse
    result drops a group whose extreme is an explicit zero, which still has a tangent)."""
    if _is_zero(x_dot):
        return x_dot
    xm, group, ngroups, axis, w = _extreme_parts(x, ans, axis)
    tv = _merged_tangent(_values_at(x_dot, x), x, xm)
    out = np.bincount(group, weights=w * tv, minlength=ngroups)
    if axis is None:
        return out[0]
    if isinstance(x, sp.spmatrix):
        return np.matrix(out.reshape((1, ngroups) if axis == 0 else (ngroups, 1)))
    return out
