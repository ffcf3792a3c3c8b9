"""Sweep cases: NaN-ignoring reductions, order statistics, covariances, np.einsum reading a
diagonal (a letter repeated inside one operand), and np.linalg.norm w.r.t. its order. NaNs are
put in by the functions themselves (np.where with a constant mask), so their derivatives are zero
there; order statistics are drawn with distinct values, away from the ties where they kink.
"""
import numpy as np

from test_rules_sweep import A, F, W, Case

NAN_AT = np.array([[True, False, False, False],
                   [False, False, True, False],
                   [False, False, False, False]])


def st_nansum(x, w):
    return np.sum(np.nansum(np.where(NAN_AT, np.nan, x), axis=0) * w) + np.nansum(np.where(NAN_AT, np.nan, x) ** 2)


def st_nanmean(x, w):
    y = np.where(NAN_AT, np.nan, x)
    return np.sum(np.nanmean(y, axis=1, keepdims=True) * w) + np.nanmean(y ** 2)


def st_nanmax(x, w):
    return np.sum(np.nanmax(np.where(NAN_AT, np.nan, x), axis=1) * w) + np.nanmax(np.where(NAN_AT, np.nan, x))


def st_nanmin(x, w):
    return np.sum(np.nanmin(np.where(NAN_AT, np.nan, x), axis=0) * w) + np.nanmin(np.where(NAN_AT, np.nan, x) * w[0])


def st_nanvar(x, w):
    return np.sum(np.nanvar(np.where(NAN_AT, np.nan, x), axis=1) * w) + np.nanvar(np.where(NAN_AT, np.nan, x), ddof=1)


def st_nanstd(x, w):
    return np.sum(np.nanstd(np.where(NAN_AT, np.nan, x) * 2.0, axis=0, keepdims=True) * w)


def st_median(x, w):
    return np.sum(np.median(x ** 3, axis=0) * w) + np.median(np.sin(x))


def st_median_odd(x, w):
    return np.sum(np.median(x, axis=1, keepdims=True) * w) + np.median(x[:, :3], axis=(0, 1))


def st_percentile(x, w):
    return np.sum(np.percentile(np.sin(x), 30.0, axis=1) * w) + np.percentile(x, [10.0, 75.0]) @ w[:2]


def st_quantile(x, w):
    return np.sum(np.quantile(x * x, [0.2, 0.9], axis=0, keepdims=True) * w)


def st_cov(x, w):
    return np.sum(np.cov(np.sin(x)) * w)


def st_cov_kw(x, w):
    return np.sum(np.cov(x, rowvar=False, ddof=0) * w) + np.cov(x[0] * x[1])


def st_cov_xy(x, y, w):
    return np.sum(np.cov(x, y, bias=True) * w)


def st_corrcoef(x, w):
    return np.sum(np.corrcoef(x) * w)


def st_corrcoef_xy(x, y, w):
    return np.sum(np.corrcoef(x, y, rowvar=False) * w)


def st_einsum_diag(x, w):
    return np.sum(np.einsum("ii->i", x) * w) + np.einsum("ii->", x * x)


def st_einsum_diag_mixed(x, y, w):
    return np.sum(np.einsum("ij,jj->i", y, x * x) * w) + np.sum(np.einsum("iij->j", x[None, :, :] * x[:, None, :]))


def st_norm_order(x, p, w):      # the order of a vector p-norm moves it smoothly
    return np.sum(np.linalg.norm(x + 2.0, 1.0 + p, axis=1) * w)


CASES = [
    Case("nansum", st_nansum, (A((3, 4)), W)),
    Case("nanmean", st_nanmean, (A((3, 4)), W)),
    Case("nanmax", st_nanmax, (A((3, 4)), W)),
    Case("nanmin", st_nanmin, (A((3, 4)), W)),
    Case("nanvar", st_nanvar, (A((3, 4)), W)),
    Case("nanstd", st_nanstd, (A((3, 4)), W)),
    Case("median", st_median, (A((4, 3)), W)),
    Case("median_odd", st_median_odd, (A((3, 5)), W)),
    Case("percentile", st_percentile, (A((3, 4)), W)),
    Case("quantile", st_quantile, (A((5, 3)), W)),
    Case("cov", st_cov, (A((3, 5)), W)),
    Case("cov_kw", st_cov_kw, (A((5, 3)), W)),
    Case("cov_xy", st_cov_xy, (A((2, 5)), A((5,)), W), wrt=(0, 1)),
    Case("corrcoef", st_corrcoef, (A((3, 5)), W)),
    Case("corrcoef_xy", st_corrcoef_xy, (A((5, 2)), A((5, 1)), W), wrt=(0, 1)),
    Case("norm_order", st_norm_order, (A((2, 3)), F("pos"), W), wrt=(0, 1)),
    Case("einsum_diag", st_einsum_diag, (A((3, 3)), W)),
    Case("einsum_diag_mixed", st_einsum_diag_mixed, (A((3, 3)), A((2, 3)), W), wrt=(0, 1)),
]
