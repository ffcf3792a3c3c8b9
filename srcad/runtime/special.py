"""The SciPy special functions that the adjoints of srcad/rules/special_rules.py call, so that
generated code reaches them through `rt.special` (it imports only numpy and srcad.runtime), and
the few helpers those adjoints need."""
import numpy as np
from scipy.special import (beta, betainc, betaln, digamma, erf, erfc, erfcinv, erfcx, erfinv, gamma,  # noqa: F401
                           gammainc, gammaincc, gammaln, i0, i0e, i1, i1e, iv, ive, j0, j1, jv, log_softmax,
                           logit, ndtr, ndtri, polygamma, rgamma, softmax, xlog1py, xlogy, y0, y1, yn, yv)
from ..errors import MissingRuleError
from scipy.stats import beta as beta_dist, chi2, gamma as gamma_dist, poisson, t as t_dist  # noqa: F401


def multipolygamma(n, a, d):
    """d/da of multigammaln(a, d) differentiated n more times: sum over j < d of polygamma(n, a - j/2)."""
    a = np.asarray(a, dtype=float)
    return sum(polygamma(n, a - 0.5 * j) for j in range(int(d)))


def gammainc_dx(a, x):
    """d/dx of the regularised lower incomplete gamma function P(a, x): x^(a-1) e^-x / Gamma(a)."""
    return np.exp((a - 1.0) * np.log(x) - x - gammaln(a))


def betainc_dx(a, b, x):
    """d/dx of the regularised incomplete beta function I_x(a, b): x^(a-1) (1-x)^(b-1) / B(a, b)."""
    return np.exp((a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x) - betaln(a, b))


def dirichlet_point(x, v):
    """v, after checking it is one point (a vector): the rules of scipy.stats.dirichlet differentiate
    the density at one point; a batch of points (a 2-D x) has no rule."""
    if np.ndim(x) != 1:
        raise MissingRuleError("scipy.stats.dirichlet of a batch of points (a 2-D x)",
                               fix="call it once per point (a loop over the columns) and add the results")
    return v
