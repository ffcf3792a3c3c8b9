"""custom_vjp / custom_jvp rules of every shape (one argument, several, a tuple or a bare array, the
wrong count, the wrong shape), in both modes and inside a taped loop: a right rule gives the
derivative finite differences give; a wrong one is a named RuleError (never a number read out of
the wrong thing, e.g. the first row of a bare array taken as the first argument's cotangent)."""
import numpy as np
import pytest

import srcad
from srcad.errors import MissingRuleError, RuleError

from fdcheck import numerical_grad

X = np.array([0.1, 0.2, 0.3])
Y = np.array([0.5, -0.4, 0.7])
V = np.array([1.0, -2.0, 0.5])


def _vjp1(bwd_kind):
    @srcad.custom_vjp
    def s(x):
        return np.sin(x)

    def fwd(x):
        return np.sin(x), x

    def bwd(x, g):
        d = g * np.cos(x)
        return {"tuple": (d,), "list": [d], "bare": d, "two": (d, d), "none": (None,),
                "shape": (d[:2],), "scalar": (np.sum(d),)}[bwd_kind]
    s.defvjp(fwd, bwd)
    return s


def _vjp2(bwd_kind):
    @srcad.custom_vjp
    def m(x, y):
        return x * np.sin(y)

    def fwd(x, y):
        return x * np.sin(y), (x, y)

    def bwd(r, g):
        x, y = r
        gx, gy = g * np.sin(y), g * x * np.cos(y)
        return {"tuple": (gx, gy), "one": (gx,), "three": (gx, gy, gy), "bare": gx,
                "shape": (gx, gy[:1]), "swap_none": (None, gy)}[bwd_kind]
    m.defvjp(fwd, bwd)
    return m


def _rule_pair(primals, tangents):
    (x,), (t,) = primals, tangents
    return np.sin(x), np.cos(x) * t


def _rule_shape(primals, tangents):         # a number where the tangent of a vector is due
    (x,), (t,) = primals, tangents
    return np.sin(x), np.sum(np.cos(x) * t)


def _rule_bare(primals, tangents):          # the tangent alone, not (y, y_dot)
    (x,), (t,) = primals, tangents
    return np.cos(x) * t


def _rule2_pair(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return x * np.sin(y), tx * np.sin(y) + x * np.cos(y) * ty


def _rule2_shape(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    dot = tx * np.sin(y) + x * np.cos(y) * ty
    return x * np.sin(y), dot[:2]


def _jvp1(kind):
    @srcad.custom_jvp
    def s(x):
        return np.sin(x)
    s.defjvp({"pair": _rule_pair, "shape": _rule_shape, "bare": _rule_bare}[kind])
    return s


def _jvp2(kind):
    @srcad.custom_jvp
    def m(x, y):
        return x * np.sin(y)
    m.defjvp({"pair": _rule2_pair, "shape": _rule2_shape}[kind])
    return m


def _programs(fun, nargs):
    """The custom function called once, and inside a loop that tapes (its residuals pushed per trip)."""
    if nargs == 1:
        def once(x):
            return np.sum(fun(x) ** 2)

        def looped(x):
            s = 0.0
            for k in range(3):
                s = s + np.sum(fun(x * (k + 1.0)))
            return s
        return {"once": (once, (X,)), "loop": (looped, (X,))}

    def once2(x, y):
        return np.sum(fun(x, y) ** 2)

    def looped2(x, y):
        s = 0.0
        for k in range(2):
            s = s + np.sum(fun(x, y * (k + 1.0)))
        return s
    return {"once": (once2, (X, Y)), "loop": (looped2, (X, Y))}


def _check_reverse(f, args):
    wrt = tuple(range(len(args)))
    got = srcad.grad(f, wrt=wrt)(*args)
    for k in wrt:
        np.testing.assert_allclose(got[k], numerical_grad(f, args, k).reshape(np.shape(args[k])),
                                   rtol=1e-6, atol=1e-8)


def _check_forward(f, args):
    tangents = tuple(V * (k + 1) for k in range(len(args)))
    y, y_dot = srcad.jvp(f, args, tangents)
    eps = 1e-6
    plus = f(*[a + eps * t for a, t in zip(args, tangents)])
    minus = f(*[a - eps * t for a, t in zip(args, tangents)])
    np.testing.assert_allclose(y, f(*args), rtol=1e-12)
    np.testing.assert_allclose(y_dot, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape", ["once", "loop"])
@pytest.mark.parametrize("kind", ["tuple", "list", "none"])
def test_custom_vjp_one_argument_right(kind, shape):
    f, args = _programs(_vjp1(kind), 1)[shape]
    if kind == "none":      # the rule says x carries no cotangent: the gradient is zero
        np.testing.assert_array_equal(srcad.grad(f)(*args), np.zeros(3))
        return
    _check_reverse(f, args)


@pytest.mark.parametrize("shape", ["once", "loop"])
@pytest.mark.parametrize("kind", ["bare", "two", "shape", "scalar"])
def test_custom_vjp_one_argument_wrong(kind, shape):
    f, args = _programs(_vjp1(kind), 1)[shape]
    with pytest.raises(RuleError, match="`s`"):
        srcad.grad(f)(*args)
    with pytest.raises(RuleError, match="`s`"):
        srcad.vjp(f, *args)[1](1.0)
    with pytest.raises(RuleError, match="`s`"):
        srcad.value_and_grad(f)(*args)


@pytest.mark.parametrize("shape", ["once", "loop"])
def test_custom_vjp_two_arguments_right(shape):
    f, args = _programs(_vjp2("tuple"), 2)[shape]
    _check_reverse(f, args)


@pytest.mark.parametrize("shape", ["once", "loop"])
@pytest.mark.parametrize("kind", ["one", "three", "bare", "shape"])
def test_custom_vjp_two_arguments_wrong(kind, shape):
    f, args = _programs(_vjp2(kind), 2)[shape]
    with pytest.raises(RuleError, match="`m`"):
        srcad.grad(f, wrt=(0, 1))(*args)


def test_custom_vjp_none_for_one_of_two():
    f, args = _programs(_vjp2("swap_none"), 2)["once"]
    gx, gy = srcad.grad(f, wrt=(0, 1))(*args)
    np.testing.assert_array_equal(gx, np.zeros(3))
    np.testing.assert_allclose(gy, numerical_grad(f, args, 1), rtol=1e-6, atol=1e-8)


def test_custom_vjp_has_no_forward_mode():
    """A custom_vjp function has a reverse rule only (as in JAX): forward mode names it."""
    f, args = _programs(_vjp1("tuple"), 1)["once"]
    with pytest.raises(MissingRuleError, match="`fun`, which has a reverse-mode rule"):
        srcad.jvp(f, args, (V,))


@pytest.mark.parametrize("shape", ["once", "loop"])
def test_custom_jvp_one_argument_both_modes(shape):
    f, args = _programs(_jvp1("pair"), 1)[shape]
    _check_forward(f, args)
    _check_reverse(f, args)


@pytest.mark.parametrize("shape", ["once", "loop"])
def test_custom_jvp_two_arguments_both_modes(shape):
    f, args = _programs(_jvp2("pair"), 2)[shape]
    _check_forward(f, args)
    _check_reverse(f, args)


@pytest.mark.parametrize("nargs, kind", [(1, "shape"), (1, "bare"), (2, "shape")])
@pytest.mark.parametrize("shape", ["once", "loop"])
def test_custom_jvp_wrong_both_modes(kind, nargs, shape):
    fun = _jvp1(kind) if nargs == 1 else _jvp2(kind)
    f, args = _programs(fun, nargs)[shape]
    name = "`s`" if nargs == 1 else "`m`"
    with pytest.raises(RuleError, match=name):
        srcad.jvp(f, args, tuple(V for _ in args))
    with pytest.raises(RuleError, match=name):
        srcad.grad(f, wrt=tuple(range(nargs)))(*args)


def test_custom_vjp_second_order():
    """hessian through a custom_vjp function: bwd is transformed again (forward over reverse)."""
    s = _vjp1("tuple")

    def f(x):
        return np.sum(s(x) ** 2)
    H = srcad.hessian(f)(X)
    # f = sum sin(x)^2: H = diag(2 cos(2x))
    np.testing.assert_allclose(H, np.diag(2 * np.cos(2 * X)), rtol=1e-8, atol=1e-10)


def test_custom_vjp_bare_second_order():
    s = _vjp1("bare")

    def f(x):
        return np.sum(s(x) ** 2)
    with pytest.raises(RuleError, match="`s`"):
        srcad.hessian(f)(X)


# ---- fwd must return (y, residuals): an array of two rows was read as that pair --------------------
@srcad.custom_vjp
def _double_bad_fwd(x):
    return 2.0 * x


_double_bad_fwd.defvjp(lambda x: 2.0 * x, lambda r, dy: (2.0 * dy,))


def _loss_bad_fwd(x):
    return np.sum(_double_bad_fwd(x) * np.arange(1.0, 3.0))


def _loss_bad_fwd_loop(x):
    s = 0.0
    for i in range(2):
        s = s + np.sum(_double_bad_fwd(x * (i + 1.0)))
    return s


@pytest.mark.parametrize("loss", [_loss_bad_fwd, _loss_bad_fwd_loop])
def test_fwd_not_a_pair_is_a_rule_error(loss):
    # x of shape (2,): fwd's array [2x0, 2x1] unpacked as (y, residuals) gave the gradient [6, 6], not [2, 4]
    with pytest.raises(srcad.RuleError, match="fwd for `_double_bad_fwd` returned ndarray of shape"):
        srcad.value_and_grad(loss)(np.ones(2))
