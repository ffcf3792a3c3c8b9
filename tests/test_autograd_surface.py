"""The systematic test of issue 23: every NumPy and SciPy function HIPS autograd has a rule for,
differentiated by srcad and checked against autograd's own gradient and central differences.

In the style of autograd's test_numpy / test_scipy / test_linalg, with functions of our own: each
case below is a small user function `np.sum(op(...) * w)` (w a fixed random weight, so every
output entry gets its own cotangent; the machinery is tests/test_rules_sweep.py's `Case`). A case
usually exercises a few operations of one family.

The surface is not listed by hand: `autograd_surface()` reads it from the installed autograd
(every primitive with a reverse-mode rule, `autograd.core.primitive_vjps`, after importing
autograd.numpy, .numpy.linalg, .numpy.fft and autograd.scipy's special, stats, linalg, signal and
integrate). Each such function is
  - covered: some case below reaches srcad's rule for it (recorded through the registry while the
    cases are transformed, `test_every_autograd_rule_is_covered`), or
  - refused: listed in REFUSED with the reason, and a case that asserts srcad's named error (never a
    silent zero, never a skip), or
  - one of autograd's internal primitives (INTERNAL: its helpers, and the spellings autograd routes
    through a primitive of its own, each named with the public spelling a case covers).

Each case is checked
  - against autograd: srcad.grad of the case, for every differentiated argument, equals
    autograd.grad of the same function run with autograd's numpy/scipy (the function's globals
    rebound), and both equal central differences (`test_gradient_matches_autograd`);
  - in every mode (`test_modes`): tests/test_systematic.py's `check_case` -- reverse mode, forward
    mode, reverse against forward, second order (hvp, hessian, forward over the tangent code)
    against finite differences, and float32. Marked slow (a few seconds for the whole table).
"""
import types
import zlib

import autograd
import autograd.numpy as anp
import autograd.numpy.fft  # noqa: F401
import autograd.numpy.linalg  # noqa: F401
import autograd.scipy.integrate
import autograd.scipy.linalg
import autograd.scipy.signal
import autograd.scipy.special
import autograd.scipy.stats.beta
import autograd.scipy.stats.chi2
import autograd.scipy.stats.dirichlet
import autograd.scipy.stats.gamma
import autograd.scipy.stats.multivariate_normal
import autograd.scipy.stats.norm
import autograd.scipy.stats.poisson
import autograd.scipy.stats.t
import numpy as np
import pytest
import scipy.integrate
import scipy.linalg as sla
import scipy.signal as signal
import scipy.special as sc
import scipy.stats as st
from autograd.core import primitive_vjps

import srcad
from fdcheck import numerical_grad
from test_rules_sweep import A, F, W, Case, build_args
from test_systematic import check_case, rules_exercised


# =============================================================================================
# The surface, read from the installed autograd
# =============================================================================================

def _name(fun):
    """A readable name of a function autograd wraps: np.sin, np.linalg.eig, sc.gammainc, st.t.cdf."""
    owner = getattr(fun, "__self__", None)
    if owner is not None and type(owner).__module__.startswith("scipy.stats"):
        return f"st.{owner.name if hasattr(owner, 'name') else type(owner).__name__[:-4]}.{fun.__name__}"
    if isinstance(fun, np.ufunc):
        if getattr(np, fun.__name__, None) is fun:
            return f"np.{fun.__name__}"
        return f"sc.{fun.__name__}"
    mod = getattr(fun, "__module__", None) or ""
    for short, prefix in (("np.linalg", "numpy.linalg"), ("np.fft", "numpy.fft"), ("np", "numpy"),
                          ("sc", "scipy.special"), ("sla", "scipy.linalg"), ("scipy.integrate", "scipy.integrate")):
        if mod.startswith(prefix):
            return f"{short}.{fun.__name__}"
    return f"{mod}.{getattr(fun, '__qualname__', fun.__name__)}"


def autograd_surface():
    """{name: function} for every primitive autograd has a reverse-mode rule for."""
    out = {}
    for prim in primitive_vjps:
        fun = getattr(prim, "fun", prim)
        out[_name(fun)] = fun
    return out


# autograd's internal primitives: its own helpers (no NumPy/SciPy function), and its routes for
# public spellings, each named with the public spelling that a case below covers
INTERNAL = {
    "autograd.builtins._make_dict": "dict(...) of autograd's containers (srcad: dicts, tests/test_dicts.py)",
    "autograd.builtins.container_take": "indexing autograd's containers (srcad: lists and tuples of arrays)",
    "autograd.builtins.container_untake": "the adjoint of container_take",
    "autograd.builtins.make_sequence": "list/tuple of autograd's containers",
    "autograd.builtins.sequence_extend_left": "autograd's container helper",
    "autograd.builtins.sequence_extend_right": "autograd's container helper",
    "autograd.core.VSpace.add": "autograd's vector-space arithmetic",
    "autograd.core.VSpace.covector": "autograd's vector-space arithmetic",
    "autograd.core.VSpace.inner_prod": "autograd's vector-space arithmetic",
    "autograd.core.VSpace.mut_add": "autograd's vector-space arithmetic",
    "autograd.core.VSpace.scalar_mul": "autograd's vector-space arithmetic",
    "autograd.core.sparse_add": "autograd's accumulation of sparse cotangents",
    "autograd.numpy.fft.truncate_pad": "the adjoint helper of autograd's rfft rules",
    "autograd.numpy.numpy_boxes.ArrayBox.__getitem__": "x[idx]: case `indexing`",
    "autograd.numpy.numpy_vjps.dot_adjoint_0": "the adjoint helper of autograd's np.dot",
    "autograd.numpy.numpy_vjps.dot_adjoint_1": "the adjoint helper of autograd's np.dot",
    "autograd.numpy.numpy_vjps.tensordot_adjoint_0": "the adjoint helper of autograd's np.tensordot",
    "autograd.numpy.numpy_vjps.tensordot_adjoint_1": "the adjoint helper of autograd's np.tensordot",
    "autograd.numpy.numpy_vjps.untake": "the adjoint helper of autograd's indexing",
    "autograd.numpy.numpy_wrapper._array_from_scalar_or_array": "np.array(x): case `array_concatenate`",
    "autograd.numpy.numpy_wrapper.array_from_args": "np.array([a, b]): case `array_concatenate`",
    "autograd.numpy.numpy_wrapper.concatenate_args": "np.concatenate: case `array_concatenate`",
    "autograd.numpy.numpy_wrapper.make_diagonal": "autograd's own anp.make_diagonal (np.diag: case `diag`)",
    "autograd.scipy.signal.convolve": "autograd's own convolve (scipy.signal.convolve: case `signal_convolve`)",
}


# =============================================================================================
# The cases: functions of our own, each ending in np.sum(... * w)
# =============================================================================================

# ---- elementwise ------------------------------------------------------------------------------
def ew_trig(x, w):
    return np.sum((np.sin(x) + np.cos(x) * np.tan(x) + np.sinh(x) - np.cosh(x) * np.tanh(x)) * w)


def ew_inverse_trig(x, w):
    return np.sum((np.arcsin(x) + np.arccos(x) * 2.0 + np.arctan(x) + np.arcsinh(x) + np.arctanh(x)) * w)


def ew_arccosh(x, w):
    return np.sum(np.arccosh(x + 1.5) * w)


def ew_exp_log(x, w):
    return np.sum((np.exp(x) + np.exp2(x) + np.expm1(x) + np.log(x) + np.log2(x) + np.log10(x)
                   + np.log1p(x)) * w)


def ew_powers(x, w):
    return np.sum((np.sqrt(x) + np.square(x) + np.reciprocal(x) + np.negative(x) + x ** 2.5) * w)


def ew_abs(x, w):
    return np.sum((np.abs(x) + np.absolute(x) * x + np.fabs(x)) * w)


def ew_angles(x, w):
    return np.sum((np.deg2rad(x) + np.degrees(x) + np.rad2deg(x) * np.radians(x) + np.sinc(x)) * w)


def ew_complex_parts(x, w):
    return np.sum((np.real(x) + np.imag(x) + np.conjugate(x) * x + np.angle(x) + np.real_if_close(x)) * w)


def ew_nan_to_num(x, w):
    return np.sum(np.nan_to_num(x * 2.0) * w)


# ---- binary, with broadcasting -------------------------------------------------------------------------
def bin_arith(x, y, w):
    return np.sum((np.add(x, y) + np.subtract(x, y) * np.multiply(x, y) + np.divide(x, y) + np.power(y, x)) * w)


def bin_special(x, y, w):
    return np.sum((np.arctan2(x, y) + np.hypot(x, y) + np.logaddexp(x, y) + np.logaddexp2(x, y)) * w)


def bin_extremes(x, y, w):
    return np.sum((np.maximum(x, y) + np.minimum(x, y) * 2.0 + np.fmax(x, y) * 3.0 + np.fmin(x, y)) * w)


def bin_remainder(x, y, w):
    return np.sum(np.remainder(x, y + 3.0) * w)


def bin_where_clip(x, y, w):
    return np.sum((np.where(x > 0, x * y, y) + np.clip(x, -0.5, 0.5)) * w)


# ---- reductions ----------------------------------------------------------------------------------------------
def red_sums(x, w):
    return np.sum((np.sum(x, axis=0) + np.mean(x, axis=0) * np.prod(x, axis=0)) * w)


def red_extremes(x, w):
    return np.sum((np.max(x, axis=1) + np.min(x, axis=1) + np.amax(x, axis=1) * np.amin(x, axis=1)) * w)


def red_moments(x, w):
    return np.sum((np.std(x, axis=1) + np.var(x, axis=1, ddof=1)) * w)


def red_cumulative(x, w):
    return np.sum(np.cumsum(x, axis=1) * w) + np.sum(np.diff(x, axis=0) ** 2)


def red_trace(x, w):
    return np.trace(x) * w[0] + np.trace(x, offset=1) * w[1]


def red_norm(x, w):
    return np.linalg.norm(x) * w[0] + np.sum(np.linalg.norm(x, axis=1) * w[1:])


# ---- shapes -------------------------------------------------------------------------------------------------------
def sh_reshape(x, w):
    return np.sum((np.reshape(x, (3, 2)) + np.ravel(x).reshape(3, 2) + np.transpose(x)
                   + np.swapaxes(x, 0, 1) * np.moveaxis(x, 0, 1)) * w)


def sh_dims(x, w):
    return np.sum((np.squeeze(np.expand_dims(x, 0), 0) + np.atleast_1d(x) * np.atleast_2d(x)
                   + np.atleast_3d(x)[:, :, 0] + np.broadcast_to(x[:1], (2, 3))) * w)


def sh_flips(x, w):
    return np.sum((np.fliplr(x) + np.flipud(x) * np.roll(x, 1, axis=1) + np.rot90(np.rot90(x))) * w)


def sh_rollaxis(x, w):
    return np.sum(np.rollaxis(x, 2) * w)


def sh_splits(x, w):
    a, b = np.split(x, 2, axis=1)
    c, d = np.hsplit(x, 2)
    e, f = np.vsplit(x, 2)
    g, h = np.array_split(x, 2, axis=0)
    return np.sum((a * b + c + d) * w) + np.sum(e * f) + np.sum(g ** 2 * h)


def sh_dsplit(x, w):
    a, b = np.dsplit(x, 2)
    return np.sum(a * b * w)


def sh_tri(x, w):
    return np.sum((np.triu(x) + np.tril(x, -1) * 2.0 + np.diag(np.diagonal(x, 0, -1, -2)) + np.diag(x[0])) * w)


def sh_tile_repeat(x, w):
    return np.sum((np.tile(x, 2) + np.repeat(x, 2) * np.repeat(x, 2)) * w)


def sh_pad(x, w):
    return np.sum(np.pad(x, 1, mode="constant") * w)


def sh_sort(x, w):
    return np.sum((np.sort(x) + np.partition(x, 2) * 0.5) * w)


def sh_full_linspace(x, w):
    return np.sum((np.full(3, x[0]) + np.linspace(x[1], x[2], 3)) * w)


def sh_gradient(x, w):
    return np.sum(np.gradient(x ** 2) * w)


def sh_fftshift(x, w):
    return np.sum((np.fft.fftshift(x) + np.fft.ifftshift(x) ** 2) * w)


def sh_astype(x, w):
    return np.sum(np.astype(x, np.float64) * x * w)


def indexing(x, w):
    return np.sum(x[1:, ::2] * w) + x[0, 1] ** 2


def array_concatenate(x, y, w):
    z = np.concatenate([x, y * 2.0])
    return np.sum(np.array([z, z ** 2]) * w) + np.sum(np.array(x) ** 3)


def diag(x, w):
    return np.sum(np.diag(x) * w)


# ---- products ------------------------------------------------------------------------------------------------
def pr_dot(x, y, w):
    return np.sum((np.dot(x, y) + np.matmul(x, y) * 2.0) * w)


def pr_inner_outer(x, y, w):
    return np.sum(np.outer(x[0], y[:, 0]) * w) + np.sum(np.inner(x, x) ** 2)


def pr_tensordot_einsum(x, y, w):
    return np.sum((np.tensordot(x, y, axes=1) + np.einsum("ij,jk->ik", x, y)) * w)


def pr_kron_cross(x, y, w):
    return np.sum(np.kron(x, y) * w) + np.sum(np.cross(x, y) ** 2)


# ---- linear algebra -------------------------------------------------------------------------------------------
def la_inv_det_solve(x, b, w):
    m = x @ x.T + 2.0 * np.eye(3)
    sign, logdet = np.linalg.slogdet(m)
    return np.sum((np.linalg.inv(m) @ b + np.linalg.solve(m, b)) * w) + np.linalg.det(m) + logdet


def la_cholesky_eigh(x, w):
    m = x @ x.T + 2.0 * np.eye(3)
    vals, vecs = np.linalg.eigh(m)
    return np.sum(np.linalg.cholesky(m) * w) + np.sum(vals ** 2) + np.sum((vecs * vecs) @ vals)


def la_eig(x, w):
    vals, vecs = np.linalg.eig(0.2 * x + np.diag([1.0, 2.5, 4.0]))
    return np.sum(vals * w) + np.sum(vecs * vecs * np.arange(9.0).reshape(3, 3))


def la_svd_pinv(x, w):
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    return np.sum(s * w) + np.sum(np.linalg.pinv(x) * np.arange(6.0).reshape(2, 3))


def la_scipy(x, b, w):
    m = x @ x.T + 2.0 * np.eye(3)
    tri = sla.solve_triangular(np.triu(x) + 3.0 * np.eye(3), b)
    return np.sum((sla.sqrtm(m) @ b + tri) * w)


def la_sylvester(a, q, w):
    return np.sum(sla.solve_sylvester(a + 3.0 * np.eye(3), a.T + 2.0 * np.eye(3), q) * w)


def la_banded(ab, b, w):
    return np.sum(sla.solve_banded((1, 1), ab + np.array([[0.0], [4.0], [0.0]]), b) * w)


# ---- scipy.signal -------------------------------------------------------------------------------------------------
def signal_convolve(a, v, w):
    return np.sum(signal.convolve(a, v) * w) + np.sum(signal.convolve(a, v, mode="valid") ** 2)


# ---- scipy.special ------------------------------------------------------------------------------------------------
def sp_gammas(x, w):
    return np.sum((sc.gamma(x) + sc.gammaln(x) + sc.psi(x) * sc.digamma(x) + sc.polygamma(1, x) + sc.rgamma(x)
                   + sc.multigammaln(x + 1.0, 2) + sc.gammasgn(x) * x) * w)


def sp_incomplete(x, w):
    return np.sum((sc.gammainc(2.5, x) + sc.gammaincc(1.5, x) + sc.betainc(2.0, 1.5, x / 2.5)) * w)


def sp_beta(x, y, w):
    return np.sum((sc.beta(x, y) + sc.betaln(x, y)) * w)


def sp_erfs(x, w):
    return np.sum((sc.erf(x) + sc.erfc(x) * 2.0 + sc.erfinv(x / 2.5) + sc.erfcinv(x / 2.5 + 1.0)) * w)


def sp_logistic(x, w):
    return np.sum((sc.expit(x) + sc.logit(x / 2.5)) * w) + sc.logsumexp(x)


def sp_bessel(x, w):
    return np.sum((sc.j0(x) + sc.j1(x) + sc.jn(2, x) + sc.y0(x) + sc.y1(x) + sc.yn(2, x)
                   + sc.i0(x) + sc.i1(x) + sc.iv(2.0, x) + sc.ive(1.0, x)) * w)


# ---- scipy.stats --------------------------------------------------------------------------------------------------
def st_norm(x, loc, scale, w):
    return np.sum((st.norm.pdf(x, loc, scale) + st.norm.logpdf(x, loc, scale) + st.norm.cdf(x, loc, scale)
                   + st.norm.logcdf(x, loc, scale) + st.norm.sf(x, loc, scale) + st.norm.logsf(x, loc, scale)) * w)


def st_t(x, df, w):
    return np.sum((st.t.pdf(x, df) + st.t.logpdf(x, df) + st.t.cdf(x, 3.0) + st.t.logcdf(x, 4.0)) * w)


def st_chi2(x, w):
    # (integer degrees of freedom: autograd's chi2.logpdf rule is zero for the others)
    return np.sum((st.chi2.pdf(x, 3.0) + st.chi2.logpdf(x, 2.0) + st.chi2.cdf(x, 4.0)) * w)


def st_beta(x, a, b, w):
    return np.sum((st.beta.pdf(x / 2.5, a, b) + st.beta.logpdf(x / 2.5, a, b) + st.beta.cdf(x / 2.5, 2.0, 3.0)) * w)


def st_gamma(x, a, w):
    return np.sum((st.gamma.pdf(x, a) + st.gamma.logpdf(x, a) + st.gamma.cdf(x, 2.0)) * w)


def st_poisson(mu, w):
    k = np.array([0.0, 1.0, 3.0])
    return np.sum((st.poisson.pmf(k, mu) + st.poisson.logpmf(k, mu) + st.poisson.cdf(k, mu)) * w)


def st_dirichlet(x, alpha, w):
    p = x / np.sum(x)
    return (st.dirichlet.logpdf(p, alpha) + st.dirichlet.pdf(p, alpha)) * w[0]


def st_mvn(x, mean, c, w):
    cov = c @ c.T + np.eye(3)
    return (np.sum((st.multivariate_normal.logpdf(x, mean, cov) + st.multivariate_normal.pdf(x, mean, cov)) * w)
            + st.multivariate_normal.entropy(mean, cov))


CASES = [
    Case("trig", ew_trig, (A((2, 3), "unit"), W)),
    Case("inverse_trig", ew_inverse_trig, (A((2, 3), "unit"), W)),
    Case("arccosh", ew_arccosh, (A((3,), "pos"), W)),
    Case("exp_log", ew_exp_log, (A((2, 3), "pos"), W)),
    Case("powers", ew_powers, (A((2, 3), "pos"), W)),
    Case("abs", ew_abs, (A((2, 3), "away0"), W)),
    Case("angles", ew_angles, (A((2, 3), "away0"), W)),
    Case("complex_parts", ew_complex_parts, (A((2, 3), "pos"), W)),
    Case("nan_to_num", ew_nan_to_num, (A((3,)), W)),
    Case("arith", bin_arith, (A((2, 3), "pos"), A((3,), "pos"), W), wrt=(0, 1)),
    Case("binary_special", bin_special, (A((2, 3), "away0"), A((3,), "pos"), W), wrt=(0, 1)),
    Case("extremes", bin_extremes, (A((2, 3), "away0"), A((3,), "small"), W), wrt=(0, 1)),
    Case("remainder", bin_remainder, (A((2, 3), "pos"), A((3,), "pos"), W), wrt=(0, 1)),
    Case("where_clip", bin_where_clip, (A((2, 3), "clip"), A((2, 3)), W), wrt=(0, 1)),
    Case("sums", red_sums, (A((2, 3), "nonzero"), W)),
    Case("reduce_extremes", red_extremes, (A((2, 3), "distinct"), W)),
    Case("moments", red_moments, (A((2, 3)), W)),
    Case("cumulative", red_cumulative, (A((2, 3)), W)),
    Case("trace", red_trace, (A((3, 3)), A((2,)))),
    Case("norm", red_norm, (A((2, 3), "away0"), A((3,)))),
    Case("reshape", sh_reshape, (A((2, 3)), W)),
    Case("dims", sh_dims, (A((2, 3)), W)),
    Case("flips", sh_flips, (A((2, 3)), W)),
    Case("rollaxis", sh_rollaxis, (A((2, 3, 2)), W)),
    Case("splits", sh_splits, (A((2, 4)), W)),
    Case("dsplit", sh_dsplit, (A((2, 2, 4)), W)),
    Case("tri", sh_tri, (A((3, 3)), W)),
    Case("tile_repeat", sh_tile_repeat, (A((3,)), W)),
    Case("pad", sh_pad, (A((2, 3)), W)),
    Case("sort", sh_sort, (A((5,), "distinct"), W)),
    Case("full_linspace", sh_full_linspace, (A((3,)), W)),
    Case("gradient", sh_gradient, (A((5,)), W)),
    Case("fftshift", sh_fftshift, (A((5,)), W)),
    Case("astype", sh_astype, (A((3,)), W)),
    Case("indexing", indexing, (A((3, 4)), W)),
    Case("array_concatenate", array_concatenate, (A((3,)), A((2,)), W), wrt=(0, 1)),
    Case("diag", diag, (A((3,)), W)),
    Case("dot", pr_dot, (A((2, 3)), A((3, 2)), W), wrt=(0, 1)),
    Case("inner_outer", pr_inner_outer, (A((2, 3)), A((3, 2)), W), wrt=(0, 1)),
    Case("tensordot_einsum", pr_tensordot_einsum, (A((2, 3)), A((3, 2)), W), wrt=(0, 1)),
    Case("kron_cross", pr_kron_cross, (A((3,)), A((3,)), W), wrt=(0, 1)),
    Case("inv_det_solve", la_inv_det_solve, (A((3, 3)), A((3,)), W), wrt=(0, 1)),
    Case("cholesky_eigh", la_cholesky_eigh, (A((3, 3)), W)),
    Case("eig", la_eig, (A((3, 3)), W)),
    Case("svd_pinv", la_svd_pinv, (A((3, 2)), W)),
    Case("scipy_linalg", la_scipy, (A((3, 3)), A((3,)), W), wrt=(0, 1)),
    Case("sylvester", la_sylvester, (A((3, 3)), A((3, 3)), W), wrt=(0, 1)),
    Case("banded", la_banded, (A((3, 4)), A((4,)), W), wrt=(0, 1)),
    Case("signal_convolve", signal_convolve, (A((4, 3)), A((2, 2)), W), wrt=(0, 1)),
    Case("gammas", sp_gammas, (A((2, 3), "pos"), W)),
    Case("incomplete", sp_incomplete, (A((2, 3), "pos"), W)),
    Case("beta", sp_beta, (A((2, 3), "pos"), A((3,), "pos"), W), wrt=(0, 1)),
    Case("erfs", sp_erfs, (A((2, 3), "unit"), W)),
    Case("logistic", sp_logistic, (A((3,), "pos"), W)),
    Case("bessel", sp_bessel, (A((2, 3), "pos"), W)),
    Case("stats_norm", st_norm, (A((2, 3)), F(), F("pos"), W), wrt=(0, 1, 2)),
    Case("stats_t", st_t, (A((2, 3)), A((3,), "pos"), W), wrt=(0, 1)),
    Case("stats_chi2", st_chi2, (A((2, 3), "pos"), W)),
    Case("stats_beta", st_beta, (A((3,), "pos"), A((3,), "pos"), F("pos"), W), wrt=(0, 1, 2)),
    Case("stats_gamma", st_gamma, (A((3,), "pos"), A((3,), "pos"), W), wrt=(0, 1)),
    Case("stats_poisson", st_poisson, (A((3,), "pos"), W)),
    Case("stats_mvn", st_mvn, (A((2, 3)), A((3,)), A((3, 3)), W), wrt=(0, 1, 2)),
    Case("stats_dirichlet", st_dirichlet, (A((3,), "pos"), A((3,), "pos"), A((1,))), wrt=(0, 1)),
]


# =============================================================================================
# Refused: what srcad does not differentiate, each with the reason and its named error
# =============================================================================================

def refused_fft(x):
    return np.sum(np.real(np.fft.fft(x)))


def _rhs(y, t):
    return -y


def refused_odeint(x):
    return np.sum(scipy.integrate.odeint(_rhs, x, np.array([0.0, 1.0])))


_FFT = ("complex results: srcad differentiates real arrays (a real function of an FFT is complex in between)",
        refused_fft, srcad.MissingRuleError, "np.fft")
REFUSED = {
    **{f"np.fft.{n}": _FFT for n in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
                                      "irfft2", "rfftn", "irfftn")},
    "scipy.integrate.odeint": ("an ODE solver: the error says to write the integrator loop in NumPy or use "
                               "srcad.custom_vjp", refused_odeint, srcad.MissingRuleError, "integrator's loop"),
}


# =============================================================================================
# Autograd's version of a case: the same function, its globals rebound to autograd's modules
# =============================================================================================

_AG_STATS = types.SimpleNamespace(**{n: getattr(autograd.scipy.stats, n) for n in
                                     ("norm", "t", "chi2", "beta", "gamma", "poisson", "dirichlet",
                                      "multivariate_normal")})
_AG_GLOBALS = {"np": anp, "sc": autograd.scipy.special, "st": _AG_STATS, "sla": autograd.scipy.linalg,
               "signal": autograd.scipy.signal}


def autograd_version(f):
    env = dict(f.__globals__)
    env.update(_AG_GLOBALS)
    return types.FunctionType(f.__code__, env, f.__name__, f.__defaults__, f.__closure__)


# =============================================================================================
# The tests
# =============================================================================================

def _ids(cases):
    return [c.name for c in cases]


def test_surface_is_read_from_autograd():
    """The enumeration finds autograd's rules (a few known ones), and every name it finds is covered,
    refused or internal (a new autograd function fails here until it is placed)."""
    surface = autograd_surface()
    for known in ("np.sin", "np.linalg.eig", "sc.gammainc", "st.t.cdf", "st.dirichlet.logpdf", "np.fft.fft",
                  "sla.solve_sylvester", "np.gradient", "np.convolve" if "np.convolve" in surface else "np.kron"):
        assert known in surface, f"{known} not found among autograd's rules"
    assert len(surface) > 150


@pytest.mark.slow
def test_every_autograd_rule_is_covered():
    """Every function autograd differentiates has a srcad rule that a case here reaches, or is listed
    as refused (with a case asserting the named error) or as one of autograd's internal primitives."""
    seen = rules_exercised(CASES)
    missing = []
    for name, fun in sorted(autograd_surface().items()):
        if name in INTERNAL or name in REFUSED:
            continue
        if fun not in seen:
            missing.append(name)
    assert not missing, ("autograd has rules for these, and no case here reaches srcad's rule for them (add a case, "
                         "or list them in REFUSED with a reason):\n  " + "\n  ".join(missing))
    stale = sorted(set(INTERNAL) - set(autograd_surface()))
    assert not stale, f"INTERNAL names autograd no longer has: {stale}"


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_a_named_error(name):
    reason, f, err, fragment = REFUSED[name]
    x = np.array([0.3, 0.7])
    with pytest.raises(err) as info:
        srcad.grad(f)(x)
    assert fragment in str(info.value)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_gradient_matches_autograd(case):
    args = build_args(case)
    f_ag = autograd_version(case.f)
    want = case.f(*args)
    np.testing.assert_allclose(f_ag(*args), want, rtol=1e-10, atol=1e-12,
                               err_msg="autograd's version of the case computes a different value")
    for k in case.wrt:
        got = srcad.grad(case.f, wrt=k)(*args)
        ref = autograd.grad(f_ag, k)(*args)
        fd = numerical_grad(case.f, args, k)
        scale = max(1.0, float(np.max(np.abs(fd))))
        np.testing.assert_allclose(np.ravel(ref), fd, rtol=1e-5, atol=1e-6 * scale,
                                   err_msg=f"autograd vs central differences, argument {k}")
        np.testing.assert_allclose(np.ravel(got), np.ravel(ref), rtol=1e-7, atol=1e-9 * scale,
                                   err_msg=f"srcad vs autograd, argument {k}")


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_modes(case):
    """Reverse, forward and second order against finite differences (tests/test_systematic.py)."""
    check_case(case)


def test_autograd_hvp_agrees_on_new_rules():
    """Second order against autograd too, for the rules this issue added: srcad.hvp equals autograd's
    Hessian-vector product (reverse over reverse) on the cases that reach them."""
    for name in ("incomplete", "stats_t", "eig", "sylvester", "signal_convolve", "gradient", "complex_parts"):
        case = next(c for c in CASES if c.name == name)
        args = build_args(case)
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        v = rng.normal(size=np.shape(args[0]))
        got = srcad.hvp(case.f)(*args, v)
        f_ag = autograd_version(case.f)
        ref = autograd.hessian_vector_product(f_ag, 0)(*args, v)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-8, err_msg=name)
