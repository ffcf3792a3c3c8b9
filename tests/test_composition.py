"""Composition and nesting, as in JAX: a function a srcad operator returned is differentiated in
turn (grad of grad, jacobian of jacobian, grad of a function that calls grad(f) inside), and a
decorated function is differentiated as its wrapper computes it. Never the unwrapped function.

References are independent of srcad: derivatives written by hand (analytic formulas) or central
finite differences in float64 of srcad-free code (tests/fdcheck.py, tests/fd_second.py).
"""
import functools

import numpy as np
import pytest

import srcad
from fd_second import numerical_hessian
from fdcheck import numerical_grad

X = 0.7
RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 3))
A = A + A.T
V3 = RNG.standard_normal(3)
X3 = RNG.standard_normal(3)
W3 = RNG.standard_normal(3)


# ---- scalar functions and their derivatives by hand ------------------------------------------
def sin_x(x):
    return np.sin(x) * x


def poly(x):
    return 3.0 * x ** 4 - 2.0 * x ** 3 + x - 5.0


def exp_log(x):
    return np.log(1.0 + np.exp(2.0 * x)) * np.exp(-x)


SCALAR = {
    # f: (f', f'', f''')
    sin_x: (lambda x: np.sin(x) + x * np.cos(x),
            lambda x: 2 * np.cos(x) - x * np.sin(x),
            lambda x: -3 * np.sin(x) - x * np.cos(x)),
    poly: (lambda x: 12 * x ** 3 - 6 * x ** 2 + 1,
           lambda x: 36 * x ** 2 - 12 * x,
           lambda x: 72 * x - 12),
}


@pytest.mark.parametrize("f", list(SCALAR), ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [X, np.float64(-1.3)])
def test_grad_of_grad_is_the_second_derivative(f, x):
    d1, d2, _ = SCALAR[f]
    assert np.isclose(srcad.grad(f)(x), d1(x))
    assert np.isclose(srcad.grad(srcad.grad(f))(x), d2(x), rtol=1e-12)


@pytest.mark.parametrize("f", list(SCALAR), ids=lambda f: f.__name__)
def test_third_order(f):
    assert np.isclose(srcad.grad(srcad.grad(srcad.grad(f)))(X), SCALAR[f][2](X), rtol=1e-12)


def test_exp_log_chain_against_finite_differences():
    # f'' by central differences of f' written by hand
    def d1(x):
        e = np.exp(2.0 * x)
        return (2.0 * e / (1.0 + e)) * np.exp(-x) - np.log(1.0 + e) * np.exp(-x)
    h = 1e-5
    want = (d1(X + h) - d1(X - h)) / (2 * h)
    assert np.isclose(srcad.grad(exp_log)(X), d1(X), rtol=1e-12)
    assert np.isclose(srcad.grad(srcad.grad(exp_log))(X), want, rtol=1e-7)


def test_value_and_grad_composed():
    d1, d2, _ = SCALAR[sin_x]
    value, g = srcad.value_and_grad(srcad.grad(sin_x))(X)
    assert np.isclose(value, d1(X)) and np.isclose(g, d2(X))
    # grad of the gradient half of value_and_grad, called inside
    def second(x):
        return srcad.value_and_grad(sin_x)(x)[1] * 3.0
    assert np.isclose(srcad.grad(second)(X), 3.0 * d2(X))


# ---- vector functions: Hessians by hand ---------------------------------------------------------
def quad_sin(x):
    return np.sum(np.sin(x) * x) + 0.5 * x @ A @ x


def quad_sin_hessian(x):
    return np.diag(2 * np.cos(x) - x * np.sin(x)) + A


def quad_sin_third(x, v):
    """d/dx (H(x) v): the third derivative contracted with v."""
    return np.diag((-3 * np.sin(x) - x * np.cos(x)) * v)


def vec(x):
    return np.sin(x) * x[0] + x ** 2


def vec_jacobian(x):
    return np.diag(np.cos(x) * x[0] + 2 * x) + np.outer(np.sin(x), np.eye(3)[0])


def test_jacobian_of_grad_and_of_jacobian_are_the_hessian():
    H = quad_sin_hessian(X3)
    assert np.allclose(srcad.jacobian(srcad.grad(quad_sin))(X3), H, rtol=1e-10)
    assert np.allclose(srcad.jacobian(srcad.jacobian(quad_sin))(X3), H, rtol=1e-10)
    assert np.allclose(srcad.jacobian(srcad.jacobian(quad_sin), mode="reverse")(X3), H, rtol=1e-10)
    assert np.allclose(numerical_hessian(quad_sin, (X3,)), H, atol=1e-5)


def test_jacobian_of_jacobian_of_a_vector_function():
    assert np.allclose(srcad.jacobian(vec)(X3), vec_jacobian(X3))
    # the second derivative by central differences of the hand-written Jacobian
    h = 1e-6
    want = np.stack([(vec_jacobian(X3 + h * e) - vec_jacobian(X3 - h * e)) / (2 * h) for e in np.eye(3)], -1)
    for mode in ("forward", "reverse"):
        assert np.allclose(srcad.jacobian(srcad.jacobian(vec), mode=mode)(X3), want, atol=1e-7)


def helper_square(u):
    return u * u


def calls_helper(x):
    return np.sum(helper_square(np.sin(x)) * x)


def test_forward_over_forward_through_a_user_helper():
    # jacobian(jacobian(f)) is forward mode over tangent code whose callee already has `x_dot`
    # parameters (once `f_jvp_jvp() got multiple values for argument 'x_dot'`)
    want = numerical_hessian(calls_helper, (X3,))
    got = srcad.jacobian(srcad.jacobian(calls_helper))(X3)
    assert np.allclose(got, want, atol=1e-5)


def test_grad_of_grad_dot_v_and_hessian_of_it():
    H = quad_sin_hessian(X3)
    assert np.allclose(srcad.grad(lambda x: srcad.grad(quad_sin)(x) @ V3)(X3), H @ V3, rtol=1e-10)
    assert np.allclose(srcad.grad(lambda x: np.sum(srcad.grad(quad_sin)(x)))(X3), H.sum(0), rtol=1e-10)
    # third order: the Hessian of x -> grad(f)(x) . v
    got = srcad.hessian(lambda x: srcad.grad(quad_sin)(x) @ V3)(X3)
    assert np.allclose(got, quad_sin_third(X3, V3), rtol=1e-10, atol=1e-12)


DF = srcad.grad(quad_sin)


def through_global(x):
    return DF(x) @ V3


def inline(x):
    return srcad.grad(quad_sin)(x) @ V3


def test_grad_called_inside_a_differentiated_function():
    H = quad_sin_hessian(X3)
    for g in (through_global, inline):
        assert np.allclose(srcad.grad(g)(X3), H @ V3, rtol=1e-10)
        _, t = srcad.jvp(g, (X3,), (W3,))
        assert np.isclose(t, W3 @ H @ V3)


def test_jvp_vjp_and_hvp_of_a_derived_function():
    H = quad_sin_hessian(X3)
    assert np.allclose(srcad.jvp(srcad.grad(quad_sin), (X3,), (V3,))[1], H @ V3)
    assert np.allclose(srcad.vjp(srcad.grad(quad_sin), X3)[1](V3)[0], H @ V3)
    # grad of x -> v . H(x) v: the third derivative, twice contracted
    got = srcad.grad(lambda x: srcad.hvp(quad_sin)(x, V3) @ V3)(X3)
    assert np.allclose(got, (-3 * np.sin(X3) - X3 * np.cos(X3)) * V3 * V3)


def saddle_inner(p, q):
    return np.sum(p * q) - 0.5 * np.sum(q * q) + np.sum(np.sin(p)) * q[0]


def saddle(p):
    """max over q by a few gradient-ascent steps that call srcad.grad inside (GradBench's saddle)."""
    q = np.zeros(3)
    for _ in range(4):
        q = q + 0.5 * srcad.grad(saddle_inner, wrt=1)(p, q)
    return saddle_inner(p, q)


def saddle_by_hand(p):
    q = np.zeros(3)
    for _ in range(4):
        g = p - q + np.array([np.sum(np.sin(p)), 0.0, 0.0])
        q = q + 0.5 * g
    return np.sum(p * q) - 0.5 * np.sum(q * q) + np.sum(np.sin(p)) * q[0]


def test_nested_optimisation_saddle():
    assert np.isclose(saddle(X3), saddle_by_hand(X3))
    assert np.allclose(srcad.grad(saddle)(X3), numerical_grad(saddle_by_hand, (X3,)), rtol=1e-6, atol=1e-7)


_K = 2.0


def scaled_by_global(x):
    return _K * np.sin(x)


def test_a_composed_operator_follows_a_rebound_global():
    global _K
    _K = 2.0
    gg = srcad.grad(srcad.grad(scaled_by_global))
    assert np.isclose(gg(X), -2.0 * np.sin(X))
    _K = 5.0
    try:
        assert np.isclose(gg(X), -5.0 * np.sin(X))
    finally:
        _K = 2.0


# ---- decorated functions: the wrapper's code, as it runs -----------------------------------------
def doubled_wraps(g):
    @functools.wraps(g)
    def wrapper(x):
        return 2.0 * g(x)
    return wrapper


def doubled_plain(g):
    def wrapper(x):
        return 2.0 * g(x)
    return wrapper


def scaled_by(c):
    def decorator(g):
        @functools.wraps(g)
        def wrapper(x):
            return c * g(x) + x
        return wrapper
    return decorator


@doubled_wraps
def decorated_sin(x):
    return np.sin(x) * x


@scaled_by(3.0)
def decorated_with_args(x):
    return np.sin(x) * x


def test_decorated_functions_are_differentiated_as_the_wrapper_computes():
    d1, d2, _ = SCALAR[sin_x]
    assert np.isclose(srcad.grad(doubled_wraps(sin_x))(X), 2 * d1(X))
    assert np.isclose(srcad.grad(doubled_plain(sin_x))(X), 2 * d1(X))
    assert np.isclose(srcad.grad(decorated_sin)(X), 2 * d1(X))
    assert np.isclose(srcad.grad(decorated_with_args)(X), 3 * d1(X) + 1)
    assert np.isclose(srcad.jvp(decorated_with_args, (X,), (1.0,))[1], 3 * d1(X) + 1)
    assert np.isclose(srcad.grad(srcad.grad(decorated_sin))(X), 2 * d2(X))


def calls_decorated(x):
    return decorated_sin(x) + decorated_with_args(x)


def test_a_decorated_callee():
    d1 = SCALAR[sin_x][0]
    assert np.isclose(srcad.grad(calls_decorated)(X), 2 * d1(X) + 3 * d1(X) + 1)


def test_a_derived_function_differentiated_inside_a_lambda():
    df = srcad.grad(sin_x)
    assert np.isclose(srcad.grad(lambda x: df(x) * 1.0)(X), SCALAR[sin_x][1](X))


# ---- named errors -------------------------------------------------------------------------------
cached = functools.lru_cache(maxsize=None)(sin_x)


def calls_cached(x):
    return cached(x) * 2.0


def test_lru_cache_is_refused_not_unwrapped():
    with pytest.raises(srcad.UnsupportedSyntaxError, match="lru_cache_wrapper.*__wrapped__"):
        srcad.grad(cached)(X)
    with pytest.raises(srcad.MissingRuleError, match="cached"):
        srcad.grad(calls_cached)(X)


def star_args(*args):
    return args[0] ** 2 * args[1]


def star_decorator(g):
    @functools.wraps(g)
    def wrapper(*args, **kwargs):
        return 2.0 * g(*args, **kwargs)
    return wrapper


def calls_star(x):
    return 3.0 * star_args(x, 2.0)


def test_star_args_are_a_named_error():
    for f in (star_args, star_decorator(sin_x)):
        with pytest.raises(srcad.UnsupportedSyntaxError, match=r"\*args"):
            srcad.grad(f)(X, 2.0) if f is star_args else srcad.grad(f)(X)
    with pytest.raises(srcad.UnsupportedSyntaxError, match=r"\*args.*Name every parameter"):
        srcad.grad(calls_star)(X)
    with pytest.raises(srcad.UnsupportedSyntaxError, match=r"\*args"):
        srcad.grad(srcad.grad(star_args))(X, 2.0)


def test_grad_of_grad_of_a_vector_function_is_refused():
    with pytest.raises(srcad.NonScalarOutputError):
        srcad.grad(srcad.grad(vec))(X3)


def test_an_operator_inside_with_a_local_function_is_refused():
    def g(x):
        h = sin_x
        return srcad.grad(h)(x)
    with pytest.raises(srcad.UnsupportedSyntaxError):
        srcad.grad(g)(X)


def potential(x, w):
    return np.sum(w / np.sqrt(np.sum((x - np.array([1.0, 2.0])) ** 2) + 0.1))


def potential_grad_by_hand(x, w):
    r2 = np.sum((x - np.array([1.0, 2.0])) ** 2) + 0.1
    return -np.sum(w) * r2 ** -1.5 * (x - np.array([1.0, 2.0]))


def particle(w):
    """GradBench's particle, in small: the force is srcad.grad of the potential, inside."""
    x = np.array([0.0, 8.0])
    xd = np.array([0.75, 0.0])
    for _ in range(5):
        a = -srcad.grad(potential)(x, w)
        xd = xd + 0.1 * a
        x = x + 0.1 * xd
    return x[0] ** 2


def particle_by_hand(w):
    x = np.array([0.0, 8.0])
    xd = np.array([0.75, 0.0])
    for _ in range(5):
        xd = xd - 0.1 * potential_grad_by_hand(x, w)
        x = x + 0.1 * xd
    return x[0] ** 2


def test_nested_particle():
    w = np.array([0.5, 0.3])
    assert np.isclose(particle(w), particle_by_hand(w))
    assert np.allclose(srcad.grad(particle)(w), numerical_grad(particle_by_hand, (w,)), rtol=1e-5, atol=1e-9)


def loop_sin(x):
    s = 0.0
    for i in range(4):
        s = s + np.sin(x * i)
    return s


def test_composition_of_options():
    want = sum(-(i ** 2) * np.sin(X * i) for i in range(4))
    # forward over reverse through a loop's tape
    assert np.isclose(srcad.jacobian(srcad.grad(loop_sin, checkpoint=2))(X), want)
    assert np.isclose(srcad.jacobian(srcad.grad(loop_sin))(X), want)
    # reverse over reverse through a loop's tape: not yet, and said so, with what works instead
    with pytest.raises(srcad.UnsupportedSyntaxError, match=r"replays a tape.*srcad.jacobian\(srcad.grad\(f\)\)"):
        srcad.grad(srcad.grad(loop_sin))(X)
    assert np.isclose(srcad.grad(lambda x: srcad.grad(sin_x, has_aux=False)(x) * 2.0)(X), 2 * SCALAR[sin_x][1](X))

    def with_aux(x):
        return x ** 3, x * 2

    assert np.isclose(srcad.grad(lambda x: srcad.grad(with_aux, has_aux=True)(x)[0])(X), 6 * X)
    with pytest.raises(srcad.SrcadError, match="sparsity"):
        srcad.jacobian(srcad.jacobian(vec, sparsity="auto"))(X3)


def two(x, y):
    return np.sin(x * y) + x ** 2 * y


def test_mixed_partials_and_bound_arguments():
    x, y = 0.4, 1.3
    want = np.cos(x * y) - x * y * np.sin(x * y) + 2 * x
    assert np.isclose(srcad.grad(srcad.grad(two, wrt=1), wrt=0)(x, y), want)
    assert np.isclose(srcad.grad(srcad.grad(two), wrt=1)(x, y), want)
    assert np.isclose(srcad.grad(srcad.grad(functools.partial(two, x)))(y), -x * x * np.sin(x * y))


DP = srcad.grad(functools.partial(two, 0.4))     # a wrapper with no __name__ of its own to copy


def item_of_grad(x):
    return DF(x)[0] + DP(x[1])


def test_an_item_of_a_gradient_called_inside():
    # (once differentiated as if DF were quad_sin itself, through __wrapped__)
    H = quad_sin_hessian(X3)
    y = X3[1]
    want = H[0] + np.array([0.0, -0.4 * 0.4 * np.sin(0.4 * y), 0.0])
    assert np.allclose(srcad.grad(item_of_grad)(X3), want)


def sin_ax(x):
    return np.sin(A @ x)


def test_a_vjp_pullback_is_differentiated_as_it_computes():
    y, pullback = srcad.vjp(sin_ax, X3)
    J = np.cos(A @ X3)[:, None] * A         # by hand
    assert np.allclose(pullback(V3)[0], J.T @ V3)
    assert np.allclose(srcad.grad(lambda dy: pullback(dy)[0] @ W3)(V3), J @ W3)
    assert np.allclose(srcad.jacobian(lambda dy: pullback(dy)[0])(V3), J.T)
    _, bound = srcad.vjp(functools.partial(two, 0.4), 1.3)
    assert np.isclose(srcad.grad(lambda dy: bound(dy)[0])(2.0), 0.4 * np.cos(0.4 * 1.3) + 0.16)


M3 = np.array([[3.0, 0.2, 0.1], [0.4, 2.5, -0.3], [0.2, 0.1, 2.0]])


def solve_sq(b):
    return np.sum(np.linalg.solve(M3, b) ** 2)


def solve_w(a, b):
    return np.sum(np.linalg.solve(a, b) * W3)


def test_reverse_over_reverse_through_solve():
    Mi = np.linalg.inv(M3)
    # the Hessian of |A^-1 b|^2 is 2 A^-T A^-1 (by hand)
    assert np.allclose(srcad.grad(lambda b: srcad.grad(solve_sq)(b) @ V3)(X3), 2 * Mi.T @ Mi @ V3)
    # d/dA of v . A^-T w, against central differences of the formula
    by_hand = lambda a: V3 @ np.linalg.solve(a.T, W3)       # noqa: E731
    got = srcad.grad(lambda a: srcad.grad(solve_w, wrt=1)(a, X3) @ V3)(M3)
    assert np.allclose(got, numerical_grad(by_hand, (M3,)).reshape(3, 3), atol=1e-7)


def uses_jacobian(x):
    return V3 @ srcad.jacobian(vec)(x) @ W3


def indexed(x):
    return x[0] * x[1] ** 2 + np.sum(x[1:] ** 3)


def indexed_hessian(x):
    H = np.zeros((3, 3))
    H[0, 1] = H[1, 0] = 2 * x[1]
    H[1, 1] = 2 * x[0] + 6 * x[1]
    H[2, 2] = 6 * x[2]
    return H


def test_reverse_over_forward_and_subscripts():
    # reverse mode over the tangent code srcad.jacobian sweeps (rt.index_jvp, rt.sum_jvp, ...)
    want = numerical_grad(lambda x: V3 @ vec_jacobian(x) @ W3, (X3,))
    assert np.allclose(srcad.grad(uses_jacobian)(X3), want, atol=1e-7)
    H = indexed_hessian(X3)
    assert np.allclose(srcad.grad(lambda x: srcad.grad(indexed)(x) @ V3)(X3), H @ V3)
    assert np.allclose(srcad.jacobian(srcad.grad(indexed), mode="reverse")(X3), H)
    assert np.allclose(srcad.jacobian(srcad.jacobian(indexed))(X3), H)


def recursive(x, n):
    if n == 0:
        return np.sum(x * x)
    return recursive(np.sin(x), n - 1) + np.sum(x) ** 2


def test_second_order_through_recursion_every_order():
    f = lambda x: recursive(x, 2)       # noqa: E731
    H = numerical_hessian(f, (X3,))
    assert np.allclose(srcad.jacobian(srcad.jacobian(f))(X3), H, atol=1e-5)      # forward over forward
    assert np.allclose(srcad.jacobian(srcad.grad(f))(X3), H, atol=1e-5)          # forward over reverse
    assert np.allclose(srcad.grad(lambda x: srcad.grad(f)(x) @ V3)(X3), H @ V3, atol=1e-5)   # reverse over reverse
