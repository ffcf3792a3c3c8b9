"""Crashes of issue 23, each now a derivative checked against finite differences or an analytic
formula, and error messages that quote the user's code (never srcad's temporaries) with fixes
that work when applied."""
import numpy as np
import pytest

import srcad
from fdcheck import assert_grad_close

X = np.array([0.3, -0.7, 1.1])
M = np.array([[0.1, -0.5, 0.9], [0.4, 0.3, -0.2]])      # no ties in its row or column sums
B = np.random.default_rng(5).standard_normal((2, 3, 4))


def _both(f, args, wrt=0):
    assert_grad_close(f, args, srcad.grad(f, wrt=wrt)(*args), wrt=wrt)
    assert_grad_close(f, args, srcad.jacobian(f, wrt=wrt, mode="forward")(*args), wrt=wrt)


# ---- a function returning its argument unchanged ---------------------------------------------
def identity(x):
    return x


def first_of_two(x, y):
    return x


def _ident(t):
    return t


def through_identity(x):
    return np.sum(_ident(x) ** 2)


def test_identity_function():
    assert srcad.grad(identity)(0.5) == 1.0
    np.testing.assert_allclose(srcad.jacobian(identity)(X), np.eye(3))
    np.testing.assert_allclose(srcad.jacobian(identity, mode="forward")(X), np.eye(3))
    assert srcad.jvp(identity, (0.5,), (2.0,)) == (0.5, 2.0)
    np.testing.assert_allclose(srcad.vjp(identity, X)[1](np.arange(3.0))[0], np.arange(3.0))
    assert srcad.hessian(identity)(0.5) == 0.0
    assert srcad.grad(first_of_two, wrt=(0, 1))(0.5, 2.0) == (1.0, 0.0)
    _both(through_identity, (X,))


# ---- np.linalg.norm with its order from a closure ---------------------------------------------
def _norm_with(k):
    def f(x):
        return np.linalg.norm(x, ord=k)
    return f


@pytest.mark.parametrize("k", [1, 2, 3, 0.5, np.inf, -np.inf, None])
def test_vector_norm_order_from_closure(k):
    _both(_norm_with(k), (X,))


@pytest.mark.parametrize("k", [1, 2, np.inf, -1, "fro", "nuc"])
def test_matrix_norm_order_from_closure(k):
    _both(_norm_with(k), (M,))


# ---- np.dot with a scalar operand, matmul of a vector with a stack ----------------------------
def dot_scalar_left(x):
    return np.sum(np.dot(2.0, x))


def dot_scalar_right(x):
    return np.dot(x, 3.0) ** 2


def dot_scalar_matrix(x):
    return np.sum(np.dot(M, 2.0) * x[0])


def vector_at_stack(v):
    return np.sum(np.sin(np.matmul(v, B)))


def stack_at_vector(w):
    return np.sum(np.sin(np.matmul(B, w)))


def stack_at_vector_operand(b):
    return np.sum(np.sin(b @ np.array([0.5, -1.0, 2.0, 0.25])))


@pytest.mark.parametrize("f, x", [(dot_scalar_left, X), (dot_scalar_right, 0.4), (dot_scalar_matrix, X),
                                  (dot_scalar_left, M), (vector_at_stack, X), (stack_at_vector, np.arange(4.0) / 3),
                                  (stack_at_vector_operand, B)])
def test_products(f, x):
    _both(f, (x,))


def test_matmul_vector_stack_second_order():
    h = srcad.hessian(vector_at_stack)(X)
    eps = 1e-5
    g = srcad.grad(vector_at_stack)
    fd = np.stack([(g(X + eps * e) - g(X - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)


# ---- a parameter default taken from an enclosing name ------------------------------------------
NUM = 3.0


def default_from_global(x, y=1.0, num=NUM):
    return np.sum(x * num * y)


def _with_local_default():
    scale = 2.5

    def f(x, *, s=scale * 2):
        return np.sum(np.sin(x) * s)
    g = lambda x, k=scale: np.sum(x ** 2 * k)      # noqa: E731
    return f, g


def test_default_from_an_enclosing_name():
    _both(default_from_global, (X,))
    f, g = _with_local_default()
    _both(f, (X,))
    _both(g, (X,))


# ---- x ** 0 at 0 -----------------------------------------------------------------------------
def pow_zero_float(x):
    return x ** 0.0


def pow_zero_int(x):
    return x ** 0


def pow_one(x):
    return x ** 1


def pow_sum(x):
    return np.sum(x ** 0.0 + x ** 1 + x ** 0 + np.power(x, np.array([0.0, 1.0, 2.0])))


@pytest.mark.parametrize("f, want", [(pow_zero_float, 0.0), (pow_zero_int, 0.0), (pow_one, 1.0)])
def test_power_at_zero(f, want):
    assert srcad.grad(f)(0.0) == want
    assert srcad.jvp(f, (0.0,), (1.0,))[1] == want
    assert srcad.hessian(f)(0.0) == 0.0


def test_power_array_at_zero():
    z = np.zeros(3)
    with np.errstate(all="raise"):      # no 0 * inf on the way
        g = srcad.grad(pow_sum)(z)
    np.testing.assert_array_equal(g, [1.0, 2.0, 1.0])
    _both(pow_sum, (np.array([0.5, 1.5, 2.0]),))
    np.testing.assert_allclose(srcad.hessian(pow_sum)(z), np.diag([0.0, 0.0, 2.0]))


def test_power_exponent_second_order():
    def f(x, y):
        return np.sum(x ** y)
    x, y = np.array([0.3, 1.2, 2.0]), np.array([0.0, 1.0, 2.5])
    np.testing.assert_allclose(srcad.hessian(f, wrt=1)(x, y), np.diag(x ** y * np.log(x) ** 2), rtol=1e-10)
    np.testing.assert_allclose(srcad.hessian(f)(x, y), np.diag(y * (y - 1) * x ** (y - 2)), rtol=1e-10)


# ---- calling the result of a call ---------------------------------------------------------------
def make(a, b=2.0):
    c = a * b

    def h(t):
        return c * np.sin(t) + a * t ** 2
    return h


def make_lambda(a):
    h = lambda t: a * np.cos(t)     # noqa: E731
    return h


def call_of_a_call(x):
    return np.sum(make(x[0])(x) + make_lambda(1.5)(x))


def test_call_of_a_call():
    _both(call_of_a_call, (X,))


# ---- error messages quote the user's code --------------------------------------------------------
def bad_method_call(x):
    return np.sum(x.reshape(3, 1).T.cumsum(0, 1, 2, 3, 4))


def bad_keyword(x):
    return np.sum(x ** 2, wher=x > 0)


def log_of_zero_sum(X):
    return np.log(np.sum(X ** 2))


def test_messages_quote_the_users_code():
    with pytest.raises(srcad.UnsupportedSyntaxError) as e:
        srcad.grad(bad_method_call)(X)
    assert "`x.reshape(3, 1).T.cumsum(0, 1, 2, 3, 4)`" in str(e.value)
    assert "reshape_T" not in str(e.value) and "the method `.cumsum` takes (axis=None" in str(e.value)
    with pytest.raises(srcad.UnsupportedSyntaxError) as e:
        srcad.grad(bad_keyword)(X)
    assert "`np.sum(x ** 2, wher=x > 0)`" in str(e.value) and "pow_x" not in str(e.value)
    with pytest.raises(srcad.NumericsError) as e, np.errstate(all="ignore"):
        srcad.grad(log_of_zero_sum, check_numerics=True)(np.zeros(3))
    assert "with respect to `np.sum(X ** 2)`" in str(e.value) and "_bar" not in str(e.value)


# ---- a suggested fix, applied, works -----------------------------------------------------------
def wrong_signature(x):
    return np.sum(np.cumsum(x, 0, None, None, 7))


def wrong_signature_fixed(x):
    return np.sum(np.cumsum(x, 0) ** 2)


def rebinds_while_looping(x):
    y = x * 1.0
    for t in y:
        y *= t
    return np.sum(y)


def rebinds_while_looping_fixed(x):
    y = x * 1.0
    for i in range(len(y)):
        t = y[i]
        y *= t
    return np.sum(y)


def test_suggested_fixes_work():
    with pytest.raises(srcad.UnsupportedSyntaxError) as e:
        srcad.grad(wrong_signature)(X)
    assert "call it with those arguments" in str(e.value)
    _both(wrong_signature_fixed, (X,))
    with pytest.raises(srcad.UnsupportedSyntaxError) as e:
        srcad.grad(rebinds_while_looping)(X)
    assert "for i in range(len(y))" in str(e.value)
    _both(rebinds_while_looping_fixed, (X,))
