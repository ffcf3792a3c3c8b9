"""Bugs the autograd oracle and the fuzzer found (tests/oracle.py, benchmarks/fuzz.py), each
checked against an analytic value or float64 central differences."""
import numpy as np
import pytest

import srcad
from fd_second import numerical_hessian
from fdcheck import assert_grad_close

YS = np.array([-0.15, -0.75, -0.82, -0.34])


def ridge(w, *, X, y):
    r = X @ w - y
    return r @ r


def test_hessian_and_hvp_pass_keyword_arguments_on():
    rng = np.random.default_rng(0)
    X, y, w = rng.normal(size=(5, 3)), rng.normal(size=5), rng.normal(size=3)
    H = srcad.hessian(ridge)(w, X=X, y=y)
    np.testing.assert_allclose(H, 2 * X.T @ X, rtol=1e-12)
    v = rng.normal(size=3)
    np.testing.assert_allclose(srcad.hvp(ridge)(w, v, X=X, y=y), 2 * X.T @ X @ v, rtol=1e-12)


def self_slice(y):
    w = np.sin(y)
    w[:] = w
    return np.sum(w * w)


def self_ellipsis(y):
    w = np.sin(y)
    w[...] = w
    return np.sum(w * w)


def self_copyto(y):
    w = np.sin(y)
    np.copyto(w, w)
    return np.sum(w * w)


def self_twice(y):
    w = np.sin(y)
    w[:] = w
    w[1:3] = w[1:3]
    return np.sum(w ** 3)


@pytest.mark.parametrize("f", [self_slice, self_ellipsis, self_copyto, self_twice])
def test_self_assignment_keeps_the_gradient(f):
    g = srcad.grad(f)(YS)
    assert_grad_close(f, (YS,), g)
    _, t = srcad.jvp(f, (YS,), (np.ones(4),))
    np.testing.assert_allclose(t, np.sum(g), rtol=1e-10)
    np.testing.assert_allclose(srcad.hessian(f)(YS), numerical_hessian(f, (YS,)), rtol=1e-5, atol=1e-6)


def test_a_function_whose_module_is_none():
    """exec'd code with no __name__ in its globals gives functions with __module__ None (Sphinx's
    doctest runner does this); srcad read that as a string and crashed."""
    import linecache
    src = "def made(x):\n    return np.sum(np.sin(x) * x)\n"
    linecache.cache["<made-by-exec>"] = (len(src), None, src.splitlines(True), "<made-by-exec>")
    ns = {"np": np}
    exec(compile(src, "<made-by-exec>", "exec"), ns)
    assert ns["made"].__module__ is None
    x = np.array([0.3, 1.1])
    np.testing.assert_allclose(srcad.grad(ns["made"])(x), np.cos(x) * x + np.sin(x), rtol=1e-12)
