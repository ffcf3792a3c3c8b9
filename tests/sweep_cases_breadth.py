"""Sweep cases: the rules added for HIPS autograd's breadth (issue 23): parts of real arrays, shifts,
np.append/np.gradient/np.row_stack, np.kron of unequal ndim, convolutions, np.trace and np.cross
with axes, np.add.at with repeated indices, scipy.special's incomplete gamma/beta family,
scipy.stats' t/chi2/poisson/beta/gamma/dirichlet, np.linalg.eig, scipy.linalg.solve_sylvester,
solve_banded and sqrtm. Each case ends in np.sum(op(...) * w) (tests/test_rules_sweep.py), and
tests/test_systematic.py checks it in reverse, forward and second order against finite differences.
"""
import numpy as np
import scipy.linalg
import scipy.signal
import scipy.special as sc
import scipy.stats as st

from test_rules_sweep import A, F, W, Case


# ---- parts of real arrays, shifts, joins -------------------------------------------------------------------
def np_real_parts(x, w):
    return np.sum((np.real(x) * np.conj(x) + np.imag(x) + np.angle(x) + np.conjugate(x)) * w)


def np_real_attrs(x, w):
    return np.sum((x.real * 2.0 + x.imag + x.conj() * x + np.real_if_close(x) ** 3 + x.conjugate()
                   + np.astype(x, np.float64) ** 2) * w)


def np_fftshift(x, w):
    return np.sum((np.fft.fftshift(x ** 2) + np.fft.ifftshift(x, axes=1)) * w)


def np_append_flat(x, y, w):
    return np.sum(np.append(x ** 2, y) * w)


def np_append_axis(x, y, w):
    return np.sum(np.append(x, np.sin(y), axis=0) * w)


def np_delete_axis(x, w):
    return np.sum(np.delete(x ** 2, [0, 2], axis=1) * w)


def np_delete_flat(x, w):
    return np.sum(np.delete(np.sin(x), 1) * w)


def np_gradient_1d(x, w):
    return np.sum(np.gradient(x ** 2) * w)


def np_gradient_spacing(x, w):
    return np.sum(np.gradient(x, 0.5, edge_order=2) * w)


def np_gradient_2d(x, w):
    gy, gx = np.gradient(x)
    return np.sum((gy * 2.0 + gx ** 2) * w)


def np_gradient_axis(x, w):
    return np.sum(np.gradient(np.sin(x), 2.0, axis=1) * w)


def np_row_stack(x, y, w):
    return np.sum(np.row_stack([x, y ** 2]) * w)      # (deprecated in NumPy 2: np.vstack)


def np_kron_unequal(x, y, w):
    return np.sum(np.kron(x, y) * w)


# ---- convolutions ------------------------------------------------------------------------------------------
def np_convolve_full(a, v, w):
    return np.sum(np.convolve(a, v) * w)


def np_convolve_same(a, v, w):
    return np.sum(np.convolve(a, v, mode="same") * w)


def np_convolve_valid(a, v, w):
    return np.sum(np.convolve(a, v, "valid") * w)


def np_convolve_short_first(a, v, w):
    return np.sum(np.convolve(v, a, mode="same") * w)


def sig_convolve_full(a, v, w):
    return np.sum(scipy.signal.convolve(a, v) * w)


def sig_convolve_same(a, v, w):
    return np.sum(scipy.signal.convolve(a, v, mode="same") * w)


def sig_convolve_valid(a, v, w):
    return np.sum(scipy.signal.convolve(a, v, mode="valid") * w)


# ---- trace and cross with axes, add.at -----------------------------------------------------------------------
def np_trace_offset(x, w):
    return np.trace(x, offset=1) * w[0] + np.trace(x, -1) * w[1]


def np_trace_axes(x, w):
    return np.sum(np.trace(x, offset=0, axis1=0, axis2=2) * w)


def np_cross_axes(a, b, w):
    return np.sum(np.cross(a, b, axisa=0, axisb=1, axisc=0) * w)


def np_cross_axis(a, b, w):
    return np.sum(np.cross(a, b, axis=0) * w)


def np_add_at(x, y, w):
    out = np.zeros(4)
    np.add.at(out, np.array([0, 2, 2, 3, 2]), x * y)
    return np.sum(out * w)


def np_add_at_rows(x, w):
    # graph message passing: rows gathered along edges, summed into their target nodes
    h = x * 1.0
    np.add.at(h, np.array([1, 0, 1]), np.tanh(x[np.array([0, 1, 2])]))
    return np.sum(h ** 2 * w)


def np_subtract_at(x, w):
    out = x ** 2
    np.subtract.at(out, np.array([1, 1, 0]), np.sin(x[:3]))
    return np.sum(out * w)


# ---- scipy.special ----------------------------------------------------------------------------------------------
def sp_rgamma(x, w):
    return np.sum(sc.rgamma(x + 0.5) * w)


def sp_yn(x, w):
    return np.sum((sc.yn(2, x + 1.0) + sc.yn(1, x + 1.0)) * w)


def sp_gammasgn(x, w):
    return np.sum(sc.gammasgn(x) * x * w)


def sp_multigammaln(x, w):
    return np.sum(sc.multigammaln(x + 2.0, 3) * w)


def sp_gammainc(x, w):
    return np.sum((sc.gammainc(2.5, x) + sc.gammaincc(1.5, x) * x) * w)


def sp_betainc(x, w):
    return np.sum(sc.betainc(2.0, 3.5, x / 2.5) * w)


# ---- scipy.stats -------------------------------------------------------------------------------------------------
def st_t_cdf(x, loc, scale, w):
    return np.sum((st.t.cdf(x, 3.5, loc, scale) + st.t.logcdf(x, 2.5, loc, scale)) * w)


def st_chi2(x, df, loc, scale, w):
    return np.sum((st.chi2.logpdf(x + 2.0, df, loc, scale) + st.chi2.pdf(x + 2.0, df, loc, scale)) * w)


def st_chi2_cdf(x, loc, scale, w):
    return np.sum(st.chi2.cdf(x + 2.0, 3.0, loc, scale) * w)


def st_poisson_pmf_cdf(mu, w):
    k = np.array([0.0, 2.0, 3.0])
    return np.sum((st.poisson.pmf(k, mu) + st.poisson.cdf(k + 0.5, mu)) * w)


def st_beta_pdf(x, a, b, w):
    return np.sum(st.beta.pdf(x / 2.5, a, b) * w)


def st_beta_cdf(x, w):
    return np.sum(st.beta.cdf(x / 2.5, 2.0, 1.5) * w)


def st_gamma_pdf(x, a, loc, scale, w):
    return np.sum(st.gamma.pdf(x, a, loc, scale) * w)


def st_gamma_cdf(x, loc, scale, w):
    return np.sum(st.gamma.cdf(x, 2.5, loc, scale) * w)


def st_dirichlet(x, alpha, w):
    p = x / np.sum(x)
    return (st.dirichlet.logpdf(p, alpha) + st.dirichlet.pdf(p, alpha)) * w[0]


def st_multivariate_normal(x, mean, c, w):
    cov = c @ c.T + 2.0 * np.eye(3)
    return np.sum((st.multivariate_normal.logpdf(x, mean, cov) * 2.0 + st.multivariate_normal.pdf(x, mean, cov)) * w)


def st_multivariate_normal_one(x, c, w):
    cov = c @ c.T + np.eye(3)
    return (st.multivariate_normal.logpdf(x, np.zeros(3), cov) + st.multivariate_normal.entropy(None, cov)) * w[0]


# ---- linear algebra --------------------------------------------------------------------------------------------
_EIG_SHIFT = np.diag([0.0, 2.0, 4.5])


def la_eig_values(x, w):
    vals, vecs = np.linalg.eig(0.3 * x + _EIG_SHIFT)
    return np.sum(vals * w)


def la_eig_vectors(x, w):
    vals, vecs = np.linalg.eig(0.3 * x + _EIG_SHIFT)
    return np.sum(vecs * vecs * w) + np.sum(vals ** 2)


def la_sylvester(a, b, q, w):
    return np.sum(scipy.linalg.solve_sylvester(a + 3.0 * np.eye(3), b + 2.0 * np.eye(2), q) * w)


def la_banded(ab, b, w):
    band = ab + np.array([[0.0], [4.0], [0.0]])
    return np.sum(scipy.linalg.solve_banded((1, 1), band, b) * w)


def la_banded_matrix(ab, b, w):
    band = ab + np.array([[0.0], [0.0], [5.0]])
    return np.sum(scipy.linalg.solve_banded((2, 0), band, b) * w)


def la_sqrtm(x, w):
    return np.sum(scipy.linalg.sqrtm(x @ x.T + 2.0 * np.eye(3)) * w)


CASES = [
    Case("real_parts", np_real_parts, (A((2, 3), "away0"), W)),
    Case("real_attrs", np_real_attrs, (A((2, 3)), W)),
    Case("fftshift", np_fftshift, (A((3, 4)), W)),
    Case("append_flat", np_append_flat, (A((2, 2)), A((3,)), W), wrt=(0, 1)),
    Case("append_axis", np_append_axis, (A((2, 3)), A((1, 3)), W), wrt=(0, 1)),
    Case("delete_axis", np_delete_axis, (A((2, 4)), W)),
    Case("delete_flat", np_delete_flat, (A((2, 3)), W)),
    Case("gradient_1d", np_gradient_1d, (A((5,)), W)),
    Case("gradient_spacing", np_gradient_spacing, (A((5,)), W)),
    Case("gradient_2d", np_gradient_2d, (A((3, 4)), W)),
    Case("gradient_axis", np_gradient_axis, (A((3, 4)), W)),
    Case("row_stack", np_row_stack, (A((3,)), A((3,)), W), wrt=(0, 1)),
    Case("kron_unequal", np_kron_unequal, (A((2,)), A((2, 3)), W), wrt=(0, 1)),
    Case("kron_unequal_rev", np_kron_unequal, (A((2, 2)), A((3,)), W), wrt=(0, 1)),
    Case("convolve_full", np_convolve_full, (A((5,)), A((3,)), W), wrt=(0, 1)),
    Case("convolve_same", np_convolve_same, (A((5,)), A((4,)), W), wrt=(0, 1)),
    Case("convolve_valid", np_convolve_valid, (A((5,)), A((3,)), W), wrt=(0, 1)),
    Case("convolve_short_first", np_convolve_short_first, (A((5,)), A((2,)), W), wrt=(0, 1)),
    Case("signal_convolve_full", sig_convolve_full, (A((3, 4)), A((2, 2)), W), wrt=(0, 1)),
    Case("signal_convolve_same", sig_convolve_same, (A((3, 4)), A((2, 3)), W), wrt=(0, 1)),
    Case("signal_convolve_valid", sig_convolve_valid, (A((4, 4)), A((2, 3)), W), wrt=(0, 1)),
    Case("trace_offset", np_trace_offset, (A((3, 4)), A((2,)))),
    Case("trace_axes", np_trace_axes, (A((3, 2, 3)), W)),
    Case("cross_axes", np_cross_axes, (A((3, 2)), A((2, 3)), W), wrt=(0, 1)),
    Case("cross_axis", np_cross_axis, (A((3, 2)), A((3, 2)), W), wrt=(0, 1)),
    Case("add_at", np_add_at, (A((5,)), A((5,)), W), wrt=(0, 1)),
    Case("add_at_rows", np_add_at_rows, (A((3, 2)), W)),
    Case("subtract_at", np_subtract_at, (A((4,)), W)),
    Case("rgamma", sp_rgamma, (A((3,), "pos"), W)),
    Case("yn", sp_yn, (A((2, 3), "pos"), W)),
    Case("gammasgn", sp_gammasgn, (A((3,), "away0"), W)),
    Case("multigammaln", sp_multigammaln, (A((3,), "pos"), W)),
    Case("gammainc", sp_gammainc, (A((2, 3), "pos"), W)),
    Case("betainc", sp_betainc, (A((3,), "pos"), W)),
    Case("t_cdf_logcdf", st_t_cdf, (A((2, 3)), F(), F("pos"), W), wrt=(0, 1, 2)),
    Case("chi2_logpdf_pdf", st_chi2, (A((3,), "pos"), A((3,), "pos"), F("small"), F("pos"), W), wrt=(0, 1, 2, 3)),
    Case("chi2_cdf", st_chi2_cdf, (A((3,), "pos"), F("small"), F("pos"), W), wrt=(0, 1, 2)),
    Case("poisson_pmf_cdf", st_poisson_pmf_cdf, (A((3,), "pos"), W)),
    Case("beta_pdf", st_beta_pdf, (A((3,), "pos"), A((3,), "pos"), F("pos"), W), wrt=(0, 1, 2)),
    Case("beta_cdf", st_beta_cdf, (A((3,), "pos"), W)),
    Case("gamma_pdf", st_gamma_pdf, (A((3,), "pos"), A((3,), "pos"), F("small"), F("pos"), W), wrt=(0, 1, 2, 3)),
    Case("gamma_cdf", st_gamma_cdf, (A((3,), "pos"), F("small"), F("pos"), W), wrt=(0, 1, 2)),
    Case("dirichlet", st_dirichlet, (A((3,), "pos"), A((3,), "pos"), A((1,))), wrt=(0, 1)),
    Case("multivariate_normal", st_multivariate_normal, (A((2, 3)), A((3,)), A((3, 3)), W), wrt=(0, 1, 2)),
    Case("multivariate_normal_one", st_multivariate_normal_one, (A((3,)), A((3, 3)), A((1,))), wrt=(0, 1)),
    Case("eig_values", la_eig_values, (A((3, 3)), W)),
    Case("eig_vectors", la_eig_vectors, (A((3, 3)), W)),
    Case("solve_sylvester", la_sylvester, (A((3, 3)), A((2, 2)), A((3, 2)), W), wrt=(0, 1, 2)),
    Case("solve_banded", la_banded, (A((3, 4)), A((4,)), W), wrt=(0, 1)),
    Case("solve_banded_lower", la_banded_matrix, (A((3, 4)), A((4, 2)), W), wrt=(0, 1)),
    Case("sqrtm", la_sqrtm, (A((3, 3)), W)),
]
