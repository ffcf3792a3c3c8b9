"""srcad quickstart: the gradient of a logistic-regression loss, checked against finite
differences, and the adjoint code srcad generated for it."""
import numpy as np

import srcad


def loss(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    nll = -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
    return nll + 0.01 * np.sum(w ** 2)


def main():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]) + rng.normal(size=200) > 0).astype(float)
    w = rng.normal(size=5)

    g = srcad.grad(loss)(w, X, y)

    eps = 1e-6
    fd = np.array([(loss(w + eps * e, X, y) - loss(w - eps * e, X, y)) / (2 * eps) for e in np.eye(5)])
    print("loss       :", loss(w, X, y))
    print("srcad grad :", g)
    print("finite diff:", fd)
    print("max |error|:", np.max(np.abs(g - fd)))
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-8)

    print("\nThe adjoint code srcad generated for these arguments (srcad.emit(loss, args=(w, X, y))):\n")
    print(srcad.emit(loss, args=(w, X, y)))


if __name__ == "__main__":
    main()
