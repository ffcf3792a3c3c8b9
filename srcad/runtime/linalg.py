"""Helpers of the linear-algebra rules (srcad/rules/linalg_rules.py).

The small ones (mm, T, sym, phi, ...) are linear in each argument and treat the zero derivative
0.0 as zero, so the adjoint templates of cholesky, eigh, pinv and solve_triangular are written
with them and stay differentiable (Hessians). The decompositions whose adjoints need a loop or
a long formula (svd, qr, matrix_power, expm) have helpers of their own; the derivative of those
helpers with respect to the primal matrix has no rule, so second order through them raises
MissingRuleError.
"""
import numpy as np
import scipy.linalg

from ..errors import MissingRuleError
from .values import _is_zero

solve_triangular = scipy.linalg.solve_triangular
expm = scipy.linalg.expm


def _missing(what):
    return MissingRuleError(what)


# ---- linear building blocks ------------------------------------------------------------------------
def T(x):
    """The transpose of the last two axes."""
    return x if _is_zero(x) else np.swapaxes(x, -1, -2)


def mm(a, b):
    """a @ b, zero when either is the zero derivative."""
    if _is_zero(a) or _is_zero(b):
        return 0.0
    return a @ b


def mmT(u, v):
    """u v^T: an outer product for vectors, u @ v^T for matrices."""
    if _is_zero(u) or _is_zero(v):
        return 0.0
    if np.ndim(u) == 1:
        return np.multiply.outer(u, v)
    return u @ np.swapaxes(v, -1, -2)


def sym(x):
    """(x + x^T) / 2."""
    return x if _is_zero(x) else 0.5 * (x + np.swapaxes(x, -1, -2))


def _eye_like(x):
    return np.eye(np.shape(x)[-1], dtype=np.result_type(x, float))


def phi(x):
    """The lower triangle of x with its diagonal halved."""
    if _is_zero(x):
        return x
    return np.tril(x) - 0.5 * x * _eye_like(x)


def diag_embed(d):
    """Matrices with d on their diagonal."""
    if _is_zero(d):
        return d
    d = np.asarray(d)
    return d[..., :, None] * np.eye(d.shape[-1], dtype=np.result_type(d, float))


def diag_plus(d, m):
    """m + diag_embed(d), zeros allowed for either."""
    if _is_zero(d):
        return m
    return diag_embed(d) if _is_zero(m) else m + diag_embed(d)


def diag_part(m):
    """The diagonal of (each of) m."""
    return m if _is_zero(m) else np.diagonal(m, axis1=-2, axis2=-1)


def expand2(s):
    """s[..., None, None]: a scalar per matrix, broadcast over the matrix."""
    return s if _is_zero(s) else np.asarray(s)[..., None, None]


def eye_minus(p):
    """I - p for square p."""
    return np.eye(np.shape(p)[-1]) - p


# ---- eigh ------------------------------------------------------------------------------------------
def eigh_f(w):
    """F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it (distinct eigenvalues assumed)."""
    diff = w[..., None, :] - w[..., :, None]
    eye = np.eye(np.shape(w)[-1], dtype=bool)
    return np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, diff))


def eigh_f_jvp(w, w_dot):
    """Tangent of eigh_f(w)."""
    if _is_zero(w_dot):
        return 0.0
    f = eigh_f(w)
    return -f * f * (w_dot[..., None, :] - w_dot[..., :, None])


# ---- triangular solves -------------------------------------------------------------------------------
def _trans(trans):
    t = {0: 0, 1: 1, "N": 0, "T": 1, "C": 1}.get(trans)
    if t is None:
        raise _missing(f"scipy.linalg.solve_triangular(..., trans={trans!r})")
    return t


def tri_solve(a, b, trans=0, lower=False, unit_diagonal=False, flip=False):
    """solve_triangular(a, b, trans, lower, unit_diagonal), with trans flipped when flip is set."""
    if _is_zero(b):
        return b
    t = _trans(trans)
    return scipy.linalg.solve_triangular(a, b, trans=1 - t if flip else t, lower=lower,
                                         unit_diagonal=unit_diagonal)


def tri_part(m, lower=False, unit_diagonal=False):
    """The triangle of m that solve_triangular reads (without the diagonal if it is unit)."""
    if _is_zero(m):
        return m
    k = -1 if unit_diagonal else 0
    return np.tril(m, k) if lower else np.triu(m, -k)


def trans_op(m, trans=0):
    """m, or its transpose when trans says so."""
    return T(m) if _trans(trans) else m


# ---- decompositions with adjoints of their own --------------------------------------------------------
def _svd_check(a, full_matrices):
    m, n = np.shape(a)[-2:]
    if full_matrices and m != n:
        raise _missing("np.linalg.svd(a, full_matrices=True) of a non-square matrix "
                       "(pass full_matrices=False)")


def _svd_f(s):
    s2 = s * s
    return eigh_f(s2)


def svd_vjp(g, a, ans, full_matrices=True, compute_uv=True):
    """Cotangent of a from those of np.linalg.svd(a) (thin factors, distinct singular values)."""
    if _is_zero(g):
        return g
    if not compute_uv:
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        return (u * g[..., None, :]) @ vh
    _svd_check(a, full_matrices)
    u, s, vh = ans
    gu, gs, gvh = [np.zeros(np.shape(x)) if _is_zero(c) else c for c, x in zip(g, ans)]
    v, gv = T(vh), T(gvh)
    f = _svd_f(s)
    j = f * (T(u) @ gu - T(gu) @ u)
    k = f * (T(v) @ gv - T(gv) @ v)
    inner = j * s[..., None, :] + diag_embed(gs) + s[..., :, None] * k
    out = u @ inner @ vh
    out = out + ((gu - u @ (T(u) @ gu)) / s[..., None, :]) @ vh        # the parts outside the spans
    return out + u @ (T(gv - v @ (T(v) @ gv)) / s[..., :, None])


def svd_jvp(a_dot, a, ans, full_matrices=True, compute_uv=True):
    """Tangent of np.linalg.svd(a) along a_dot (thin factors, distinct singular values)."""
    if not compute_uv:
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        return diag_part(T(u) @ a_dot @ T(vh))
    _svd_check(a, full_matrices)
    u, s, vh = ans
    v = T(vh)
    dp = T(u) @ a_dot @ v
    f = _svd_f(s)
    sm = diag_embed(s)
    du = u @ (f * (dp @ sm + sm @ T(dp))) + (a_dot @ v - u @ dp) / s[..., None, :]
    dv = v @ (f * (sm @ dp + T(dp) @ sm)) + (T(a_dot) @ u - v @ T(dp)) / s[..., None, :]
    return [du, diag_part(dp), T(dv)]


def _qr_check(a, mode):
    m, n = np.shape(a)[-2:]
    if mode not in ("reduced",) or m < n:
        raise _missing(f"np.linalg.qr(a, mode={mode!r}) of a {m}x{n} matrix (only mode='reduced' with "
                       f"rows >= columns has a rule)")


def _copyltu(m):
    return np.tril(m) + T(np.tril(m, -1))


def qr_vjp(g, a, ans, mode="reduced"):
    """Cotangent of a from those of (q, r) = np.linalg.qr(a) (full column rank)."""
    _qr_check(a, mode)
    if _is_zero(g):
        return g
    q, r = ans
    gq, gr = [np.zeros(np.shape(x)) if _is_zero(c) else c for c, x in zip(g, ans)]
    m = r @ T(gr) - T(gq) @ q
    rhs = gq + q @ _copyltu(m)
    return T(scipy.linalg.solve_triangular(r, T(rhs), lower=False, trans=0))


def qr_jvp(a_dot, a, ans, mode="reduced"):
    """Tangent of np.linalg.qr(a) along a_dot."""
    _qr_check(a, mode)
    q, r = ans
    ar = T(scipy.linalg.solve_triangular(r, T(a_dot), trans=1))     # a_dot r^{-1}
    x = T(q) @ ar
    low = np.tril(x, -1)
    omega = low - T(low)
    dq = q @ omega + ar - q @ x
    dr = (x - omega) @ r
    return [dq, dr]


def matrix_power_vjp(g, a, n):
    """Cotangent of a from that of np.linalg.matrix_power(a, n)."""
    if _is_zero(g):
        return g
    if n < 0:
        b = np.linalg.inv(a)
        gb = matrix_power_vjp(g, b, -n)
        return -T(b) @ gb @ T(b)
    powers = [np.eye(np.shape(a)[-1])]
    for _ in range(n - 1):
        powers.append(powers[-1] @ a)
    out = np.zeros(np.shape(a))
    for k in range(n):
        out = out + T(powers[k]) @ g @ T(powers[n - 1 - k])
    return out


def matrix_power_jvp(a_dot, a, n):
    """Tangent of np.linalg.matrix_power(a, n)."""
    if n < 0:
        b = np.linalg.inv(a)
        return matrix_power_jvp(-(b @ a_dot @ b), b, -n)
    if n == 0:
        return np.zeros(np.shape(a))
    powers = [np.eye(np.shape(a)[-1])]
    for _ in range(n - 1):
        powers.append(powers[-1] @ a)
    return sum(powers[k] @ a_dot @ powers[n - 1 - k] for k in range(n))


def expm_frechet(a, e):
    """The Frechet derivative of expm at a in the direction e."""
    if _is_zero(e):
        return e
    return scipy.linalg.expm_frechet(a, e, compute_expm=False)


def lstsq_check(g):
    """np.linalg.lstsq: only the solution (item 0) has a rule."""
    if not _is_zero(g) and any(not _is_zero(c) for c in list(g)[1:]):
        raise _missing("np.linalg.lstsq's residuals, rank or singular values (use the solution, item 0)")
    return 0.0 if _is_zero(g) else g[0]


def lstsq_jvp(a_dot, b_dot, a, b, ans):
    """Tangent of np.linalg.lstsq(a, b) (full rank): the solution, residuals and singular values."""
    p = np.linalg.pinv(a)
    x = ans[0]
    xd = 0.0
    if not _is_zero(a_dot):
        dp = (-(p @ a_dot @ p) + p @ T(p) @ T(a_dot) @ eye_minus(a @ p)
              + eye_minus(p @ a) @ T(a_dot) @ T(p) @ p)
        xd = dp @ b
    if not _is_zero(b_dot):
        xd = xd + p @ b_dot
    res = ans[1]
    if np.size(res):
        r = a @ x - b
        dr = (0.0 if _is_zero(a_dot) else a_dot @ x) + a @ xd - (0.0 if _is_zero(b_dot) else b_dot)
        res = np.atleast_1d(2.0 * np.sum(r * dr, axis=0))
    else:
        res = np.zeros(np.shape(res))
    sv = 0.0 * ans[3] if _is_zero(a_dot) else svd_jvp(a_dot, a, None, False, False)
    return [xd, res, 0.0, sv]


def flip_trans(trans, flip):
    """The transposition tri_solve(..., flip) applies (a constant)."""
    t = _trans(trans)
    return 1 - t if flip else t


def matrix_power_vjp_dot(g, a, a_dot, n):
    """Tangent of matrix_power_vjp(g, a, n) along a's tangent (second order)."""
    if _is_zero(g) or _is_zero(a_dot):
        return 0.0
    if n < 0:
        raise _missing("second order of np.linalg.matrix_power with a negative power")
    powers = [np.eye(np.shape(a)[-1])]
    for _ in range(n - 1):
        powers.append(powers[-1] @ a)
    out = np.zeros(np.shape(a))
    for k in range(n):
        out = out + (T(matrix_power_jvp(a_dot, a, k)) @ g @ T(powers[n - 1 - k])
                     + T(powers[k]) @ g @ T(matrix_power_jvp(a_dot, a, n - 1 - k)))
    return out


def expm_frechet2(a, e, d):
    """The derivative of expm_frechet(a, e) along a's tangent d: a block of expm of a 4n x 4n
    block upper-triangular matrix (expm of [[X, D], [0, X]] with X = [[a, e], [0, a]])."""
    if _is_zero(e) or _is_zero(d):
        return 0.0
    n = np.shape(a)[-1]
    z = np.zeros((n, n))
    m = np.block([[a, e, d, z], [z, a, z, d], [z, z, a, e], [z, z, z, a]])
    return scipy.linalg.expm(m)[:n, 3 * n:]


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


def _norm_weights(x, ans, ord, axis, keepdims):
    """d norm / d x, in x's shape (ties of max/min norms share evenly)."""
    kind, axes = _norm_kind(x, ord, axis)
    x = np.asarray(x)
    x = x if np.issubdtype(x.dtype, np.floating) else x.astype(float)
    a = _expand(np.asarray(ans, dtype=x.dtype), x, axes, keepdims)
    if kind == "vector":
        if ord is None or ord == 2:
            return x / a
        if ord == np.inf or ord == -np.inf:       # the extreme found again, in x's own dtype
            pick = np.max if ord == np.inf else np.min
            return np.sign(x) * _share(np.abs(x) == pick(np.abs(x), axis=axes, keepdims=True), axes)
        if ord == 0:
            return np.zeros(np.shape(x))
        p = float(ord)
        return np.sign(x) * np.abs(x) ** (p - 1.0) * a ** (1.0 - p)
    r, c = axes
    if ord is None or ord == "fro":
        return x / a
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


def norm_vjp_dot(g, x, x_dot, ans, ans_dot, ord=None, axis=None, keepdims=False):
    """Tangent of norm_vjp(g, x, ans, ...) along x_dot and ans_dot (second order): vector p-norms
    and the Frobenius norm, whose weights are sign(x) |x|^(p-1) ans^(1-p)."""
    if _is_zero(g):
        return 0.0
    kind, axes = _norm_kind(x, ord, axis)
    if ord in (0, np.inf, -np.inf) or kind == "matrix" and ord in (1, -1):
        return 0.0      # weights sign(x) * (share of the extreme): piecewise constant
    if kind == "vector" and not isinstance(ord, str):
        p = 2.0 if ord is None else float(ord)
    elif kind == "matrix" and ord in (None, "fro"):
        p = 2.0
    else:
        raise _missing(f"second order of np.linalg.norm with ord={ord!r}")
    x = np.asarray(x, dtype=float)
    a = _expand(np.asarray(ans, dtype=float), x, axes, keepdims)
    ge = _expand(g, x, axes, keepdims)
    out = 0.0
    if not _is_zero(x_dot):
        out = ge * a ** (1.0 - p) * (p - 1.0) * np.abs(x) ** (p - 2.0) * x_dot if p != 1.0 else 0.0 * x
    if not _is_zero(ans_dot):
        ad = _expand(ans_dot, x, axes, keepdims)
        out = out + ge * (1.0 - p) * a ** (-p) * ad * np.sign(x) * np.abs(x) ** (p - 1.0)
    return out
