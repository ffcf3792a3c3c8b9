"""Deny by default: what srcad once assumed (a cast as identity, an index trick as an index, an
integer or foreign argument as a float array) is now either differentiated by a declared rule or a
named error. Every derivative is checked against central differences (fdcheck) or an analytic
formula, in reverse mode, forward mode (srcad.jvp) and, for one case, to second order."""
import numpy as np
import pytest

import srcad
from fdcheck import assert_grad_close, numerical_grad

X = np.array([0.3, 1.2, -0.7])      # no entry near an integer: the casts are flat around it
A = np.array([[0.2, -0.4, 0.9], [1.3, 0.6, -1.1]])


# ---- casts: to integer or bool no derivative, to a float dtype the identity -------------------
def astype_int(x):
    return np.sum(x.astype(int) * x)


def astype_bool(x):
    return np.sum(x.astype(bool) * x)


def asarray_int(x):
    return np.sum(np.asarray(x, dtype=int) + x)


def array_int_times(x):
    return np.sum(np.array(x, dtype=np.int32) * x ** 2)


def astype_float32(x):
    return np.sum(x.astype(np.float32) * x)


def int_of_item(x):
    return int(x[1]) * x[0] + float(x[1]) * x[2]


def np_int64_of_item(x):
    return np.int64(x[1]) * x[0] + np.float64(x[1]) * x[2]


def floor_round_sort(x):
    k = np.argsort(x)
    return np.sum(np.floor(x) * x) + np.sum(np.round(x) * x ** 2) + np.sum(x[k] * k)


def astype_runtime_dtype(x, t):
    return np.sum(x.astype(t) * x)


CASTS = [astype_int, astype_bool, asarray_int, array_int_times, astype_float32, int_of_item,
         np_int64_of_item, floor_round_sort]


def _analytic(f, x):
    """The derivative worked by hand (the cast parts are constants)."""
    if f is astype_int:
        return np.trunc(x)
    if f is astype_bool:
        return (x != 0).astype(float)
    if f is asarray_int:
        return np.ones_like(x)
    if f is array_int_times:
        return 2 * np.trunc(x) * x
    if f is astype_float32:
        return 2 * x
    if f in (int_of_item, np_int64_of_item):
        return np.array([np.trunc(x[1]), x[2], x[1]])
    # d/dx_i of sum(x[k] * k) is k_j where k_j = i, which is i
    return np.floor(x) + 2 * np.round(x) * x + np.arange(x.size)


@pytest.mark.parametrize("f", CASTS, ids=lambda f: f.__name__)
def test_cast_reverse_mode_matches_analytic_and_fd(f):
    got = srcad.grad(f)(X)
    np.testing.assert_allclose(got, _analytic(f, X), rtol=1e-5, atol=1e-6)
    if f is astype_float32:     # float32 rounding: a wide step (exact for a quadratic)
        assert_grad_close(f, (X,), got, rtol=1e-3, atol=1e-4, eps=1e-2)
    else:
        assert_grad_close(f, (X,), got, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", CASTS, ids=lambda f: f.__name__)
def test_cast_forward_mode_matches_analytic(f):
    for k in range(X.size):
        e = np.zeros_like(X)
        e[k] = 1.0
        y, y_dot = srcad.jvp(f, (X,), (e,))
        assert float(y) == pytest.approx(float(f(X)))
        assert float(y_dot) == pytest.approx(_analytic(f, X)[k], rel=1e-5, abs=1e-6)


def test_cast_to_a_dtype_known_only_at_run_time():
    g = srcad.grad(astype_runtime_dtype)
    np.testing.assert_allclose(g(X, int), np.trunc(X))
    np.testing.assert_allclose(g(X, float), 2 * X)
    np.testing.assert_allclose(g(X, bool), (X != 0).astype(float))
    _, t = srcad.jvp(astype_runtime_dtype, (X, int), (np.ones_like(X), None))
    assert float(t) == pytest.approx(np.sum(np.trunc(X)))


def test_cast_second_order_against_fd_of_the_gradient():
    def f(x):
        return np.sum(x.astype(int) * x ** 3) + np.sum(np.asarray(x, dtype=float) * x ** 2)
    H = srcad.hessian(f)(X)
    want = np.diag(6 * np.trunc(X) * X + 6 * X)          # analytic
    np.testing.assert_allclose(H, want, rtol=1e-5, atol=1e-5)
    grad = srcad.grad(f)
    fd = np.array([numerical_grad(lambda x: grad(x)[i], (X,)) for i in range(X.size)])
    np.testing.assert_allclose(H, fd, rtol=1e-4, atol=1e-4)


# ---- np.r_ and np.c_ --------------------------------------------------------------------------
def r_square(x):
    return np.sum(np.r_[x, x] ** 2)


def r_mixed(x):
    y = np.r_[x, x ** 2, 3.0, x[0]]
    return np.sum(np.sin(y) * np.arange(y.size))


def c_columns(x):
    z = np.c_[x, 2.0 * x, x ** 3]
    return np.sum(z ** 2 * np.arange(3.0))


def c_matrix(a):
    return np.sum(np.cos(np.c_[a, a ** 2]))


INDEX_TRICKS = [(r_square, X), (r_mixed, X), (c_columns, X), (c_matrix, A)]


@pytest.mark.parametrize("f, x", INDEX_TRICKS, ids=lambda v: getattr(v, "__name__", ""))
def test_index_tricks_reverse_mode(f, x):
    got = srcad.grad(f)(x)
    assert_grad_close(f, (x,), got, rtol=1e-5, atol=1e-6)
    if f is r_square:
        np.testing.assert_allclose(got, 4 * x)           # analytic


@pytest.mark.parametrize("f, x", INDEX_TRICKS, ids=lambda v: getattr(v, "__name__", ""))
def test_index_tricks_forward_mode(f, x):
    rng = np.random.default_rng(3)
    v = rng.standard_normal(x.shape)
    _, t = srcad.jvp(f, (x,), (v,))
    want = float(np.sum(numerical_grad(f, (x,)).reshape(x.shape) * v))
    assert float(t) == pytest.approx(want, rel=1e-5, abs=1e-6)


def test_index_trick_second_order():
    H = srcad.hessian(r_square)(X)
    np.testing.assert_allclose(H, 4 * np.eye(X.size))      # analytic


def r_with_slice(x):
    return np.sum(np.r_[x, 0:3] ** 2)


class _Lookup:
    def __getitem__(self, key):
        return key[0] * 2.0


LOOKUP = _Lookup()


def custom_getitem(x):
    return np.sum(LOOKUP[x, 1])


@pytest.mark.parametrize("f, what", [(r_with_slice, "np.r_[...] with a slice"), (custom_getitem, "LOOKUP[...]")])
def test_unknown_subscript_calls_are_missing_rules_at_the_user_line(f, what):
    with pytest.raises(srcad.MissingRuleError) as err:
        srcad.grad(f)(X)
    msg = str(err.value)
    assert what in msg
    assert f"test_deny_by_default.py:{f.__code__.co_firstlineno + 1}:" in msg


# ---- arguments srcad refuses ---------------------------------------------------------------------
def square_sum(x):
    return np.sum(x * x)


def pair_loss(p):
    return np.sum(p["w"] ** 2) + np.sum(p["b"])


INTEGERS = [np.array([1, 2, 3]), np.array([1, 2], dtype=np.int32), np.array([True, False]), np.int64(3), 3, True]
OPERATORS = {
    "grad": lambda a: srcad.grad(square_sum)(a),
    "value_and_grad": lambda a: srcad.value_and_grad(square_sum)(a),
    "jacobian": lambda a: srcad.jacobian(square_sum)(a),
    "hessian": lambda a: srcad.hessian(square_sum)(a),
    "jvp": lambda a: srcad.jvp(square_sum, (a,), (np.ones(np.shape(a)),)),
}


@pytest.mark.parametrize("op", sorted(OPERATORS))
@pytest.mark.parametrize("a", INTEGERS, ids=lambda a: f"{type(a).__name__}-{getattr(a, 'dtype', '')}")
def test_a_differentiated_integer_argument_is_an_input_error_naming_the_fix(op, a):
    with pytest.raises(srcad.InputError, match=r"argument 0 \(`x`\).*astype\(float\)"):
        OPERATORS[op](a)


def test_the_named_fix_works_and_vjp_leaves_integers_out():
    a = np.array([1, 2, 3])
    np.testing.assert_allclose(srcad.grad(square_sum)(a.astype(float)), 2.0 * a)    # analytic
    _, pullback = srcad.vjp(lambda x, k: np.sum(x[k] ** 2), np.array([0.5, 1.5]), np.array([1, 1]))
    gx, gk = pullback(1.0)
    np.testing.assert_allclose(gx, [0.0, 6.0])                  # analytic: 2 * 2 * 1.5
    assert gk is None        # vjp: an integer argument carries no derivative (API.md)


def test_an_integer_leaf_of_a_differentiated_pytree_is_refused():
    with pytest.raises(srcad.InputError, match=r"item \['b'\].*astype\(float\)"):
        srcad.grad(pair_loss)({"w": np.array([1.0, 2.0]), "b": np.array([1, 2])})
    got = srcad.grad(pair_loss)({"w": np.array([1.0, 2.0]), "b": np.array([1.0, 2.0])})
    np.testing.assert_allclose(got["w"], [2.0, 4.0])
    np.testing.assert_allclose(got["b"], [1.0, 1.0])


def test_an_integer_argument_not_differentiated_is_fine():
    f = lambda x, k: np.sum(x[k] ** 2)      # noqa: E731
    got = srcad.grad(f)(np.array([0.5, 1.5]), np.array([1, 1]))
    np.testing.assert_allclose(got, [0.0, 6.0])                  # analytic


def test_np_matrix_and_masked_arrays_are_input_errors():
    with pytest.raises(srcad.InputError, match=r"np\.matrix.*np\.asarray\(x\)"):
        srcad.grad(square_sum)(np.matrix([[1.0, 2.0]]))
    with pytest.raises(srcad.InputError, match=r"masked array.*filled"):
        srcad.grad(square_sum)(np.ma.array([1.0, 2.0], mask=[0, 1]))


class _Foreign:
    """Stands for a torch tensor: converts to NumPy, is not one."""

    def __init__(self, a):
        self.a = np.asarray(a)

    def __array__(self, dtype=None, copy=None):
        return self.a


def test_a_foreign_array_is_an_input_error_naming_np_asarray():
    with pytest.raises(srcad.InputError, match=r"argument 0 \(`x`\).*_Foreign.*np\.asarray\(x\)"):
        srcad.grad(square_sum)(_Foreign([1.0, 2.0]))


# ---- operations with no rule: a named error at the user's line, never identity or zero --------
def uses_real(x):
    return np.sum(x.mT * x)       # (x.real has a rule now: the identity on real arrays)


def uses_frexp(x):
    return np.sum(np.frexp(x)[0])


def uses_unknown_method(x):
    return np.sum(x.foo())


def uses_ptp(x):
    return np.ptp(x)


@pytest.mark.parametrize("f, construct", [(uses_real, "x.mT"), (uses_frexp, "np.frexp"),
                                          (uses_unknown_method, "x.foo"), (uses_ptp, "np.ptp")])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_no_rule_is_a_missing_rule_error_naming_the_user_line(f, construct, mode):
    with pytest.raises(srcad.MissingRuleError) as err:
        if mode == "reverse":
            srcad.grad(f)(X)
        else:
            srcad.jvp(f, (X,), (np.ones_like(X),))
    msg = str(err.value)
    assert construct in msg
    assert f"test_deny_by_default.py:{f.__code__.co_firstlineno + 1}:" in msg
    assert "register_vjp" in msg or "register_jvp" in msg        # the fix


# ---- expressions that pass a value through without a rule --------------------------------------
def value_or_default(x):
    y = x[0] or 1.0
    return y * 2.0


def value_and_value(x):
    y = x[0] and x[1]
    return y * 2.0


def set_of_values(x):
    s = {x[0], x[1]}
    return sum(s)


@pytest.mark.parametrize("f, construct, fix", [(value_or_default, "`or`", "np.where"),
                                               (value_and_value, "`and`", "np.where"),
                                               (set_of_values, "a set display", "a list")])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_boolean_operators_and_sets_over_active_values_are_refused(f, construct, fix, mode):
    # (they were read as constants: a zero derivative)
    with pytest.raises(srcad.UnsupportedSyntaxError) as err:
        if mode == "reverse":
            srcad.grad(f)(X)
        else:
            srcad.jvp(f, (X,), (np.ones_like(X),))
    msg = str(err.value)
    assert construct in msg and fix in msg
    assert f"test_deny_by_default.py:{f.__code__.co_firstlineno + 1}:" in msg


def test_a_condition_built_with_or_still_differentiates():
    def f(x):
        if x[0] > 1.0 or x[1] > 1.0:
            return np.sum(x ** 2)
        return np.sum(x)
    got = srcad.grad(f)(X)
    np.testing.assert_allclose(got, 2 * X)         # analytic (x[1] = 1.2 > 1)
    assert_grad_close(f, (X,), got)


def rounding_methods(x):
    k = x.argpartition(1)
    return np.sum(x.round(0) * x) + np.sum(np.around(x, 1) * x) + np.sum(np.heaviside(x, 0.5) * x) + np.sum(k * x)


def test_rounding_and_ordering_are_declared_constants():
    got = srcad.grad(rounding_methods)(X)
    want = np.round(X) + np.around(X, 1) + np.heaviside(X, 0.5) + np.argpartition(X, 1)     # analytic
    np.testing.assert_allclose(got, want)
    _, t = srcad.jvp(rounding_methods, (X,), (np.ones_like(X),))
    assert float(t) == pytest.approx(float(np.sum(want)))


def test_jvp_accepts_a_zero_tangent_for_an_integer_argument_and_refuses_a_nonzero_one():
    f = lambda x, k: np.sum(x[k] ** 2)      # noqa: E731
    k = np.array([1, 2])
    _, t = srcad.jvp(f, (X, k), (np.ones_like(X), np.zeros_like(k)))
    assert float(t) == pytest.approx(2 * X[1] + 2 * X[2])           # analytic
    with pytest.raises(srcad.InputError, match=r"argument 1 \(`k`\).*pass None as its tangent"):
        srcad.jvp(f, (X, k), (np.ones_like(X), np.ones_like(k)))


def complex_cast(x):
    return np.sum(np.abs(x.astype(complex) * 1j))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_cast_to_complex_is_refused(mode):
    # (its cotangent dropped the imaginary part: a wrong sign here)
    with pytest.raises(srcad.UnsupportedSyntaxError, match=r"complex dtype complex128.*np\.hypot"):
        if mode == "reverse":
            srcad.grad(complex_cast)(X)
        else:
            srcad.jvp(complex_cast, (X,), (np.ones_like(X),))
