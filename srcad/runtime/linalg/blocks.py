"""The small helpers the linear-algebra adjoint templates are written with: linear building
blocks (mm, T, sym, phi, ...) that treat the zero derivative 0.0 as zero, so the templates of
cholesky, eigh, pinv and solve_triangular stay differentiable (Hessians); eigh's weights, the
transpositions of triangular solves, cholesky's two forms, eig's and sqrtm's checks, band storage."""
import numpy as np
import scipy.linalg

from ...errors import MissingRuleError
from ..values import _is_zero


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


def flip_trans(trans, flip):
    """The transposition tri_solve(..., flip) applies (a constant)."""
    t = _trans(trans)
    return 1 - t if flip else t


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
