"""The scipy.optimize.minimize recipe (examples/minimize_with_scipy.py, shown in the docs'
optimisation guide): srcad.value_and_grad as `jac=True`'s function gives SciPy's own Rosenbrock
gradient and reaches the known minimum; the logistic fit ends where the gradient written by hand
vanishes."""
import importlib.util
import os

import numpy as np
from scipy.optimize import rosen, rosen_der

import srcad

PATH = os.path.join(os.path.dirname(__file__), "..", "examples", "minimize_with_scipy.py")


def load():
    spec = importlib.util.spec_from_file_location("minimize_with_scipy", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_value_and_grad_is_what_jac_true_expects():
    ex = load()
    x = np.random.default_rng(3).normal(size=7)
    value, g = srcad.value_and_grad(ex.rosenbrock)(x)
    assert np.isclose(value, rosen(x), rtol=1e-14)
    np.testing.assert_allclose(g, rosen_der(x), rtol=1e-12)      # SciPy's hand-written gradient


def test_minimize_converges():
    ex = load()
    out = ex.main(n=6, say=lambda *a: None)
    res, fit = out["rosenbrock"], out["logistic"]
    assert res.success and np.max(np.abs(res.x - 1.0)) < 1e-5
    X, y, w = out["X"], out["y"], fit.x
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    by_hand = X.T @ (p - y) / len(y) + 1e-3 * w                 # the logistic loss' gradient
    assert fit.success and np.max(np.abs(by_hand)) < 1e-5
