"""Ordinary NumPy/Python spellings srcad accepts (issue 23): each differentiated in reverse and
forward mode and compared with central finite differences (tests/fdcheck.py)."""
import numpy as np
import pytest

import srcad
from fdcheck import assert_grad_close

RNG = np.random.default_rng(23)
X3 = RNG.standard_normal((2, 3, 4))
V = RNG.standard_normal(6)
M = RNG.standard_normal((3, 4))
W24 = np.arange(24.0).reshape(3, 2, 4) / 7.0
MASK = V > 0
MASK2 = np.array([[1, 0, 1, 1], [0, 1, 1, 0], [1, 1, 0, 1]], dtype=bool)


def _both_modes(f, *args, wrt=0):
    """reverse (grad) and forward (jacobian by tangents) against finite differences"""
    assert_grad_close(f, args, srcad.grad(f, wrt=wrt)(*args), wrt=wrt)
    jac = srcad.jacobian(f, wrt=wrt, mode="forward")(*args)
    assert_grad_close(f, args, jac, wrt=wrt)


# ---- transpose with separate axes, clip(min=, max=) -----------------------------------------
def transpose_axes(x):
    return np.sum(np.sin(x.transpose(1, 0, 2)) * W24)


def transpose_axes_then_einsum(x):
    return np.sum(np.einsum("...ij,...jk->...ik", x, x.transpose(0, 2, 1)) ** 2)


def clip_min(x):
    return np.sum(x.clip(min=0.1) ** 2)


def clip_max(x):
    return np.sum(x.clip(max=0.2) ** 3)


def clip_both(x):
    return np.sum(np.sin(x.clip(min=-0.5, max=0.5)))


# ---- reductions with where= ------------------------------------------------------------------
def sum_where(x):
    return np.sum(x ** 2, where=MASK)


def sum_where_method_axis(x):
    return np.sum(np.sin(x).sum(axis=1, where=MASK2) ** 2)


def mean_where(x):
    return np.mean(x ** 2, where=MASK)


def mean_where_axis_keepdims(x):
    return np.sum(np.mean(np.exp(x), axis=0, keepdims=True, where=MASK2) * np.arange(4.0))


def max_where(x):
    return np.max(x ** 2, where=MASK, initial=-np.inf)


def min_where_axis(x):
    return np.sum(np.min(np.cos(x), axis=1, where=MASK2, initial=10.0) ** 2)


def max_initial_wins(x):
    return np.max(x, initial=100.0) + np.sum(x)


def prod_where(x):
    return np.prod(x, where=MASK)


def prod_where_method(x):
    return np.sum(x.prod(axis=0, where=MASK2))


# ---- einsum: '...' and the sublist form --------------------------------------------------------
def einsum_ellipsis_implicit(x):
    return np.sum(np.einsum("...i,i", x, np.arange(4.0)) ** 2)


def einsum_ellipsis_reduce(x):
    return np.sum(np.einsum("i...->...", x) ** 2)


def einsum_sublist(x):
    return np.sum(np.einsum(x, [0, 1], x.T, [1, 2], [0, 2]) ** 2)


def einsum_sublist_implicit(x):
    return np.sum(np.einsum(x, [0, 1], np.arange(4.0), [1]) ** 2)


# ---- casts: float casts pass the derivative, integer casts carry none -----------------------
def casts(x):
    return np.sum(x * np.int64(3)) + np.float32(2.0) * np.sum(np.float64(x) ** 2) + np.sum(np.int64(x))


# ---- dict(it, b=x) ---------------------------------------------------------------------------
def dict_pairs_and_keyword(x):
    d = dict([("a", x)], b=x ** 2)
    return np.sum(d["a"] * d["b"])


def dict_mapping_and_keyword(x):
    base = {"a": x, "c": 2.0}
    d = dict(base, b=np.sin(x))
    e = dict(zip(["p", "q"], [x, 3 * x]))
    return np.sum(d["a"] * d["b"] * d["c"]) + np.sum(e["q"] * e["p"])


# ---- functions as values -----------------------------------------------------------------------
def local_lambda(x):
    g = lambda t: np.sin(t) * 2          # noqa: E731
    sq = lambda t, k=3.0: t ** 2 * k     # noqa: E731
    return np.sum(g(x) + sq(x))


def _square(t):
    return t ** 2


FUNCS = [_square, np.sin]


def function_from_list(x):
    return np.sum(FUNCS[0](x) * FUNCS[1](x))


def loop_over_functions(x):
    s = 0.0
    for g in (np.sin, np.cos):
        s = s + np.sum(g(x))
    for h in FUNCS:
        s = s + np.sum(h(x) * x)
    return s


# ---- for row in Y: row /= ... (the rows are views: the writes land in Y) --------------------
def normalize_rows(x):
    Y = np.exp(x)
    for row in Y:
        row /= np.sum(row)
    return np.sum(Y * np.arange(12.0).reshape(3, 4))


def shift_rows(x):
    Y = x * 2.0
    for row in Y:
        row += np.sin(row)
        row[0] = 0.5 * row[1]
    return np.sum(Y ** 2)


def numbers_not_written(x):
    y = x * 1.0                 # a 1-D array: its items are numbers, rebound by +=
    total = 0.0
    for t in y:
        t += 1.0
        total = total + t * t
    return total + np.sum(y ** 3)


def list_of_arrays_written(x):
    ys = [x * 1.0, x * 2.0]
    for r in ys:
        r *= np.sum(r)
    return np.sum(ys[0] * ys[1])


CASES = [
    (transpose_axes, X3), (transpose_axes_then_einsum, X3), (clip_min, V), (clip_max, V), (clip_both, V),
    (sum_where, V), (sum_where_method_axis, M), (mean_where, V), (mean_where_axis_keepdims, M),
    (max_where, V), (min_where_axis, M), (max_initial_wins, V), (prod_where, V), (prod_where_method, M),
    (einsum_ellipsis_implicit, X3), (einsum_ellipsis_reduce, X3), (einsum_sublist, M),
    (einsum_sublist_implicit, M), (casts, V), (dict_pairs_and_keyword, V), (dict_mapping_and_keyword, V),
    (local_lambda, V), (function_from_list, V), (loop_over_functions, V), (normalize_rows, M),
    (shift_rows, M), (numbers_not_written, V), (list_of_arrays_written, V),
]


@pytest.mark.parametrize("f, x", CASES, ids=[c[0].__name__ for c in CASES])
def test_spelling_both_modes(f, x):
    _both_modes(f, x.copy())


def test_integer_cast_has_no_derivative():
    def f(x):
        return np.sum(np.int64(x * 10.0)) + 0.0 * np.sum(x)
    np.testing.assert_array_equal(srcad.grad(f)(V.copy()), np.zeros_like(V))


def test_where_spellings_keep_the_value():
    for f, x in CASES[5:14]:
        v, _ = srcad.value_and_grad(f)(x.copy())
        np.testing.assert_allclose(v, f(x.copy()))


def test_rows_written_in_place_like_python():
    x = M.copy()
    v, _ = srcad.value_and_grad(normalize_rows)(x)
    np.testing.assert_allclose(v, normalize_rows(M.copy()))
    v, _ = srcad.value_and_grad(numbers_not_written)(V.copy())
    np.testing.assert_allclose(v, numbers_not_written(V.copy()))


def test_function_list_rebinding_remakes_the_code():
    x = V.copy()
    old = FUNCS[0]
    try:
        FUNCS[0] = np.tanh
        assert_grad_close(function_from_list, (x,), srcad.grad(function_from_list)(x))
    finally:
        FUNCS[0] = old
    assert_grad_close(function_from_list, (x,), srcad.grad(function_from_list)(x))


def test_local_lambda_second_order():
    h = srcad.hessian(local_lambda)(V.copy())
    np.testing.assert_allclose(h, np.diag(-2 * np.sin(V) + 6.0), atol=1e-10)


@pytest.mark.parametrize("f, x", [(mean_where_axis_keepdims, M), (einsum_ellipsis_implicit, X3[0]),
                                  (normalize_rows, M), (max_where, V)],
                         ids=["mean_where", "einsum_ellipsis", "normalize_rows", "max_where"])
def test_second_order(f, x):
    """forward over the generated adjoint against central differences of the gradient"""
    g = srcad.grad(f)
    n, eps = x.size, 1e-5
    fd = np.stack([(np.ravel(g(x + eps * e.reshape(x.shape))) - np.ravel(g(x - eps * e.reshape(x.shape))))
                   / (2 * eps) for e in np.eye(n)], axis=1)
    np.testing.assert_allclose(np.reshape(srcad.hessian(f)(x.copy()), (n, n)), fd, rtol=1e-4, atol=1e-5)
