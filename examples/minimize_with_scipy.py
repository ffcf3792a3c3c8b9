"""scipy.optimize.minimize with srcad's gradients: `jac=True` and `srcad.value_and_grad`.

`minimize(fun, x0, jac=True)` wants fun(x, *args) to return (value, gradient);
`srcad.value_and_grad(f)` is such a function for the first parameter of f (pass `args=` for the
others, which are not differentiated). The value and the gradient come from one run of the
generated adjoint, so each iteration evaluates f once.

    python examples/minimize_with_scipy.py
"""
import numpy as np
from scipy.optimize import minimize

import srcad


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic_loss(w, X, y, lam):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * lam * (w @ w)


def main(n=10, say=print):
    # the minimum of the Rosenbrock function is at x = 1
    res = minimize(srcad.value_and_grad(rosenbrock), np.full(n, -1.2), jac=True, method="L-BFGS-B",
                   options={"maxiter": 1000, "gtol": 1e-10})
    say(f"Rosenbrock, {n} variables: {res.nit} iterations, {res.nfev} evaluations, "
        f"max |x - 1| = {np.max(np.abs(res.x - 1.0)):.1e} ({res.message})")

    # extra arguments of the function go through args=; only w is differentiated (wrt=0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 5))
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]) + rng.normal(size=500) > 0).astype(float)
    fit = minimize(srcad.value_and_grad(logistic_loss), np.zeros(5), args=(X, y, 1e-3), jac=True,
                   method="BFGS")
    say(f"logistic regression: loss {fit.fun:.4f} after {fit.nit} BFGS iterations, w = {np.round(fit.x, 2)}")
    return {"rosenbrock": res, "logistic": fit, "X": X, "y": y}


if __name__ == "__main__":
    main()
