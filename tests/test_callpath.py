"""The path of a cached gradient call (srcad/api/gradients.py, inputs.py, cache.py Handle, rt.finalize):
what is worked out once per function must follow the function when it changes (its code object,
its defaults), the cheap checks of plain arguments must still refuse what they refused, and the
gradient has the type of its argument. Every gradient is compared with central finite
differences of the function as it is at that call."""
import importlib.util
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import srcad
from srcad import cache
from fdcheck import numerical_grad

X = np.array([0.3, -1.2, 2.0])

SOURCE = '''
import numpy as np

SCALE = 2.0


def with_defaults(x, a=2.0, *, b=3.0):
    return np.sum(a * x * x) + b * x[0]


def default_from_a_global(x, a=SCALE):
    return np.sum(a * np.sin(x))


def square_sum(x):
    return np.sum(x * x)


def cube_sum(x):
    return np.sum(x * x * x)


def helper(x):
    return np.sin(x)


def other_helper(x):
    return np.exp(x) * 0.5


def calls_helper(x):
    return np.sum(helper(x) * x)


def poly(t):
    return t * t * t + 2.0 * t


def poly_sum(t):
    return np.sum(t * t * t + 2.0 * t)


def pair(x):
    return np.sum(x * x), x[0]
'''


@pytest.fixture
def mod(tmp_path):
    """A fresh module of user functions per test (imported by Python's own loader)."""
    path = tmp_path / "callpath_user_mod.py"
    path.write_text(textwrap.dedent(SOURCE))
    spec = importlib.util.spec_from_file_location(f"callpath_user_mod_{tmp_path.name}", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def close_to_fd(f, args, got, wrt=0):
    np.testing.assert_allclose(np.ravel(got), numerical_grad(f, args, wrt), rtol=1e-6, atol=1e-7)


# ---- defaults and code objects changed after the first gradient -------------------------------
def test_reassigned_defaults_are_honoured(mod):
    f = mod.with_defaults
    g = srcad.grad(f)
    close_to_fd(f, (X,), g(X))
    f.__defaults__ = (5.0,)
    close_to_fd(f, (X,), g(X))
    np.testing.assert_allclose(g(X), 10.0 * X + [3.0, 0.0, 0.0])       # analytic, a = 5, b = 3
    f.__kwdefaults__ = {"b": 7.0}
    close_to_fd(f, (X,), g(X))
    f.__kwdefaults__["b"] = -1.0                  # changed in place
    close_to_fd(f, (X,), g(X))
    np.testing.assert_allclose(g(X), 10.0 * X + [-1.0, 0.0, 0.0])
    # passed explicitly, the defaults do not matter
    close_to_fd(lambda x: f(x, 0.5, b=2.0), (X,), g(X, 0.5, b=2.0))
    # value_and_grad and a new grad object see the same
    value, grad = srcad.value_and_grad(f)(X)
    assert value == pytest.approx(f(X))
    close_to_fd(f, (X,), grad)
    close_to_fd(f, (X,), srcad.grad(f)(X))


def test_a_default_is_the_object_python_passes_not_its_expression_again(mod):
    f = mod.default_from_a_global
    g = srcad.grad(f)
    close_to_fd(f, (X,), g(X))
    mod.SCALE = 7.0                 # the def already evaluated SCALE: f keeps a = 2.0
    close_to_fd(f, (X,), g(X))
    np.testing.assert_allclose(g(X), 2.0 * np.cos(X))


def test_a_reassigned_code_object_is_noticed(mod):
    f = mod.square_sum
    g = srcad.grad(f)
    close_to_fd(f, (X,), g(X))
    f.__code__ = mod.cube_sum.__code__
    close_to_fd(f, (X,), g(X))
    np.testing.assert_allclose(g(X), 3.0 * X ** 2)
    value, _ = srcad.value_and_grad(f)(X)
    assert value == pytest.approx(np.sum(X ** 3))


def test_a_callee_whose_code_object_is_reassigned_is_noticed(mod):
    f = mod.calls_helper
    g = srcad.grad(f)
    close_to_fd(f, (X,), g(X))
    mod.helper.__code__ = mod.other_helper.__code__
    close_to_fd(f, (X,), g(X))
    np.testing.assert_allclose(g(X), 0.5 * np.exp(X) * (X + 1.0))


def test_a_held_gradient_survives_clearing_the_memory_cache(mod):
    f = mod.square_sum
    g = srcad.grad(f)
    close_to_fd(f, (X,), g(X))
    cache.clear_memory()
    close_to_fd(f, (X,), g(X))


# ---- the gradient has its argument's type -------------------------------------------------
@pytest.mark.parametrize("t, kind", [(np.float32(1.5), np.float32), (np.float64(1.5), np.float64),
                                     (1.5, float)])
def test_the_gradient_at_a_scalar_has_the_scalars_type(mod, t, kind):
    got = srcad.grad(mod.poly)(t)
    assert type(got) is kind, type(got)
    assert float(got) == pytest.approx(3.0 * float(t) ** 2 + 2.0, rel=1e-6)     # analytic
    close_to_fd(mod.poly, (float(t),), got)


@pytest.mark.parametrize("t", [np.int64(2), 2, True])
def test_an_integer_scalar_differentiated_is_refused_naming_the_fix(mod, t):
    # API.md (turn 3): a differentiated integer or bool argument is an InputError, as in JAX
    with pytest.raises(srcad.InputError, match=r"argument 0 \(`t`\).*astype\(float\)"):
        srcad.grad(mod.poly)(t)
    got = srcad.grad(mod.poly)(float(t))      # the fix it names works
    assert got == pytest.approx(3.0 * float(t) ** 2 + 2.0)


def test_scalar_gradients_inside_a_tuple_and_zero_gradients_keep_their_types(mod):
    g = srcad.grad(lambda a, b: a * a + 0.0 * np.sin(1.0), wrt=(0, 1))
    ga, gb = g(np.float32(2.0), np.float64(1.0))
    assert type(ga) is np.float32 and ga == pytest.approx(4.0)
    assert type(gb) is np.float64 and gb == 0.0           # b is not used: a zero of its type


def test_a_zero_dimensional_array_keeps_giving_an_array(mod):
    got = srcad.grad(mod.poly)(np.array(1.5))
    assert type(got) is np.ndarray and got.shape == ()
    assert float(got) == pytest.approx(3.0 * 1.5 ** 2 + 2.0)


def test_float32_arrays_keep_their_dtype_and_the_gradient_is_a_new_writable_array(mod):
    x = X.astype(np.float32)
    got = srcad.grad(mod.square_sum)(x)
    assert got.dtype == np.float32 and got.flags.writeable and not np.shares_memory(got, x)
    np.testing.assert_allclose(got, 2.0 * x, rtol=1e-6)
    g64 = srcad.grad(lambda v: np.sum(v))(X)          # a broadcast cotangent: copied, writable
    assert g64.flags.writeable and g64.base is None
    np.testing.assert_array_equal(g64, np.ones(3))


# ---- the cheap checks of plain arguments still refuse what they refused -------------------
def test_checks_still_refuse_complex_and_unsupported_sparse_arguments(mod):
    g = srcad.grad(mod.square_sum)
    close_to_fd(mod.square_sum, (X,), g(X))
    with pytest.raises(srcad.InputError, match="complex"):
        g(X + 1j)
    with pytest.raises(srcad.InputError, match="complex"):
        g(1.0 + 2j)
    with pytest.raises(srcad.InputError, match="complex"):
        srcad.grad(lambda x, c: np.sum(x * c[0].real))(X, [np.ones(3) + 0j])
    with pytest.raises(srcad.InputError, match="CSR, CSC and COO"):
        srcad.grad(lambda A: A.sum())(sp.dok_array(np.eye(3)))
    with pytest.raises(srcad.InputError, match="complex"):
        srcad.grad(lambda x, c=None: np.sum(x * x))(X, c=np.ones(2) * 1j)


def test_plain_and_other_arguments_alternate_through_one_gradient_object(mod):
    g = srcad.grad(lambda x, y: np.sum(x * y) if isinstance(y, np.ndarray) else np.sum(x) * sum(y))
    f = g.__wrapped__
    for y in (np.array([1.0, 2.0, 3.0]), [1.0, 2.0], np.array([0.5, 0.5, 0.5]), (3.0,)):
        close_to_fd(f, (X, y), g(X, y))


def test_has_aux_still_checks_that_a_pair_is_returned(mod):
    with pytest.raises(srcad.SrcadError, match="has_aux=True"):
        srcad.grad(mod.square_sum, has_aux=True)(X)
    g, aux = srcad.grad(mod.pair, has_aux=True)(X)
    assert aux == X[0]
    close_to_fd(lambda x: mod.pair(x)[0], (X,), g)


def test_a_non_scalar_output_is_still_refused(mod):
    with pytest.raises(srcad.NonScalarOutputError):
        srcad.grad(lambda x: x * 2.0)(X)


def test_keyword_arguments_reach_the_generated_code(mod):
    f = mod.with_defaults
    g = srcad.grad(f)
    close_to_fd(lambda x: f(x, a=1.5, b=-2.0), (X,), g(X, a=1.5, b=-2.0))
    close_to_fd(f, (X,), g(x=X))


# ---- the runtime helpers' common cases (plain arrays and floats first) ----------------------
def item_loop(x):
    s = 0.0
    for i in range(3):
        x = x * 0.9 + np.sin(x) * 0.1
        s += x[0] * x[1] - 2.0 * x[2]
    return s


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_item_reads_in_a_loop_against_finite_differences(dtype):
    x = X.astype(dtype)
    got = srcad.grad(item_loop)(x)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, numerical_grad(item_loop, (X,)), rtol=1e-4 if dtype == np.float32 else 1e-6,
                               atol=1e-5 if dtype == np.float32 else 1e-8)


@pytest.mark.parametrize("n", [3, 5000])
def test_the_cotangent_of_a_whole_sum_small_and_large(n):
    x = np.linspace(-1.0, 1.0, n)
    got = srcad.grad(lambda v: np.sum(v) * 3.0)(x)
    assert got.flags.writeable and got.shape == x.shape
    np.testing.assert_array_equal(got, np.full(n, 3.0))              # analytic
    got = srcad.grad(lambda v: np.sum(v * v))(x)
    np.testing.assert_allclose(got, 2.0 * x)
    got[0] = 7.0                                                     # the caller owns it
    np.testing.assert_allclose(srcad.grad(lambda v: np.sum(v * v))(x), 2.0 * x)


def test_one_gradient_object_called_with_arguments_of_changing_kinds(mod):
    """The handle keeps one module per kind of arguments: each call gets the code for its own."""
    f = mod.poly_sum
    g = srcad.grad(f)
    for t in (X, X.astype(np.float32), 1.5, np.float32(0.5), X[:2], X.reshape(3, 1), np.array(2.0), X):
        got = g(t)
        want = 3.0 * np.asarray(t, dtype=np.float64) ** 2 + 2.0                          # analytic
        assert np.shape(got) == np.shape(t)
        assert type(got) is (float if type(t) is float else type(t))
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=1e-6)
    close_to_fd(f, (X,), g(X))
