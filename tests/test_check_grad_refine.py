"""check_grad's second opinion (srcad/gradcheck.py): where the central difference with step eps
disagrees with srcad on a dense argument, scipy.differentiate estimates the entry again. False
alarms of the plain central difference (rounding: a large value, a float32 argument) go away;
a wrong gradient is still reported. References: analytic derivatives."""
import numpy as np
import pytest

import srcad


def offset_sin(x):
    return 1e8 + np.sum(np.sin(x))


def cube_sum(x):
    return np.sum(x ** 3)


def central(f, x, eps=1e-6):
    """The plain central difference check_grad starts from (in x's dtype, as check_grad does)."""
    flat = np.array(x, dtype=np.float64).reshape(-1)
    out = np.zeros(flat.size)
    for j in range(flat.size):
        vals = []
        for s in (1.0, -1.0):
            v = flat.copy()
            v[j] += s * eps
            vals.append(float(f(v.astype(np.result_type(x, np.float32)))))
        out[j] = (vals[0] - vals[1]) / (2 * eps)
    return out


def test_large_value_is_no_false_alarm():
    x = np.array([0.3, 1.2, -0.7])
    exact = np.cos(x)
    # the central difference alone is off by ~1e-3 here (1e8's rounding over a step of 2e-6):
    # beyond check_grad's tolerance, a false alarm before this mechanism
    assert np.max(np.abs(central(offset_sin, x) - exact) - (1e-6 + 1e-5 * np.abs(exact))) > 0
    np.testing.assert_allclose(srcad.grad(offset_sin)(x), exact, rtol=1e-12)
    assert srcad.check_grad(offset_sin, x) < 1e-3


def test_float32_argument_is_no_false_alarm():
    x = np.array([1.1, 2.3], dtype=np.float32)
    exact = 3.0 * x.astype(np.float64) ** 2
    assert np.max(np.abs(central(cube_sum, x) - exact) - (1e-6 + 1e-5 * np.abs(exact))) > 0
    assert srcad.check_grad(cube_sum, x) < 1e-2


@srcad.custom_vjp
def wrong_sin(x):
    return np.sin(x)


wrong_sin.defvjp(lambda x: (np.sin(x), x), lambda x, dy: (1.01 * np.cos(x) * dy,))   # 1% off


def offset_wrong(x):
    return 1e8 + np.sum(wrong_sin(x))


def test_a_wrong_gradient_is_still_reported():
    with pytest.raises(srcad.GradientCheckError, match="re-estimated by scipy.differentiate"):
        srcad.check_grad(offset_wrong, np.array([0.3, 1.2, -0.7]))
    with pytest.raises(srcad.GradientCheckError):
        srcad.check_grad(lambda x: np.sum(wrong_sin(x)), np.array([0.3, 1.2], dtype=np.float32))


@srcad.custom_vjp
def wrong_log(x):
    return np.log(x)


wrong_log.defvjp(lambda x: (np.log(x), x), lambda x, dy: (2.0 / x * dy,))


def test_outside_the_domain_the_first_verdict_stands():
    # the second opinion's large first steps leave log's domain (NaN): the entry keeps the central
    # difference's verdict, a disagreement
    with pytest.raises(srcad.GradientCheckError):
        srcad.check_grad(lambda x: np.sum(wrong_log(x)), np.array([0.05, 0.2]))
    assert srcad.check_grad(lambda x: np.sum(np.log(x)), np.array([0.05, 0.2])) < 1e-5
