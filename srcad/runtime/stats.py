"""Helpers of the statistics rules (srcad/rules/stats_rules.py): order statistics (np.median,
np.percentile, np.quantile) and covariances (np.cov, np.corrcoef).

Order statistics are piecewise linear in x: with the reduced entries sorted, the q-quantile is
(1 - t) x_(lo) + t x_(hi) at position q (n - 1) = lo + t (NumPy's default 'linear' method), so
its derivative goes to the (at most two) selected entries, with weights 1 - t and t (at a tie,
shared evenly by the equal entries). Those weights are piecewise constant in x: the second
derivative w.r.t. x is zero.

A covariance is bilinear in its observations: with X the variables as rows (y's rows after
m's) and Xc = X - mean(X, axis=1), cov = Xc Xc^T / (N - ddof). Its helpers are linear in each
of their two matrix arguments (cov_tangent, cov_vjp), so their own tangents are the helpers
again. The correlation R = C / sqrt(c c^T) (c = diag C) has hand-written first and second
derivatives in C (corr_jvp, corr_vjp and their tangents).
"""
import numpy as np

from ..errors import MissingRuleError
from .values import _float_dtype, _is_zero


def _missing(what, fix):
    return MissingRuleError(what, fix=fix)


# ---- order statistics ------------------------------------------------------------------------------
def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(int(a) % ndim for a in np.atleast_1d(axis)))


def _moved(x, axis):
    """(x with the reduced axes moved last and merged into one, the kept axes, the reduced ones)."""
    x = np.asarray(x)
    axes = _axes(axis, x.ndim)
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, rest + list(axes))
    return moved.reshape(moved.shape[:len(rest)] + (-1,)), rest, axes


def _unmoved(v, x, rest, axes):
    """Undo _moved for an array v of x's moved shape."""
    shape = np.shape(x)
    v = v.reshape(tuple(shape[a] for a in rest) + tuple(shape[a] for a in axes))
    return np.transpose(v, np.argsort(rest + list(axes)))


def _weights(x, q, axis, method, scale):
    """W with W[qi, ..., k] = d quantile_qi / d (moved x)[..., k]: 1 - t and t at the two selected
    entries (NumPy's sort order; a tie is a kink, where either choice is a one-sided derivative)."""
    if method != "linear":
        raise _missing(f"np.percentile/np.quantile with method={method!r}",
                       "use the default method='linear', or write the selection with np.sort")
    xm, rest, axes = _moved(x, axis)
    n = xm.shape[-1]
    order = np.argsort(xm, axis=-1, kind="stable")
    qf = np.asarray(q, dtype=np.float64) / scale
    pos = qf * (n - 1)
    lo = np.clip(np.floor(pos).astype(np.int64), 0, n - 1)
    hi = np.minimum(lo + 1, n - 1)
    t = pos - lo
    ws = np.zeros(qf.shape + xm.shape, _float_dtype(xm))
    for i in np.ndindex(qf.shape):
        ws[i + (Ellipsis, lo[i])] += 1.0 - t[i]
        ws[i + (Ellipsis, hi[i])] += t[i]
    ws = _share_ties(ws, np.take_along_axis(xm, order, axis=-1))
    w = np.zeros_like(ws)
    np.put_along_axis(w, np.broadcast_to(order, ws.shape), ws, axis=-1)
    return w, xm, rest, axes


def _share_ties(ws, xs):
    """Weights ws of sorted values xs (last axis) spread evenly over each run of equal values: at a
    tie the derivative is the mean of the one-sided ones (as for np.max)."""
    n = xs.shape[-1]
    if n < 2 or not np.any(xs[..., 1:] == xs[..., :-1]):
        return ws
    start = np.concatenate([np.ones(xs.shape[:-1] + (1,), bool), xs[..., 1:] != xs[..., :-1]], axis=-1)
    run = np.cumsum(start, axis=-1) - 1                      # the run each sorted position is in
    flat = run + n * np.arange(int(np.prod(xs.shape[:-1], dtype=int))).reshape(xs.shape[:-1] + (1,))
    count = np.bincount(flat.ravel(), minlength=flat.size)
    out = np.empty_like(ws)
    for i in np.ndindex(ws.shape[:ws.ndim - xs.ndim]):
        total = np.bincount(flat.ravel(), weights=ws[i].ravel(), minlength=flat.size)
        out[i] = (total / np.maximum(count, 1))[flat]
    return out


def quantile_vjp(g, x, q, axis=None, keepdims=False, method="linear", scale=1.0):
    """Cotangent of x in np.quantile(x, q / scale, axis, keepdims=keepdims) (median: q = 0.5;
    percentile: scale = 100)."""
    if _is_zero(g):
        return g
    w, xm, rest, axes = _weights(x, q, axis, method, scale)
    qdim = np.ndim(q)
    gm = np.reshape(np.asarray(g), np.shape(q) + xm.shape[:-1])
    out = np.sum(gm[..., None] * w, axis=tuple(range(qdim))) if qdim else gm[..., None] * w
    return _unmoved(out, x, rest, axes)


def quantile_jvp(x_dot, x, q, axis=None, keepdims=False, method="linear", scale=1.0):
    """Tangent of np.quantile(x, q / scale, axis, keepdims=keepdims) along x_dot."""
    if _is_zero(x_dot):
        return x_dot
    w, xm, rest, axes = _weights(x, q, axis, method, scale)
    dm, _, _ = _moved(np.broadcast_to(x_dot, np.shape(x)), axis)
    out = np.sum(w * dm, axis=-1)
    if keepdims:
        shape = tuple(1 if a in axes else s for a, s in enumerate(np.shape(x)))
        out = out.reshape(np.shape(q) + shape)
    return out


# ---- NaN-ignoring variance --------------------------------------------------------------------------
def _nan_centred(x, axis):
    """(x - its NaN-ignoring mean, 0 at NaNs; the count of non-NaN entries, kept dims)."""
    x = np.asarray(x, dtype=_float_dtype(np.asarray(x)))
    keep = ~np.isnan(x)
    n = np.sum(keep, axis=_axes(axis, x.ndim), keepdims=True)
    mean = np.sum(np.where(keep, x, 0.0), axis=_axes(axis, x.ndim), keepdims=True) / np.maximum(n, 1)
    return np.where(keep, x - mean, 0.0), n


def nan_var_vjp(g, x, axis=None, ddof=0, keepdims=False):
    """Cotangent of x in np.nanvar(x, axis, ddof=ddof): 2 (x - mean) / (n - ddof) at the non-NaN
    entries. Linear in g, and in x for a fixed NaN pattern."""
    if _is_zero(g):
        return g
    c, n = _nan_centred(x, axis)
    ge = g if keepdims or np.ndim(x) == 0 else np.expand_dims(g, _axes(axis, np.ndim(x)))
    return ge * 2.0 * c / (n - ddof)


def nan_var_jvp(x_dot, x, axis=None, ddof=0, keepdims=False):
    """Tangent of np.nanvar(x, axis, ddof=ddof) along x_dot (bilinear in x_dot and x's centred values)."""
    if _is_zero(x_dot):
        return x_dot
    c, n = _nan_centred(x, axis)
    out = np.sum(2.0 * c * np.where(np.isnan(x), 0.0, x_dot), axis=_axes(axis, np.ndim(x)), keepdims=True) / (n - ddof)
    return out if keepdims else np.squeeze(out, axis=_axes(axis, np.ndim(x)))


# ---- covariance ----------------------------------------------------------------------------------
def zero_of(v):
    """Zeros shaped like v (None stays None): the other block of a bilinear helper's argument."""
    return None if v is None else np.zeros(np.shape(v))


def _rows(v, rowvar):
    v = np.array(v, ndmin=2, dtype=_float_dtype(np.asarray(v)))
    return v.T if not rowvar and v.shape[0] != 1 else v


def _stacked(m, y, rowvar):
    """X of np.cov(m, y, rowvar): the variables as rows, y's after m's."""
    x = _rows(m, rowvar)
    return x if y is None else np.concatenate([x, _rows(y, rowvar)], axis=0)


def _zero_block(*blocks):
    """Whether a block is the zero derivative 0.0: the helpers' templates pair a derivative with
    explicit zeros for the other block (zero_of), so the whole X is zero then."""
    return any(b is not None and _is_zero(b) for b in blocks)


def _factor(n, bias, ddof):
    if ddof is None:
        ddof = 0 if bias else 1
    return n - ddof


def _no_weights(fweights, aweights):
    if fweights is not None or aweights is not None:
        raise _missing("np.cov with fweights or aweights",
                       "weight the observations yourself: xm = x - np.average(x, axis=1, weights=w)[:, None]; "
                       "(xm * w) @ xm.T / (w.sum() - ddof)")


def _centred(x):
    return x - np.mean(x, axis=1, keepdims=True)


def cov_tangent(pd, pyd, p, py, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """S + S^T with S = Xc(pd, pyd) Xc(p, py)^T / (N - ddof), squeezed as np.cov squeezes: the
    tangent of np.cov(p, py) along (pd, pyd). Linear in (pd, pyd) and in (p, py)."""
    _no_weights(fweights, aweights)
    if _zero_block(pd, pyd, p, py):
        return 0.0
    a = _centred(_stacked(pd, pyd, rowvar))
    b = _centred(_stacked(p, py, rowvar))
    s = a @ b.T / _factor(b.shape[1], bias, ddof)
    return (s + s.T).squeeze()


def _split(xbar, m, y, rowvar, which):
    """The rows of X's cotangent that belong to m (which=0) or y (which=1), in that argument's layout."""
    k = _rows(m, rowvar).shape[0]
    part, v = (xbar[:k], m) if which == 0 else (xbar[k:], y)
    if not rowvar and part.shape[0] != 1:
        part = part.T
    return part.reshape(np.shape(v))


def cov_vjp(g, m, y, rowvar=True, bias=False, ddof=None, which=0, fweights=None, aweights=None):
    """Cotangent of m (which=0) or y (which=1) in np.cov(m, y, rowvar, bias, ddof): rows of
    (G + G^T) Xc / (N - ddof) (their row means are zero already). Linear in g and in (m, y)."""
    _no_weights(fweights, aweights)
    if _is_zero(g) or _zero_block(m, y):
        return 0.0
    x = _centred(_stacked(m, y, rowvar))
    gm = np.reshape(np.asarray(g, dtype=x.dtype), (x.shape[0], x.shape[0]))
    xbar = (gm + gm.T) @ x / _factor(x.shape[1], bias, ddof)
    return _split(xbar, m, y, rowvar, which)


# ---- correlation from covariance -------------------------------------------------------------------
def _corr_parts(c):
    c = np.asarray(c)
    d = np.diagonal(c)
    s = np.sqrt(d)
    return c, d, 1.0 / np.outer(s, s)


def _e(dc, d):
    """E[i, j] = dc_ii / c_ii + dc_jj / c_jj."""
    r = np.diagonal(dc) / d
    return r[:, None] + r[None, :]


def corr_jvp(dc, c):
    """Tangent of R = C / sqrt(c c^T) along dC: D (dC - C E / 2), D = 1 / sqrt(c c^T)."""
    if _is_zero(dc) or np.ndim(c) == 0:
        return 0.0 * np.asarray(c)
    c, d, dd = _corr_parts(c)
    return dd * (dc - 0.5 * c * _e(dc, d))


def corr_jvp_dot(dc, c, dc2):
    """Tangent of corr_jvp(dc, c) along dC2 (the second derivative of R, symmetric in dc, dc2)."""
    if _is_zero(dc) or _is_zero(dc2) or np.ndim(c) == 0:
        return 0.0
    c, d, dd = _corr_parts(c)
    e, e2 = _e(dc, d), _e(dc2, d)
    r1, r2 = np.diagonal(dc) / d, np.diagonal(dc2) / d
    f = (r1 * r2)[:, None] + (r1 * r2)[None, :]
    return dd * (-0.5 * dc * e2 - 0.5 * dc2 * e + 0.25 * c * e * e2 + 0.5 * c * f)


def _rc(m):
    return np.sum(m, axis=1) + np.sum(m, axis=0)


def corr_vjp(g, c):
    """Cotangent of C from that of R = corr(C): G D - diag(rowsum + colsum of G R, over 2 c)."""
    if _is_zero(g) or np.ndim(c) == 0:
        return 0.0 * np.asarray(c)
    c, d, dd = _corr_parts(c)
    g = np.asarray(g)
    return g * dd - np.diag(_rc(g * dd * c) / (2.0 * d))


def corr_vjp_dot(g, c, dc2):
    """Tangent of corr_vjp(g, c) along dC2, g fixed (the transpose of corr_jvp_dot(., c, dc2))."""
    if _is_zero(g) or _is_zero(dc2) or np.ndim(c) == 0:
        return 0.0
    c, d, dd = _corr_parts(c)
    g = np.asarray(g)
    e2 = _e(dc2, d)
    gd = g * dd
    h = -0.5 * _rc(gd * dc2) + 0.25 * _rc(gd * c * e2) + 0.5 * _rc(gd * c) * np.diagonal(dc2) / d
    return -0.5 * gd * e2 + np.diag(h / d)


# ---- scipy.stats.multivariate_normal: one point x (k,) or a batch (n, k) ---------------------------------
def mvn_weights(g, x):
    """The cotangent of the log density per point, shaped to scale the point's rows: g[..., None]."""
    if _is_zero(g):
        return g
    return np.asarray(g)[..., None] if np.ndim(x) == 2 else g


def mvn_outer(g, d):
    """sum over points i of g_i d_i d_i^T (d: one point (k,) or a batch (n, k)); bilinear in g and d."""
    if _is_zero(g) or _is_zero(d):
        return 0.0
    d = np.asarray(d)
    if d.ndim == 1:
        return g * np.multiply.outer(d, d)
    return (d * np.asarray(g)[:, None]).T @ d


def mvn_outer2(g, d, e):
    """The tangent of mvn_outer(g, d) along d's tangent e: sum_i g_i (e_i d_i^T + d_i e_i^T)."""
    if _is_zero(g) or _is_zero(e):
        return 0.0
    d, e = np.asarray(d), np.asarray(e)
    if d.ndim == 1:
        return g * (np.multiply.outer(e, d) + np.multiply.outer(d, e))
    ge = e * np.asarray(g)[:, None]
    return ge.T @ d + d.T @ ge
