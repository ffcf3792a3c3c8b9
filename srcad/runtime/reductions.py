"""Adjoints and tangents of reductions: sum, max/min (ties share evenly), prod, var, cumsum, diff."""
import numpy as np
import scipy.sparse as sp

from .. import _kernels
from .sparse.reductions import sparse_sum_vjp
from .sparse.reductions import sum_jvp as sparse_sum_jvp
from .values import _KERNEL_FLOATS, _float_dtype, _is_zero, _plain
from .sparse.methods import extreme_jvp as sparse_extreme_jvp, extreme_vjp as sparse_extreme_vjp


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
        return sparse_sum_vjp(g, x, axis)
    if _plain(g):      # the cotangent takes x's float dtype (a float32 loss stays float32)
        g = np.asarray(g, dtype=_float_dtype(x))
    return np.broadcast_to(expand_reduced(g, x, axis, keepdims), np.shape(x))



def sum_jvp(x_dot, axis=None, keepdims=False):
    """Tangent of sum(x, axis) (a sparse tangent is summed over its stored values)."""
    if sp.issparse(x_dot):
        return sparse_sum_jvp(x_dot, axis, keepdims)
    return np.sum(x_dot, axis=axis, keepdims=keepdims)



def _ties(x, ans, axis, keepdims):
    """(where x attains its extreme ans, how many entries tie in each reduction group, kept dims)."""
    hit = np.equal(x, expand_reduced(ans, x, axis, keepdims))
    return hit, np.count_nonzero(hit, axis=_axes(axis, np.ndim(x)), keepdims=True)


def _tie_weights(x, ans, axis, keepdims):
    hit, n = _ties(x, ans, axis, keepdims)
    return hit / n



def extreme_vjp(g, x, ans, axis=None, keepdims=False):
    """Cotangent of x from that of max(x)/min(x): shared evenly among tied extremes. (The share
    g / ties is taken on the reduced shape, then spread over the hits: one pass over x's shape
    after the comparison, as the primal makes.)"""
    if _is_zero(g):
        return g
    if sp.issparse(x):          # implicit zeros take part (sparse/methods.py)
        return sparse_extreme_vjp(g, x, ans, axis)
    hit, n = _ties(x, ans, axis, keepdims)
    share = np.reshape(expand_reduced(g, x, axis, keepdims), np.shape(n)) / n
    return np.multiply(hit, share)



def extreme_jvp(x_dot, x, ans, axis=None, keepdims=False):
    """Tangent of max(x)/min(x): the mean of the tangents of the tied extremes."""
    if _is_zero(x_dot):
        return x_dot
    if sp.issparse(x):
        return sparse_extreme_jvp(x_dot, x, ans, axis)
    hit, n = _ties(x, ans, axis, keepdims)
    axes = _axes(axis, np.ndim(x))
    if isinstance(x_dot, np.ndarray) and len(axes) == 1 and n.size and n.min() == n.max() == 1:
        # no ties: read the tangent at each hit
        pos = np.argmax(hit, axis=axes[0], keepdims=True)
        total = np.take_along_axis(np.broadcast_to(x_dot, np.shape(x)), pos, axis=axes[0])
    else:
        total = np.sum(np.where(hit, x_dot, 0.0), axis=axes, keepdims=True) / n
    return total if keepdims else np.reshape(total, np.shape(ans))



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



# below this many numbers np.cumsum is as quick as the call into srcad's kernel
_RUNNING_MIN = 512


def _running(x, axis, reverse):
    """np.cumsum(x, axis) (reverse: summed from the end) through srcad's kernel, which gives numpy's
    bits several times faster (it keeps the running sum in a register): for a float array along
    its last axis or flattened (axis None). None where the kernel does not apply."""
    if type(x) is not np.ndarray or x.dtype not in _KERNEL_FLOATS or x.size < _RUNNING_MIN:
        return None
    if axis is None:
        return _kernels.running_sums(x.ravel(), reverse)
    if type(axis) is int and -x.ndim <= axis < x.ndim and axis % x.ndim == x.ndim - 1:
        return _kernels.running_sums(x, reverse)
    return None


def cumsum(x, axis=None, dtype=None, out=None):
    """np.cumsum(x, axis, dtype, out) as the generated code runs it: a float array's running sums
    along its last axis (or flattened) through srcad's kernel, with numpy's bits."""
    if dtype is None and out is None:
        done = _running(x, axis, False)
        if done is not None:
            return done
    return np.cumsum(x, axis=axis, dtype=dtype, out=out)


def cumsum_vjp(g, x, axis=None):
    """Cotangent of x from that of cumsum(x, axis): a reversed cumulative sum."""
    if _is_zero(g):
        return g
    done = _running(g, axis, True)
    if axis is None:
        flat = done if done is not None else np.cumsum(np.ravel(g)[::-1])[::-1]
        return np.reshape(flat, np.shape(x))
    return done if done is not None else np.flip(np.cumsum(np.flip(g, axis), axis), axis)



def diff_vjp(g, x, n=1, axis=-1):
    """Cotangent of x from that of np.diff(x, n, axis)."""
    if _is_zero(g):
        return g
    for _ in range(n):
        pad = [(0, 0)] * np.ndim(g)
        pad[axis] = (1, 1)
        g = -np.diff(np.pad(g, pad), axis=axis)
    return g


def half_over(g, s):
    """g / (2 s), and 0 where s is 0: the derivative of sqrt at s = sqrt(v) (np.std), taking the
    subgradient 0 where the square root is not differentiable (zero variance, one number), as
    autograd and PyTorch do: there var's own derivative is 0 too, so the product is 0, not NaN."""
    if _is_zero(g):
        return g
    s = np.asarray(s)
    if not np.any(s == 0):
        return g / (2.0 * s)
    out = np.asarray(g) / (2.0 * np.where(s == 0, 1.0, s))
    return np.where(s == 0, 0.0, out)


# ---- cumprod: the product rule along the axis, no division (an entry may be 0) -------------------------
def _along(x, axis):
    """x as an array with the cumulated axis first (flattened for axis=None), and the way back."""
    x = np.asarray(x)
    if axis is None:
        shape = x.shape
        return x.reshape(-1), lambda v: np.reshape(v, shape)
    return np.moveaxis(x, axis, 0), lambda v: np.moveaxis(v, 0, axis)


def _out_along(v, x, axis):
    """A derivative of the result (flat for axis=None, else x's shape) with the axis first."""
    if axis is None:
        return np.broadcast_to(np.ravel(v) if np.ndim(v) else v, (np.size(x),))
    return np.moveaxis(np.broadcast_to(v, np.shape(x)), axis, 0)


def _out_back(v, axis):
    """The result's layout back from the axis-first one (flat for axis=None)."""
    return v if axis is None else np.moveaxis(v, 0, axis)


def _prefix(x):
    """y[i] = x[0] ... x[i] and the exclusive products before each (1 for the first)."""
    y = np.cumprod(x, axis=0)
    before = np.concatenate([np.ones_like(y[:1]), y[:-1]], axis=0)
    return y, before


def cumprod_vjp(g, x, axis=None):
    """Cotangent of x from that of np.cumprod(x, axis): y_i = y_(i-1) x_i read backwards,
    ybar_i = g_i + ybar_(i+1) x_(i+1), xbar_i = ybar_i y_(i-1) (exact where x has zeros)."""
    if _is_zero(g):
        return g
    xs, back = _along(np.asarray(x, dtype=np.result_type(x, float)), axis)
    gs = _out_along(g, x, axis)
    _, before = _prefix(xs)
    ybar = np.array(gs, dtype=np.result_type(gs, xs), copy=True)
    for i in range(len(xs) - 2, -1, -1):
        ybar[i] += ybar[i + 1] * xs[i + 1]
    return back(ybar * before)


def cumprod_vjp_dot(g, x, x_dot, axis=None):
    """Tangent of cumprod_vjp(g, x, axis) along x_dot, g fixed (second order of np.cumprod)."""
    if _is_zero(g) or _is_zero(x_dot):
        return 0.0
    xs, back = _along(np.asarray(x, dtype=np.result_type(x, float)), axis)
    es = _along(np.broadcast_to(x_dot, np.shape(x)), axis)[0]
    gs = _out_along(g, x, axis)
    y, before = _prefix(xs)
    yd = _out_along(np.asarray(cumprod_jvp(x_dot, x, axis), dtype=float), x, axis)
    before_d = np.concatenate([np.zeros_like(yd[:1]), yd[:-1]], axis=0)
    ybar = np.array(gs, dtype=float, copy=True)
    ybar_d = np.zeros_like(ybar)
    for i in range(len(xs) - 2, -1, -1):
        ybar_d[i] = ybar_d[i + 1] * xs[i + 1] + ybar[i + 1] * es[i + 1]
        ybar[i] += ybar[i + 1] * xs[i + 1]
    return back(ybar_d * before + ybar * before_d)


def cumprod_jvp(x_dot, x, axis=None):
    """Tangent of np.cumprod(x, axis): y_dot_i = y_dot_(i-1) x_i + y_(i-1) x_dot_i."""
    if _is_zero(x_dot):
        return x_dot
    xs, back = _along(x, axis)
    ds = _along(np.broadcast_to(x_dot, np.shape(x)), axis)[0]
    _, before = _prefix(xs)
    out = np.array(ds * before, dtype=np.result_type(ds, xs, float), copy=True)
    for i in range(1, len(xs)):
        out[i] += out[i - 1] * xs[i]
    return _out_back(out, axis)


def cumprod_jvp_dot(x_dot, x, e, axis=None):
    """Tangent of cumprod_jvp(x_dot, x, axis) along a tangent e of x."""
    if _is_zero(x_dot) or _is_zero(e):
        return 0.0
    xs, back = _along(x, axis)
    ds = _along(np.broadcast_to(x_dot, np.shape(x)), axis)[0]
    es = _along(np.broadcast_to(e, np.shape(x)), axis)[0]
    _, before = _prefix(xs)
    ye = _out_along(cumprod_jvp(e, x, axis), x, axis)               # the tangent of y along e
    before_e = np.concatenate([np.zeros_like(ye[:1]), ye[:-1]], axis=0)
    yd = np.array(ds * before, dtype=float, copy=True)
    out = np.array(ds * before_e, dtype=float, copy=True)
    for i in range(1, len(xs)):
        out[i] += out[i - 1] * xs[i] + yd[i - 1] * es[i]
        yd[i] += yd[i - 1] * xs[i]
    return _out_back(out, axis)
