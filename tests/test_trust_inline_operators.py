"""srcad.jvp called inside a differentiated function (reverse over forward, forward over forward),
srcad.vjp there a named error whose fix works, and reverse over reverse through a taped loop a
named error whose fix works; numbers against analytic derivatives and finite differences."""
import numpy as np
import pytest

import srcad
from srcad.errors import UnsupportedSyntaxError

from fdcheck import numerical_grad

X = np.array([0.3, 0.5, 0.9])
ONES = np.ones(3)


def sq(x):
    return np.sum(x ** 2 * np.sin(x))


def scaled(x, c):
    return x * c


def directional(x):
    _, t = srcad.jvp(sq, (x,), (ONES,))
    return t


def directional_self(x):
    y, t = srcad.jvp(sq, (x,), (x,))       # along x itself: the tangent is active too
    return t + y


def held_constant(x):
    _, t = srcad.jvp(scaled, (x, x), (ONES, None))     # c held constant: t = ones * c
    return np.sum(t * t)


def in_a_loop(x):
    s = 0.0
    for k in range(2):
        _, t = srcad.jvp(sq, (x * (k + 1.0),), (ONES,))
        s = s + t
    return s


def d_sq(x):        # d/dx_i of sq
    return 2 * x * np.sin(x) + x ** 2 * np.cos(x)


def dd_sq(x):
    return 2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x)


@pytest.mark.parametrize("f, want", [
    (directional, lambda x: dd_sq(x)),
    (directional_self, lambda x: dd_sq(x) * x + 2 * d_sq(x)),
    (held_constant, lambda x: 2 * x),
    (in_a_loop, lambda x: dd_sq(x) + 2 * dd_sq(2 * x)),
])
def test_inline_jvp_reverse_and_forward(f, want):
    np.testing.assert_allclose(srcad.grad(f)(X), want(X), rtol=1e-10)
    np.testing.assert_allclose(srcad.grad(f)(X), numerical_grad(f, (X,)), rtol=1e-6)
    v = np.array([1.0, -0.5, 2.0])
    _, d = srcad.jvp(f, (X,), (v,))
    np.testing.assert_allclose(d, want(X) @ v, rtol=1e-10)


def inner_vjp(x):
    y, pullback = srcad.vjp(np.sin, x)
    return np.sum(pullback(x)[0])


def weighted(x, v):
    return np.sum(np.sin(x) * v)


def inner_vjp_fixed(x):         # the fix the error gives: vjp's pullback(v) as a gradient
    return np.sum(srcad.grad(weighted)(x, x))


def test_inline_vjp_named_and_fix_works():
    with pytest.raises(UnsupportedSyntaxError, match=r"srcad\.vjp.*srcad\.grad\(inner\)\(x, v\)"):
        srcad.grad(inner_vjp)(X)
    # d/dx sum(cos(x) * x) = cos(x) - x sin(x)
    np.testing.assert_allclose(srcad.grad(inner_vjp_fixed)(X), np.cos(X) - X * np.sin(X), rtol=1e-12)


def bad_form(x):
    primals = (x,)
    return srcad.jvp(sq, primals, (ONES,))[1]


def test_inline_jvp_other_forms_named():
    with pytest.raises(UnsupportedSyntaxError, match="tuples of the same length"):
        srcad.grad(bad_form)(X)


def taped(x):
    s = 0.0
    for i in range(3):
        s = s + np.sin(x[i]) * x[i] ** 2
    return s


def test_reverse_over_reverse_taped_loop_named_and_fix_works():
    with pytest.raises(UnsupportedSyntaxError, match=r"reverse mode over the adjoint.*srcad\.jacobian\(srcad\.grad\(f\)\)"):
        srcad.jacobian(srcad.grad(taped), mode="reverse")(X)
    np.testing.assert_allclose(srcad.jacobian(srcad.grad(taped))(X), np.diag(dd_sq(X)), rtol=1e-12)
    np.testing.assert_allclose(srcad.hessian(taped)(X), np.diag(dd_sq(X)), rtol=1e-12)
