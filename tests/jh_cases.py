"""User functions for the Jacobian and Hessian tests: matrix-valued outputs, loops, branches, slices."""
import numpy as np


def matrix_map(X, W):
    """(2, 3)-valued function of a (2, 2) input."""
    h = np.tanh(W @ X.reshape(-1))
    return h.reshape(2, 3) * np.sum(X ** 2)


def looped_map(x):
    y = np.zeros(len(x))
    acc = 0.0
    for i in range(len(x)):
        acc = acc * 0.5 + np.sin(x[i])
        if acc > 0:
            y[i] = acc * x[i]
        else:
            y[i] = acc - x[i] ** 2
    return y


def sliced_map(X):
    top = X[0, :] * X[1, :]
    side = np.exp(X[:, 1:])
    return np.concatenate([top, side.reshape(-1)])


def tridiagonal(x):
    y = x ** 2
    y[1:] = y[1:] + np.sin(x[:-1])
    y[:-1] = y[:-1] - 0.5 * x[1:] * x[:-1]
    return y


def energy(x, A):
    s = 0.0
    for i in range(len(x) - 1):
        d = x[i + 1] - x[i]
        s = s + d ** 4 / 4.0 + np.cos(x[i]) * x[i + 1]
    if np.sum(x) > 0:
        s = s + np.sum(x[::2] ** 3)
    return s + x @ A @ x


def matrix_sum_cubed(X):
    return np.sum(X ** 3) + np.sum(X[0] * X[1])


def switching(x):
    if np.sum(x) > 0:
        return x[:-1] * x[1:]
    return np.cumsum(x)[1:]


def extremes_and_norm(x):
    return np.max(np.sin(x)) ** 2 + np.sum(np.max(x.reshape(2, 3) ** 2, axis=1)) + np.linalg.norm(x * x)
