"""np.linalg.norm's derivatives: vector and matrix norms of every order, along x and along the
order itself, to second order."""
import numpy as np

from ..values import _is_zero
from .blocks import _missing
from .decompositions import svd_jvp


# ---- norms ---------------------------------------------------------------------------------------------
def _norm_kind(x, ord, axis):
    """('vector', axes) or ('matrix', (row axis, column axis)) as np.linalg.norm reads its arguments."""
    nd = np.ndim(x)
    if axis is None:
        if ord is not None and nd == 2:
            return "matrix", (0, 1)
        return "vector", tuple(range(nd))
    if isinstance(axis, tuple) and len(axis) == 2:
        return "matrix", (axis[0] % nd, axis[1] % nd)
    axis = axis[0] if isinstance(axis, tuple) else axis
    return "vector", (axis % nd,)


def _expand(v, x, axes, keepdims):
    return v if keepdims else np.expand_dims(v, axes)


def _share(hit, axes):
    return hit / np.sum(hit, axis=axes, keepdims=True)


def _over_norm(x, a):
    """x / a, and 0 where the norm a is 0: at x = 0 a norm is not differentiable, and srcad takes
    the subgradient 0 (as PyTorch does; the quotient would be NaN)."""
    if not np.any(a == 0):
        return x / a
    return np.where(a == 0, 0.0, x / np.where(a == 0, 1.0, a))


def _norm_weights(x, ans, ord, axis, keepdims):
    """d norm / d x, in x's shape (ties of max/min norms share evenly)."""
    kind, axes = _norm_kind(x, ord, axis)
    x = np.asarray(x)
    x = x if np.issubdtype(x.dtype, np.floating) else x.astype(float)
    a = _expand(np.asarray(ans, dtype=x.dtype), x, axes, keepdims)
    if kind == "vector":
        if ord is None or ord == 2:
            return _over_norm(x, a)
        if ord == np.inf or ord == -np.inf:       # the extreme found again, in x's own dtype
            pick = np.max if ord == np.inf else np.min
            return np.sign(x) * _share(np.abs(x) == pick(np.abs(x), axis=axes, keepdims=True), axes)
        if ord == 0:
            return np.zeros(np.shape(x))
        p = float(ord)
        return np.sign(x) * _over_norm(np.abs(x) ** (p - 1.0), a ** (p - 1.0))
    r, c = axes
    if ord is None or ord == "fro":
        return _over_norm(x, a)
    if ord in (1, -1, np.inf, -np.inf):
        over = r if ord in (1, -1) else c          # ord 1: column sums (over rows); inf: row sums
        other = c if over == r else r
        sums = np.sum(np.abs(x), axis=over, keepdims=True)
        pick = np.max if ord in (1, np.inf) else np.min
        return np.sign(x) * _share(sums == pick(sums, axis=other, keepdims=True), (other,))
    if ord in ("nuc", 2, -2):
        xm = np.moveaxis(x, (r, c), (-2, -1))
        u, s, vh = np.linalg.svd(xm, full_matrices=False)
        if ord == "nuc":
            w = u @ vh
        else:
            k = 0 if ord == 2 else -1          # the largest (smallest) singular value's pair
            w = u[..., :, [k]] @ vh[..., [k], :]
        return np.moveaxis(w, (-2, -1), (r, c))
    raise _missing(f"np.linalg.norm with ord={ord!r}")


def _pnorm_order(x, ord, axis):
    """(p, axes) when np.linalg.norm(x, ord, axis) is a vector p-norm of finite order p != 0, the
    norms whose value moves smoothly with ord; (None, axes) for the others: ord = +-inf (the limit,
    max or min of |x|, does not move with ord) and matrix norms (ord picks one of a few norms)."""
    kind, axes = _norm_kind(x, ord, axis)
    if kind != "vector" or ord is None or isinstance(ord, str) or np.isinf(ord):
        return None, axes
    if ord == 0:
        raise _missing("np.linalg.norm(x, ord) at ord=0 (a count of nonzeros) w.r.t. its order ord")
    return float(ord), axes


def _pnorm_parts(x, p, axes):
    a = np.abs(np.asarray(x, dtype=_float(x)))
    ap = a ** p
    loga = np.log(np.where(a == 0, 1.0, a))
    s = np.sum(ap, axis=axes, keepdims=True)
    t = np.sum(ap * loga, axis=axes, keepdims=True)
    n = s ** (1.0 / p)
    return a, ap, loga, s, t, n


def _reduced(v, axes, keepdims):
    return v if keepdims else np.squeeze(v, axis=axes)


def _dnorm_dp(x, p, axes):
    """d ||x||_p / dp = N (T / (p S) - log S / p^2), S = sum |x|^p, T = sum |x|^p log|x| (kept dims)."""
    _, _, _, s, t, n = _pnorm_parts(x, p, axes)
    return n * (t / (p * s) - np.log(s) / p ** 2)


def _d2norm_dp2(x, p, axes):
    """d^2 ||x||_p / dp^2 = D E + N dE/dp, D = N E the first derivative (kept dims)."""
    _, ap, loga, s, t, n = _pnorm_parts(x, p, axes)
    u = np.sum(ap * loga * loga, axis=axes, keepdims=True)
    e = t / (p * s) - np.log(s) / p ** 2
    de = u / (p * s) - t / (p * p * s) - t * t / (p * s * s) - t / (s * p ** 2) + 2.0 * np.log(s) / p ** 3
    return n * e * e + n * de


def _dnorm_dp_dx(x, x_dot, p, axes):
    """The tangent of _dnorm_dp(x, p) along x_dot (kept dims)."""
    a, ap, loga, s, t, n = _pnorm_parts(x, p, axes)
    sg = np.sign(x)
    am1 = np.where(a == 0, 0.0, a ** (p - 1.0))
    ds = np.sum(p * am1 * sg * x_dot, axis=axes, keepdims=True)
    dt = np.sum(sg * am1 * (p * loga + 1.0) * x_dot, axis=axes, keepdims=True)
    dn = n / (p * s) * ds
    d = n * (t / (p * s) - np.log(s) / p ** 2)
    return dn * d / n + n * (dt / (p * s) - t * ds / (p * s * s) - ds / (s * p ** 2))


def _float(x):
    x = np.asarray(x)
    return x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64


def norm_ord_vjp(g, x, ans, ord=None, axis=None, keepdims=False):
    """Cotangent of ord in np.linalg.norm(x, ord, axis, keepdims) (a number)."""
    p, axes = _pnorm_order(x, ord, axis)
    if _is_zero(g) or p is None:
        return 0.0
    return float(np.sum(g * _reduced(_dnorm_dp(x, p, axes), axes, keepdims)))


def norm_ord_jvp(ord_dot, x, ans, ord=None, axis=None, keepdims=False):
    """Tangent of np.linalg.norm(x, ord, axis, keepdims) along a tangent of ord."""
    p, axes = _pnorm_order(x, ord, axis)
    if _is_zero(ord_dot) or p is None:
        return 0.0
    return _reduced(_dnorm_dp(x, p, axes), axes, keepdims) * ord_dot


def norm_ord_vjp_ord(g, x, ord_dot, ord=None, axis=None, keepdims=False):
    """Tangent of norm_ord_vjp(g, x, ..., ord) along a tangent of ord (second order in ord)."""
    p, axes = _pnorm_order(x, ord, axis)
    if _is_zero(g) or _is_zero(ord_dot) or p is None:
        return 0.0
    return float(np.sum(g * _reduced(_d2norm_dp2(x, p, axes), axes, keepdims))) * ord_dot


def norm_ord_jvp_ord(d, x, ord_dot, ord=None, axis=None, keepdims=False):
    """Tangent of norm_ord_jvp(d, x, ..., ord) along a tangent of ord."""
    p, axes = _pnorm_order(x, ord, axis)
    if _is_zero(d) or _is_zero(ord_dot) or p is None:
        return 0.0
    return _reduced(_d2norm_dp2(x, p, axes), axes, keepdims) * d * ord_dot


def norm_ord_vjp_dot(g, x, x_dot, ord=None, axis=None, keepdims=False):
    """Tangent of norm_ord_vjp(g, x, ...) along x_dot (second order)."""
    p, axes = _pnorm_order(x, ord, axis)
    if _is_zero(g) or _is_zero(x_dot) or p is None:
        return 0.0
    return float(np.sum(g * _reduced(_dnorm_dp_dx(x, x_dot, p, axes), axes, keepdims)))


def norm_ord_jvp_dot(ord_dot, x, x_dot, ord=None, axis=None, keepdims=False):
    """Tangent of norm_ord_jvp(ord_dot, x, ...) along x_dot (second order)."""
    p, axes = _pnorm_order(x, ord, axis)
    if _is_zero(ord_dot) or _is_zero(x_dot) or p is None:
        return 0.0
    return _reduced(_dnorm_dp_dx(x, x_dot, p, axes), axes, keepdims) * ord_dot


def norm_vjp_ord(g, x, ans, ord_dot, ord=None, axis=None, keepdims=False):
    """Tangent of norm_vjp(g, x, ans, ord, ...) along a tangent of ord, x and ans fixed: the weights
    sign(x) (|x| / ans)^(p-1) of a vector p-norm times log(|x| / ans)."""
    p, axes = _pnorm_order(x, ord, axis)
    if _is_zero(g) or _is_zero(ord_dot) or p is None:
        return 0.0
    x = np.asarray(x, dtype=_float(x))
    a = np.abs(x)
    n = _expand(np.asarray(ans, dtype=x.dtype), x, axes, keepdims)
    logr = np.log(np.where(a == 0, 1.0, a) / n)
    return _expand(g, x, axes, keepdims) * _norm_weights(x, ans, ord, axis, keepdims) * logr * ord_dot


def norm_vjp(g, x, ans, ord=None, axis=None, keepdims=False):
    """Cotangent of x from that of np.linalg.norm(x, ord, axis, keepdims)."""
    if _is_zero(g):
        return g
    _, axes = _norm_kind(x, ord, axis)
    return _expand(g, x, axes, keepdims) * _norm_weights(x, ans, ord, axis, keepdims)


def norm_jvp(x_dot, x, ans, ord=None, axis=None, keepdims=False):
    """Tangent of np.linalg.norm(x, ord, axis, keepdims)."""
    _, axes = _norm_kind(x, ord, axis)
    return np.sum(_norm_weights(x, ans, ord, axis, keepdims) * x_dot, axis=axes, keepdims=keepdims)


def _spectral_weights_dot(g, x, x_dot, ord, axes, keepdims):
    """g times the tangent of the nuclear (u vh) or spectral (u_k vh_k) norm's weights along x_dot;
    the weights do not depend on the norm itself (distinct singular values assumed)."""
    if _is_zero(x_dot):
        return 0.0
    r, c = axes
    xm = np.moveaxis(np.asarray(x, dtype=float), (r, c), (-2, -1))
    dm = np.moveaxis(np.asarray(x_dot, dtype=float), (r, c), (-2, -1))
    u, s, vh = np.linalg.svd(xm, full_matrices=False)
    du, _, dvh = svd_jvp(dm, xm, (u, s, vh), False, True)
    if ord == "nuc":
        dw = du @ vh + u @ dvh
    else:
        k = 0 if ord == 2 else -1
        dw = du[..., :, [k]] @ vh[..., [k], :] + u[..., :, [k]] @ dvh[..., [k], :]
    return _expand(g, x, axes, keepdims) * np.moveaxis(dw, (-2, -1), (r, c))


def norm_vjp_dot(g, x, x_dot, ans, ans_dot, ord=None, axis=None, keepdims=False):
    """Tangent of norm_vjp(g, x, ans, ...) along x_dot and ans_dot (second order): vector p-norms
    and the Frobenius norm, whose weights are sign(x) |x|^(p-1) ans^(1-p)."""
    if _is_zero(g):
        return 0.0
    kind, axes = _norm_kind(x, ord, axis)
    if ord in (0, np.inf, -np.inf) or kind == "matrix" and ord in (1, -1):
        return 0.0      # weights sign(x) * (share of the extreme): piecewise constant
    if kind == "matrix" and ord in ("nuc", 2, -2):
        return _spectral_weights_dot(g, x, x_dot, ord, axes, keepdims)
    if kind == "vector" and not isinstance(ord, str):
        p = 2.0 if ord is None else float(ord)
    elif kind == "matrix" and ord in (None, "fro"):
        p = 2.0
    else:
        raise _missing(f"second order of np.linalg.norm with ord={ord!r}")
    x = np.asarray(x, dtype=float)
    a = _expand(np.asarray(ans, dtype=float), x, axes, keepdims)
    zero = a == 0            # the norm at x = 0: first derivative 0 (a subgradient), so second 0 too
    a = np.where(zero, 1.0, a)
    ge = _expand(g, x, axes, keepdims)
    out = 0.0
    if not _is_zero(x_dot):
        out = ge * a ** (1.0 - p) * (p - 1.0) * np.abs(x) ** (p - 2.0) * x_dot if p != 1.0 else 0.0 * x
    if not _is_zero(ans_dot):
        ad = _expand(ans_dot, x, axes, keepdims)
        out = out + ge * (1.0 - p) * a ** (-p) * ad * np.sign(x) * np.abs(x) ** (p - 1.0)
    return np.where(zero, 0.0, out) if np.any(zero) else out
