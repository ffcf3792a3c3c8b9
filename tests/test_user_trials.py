"""Programs written the way NumPy and JAX users write them, each checked against central finite
differences or an analytic value: bugs a new user found, kept fixed."""
import numpy as np
import pytest

import srcad
from fdcheck import assert_grad_close, numerical_grad

X = np.array([0.5, -1.0, 2.0])


# ---- a dict built in the function (a pytree node, like a tuple display) ----------------------
def dict_out(x):
    return {"a": np.sum(x), "b": x ** 2}


def dict_then_read(x):
    d = {"a": x ** 2, "n": 3}
    return np.sum(np.sin(d["a"])) * d["n"]


def dict_aux(x):
    loss = np.sum(x ** 2)
    return loss, {"norm": np.sqrt(loss), "n": 3}


def dict_filled_by_key(x):
    d = {}
    d["k"] = x
    return np.sum(d["k"] ** 2)


def test_dict_display_read_back_grad_and_hessian():
    assert_grad_close(dict_then_read, (X,), srcad.grad(dict_then_read)(X))
    np.testing.assert_allclose(srcad.hessian(dict_then_read)(X),
                               np.diag(3 * (2 * np.cos(X ** 2) - 4 * X ** 2 * np.sin(X ** 2))), rtol=1e-10)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_jacobian_of_a_returned_dict(mode):
    J = srcad.jacobian(dict_out, mode=mode)(X)     # was all zeros
    np.testing.assert_allclose(J["a"], np.ones(3))
    np.testing.assert_allclose(J["b"], np.diag(2 * X))


def test_vjp_and_jvp_of_a_returned_dict():
    _, pb = srcad.vjp(dict_out, X)
    (g,) = pb({"a": 1.0, "b": np.ones(3)})
    np.testing.assert_allclose(g, numerical_grad(lambda x: dict_out(x)["a"] + np.sum(dict_out(x)["b"]), (X,)))
    v = np.array([1.0, 0.5, -2.0])
    y, y_dot = srcad.jvp(dict_out, (X,), (v,))
    np.testing.assert_allclose(y_dot["a"], np.sum(v))
    np.testing.assert_allclose(y_dot["b"], 2 * X * v)


def test_has_aux_with_a_dict_aux_holding_active_values():
    g, aux = srcad.grad(dict_aux, has_aux=True)(X)
    np.testing.assert_allclose(g, 2 * X)
    assert aux["n"] == 3 and np.isclose(aux["norm"], np.linalg.norm(X))


def test_dict_filled_key_by_key():
    assert_grad_close(dict_filled_by_key, (X,), srcad.grad(dict_filled_by_key)(X))


# ---- private attributes and methods of a model class (Python mangles `self.__k`) --------------
class _Scaled:
    def __init__(self):
        self.__k = 2.5
        self.__W = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 3.0]])

    def __act(self, z):
        return np.tanh(z) * self.__k

    def loss(self, x):
        return np.sum(self.__act(self.__W @ x) ** 2)


def test_private_attribute_and_private_method_of_a_model():
    m = _Scaled()
    assert_grad_close(m.loss, (X,), srcad.grad(m.loss)(X))
    v = np.array([1.0, 0.5, -2.0])
    _, dy = srcad.jvp(m.loss, (X,), (v,))
    np.testing.assert_allclose(dy, np.dot(numerical_grad(m.loss, (X,)), v), rtol=1e-6)


# ---- a dict iterated in a loop ----------------------------------------------------------------
def loop_over_key_tuple(p):
    total = 0.0
    for k in ("a", "b"):
        total = total + np.sum(p[k] ** 2) * 1.5
    return total


def loop_over_dict(p):
    total = 0.0
    for k in p:
        total = total + np.sum(p[k] ** 2)
    return total


def test_loop_over_a_dict_argument_and_over_its_keys_work():
    p = {"a": np.array([1.0, -2.0]), "b": np.array([0.5])}
    g = srcad.grad(loop_over_key_tuple)(p)
    np.testing.assert_allclose(g["a"], 3.0 * p["a"])
    np.testing.assert_allclose(g["b"], 3.0 * p["b"])
    g = srcad.grad(loop_over_dict)(p)     # was KeyError: 0 from the generated code, then a named error
    np.testing.assert_allclose(g["a"], 2.0 * p["a"])
    np.testing.assert_allclose(g["b"], 2.0 * p["b"])
    _, dy = srcad.jvp(loop_over_dict, (p,), ({"a": np.ones(2), "b": np.ones(1)},))
    np.testing.assert_allclose(dy, 2.0 * (1.0 - 2.0 + 0.5))


# ---- a rule that refuses an argument at run time names the user's line -------------------------
def einsum_with_ellipsis(A):
    return np.sum(np.einsum("...i->...", A) ** 2)


def eig_of_a_rotation(A):
    return np.sum(np.linalg.eig(A)[0] ** 2)


def test_runtime_missing_rule_names_the_user_line():
    # found only when the code runs (complex eigenvalues): the error still names the user's line
    line = eig_of_a_rotation.__code__.co_firstlineno + 1
    with pytest.raises(srcad.MissingRuleError, match=rf"test_user_trials.py:{line}:4: .*eig"):
        srcad.grad(eig_of_a_rotation)(np.array([[0.0, -1.0], [1.0, 0.0]]))     # was <unknown>:0:0


def test_einsum_with_ellipsis_is_differentiated():
    A = np.arange(6.0).reshape(2, 3) / 5.0
    assert_grad_close(einsum_with_ellipsis, (A,), srcad.grad(einsum_with_ellipsis)(A))


# ---- custom_vjp whose fwd and bwd are lambdas -----------------------------------------------
@srcad.custom_vjp
def _soft_clip(x):
    return np.tanh(x)


_soft_clip.defvjp(lambda x: (np.tanh(x), np.tanh(x)), lambda t, g: (g * (1.0 - t ** 2),))


def uses_lambda_rule(x):
    return np.sum(_soft_clip(x * 2.0) ** 2)


def test_custom_vjp_with_lambda_fwd_and_bwd():
    g = srcad.grad(uses_lambda_rule)(X)     # was a SyntaxError in the generated code (`<lambda>(x)`)
    assert_grad_close(uses_lambda_rule, (X,), g)
    assert "_soft_clip_fwd" in srcad.emit(uses_lambda_rule)


# ---- a non-canonical COO sorted in place by scipy while the function runs ---------------------
def coo_data_and_sum(A):
    return np.sum(A.data ** 2) + A.sum()


def test_coo_sorted_in_place_mid_function_is_refused_not_wrong():
    import scipy.sparse as sp
    row, col = np.array([2, 3, 0, 2, 1, 2]), np.array([0, 0, 1, 2, 0, 1])
    val = np.array([0.3, 0.5, 0.7, 1.1, 0.2, 0.9])
    A = sp.coo_array((val.copy(), (row, col)), shape=(4, 3))
    with pytest.raises(srcad.SrcadError, match="sorted it in place"):
        srcad.grad(coo_data_and_sum)(A)
    # canonical (sorted) input: the gradient of each stored value is 2 v + 1 (analytic)
    B = sp.coo_array((val.copy(), (row, col)), shape=(4, 3))
    B.sum_duplicates()
    g = srcad.grad(coo_data_and_sum)(B)
    np.testing.assert_array_equal(g.row, B.row)
    np.testing.assert_allclose(g.data, 2.0 * B.data + 1.0)


# ---- vjp of a function with a defaulted parameter: the cotangent is not passed into it ---------
def scaled_power(x, n=3, scale=0.5):
    return scale * x ** n


def test_vjp_keeps_the_defaults_of_the_function():
    y, pullback = srcad.vjp(scaled_power, X)
    (g,) = pullback(np.ones(3))
    np.testing.assert_allclose(y, 0.5 * X ** 3)
    np.testing.assert_allclose(g, 1.5 * X ** 2)          # d/dx (0.5 x^3)


# ---- `xs * 2` of a list argument: a repetition, which srcad cannot see (was a wrong gradient) ---
def repeat_list_argument(xs, x):
    ys = xs * 2
    return sum(np.sum(y * x) for y in ys)


def test_repeating_a_list_argument_is_a_named_error_not_a_number():
    xs = [np.array([1.0, 2.0]), np.array([0.5, -1.0])]
    with pytest.raises(srcad.UnsupportedSyntaxError, match=r"test_user_trials.py:\d+:\d+: .*repeating one with `\*`"):
        srcad.grad(repeat_list_argument)(xs, np.array([0.3, 0.7]))


def times_two(x):
    return np.sum(np.sin(x) * 2 + 3 * x)


def test_an_int_times_an_array_is_still_differentiated():
    assert_grad_close(times_two, (X,), srcad.grad(times_two)(X))
