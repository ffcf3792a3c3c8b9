"""Derivative rules of scipy.special and scipy.stats (logsumexp and expit are in numpy_rules.py).

`S.` in a template stands for rt.special (srcad/runtime/special.py re-exports the SciPy
functions the adjoints call). Every adjoint is a NumPy/SciPy expression with rules of its own, so
second order goes through. (scipy.special.log_ndtr is left to examples/custom_rule.py, which
shows how to register a rule; scipy.stats.norm.logcdf has one.) Orders of Bessel functions and polygamma's n have no rule (an active
value there raises MissingRuleError); a distribution's discrete argument (poisson's k) is constant.
"""
import re

import scipy.special as sc
import scipy.stats as st

from ..runtime import special
from .registry import defnondiff, defrule


def _s(t):
    return None if t is None else t.replace("S.", "rt.special.")


def rule(keys, params, vjp, jvp=None, broadcast=False, discrete=""):
    """A rule whose tangent templates are its adjoint templates with g replaced by the tangent."""
    vjp = (vjp,) if isinstance(vjp, str) else tuple(vjp)
    names = [p.strip().split("=")[0] for p in params.split(",")]
    if jvp is None:
        jvp = tuple(None if t is None else re.sub(r"\bg\b", f"{p}_dot", t) for t, p in zip(vjp, names))
    defrule(keys, params, tuple(_s(t) for t in vjp), tuple(_s(t) for t in jvp), broadcast=broadcast,
            discrete=discrete)


# `g` appears exactly once in each template below, as the leading factor, so the tangent is the
# same template with g replaced by the argument's tangent.
_SQRT_PI = "np.sqrt(np.pi)"
rule(sc.gammaln, "x", "g * S.digamma(x)")
rule([sc.digamma, sc.psi], "x", "g * S.polygamma(1, x)")
rule(sc.polygamma, "n, x", (None, "g * S.polygamma(n + 1, x)"), broadcast=True, discrete="n")
rule(sc.gamma, "x", "g * ans * S.digamma(x)")
rule(sc.erf, "x", f"g * 2.0 / {_SQRT_PI} * np.exp(-x ** 2)")
rule(sc.erfc, "x", f"-g * 2.0 / {_SQRT_PI} * np.exp(-x ** 2)")
rule(sc.erfinv, "x", f"g * {_SQRT_PI} / 2.0 * np.exp(ans ** 2)")
rule(sc.erfcinv, "x", f"-g * {_SQRT_PI} / 2.0 * np.exp(ans ** 2)")
rule(sc.erfcx, "x", f"g * (2.0 * x * ans - 2.0 / {_SQRT_PI})")
rule(sc.xlogy, "x, y", ("g * np.log(y)", "g * x / y"), broadcast=True)
rule(sc.xlog1py, "x, y", ("g * np.log1p(y)", "g * x / (1.0 + y)"), broadcast=True)
rule(sc.logit, "x", "g / (x * (1.0 - x))")
rule(sc.entr, "x", "-g * (np.log(x) + 1.0)")
rule(sc.ndtr, "x", "g * np.exp(-x ** 2 / 2.0) / np.sqrt(2.0 * np.pi)")
rule(sc.ndtri, "x", "g * np.sqrt(2.0 * np.pi) * np.exp(ans ** 2 / 2.0)")
rule(sc.beta, "a, b", ("g * ans * (S.digamma(a) - S.digamma(a + b))", "g * ans * (S.digamma(b) - S.digamma(a + b))"),
     broadcast=True)
rule(sc.betaln, "a, b", ("g * (S.digamma(a) - S.digamma(a + b))", "g * (S.digamma(b) - S.digamma(a + b))"),
     broadcast=True)
defrule(sc.softmax, "x, axis=None", "ans * (g - np.sum(g * ans, axis=axis, keepdims=True))",
        "ans * (x_dot - np.sum(x_dot * ans, axis=axis, keepdims=True))", discrete="axis")
defrule(sc.log_softmax, "x, axis=None", "g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True)",
        "x_dot - np.sum(np.exp(ans) * x_dot, axis=axis, keepdims=True)", discrete="axis")

# ---- Bessel functions (the order is a constant) ---------------------------------------------------------
rule(sc.i0, "x", "g * S.i1(x)")
rule(sc.i1, "x", "g * (S.i0(x) + S.iv(2.0, x)) / 2.0")
rule(sc.iv, "v, x", (None, "g * (S.iv(v - 1.0, x) + S.iv(v + 1.0, x)) / 2.0"), broadcast=True)
rule(sc.i0e, "x", "g * (S.i1e(x) - np.sign(x) * ans)")
rule(sc.i1e, "x", "g * ((S.i0e(x) + S.ive(2.0, x)) / 2.0 - np.sign(x) * ans)")
rule(sc.ive, "v, x", (None, "g * ((S.ive(v - 1.0, x) + S.ive(v + 1.0, x)) / 2.0 - np.sign(x) * ans)"),
     broadcast=True)
rule(sc.j0, "x", "-g * S.j1(x)")
rule(sc.j1, "x", "g * (S.j0(x) - S.jv(2.0, x)) / 2.0")
rule(sc.jv, "v, x", (None, "g * (S.jv(v - 1.0, x) - S.jv(v + 1.0, x)) / 2.0"), broadcast=True)
rule(sc.y0, "x", "-g * S.y1(x)")
rule(sc.y1, "x", "g * (S.y0(x) - S.yv(2.0, x)) / 2.0")
rule(sc.yv, "v, x", (None, "g * (S.yv(v - 1.0, x) - S.yv(v + 1.0, x)) / 2.0"), broadcast=True)

# ---- scipy.stats: log densities and distribution functions -----------------------------------------------
Z = "((x - loc) / scale)"
PDF_Z = f"np.exp(-{Z} ** 2 / 2.0) / (np.sqrt(2.0 * np.pi) * scale)"      # the density at x
_LOC = "x, loc=0.0, scale=1.0"
rule(st.norm.logpdf, _LOC, (f"-g * {Z} / scale", f"g * {Z} / scale", f"g * ({Z} ** 2 - 1.0) / scale"),
     broadcast=True)
rule(st.norm.pdf, _LOC, (f"-g * ans * {Z} / scale", f"g * ans * {Z} / scale", f"g * ans * ({Z} ** 2 - 1.0) / scale"),
     broadcast=True)
rule(st.norm.cdf, _LOC, (f"g * {PDF_Z}", f"-g * {PDF_Z}", f"-g * {PDF_Z} * {Z}"), broadcast=True)
rule(st.norm.sf, _LOC, (f"-g * {PDF_Z}", f"g * {PDF_Z}", f"g * {PDF_Z} * {Z}"), broadcast=True)
rule(st.norm.logcdf, _LOC, (f"g * {PDF_Z} / np.exp(ans)", f"-g * {PDF_Z} / np.exp(ans)",
                            f"-g * {PDF_Z} / np.exp(ans) * {Z}"), broadcast=True)
rule(st.norm.logsf, _LOC, (f"-g * {PDF_Z} / np.exp(ans)", f"g * {PDF_Z} / np.exp(ans)",
                           f"g * {PDF_Z} / np.exp(ans) * {Z}"), broadcast=True)
_ZQ = "((ans - loc) / scale)"
rule(st.norm.ppf, "q, loc=0.0, scale=1.0", (f"g * scale * np.sqrt(2.0 * np.pi) * np.exp({_ZQ} ** 2 / 2.0)", "g",
                                            f"g * {_ZQ}"), broadcast=True)
_T_DX = f"(df + 1.0) * {Z} / (scale * (df + {Z} ** 2))"
_T_DDF = (f"0.5 * (S.digamma((df + 1.0) / 2.0) - S.digamma(df / 2.0) - 1.0 / df - np.log1p({Z} ** 2 / df)"
          f" + (df + 1.0) * {Z} ** 2 / (df * (df + {Z} ** 2)))")
_T_DSCALE = f"((df + 1.0) * {Z} ** 2 / (df + {Z} ** 2) - 1.0) / scale"
_T = "x, df, loc=0.0, scale=1.0"
rule(st.t.logpdf, _T, (f"-g * {_T_DX}", f"g * {_T_DDF}", f"g * {_T_DX}", f"g * {_T_DSCALE}"), broadcast=True)
rule(st.t.pdf, _T, (f"-g * ans * {_T_DX}", f"g * ans * {_T_DDF}", f"g * ans * {_T_DX}", f"g * ans * {_T_DSCALE}"),
     broadcast=True)
_G = "x, a, loc=0.0, scale=1.0"
rule(st.gamma.logpdf, _G, (f"g * ((a - 1.0) / {Z} - 1.0) / scale", f"g * (np.log({Z}) - S.digamma(a))",
                           f"-g * ((a - 1.0) / {Z} - 1.0) / scale", f"g * ({Z} - a) / scale"), broadcast=True)
rule(st.beta.logpdf, "x, a, b", ("g * ((a - 1.0) / x - (b - 1.0) / (1.0 - x))",
                                 "g * (np.log(x) - S.digamma(a) + S.digamma(a + b))",
                                 "g * (np.log1p(-x) - S.digamma(b) + S.digamma(a + b))"), broadcast=True)
rule(st.expon.logpdf, _LOC, ("-g / scale", "g / scale", f"g * ({Z} - 1.0) / scale"), broadcast=True)
rule(st.poisson.logpmf, "k, mu, loc=0", (None, "g * (k / mu - 1.0)"), broadcast=True, discrete="k")

# ---- more of scipy.special (HIPS autograd's set) --------------------------------------------------------
# rgamma = 1 / gamma; yn and jn of an integer order (the order has no rule); gammasgn is piecewise constant.
# The incomplete gamma and beta functions: derivatives in x only (in a and b they are series with no
# closed form: an active a or b raises MissingRuleError, never a zero).
rule(sc.rgamma, "x", "-g * ans * S.digamma(x)")
rule(sc.yn, "n, x", (None, "g * (S.yn(n - 1, x) - S.yn(n + 1, x)) / 2.0"), broadcast=True, discrete="n")
defnondiff(sc.gammasgn)
rule(sc.multigammaln, "a, d", ("g * S.multipolygamma(0, a, d)",), discrete="d")
rule(special.multipolygamma, "n, a, d", (None, "g * S.multipolygamma(n + 1, a, d)"), discrete="n d")
rule(sc.gammainc, "a, x", (None, "g * S.gammainc_dx(a, x)"), broadcast=True)
rule(sc.gammaincc, "a, x", (None, "-g * S.gammainc_dx(a, x)"), broadcast=True)
rule(sc.betainc, "a, b, x", (None, None, "g * S.betainc_dx(a, b, x)"), broadcast=True)
defrule(special.gammainc_dx, "a, x", None, (None, "x_dot * ans * ((a - 1.0) / x - 1.0)"))
defrule(special.betainc_dx, "a, b, x", None, (None, None, "x_dot * ans * ((a - 1.0) / x - (b - 1.0) / (1.0 - x))"))

# ---- scipy.stats: the other families of autograd (t, chi2, poisson, beta, gamma, dirichlet) -------------
# A cdf's derivative in x is the density (in loc: minus it; in scale: minus it times z); its
# derivative in a shape parameter (df, a, b) has no closed form: no rule, MissingRuleError.
_T_PDF = "rt.special.t_dist.pdf(x, df, loc, scale)"
rule(st.t.cdf, _T, (f"g * {_T_PDF}", None, f"-g * {_T_PDF}", f"-g * {_T_PDF} * {Z}"), broadcast=True)
rule(st.t.logcdf, _T, (f"g * {_T_PDF} / np.exp(ans)", None, f"-g * {_T_PDF} / np.exp(ans)",
                       f"-g * {_T_PDF} / np.exp(ans) * {Z}"), broadcast=True)
# chi2 with df degrees of freedom: log p = (df/2 - 1) log z - z/2 - log scale - const(df)
_C2 = "x, df, loc=0.0, scale=1.0"
_C2_DX = f"((df / 2.0 - 1.0) / {Z} - 0.5) / scale"
_C2_DDF = f"(0.5 * np.log({Z} / 2.0) - 0.5 * S.digamma(df / 2.0))"
_C2_DSC = f"-(1.0 + {Z} * ((df / 2.0 - 1.0) / {Z} - 0.5)) / scale"
rule(st.chi2.logpdf, _C2, (f"g * {_C2_DX}", f"g * {_C2_DDF}", f"-g * {_C2_DX}", f"g * {_C2_DSC}"), broadcast=True)
rule(st.chi2.pdf, _C2, (f"g * ans * {_C2_DX}", f"g * ans * {_C2_DDF}", f"-g * ans * {_C2_DX}", f"g * ans * {_C2_DSC}"),
     broadcast=True)
_C2_PDF = "rt.special.chi2.pdf(x, df, loc, scale)"
rule(st.chi2.cdf, _C2, (f"g * {_C2_PDF}", None, f"-g * {_C2_PDF}", f"-g * {_C2_PDF} * {Z}"), broadcast=True)
# poisson: the count k is discrete (constant); the cdf's derivative in mu is -pmf(floor(k), mu)
rule(st.poisson.pmf, "k, mu, loc=0", (None, "g * ans * (k / mu - 1.0)"), broadcast=True, discrete="k loc")
rule(st.poisson.cdf, "k, mu, loc=0", (None, "-g * rt.special.poisson.pmf(np.floor(k), mu)"), broadcast=True,
     discrete="k loc")
# beta on [0, 1] (x, a, b) and gamma with loc and scale
_B_DX = "((a - 1.0) / x - (b - 1.0) / (1.0 - x))"
rule(st.beta.pdf, "x, a, b", (f"g * ans * {_B_DX}", "g * ans * (np.log(x) - S.digamma(a) + S.digamma(a + b))",
                              "g * ans * (np.log1p(-x) - S.digamma(b) + S.digamma(a + b))"), broadcast=True)
rule(st.beta.cdf, "x, a, b", ("g * rt.special.beta_dist.pdf(x, a, b)", None, None), broadcast=True)
_G_DX = f"((a - 1.0) / {Z} - 1.0) / scale"
rule(st.gamma.pdf, _G, (f"g * ans * {_G_DX}", f"g * ans * (np.log({Z}) - S.digamma(a))", f"-g * ans * {_G_DX}",
                        f"g * ans * ({Z} - a) / scale"), broadcast=True)
_G_PDF = "rt.special.gamma_dist.pdf(x, a, loc, scale)"
rule(st.gamma.cdf, _G, (f"g * {_G_PDF}", None, f"-g * {_G_PDF}", f"-g * {_G_PDF} * {Z}"), broadcast=True)
# dirichlet: x one point of the simplex (a vector; a batch of points has no rule), alpha its concentrations
_GD = "rt.special.dirichlet_point(x, g)"     # g, once x is checked to be one point
rule(st.dirichlet.logpdf, "x, alpha", (f"{_GD} * (alpha - 1.0) / x",
                                       f"{_GD} * (S.digamma(np.sum(alpha)) - S.digamma(alpha) + np.log(x))"),
     ("rt.special.dirichlet_point(x, np.sum(x_dot * (alpha - 1.0) / x))",
      "rt.special.dirichlet_point(x, np.sum(alpha_dot * (S.digamma(np.sum(alpha)) - S.digamma(alpha) + np.log(x))))"))
rule(st.dirichlet.pdf, "x, alpha", (f"{_GD} * ans * (alpha - 1.0) / x",
                                    f"{_GD} * ans * (S.digamma(np.sum(alpha)) - S.digamma(alpha) + np.log(x))"),
     ("rt.special.dirichlet_point(x, ans * np.sum(x_dot * (alpha - 1.0) / x))",
      "rt.special.dirichlet_point(x, ans * np.sum(alpha_dot * (S.digamma(np.sum(alpha)) - S.digamma(alpha) "
      "+ np.log(x))))"))
defrule(special.dirichlet_point, "x, v", ("0", "rt.special.dirichlet_point(x, g)"),
        ("0", "rt.special.dirichlet_point(x, v_dot)"))
