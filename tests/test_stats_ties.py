"""Order statistics at ties (where they kink): the derivative is shared evenly by the tied entries,
the mean of the one-sided derivatives, as for np.max (tests/test_rules_sweep.py, test_tie_split).
Checked by hand, and along the direction that moves every tied entry together, where the function
is smooth, against central differences."""
import numpy as np
import pytest

import srcad


def median(x):
    return np.median(x)


def row_medians(x):
    return np.sum(np.median(x, axis=1) * np.array([1.0, 2.0]))


def percentile_40(x):
    return np.percentile(x, 40.0)


CASES = [
    (median, np.array([1.0, 2.0, 2.0]), np.array([0.0, 0.5, 0.5])),
    (median, np.array([2.0, 1.0, 2.0, 3.0]), np.array([0.5, 0.0, 0.5, 0.0])),
    (row_medians, np.array([[1.0, 5.0, 5.0, 0.0], [2.0, 2.0, 2.0, 7.0]]),
     np.array([[0.5, 0.25, 0.25, 0.0], [2.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0, 0.0]])),
    (percentile_40, np.array([4.0, 1.0, 4.0, 0.0, 9.0]), np.array([0.3, 0.4, 0.3, 0.0, 0.0])),
]


@pytest.mark.parametrize("f, x, expected", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_ties_share_the_derivative(f, x, expected):
    g = srcad.grad(f)(x)
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(srcad.jvp(f, (x,), (np.ones_like(x),))[1], np.sum(expected), rtol=1e-12)
    for value in np.unique(x):          # every tied group moved together: smooth along that direction
        d = (x == value).astype(float)
        fd = (f(x + 1e-6 * d) - f(x - 1e-6 * d)) / 2e-6
        np.testing.assert_allclose(g.ravel() @ d.ravel(), fd, rtol=1e-6, atol=1e-9)
