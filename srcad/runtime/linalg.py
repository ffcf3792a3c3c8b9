"""Helpers of the linear-algebra rules (srcad/rules/linalg_rules.py).

The small ones (mm, T, sym, phi, ...) are linear in each argument and treat the zero derivative
0.0 as zero, so the adjoint templates of cholesky, eigh, pinv and solve_triangular are written
with them and stay differentiable (Hessians). The decompositions whose adjoints need a loop or
a long formula (svd, qr, matrix_power, expm) have helpers of their own, each with a hand-written
tangent (`*_vjp_dot`: the product rule applied to the helper line by line), so second order goes
through them too.
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


def _lower(uplo):
    if uplo in ("L", "l"):
        return True
    if uplo in ("U", "u"):
        return False
    raise ValueError(f"UPLO must be 'L' or 'U', not {uplo!r}")


def tri_sym(m, uplo="L"):
    """The symmetric matrix NumPy's eigh/eigvalsh/cholesky read from m: its `uplo` triangle
    (with the diagonal) mirrored onto the other one. Linear; zero stays zero."""
    if _is_zero(m):
        return m
    m = np.asarray(m)
    if _lower(uplo):
        return np.tril(m) + np.swapaxes(np.tril(m, -1), -1, -2)
    return np.triu(m) + np.swapaxes(np.triu(m, 1), -1, -2)


def tri_fold(g, uplo="L"):
    """The adjoint of tri_sym: the cotangent of m from that of the symmetric matrix read from it.
    The `uplo` triangle receives g_ij + g_ji off the diagonal, g_ii on it; the other triangle,
    which the function never reads, receives zero."""
    if _is_zero(g):
        return g
    g = np.asarray(g)
    gt = np.swapaxes(g, -1, -2)
    if _lower(uplo):
        return np.tril(g) + np.tril(gt, -1)
    return np.triu(g) + np.triu(gt, 1)


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


def svd_vjp_dot(g, a, ans, a_dot, ans_dot, full_matrices=True, compute_uv=True):
    """Tangent of svd_vjp(g, a, ans, ...) along the tangents of a (a_dot) and of the factors
    (ans_dot), g fixed (the part linear in g is svd_vjp(g_dot, ...)): the product rule applied to
    each line of svd_vjp (second order of np.linalg.svd)."""
    if _is_zero(g):
        return 0.0
    if not compute_uv:          # svd_vjp reads a's factors again: their tangents come from a_dot
        if _is_zero(a_dot):
            return 0.0
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        du, _, dvh = svd_jvp(a_dot, a, (u, s, vh), False, True)
        return (du * g[..., None, :]) @ vh + (u * g[..., None, :]) @ dvh
    if _is_zero(ans_dot):       # with the factors given, a lends its shape only
        return 0.0
    _svd_check(a, full_matrices)
    u, s, vh = ans
    du, ds, dvh = [np.zeros(np.shape(x)) if _is_zero(d) else d for d, x in zip(ans_dot, ans)]
    gu, gs, gvh = [np.zeros(np.shape(x)) if _is_zero(c) else c for c, x in zip(g, ans)]
    v, dv, gv = T(vh), T(dvh), T(gvh)
    f = _svd_f(s)
    df = eigh_f_jvp(s * s, 2.0 * s * ds)
    p, q = T(u) @ gu - T(gu) @ u, T(v) @ gv - T(gv) @ v
    j, k = f * p, f * q
    dj = df * p + f * (T(du) @ gu - T(gu) @ du)
    dk = df * q + f * (T(dv) @ gv - T(gv) @ dv)
    inner = j * s[..., None, :] + diag_embed(gs) + s[..., :, None] * k
    dinner = dj * s[..., None, :] + j * ds[..., None, :] + ds[..., :, None] * k + s[..., :, None] * dk
    out = du @ inner @ vh + u @ dinner @ vh + u @ inner @ dvh
    a2 = gu - u @ (T(u) @ gu)                   # the parts outside the spans
    da2 = -(du @ (T(u) @ gu) + u @ (T(du) @ gu))
    out = out + (da2 / s[..., None, :] - a2 * ds[..., None, :] / (s * s)[..., None, :]) @ vh
    out = out + (a2 / s[..., None, :]) @ dvh
    b3 = T(gv - v @ (T(v) @ gv))
    db3 = -T(dv @ (T(v) @ gv) + v @ (T(dv) @ gv))
    out = out + du @ (b3 / s[..., :, None])
    return out + u @ (db3 / s[..., :, None] - b3 * ds[..., :, None] / (s * s)[..., :, None])


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


def qr_vjp_dot(g, a, ans, ans_dot, mode="reduced"):
    """Tangent of qr_vjp(g, a, ans, mode) along the factors' tangents ans_dot, g fixed (second order
    of np.linalg.qr): with out = rhs r^-T, out_dot = (rhs_dot - out r_dot^T) r^-T."""
    _qr_check(a, mode)
    if _is_zero(g) or _is_zero(ans_dot):
        return 0.0
    q, r = ans
    gq, gr = [np.zeros(np.shape(x)) if _is_zero(c) else c for c, x in zip(g, ans)]
    dq, dr = [np.zeros(np.shape(x)) if _is_zero(d) else d for d, x in zip(ans_dot, ans)]
    m = r @ T(gr) - T(gq) @ q
    dm = dr @ T(gr) - T(gq) @ dq
    out = T(scipy.linalg.solve_triangular(r, T(gq + q @ _copyltu(m)), lower=False, trans=0))
    drhs = dq @ _copyltu(m) + q @ _copyltu(dm)
    return T(scipy.linalg.solve_triangular(r, T(drhs - out @ T(dr)), lower=False, trans=0))


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
    if n < 0:       # matrix_power_vjp(g, a, n) = -b^T matrix_power_vjp(g, b, -n) b^T with b = a^-1
        b = np.linalg.inv(a)
        db = -(b @ a_dot @ b)
        gb = matrix_power_vjp(g, b, -n)
        dgb = matrix_power_vjp_dot(g, b, db, -n)
        return -(T(db) @ gb @ T(b) + T(b) @ dgb @ T(b) + T(b) @ gb @ T(db))
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


# ---- cholesky's two forms -------------------------------------------------------------------------------
def chol_lower(m, upper=False):
    """The lower factor from np.linalg.cholesky(a, upper=upper)'s result (its transpose when upper),
    and back: the map is its own inverse and linear. Zero stays zero."""
    return T(m) if upper else m


def chol_uplo(upper=False):
    """The triangle np.linalg.cholesky(a, upper=upper) reads."""
    return "U" if upper else "L"


# ---- eig of a real matrix with real distinct eigenvalues ---------------------------------------------------
solve_sylvester = scipy.linalg.solve_sylvester
solve_banded = scipy.linalg.solve_banded


def eig_check(w):
    """w, the eigenvalues np.linalg.eig returned, after checking the rule applies: real and distinct
    (complex eigenvalues or complex eigenvectors, and repeated eigenvalues, have no rule)."""
    if np.iscomplexobj(w):
        raise MissingRuleError("np.linalg.eig of a matrix with complex eigenvalues",
                               fix="for a symmetric matrix use np.linalg.eigh; otherwise the derivative of "
                                   "complex eigenpairs is not available in srcad")
    w = np.asarray(w)
    gaps = np.where(np.eye(w.shape[-1], dtype=bool), np.inf, np.abs(w[..., None, :] - w[..., :, None]))
    if np.any(gaps <= 1e-10 * max(1.0, float(np.max(np.abs(w), initial=0.0)))):
        raise MissingRuleError("np.linalg.eig of a matrix with repeated eigenvalues",
                               fix="the eigenvectors of a repeated eigenvalue are not differentiable: for a "
                                   "symmetric matrix use np.linalg.eigvalsh, otherwise perturb the matrix so that its "
                                   "eigenvalues are distinct")
    return w


# ---- solve_banded: the band storage ab of a matrix with l sub- and u super-diagonals ----------------------
def band_full(l_and_u, ab):
    """The n x n matrix whose band ab stores: A[i, j] = ab[u + i - j, j] (linear in ab)."""
    if _is_zero(ab):
        return ab
    lo, up = l_and_u
    ab = np.asarray(ab)
    n = ab.shape[-1]
    i, j = np.indices((n, n))
    inside = (i - j <= lo) & (j - i <= up)
    return np.where(inside, ab[np.clip(up + i - j, 0, lo + up), j], 0.0)


def band_part(l_and_u, m):
    """The band storage of the band of m (the adjoint of band_full: the corners ab never uses are 0)."""
    if _is_zero(m):
        return m
    lo, up = l_and_u
    m = np.asarray(m)
    n = m.shape[-1]
    out = np.zeros((lo + up + 1, n), dtype=np.result_type(m, float))
    for d in range(-lo, up + 1):        # d = j - i: the diagonal stored in row u - d
        k = np.arange(max(0, -d), min(n, n - d))
        out[up - d, k + d] = m[k, k + d]
    return out


def band_flip(l_and_u):
    """(u, l): the band of the transposed matrix."""
    return (l_and_u[1], l_and_u[0])


def sqrtm_real(x):
    """x, the result of scipy.linalg.sqrtm, after checking it is real (a complex square root has no rule)."""
    if np.iscomplexobj(x):
        raise MissingRuleError("scipy.linalg.sqrtm of a matrix whose square root is complex",
                               fix="differentiate the square root of a symmetric positive definite matrix, or "
                                   "use its Cholesky factor (np.linalg.cholesky) instead")
    return x
