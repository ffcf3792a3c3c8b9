"""The decompositions whose adjoints need a loop or a long formula (svd, qr, matrix_power, expm,
lstsq): each has a hand-written tangent of its adjoint (`*_vjp_dot`: the product rule applied to
the helper line by line), so second order goes through them too."""
import numpy as np
import scipy.linalg

from ..values import _is_zero
from .blocks import T, _missing, diag_embed, diag_part, eigh_f, eigh_f_jvp, eye_minus


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
