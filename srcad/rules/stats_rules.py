"""Derivative rules of NumPy's statistics: NaN-ignoring reductions (sum, mean, max, min, var,
std), order statistics (median, percentile, quantile) and covariances (cov, corrcoef), with the
rules of their helpers (srcad/runtime/stats.py) so that second order goes through them.

Choices:
- nansum/nanmean/nanmax/nanmin: a NaN entry gets a zero derivative (it does not enter the
  result); an all-NaN slice of nanmax/nanmin has no extreme and gives NaN derivatives, as its
  value is NaN.
- median/percentile/quantile: the derivative goes to the (at most two) entries the default
  'linear' method interpolates between; other methods raise MissingRuleError. The quantile q
  itself has no rule (MissingRuleError when a derivative flows into it).
- cov: fweights/aweights raise MissingRuleError (written by hand, they are differentiated).
"""
import numpy as np
import scipy.stats as sst

from ..runtime import stats  # the templates reach it as rt.stats
from .registry import defnondiff, defrule

_st = "rt.stats."

# ---- NaN-ignoring reductions ------------------------------------------------------------------------
_NAN_RED = "x, axis=None, dtype=None, out=None, keepdims=False"
defrule(np.nansum, _NAN_RED, "np.where(np.isnan(x), 0.0, rt.sum_vjp(g, x, axis, keepdims))",
        "np.nansum(np.where(np.isnan(x), 0.0, x_dot), axis=axis, keepdims=keepdims)",
        discrete="axis dtype out keepdims")
defrule(np.nanmean, _NAN_RED,
        "np.where(np.isnan(x), 0.0, rt.sum_vjp(g, x, axis, keepdims) / "
        "np.sum(np.logical_not(np.isnan(x)), axis=axis, keepdims=True))",
        "np.nanmean(np.where(np.isnan(x), np.nan, x_dot), axis=axis, keepdims=keepdims)",
        discrete="axis dtype out keepdims")
for _fn in (np.nanmax, np.nanmin):      # x == ans is False at a NaN: the tie weights skip it
    defrule(_fn, "x, axis=None, out=None, keepdims=False", "rt.extreme_vjp(g, x, ans, axis, keepdims)",
            "rt.extreme_jvp(np.where(np.isnan(x), 0.0, x_dot), x, ans, axis, keepdims)",
            discrete="axis out keepdims")

_NAN_VAR = "x, axis=None, dtype=None, out=None, ddof=0, keepdims=False"
_MASKED = "np.where(np.isnan(x), np.nan, {0})"     # a tangent with x's NaNs: the helpers skip them
defrule(np.nanvar, _NAN_VAR, _st + "nan_var_vjp(g, x, axis, ddof, keepdims)",
        _st + "nan_var_jvp(x_dot, x, axis, ddof, keepdims)", discrete="axis dtype out ddof keepdims")
defrule(np.nanstd, _NAN_VAR, _st + "nan_var_vjp(g / (2.0 * ans), x, axis, ddof, keepdims)",
        _st + "nan_var_jvp(x_dot, x, axis, ddof, keepdims) / (2.0 * ans)", discrete="axis dtype out ddof keepdims")
defrule(stats.nan_var_vjp, "g, x, axis=None, ddof=0, keepdims=False", None,
        (_st + "nan_var_vjp(g_dot, x, axis, ddof, keepdims)",
         _st + "nan_var_vjp(g, " + _MASKED.format("x_dot") + ", axis, ddof, keepdims)"),
        jvp_join=True, discrete="axis ddof keepdims")
defrule(stats.nan_var_jvp, "d, x, axis=None, ddof=0, keepdims=False", None,     # d: the tangent it carries
        (_st + "nan_var_jvp(d_dot, x, axis, ddof, keepdims)",
         _st + "nan_var_jvp(d, " + _MASKED.format("x_dot") + ", axis, ddof, keepdims)"),
        jvp_join=True, discrete="axis ddof keepdims")

# ---- order statistics --------------------------------------------------------------------------------
defrule(np.median, "x, axis=None, out=None, overwrite_input=False, keepdims=False",
        _st + "quantile_vjp(g, x, 0.5, axis, keepdims)", _st + "quantile_jvp(x_dot, x, 0.5, axis, keepdims)",
        discrete="axis out overwrite_input keepdims")
for _fn, _scale in ((np.percentile, "100.0"), (np.quantile, "1.0")):
    defrule(_fn, "x, q, axis=None, out=None, overwrite_input=False, method='linear', keepdims=False, *, weights=None",
            (_st + f"quantile_vjp(g, x, q, axis, keepdims, method, {_scale})",),
            (_st + f"quantile_jvp(x_dot, x, q, axis, keepdims, method, {_scale})",),
            discrete="axis out overwrite_input method keepdims")
defrule(stats.quantile_vjp, "g, x, q, axis=None, keepdims=False, method='linear', scale=1.0", None,
        (_st + "quantile_vjp(g_dot, x, q, axis, keepdims, method, scale)", "0"),
        discrete="axis keepdims method")        # x: the weights are piecewise constant in x
defrule(stats.quantile_jvp, "x_dot, x, q, axis=None, keepdims=False, method='linear', scale=1.0", None,
        (_st + "quantile_jvp(x_dot_dot, x, q, axis, keepdims, method, scale)", "0"),
        discrete="axis keepdims method")

# ---- covariance and correlation ------------------------------------------------------------------------
_COV = "rowvar, bias, ddof"
_W = "fweights=fweights, aweights=aweights"
defrule(np.cov, "m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None",
        (_st + f"cov_vjp(g, m, y, {_COV}, 0, {_W})", _st + f"cov_vjp(g, m, y, {_COV}, 1, {_W})"),
        (_st + f"cov_tangent(m_dot, rt.stats.zero_of(y), m, y, {_COV}, {_W})",
         _st + f"cov_tangent(rt.stats.zero_of(m), y_dot, m, y, {_COV}, {_W})"),
        jvp_join=True, discrete="rowvar bias ddof dtype")
_C = "np.cov(x, y, rowvar)"
defrule(np.corrcoef, "x, y=None, rowvar=True, *, dtype=None",
        (_st + f"cov_vjp(rt.stats.corr_vjp(g, {_C}), x, y, rowvar, False, None, 0)",
         _st + f"cov_vjp(rt.stats.corr_vjp(g, {_C}), x, y, rowvar, False, None, 1)"),
        (_st + f"corr_jvp(rt.stats.cov_tangent(x_dot, rt.stats.zero_of(y), x, y, rowvar), {_C})",
         _st + f"corr_jvp(rt.stats.cov_tangent(rt.stats.zero_of(x), y_dot, x, y, rowvar), {_C})"),
        jvp_join=True, discrete="rowvar dtype")

# the helpers: cov_vjp and cov_tangent are linear in each of their two blocks of arguments
_HW = "rowvar=True, bias=False, ddof=None"
defrule(stats.cov_vjp, f"g, m, y, {_HW}, which=0, fweights=None, aweights=None", None,
        (_st + f"cov_vjp(g_dot, m, y, {_COV}, which, fweights, aweights)",
         _st + f"cov_vjp(g, m_dot, rt.stats.zero_of(y), {_COV}, which, fweights, aweights)",
         _st + f"cov_vjp(g, rt.stats.zero_of(m), y_dot, {_COV}, which, fweights, aweights)"),
        jvp_join=True, discrete="rowvar bias ddof which")
defrule(stats.cov_tangent, f"pd, pyd, p, py, {_HW}, fweights=None, aweights=None", None,
        (_st + f"cov_tangent(pd_dot, rt.stats.zero_of(py), p, py, {_COV}, fweights, aweights)",
         _st + f"cov_tangent(rt.stats.zero_of(p), pyd_dot, p, py, {_COV}, fweights, aweights)",
         _st + f"cov_tangent(pd, pyd, p_dot, rt.stats.zero_of(py), {_COV}, fweights, aweights)",
         _st + f"cov_tangent(pd, pyd, rt.stats.zero_of(p), py_dot, {_COV}, fweights, aweights)"),
        jvp_join=True, discrete="rowvar bias ddof")
defrule(stats.corr_vjp, "g, c", None, (_st + "corr_vjp(g_dot, c)", _st + "corr_vjp_dot(g, c, c_dot)"), jvp_join=True)
defrule(stats.corr_jvp, "dc, c", None, (_st + "corr_jvp(dc_dot, c)", _st + "corr_jvp_dot(dc, c, c_dot)"),
        jvp_join=True)
defnondiff([stats.zero_of])

# ---- scipy.stats.multivariate_normal: logpdf, pdf and entropy (cov symmetric positive definite) ------------------------
# log p = -(k log 2 pi + log det C + d C^-1 d^T) / 2 with d = x - mean, one point (k,) or a batch (n, k)
_D = "(x - mean)"
_P = "np.linalg.inv(cov)"
_DP = f"rt.linalg.mm({_D}, {_P})"


def _mvn_vjp(c):
    """The adjoints of the log density for the cotangent expression c (g; for the density, g * ans)."""
    return (f"-rt.stats.mvn_weights({c}, x) * {_DP}", f"rt.unbroadcast(rt.stats.mvn_weights({c}, x) * {_DP}, mean)",
            f"-0.5 * (np.sum({c}) * {_P} - rt.linalg.mm(rt.linalg.mm({_P}, rt.stats.mvn_outer({c}, {_D})), {_P}))")


_MVN_JVP = (f"-np.sum({_DP} * x_dot, axis=-1)", f"np.sum({_DP} * mean_dot, axis=-1)",
            f"-0.5 * (np.sum({_P} * rt.linalg.T(cov_dot)) - np.sum({_DP} * rt.linalg.mm({_DP}, rt.linalg.T(cov_dot)), "
            f"axis=-1))")
_MVN = "x, mean=None, cov=1, allow_singular=False"
defrule(sst.multivariate_normal.logpdf, _MVN, _mvn_vjp("g"), _MVN_JVP, jvp_join=True, discrete="allow_singular")
defrule(sst.multivariate_normal.pdf, _MVN, _mvn_vjp("(g * ans)"),
        tuple(f"ans * ({t})" for t in _MVN_JVP), jvp_join=True, discrete="allow_singular")
defrule(sst.multivariate_normal.entropy, "mean=None, cov=1", ("0", f"0.5 * g * rt.linalg.T({_P})"),
        ("0", f"0.5 * np.sum(rt.linalg.T({_P}) * cov_dot)"))
defrule(stats.mvn_weights, "g, x", None, ("rt.stats.mvn_weights(g_dot, x)", "0"))
defrule(stats.mvn_outer, "g, d", None, ("rt.stats.mvn_outer(g_dot, d)", "rt.stats.mvn_outer2(g, d, d_dot)"),
        jvp_join=True)
# (mvn_outer2, the tangent of mvn_outer in d, has no rule: a third derivative is a MissingRuleError, as for
# the other helpers' tangent helpers)
