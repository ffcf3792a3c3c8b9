"""`map(f, xs, ...)` in a differentiated function (a loop head, or a value): the list
[f(x, ...) for x, ... in zip(xs, ...)], differentiated as the loop that builds it; checked against
analytic gradients and finite differences in both modes."""
import numpy as np
import pytest

import srcad
from srcad.errors import UnsupportedSyntaxError

from fdcheck import numerical_grad

X = np.array([0.3, -0.7, 1.1])
Y = np.array([1.5, 0.2, -0.4])


def cube(v):
    return v * v * v


def loop_over_map(xs):
    s = 0.0
    for v in map(cube, xs):
        s = s + v
    return s


def sum_of_map(xs):
    return sum(map(np.sin, xs))


def map_two_sequences(xs, ys):
    s = 0.0
    for p in map(np.multiply, xs, ys):
        s = s + p * p
    return s


def list_of_map(xs):
    return np.sum(np.array(list(map(cube, xs))) * Y)


def enumerate_map(xs):
    s = 0.0
    for k, v in enumerate(map(cube, xs)):
        s = s + (k + 1.0) * v
    return s


@pytest.mark.parametrize("f, want", [
    (loop_over_map, lambda x: 3 * x ** 2),
    (sum_of_map, np.cos),
    (list_of_map, lambda x: 3 * x ** 2 * Y),
    (enumerate_map, lambda x: 3 * x ** 2 * np.arange(1.0, 4.0)),
])
def test_map_gradient(f, want):
    np.testing.assert_allclose(srcad.grad(f)(X), want(X), rtol=1e-12)
    v = np.array([0.5, -1.0, 2.0])
    _, d = srcad.jvp(f, (X,), (v,))
    np.testing.assert_allclose(d, want(X) @ v, rtol=1e-12)


def test_map_two_sequences():
    gx, gy = srcad.grad(map_two_sequences, wrt=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, numerical_grad(map_two_sequences, (X, Y), 0), rtol=1e-6)
    np.testing.assert_allclose(gx, 2 * X * Y ** 2, rtol=1e-12)
    np.testing.assert_allclose(gy, 2 * Y * X ** 2, rtol=1e-12)


def test_map_second_order():
    H = srcad.hessian(loop_over_map)(X)
    np.testing.assert_allclose(H, np.diag(6 * X), rtol=1e-12)


def map_keyword(xs):
    return sum(map(cube, xs, strict=True))


def test_map_other_forms_named():
    with pytest.raises(UnsupportedSyntaxError, match="map"):
        srcad.grad(map_keyword)(X)
