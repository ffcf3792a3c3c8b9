"""A rule's non-differentiable parameters are declared by the rule (`defrule(..., discrete=...)`),
never decided by a parameter's name: a parameter with neither a template nor a declaration raises
MissingRuleError when a derivative flows into it, whatever it is called. Derivatives are checked
against central differences (tests/fdcheck.py)."""
import numpy as np
import pytest
import scipy.sparse as sp

import srcad
from fd_second import numerical_hessian
from fdcheck import numerical_grad
from srcad.rules import registry


def scaled(x, axis):           # smooth in both arguments, although the second is named `axis`
    return x * np.sin(axis)


def rounded(x, axis):          # piecewise constant in `axis`
    return x * np.round(axis)


@pytest.fixture
def rules():
    """Built-in rules added for one test, removed after it."""
    added = []

    def add(key, *args, **kw):
        registry.defrule(key, *args, **kw)
        added.append(key)
    yield add
    for key in added:
        registry._TABLE.pop(key, None)
    registry.generation[0] += 1


def f_scaled(x):
    return np.sum(scaled(x, x[0]))


def f_rounded(x):
    return np.sum(rounded(x, x[0] * 3.0))


X = np.array([0.4, -1.3, 2.2])


def test_undeclared_parameter_named_axis_raises(rules):
    rules(scaled, "x, axis", "g * np.sin(axis)", "x_dot * np.sin(axis)")     # nothing for axis
    with pytest.raises(srcad.MissingRuleError, match="axis"):
        srcad.grad(f_scaled)(X)
    with pytest.raises(srcad.MissingRuleError, match="axis"):
        srcad.jvp(f_scaled, (X,), (np.ones(3),))


def test_parameter_named_axis_with_a_template_is_differentiated(rules):
    rules(scaled, "x, axis", ("g * np.sin(axis)", "np.sum(g * x) * np.cos(axis)"),
          ("x_dot * np.sin(axis)", "x * np.cos(axis) * axis_dot"))
    want = numerical_grad(f_scaled, (X,))
    np.testing.assert_allclose(srcad.grad(f_scaled)(X), want, rtol=1e-6, atol=1e-8)
    u = np.array([0.3, -0.2, 1.0])
    np.testing.assert_allclose(srcad.jvp(f_scaled, (X,), (u,))[1], want @ u, rtol=1e-6, atol=1e-8)


def test_declared_discrete_parameter_contributes_nothing(rules):
    rules(rounded, "x, axis", "g * np.round(axis)", "x_dot * np.round(axis)", discrete="axis")
    want = numerical_grad(f_rounded, (X,))      # 3 * 0.4 = 1.2 is far from a rounding step
    np.testing.assert_allclose(srcad.grad(f_rounded)(X), want, rtol=1e-6, atol=1e-8)
    u = np.array([0.3, -0.2, 1.0])
    np.testing.assert_allclose(srcad.jvp(f_rounded, (X,), (u,))[1], want @ u, rtol=1e-6, atol=1e-8)


def test_register_vjp_parameter_named_axis_gets_its_cotangent():
    def my_scaled(x, axis):
        return x * np.sin(axis)

    def rule(x, axis):
        return my_scaled(x, axis), lambda g: (g * np.sin(axis), np.sum(g * x) * np.cos(axis))
    srcad.register_vjp(my_scaled, rule)

    def f(x):
        return np.sum(my_scaled(x, x[0]))
    np.testing.assert_allclose(srcad.grad(f)(X), numerical_grad(f, (X,)), rtol=1e-6, atol=1e-8)


def test_declarations_are_checked():
    with pytest.raises(ValueError, match="names no parameter"):
        registry.defrule(object(), "x, axis", "g", "x_dot", discrete="axes")
    with pytest.raises(ValueError, match="declared discrete and has a template"):
        registry.defrule(object(), "x, axis", ("g", "g"), "x_dot", discrete="axis")
    with pytest.raises(TypeError, match="declare a Spelling or a WhereReduction"):
        registry.declare(object(), spelling="axes")     # a typed fact, not its old string
    for fact, old in (("alias", "view"), ("inplace", True), ("inplace", "container"), ("kind", "reduction:sum")):
        with pytest.raises(TypeError, match=f"{fact}=.*: declare a"):
            registry.declare(object(), **{fact: old})       # a typed fact (rules/fact_values.py), not a string


def test_no_parameter_is_decided_by_name():
    """Every zero template of a built-in rule is one its rule wrote or declared: the same parameter
    name is differentiable in one rule and discrete in another."""
    assert not hasattr(registry, "DISCRETE")
    power = registry._TABLE[".power"]
    assert "n" in power.jvp and "n" not in power.discrete      # A.power(n): n is a real exponent
    assert "n" in registry._TABLE[np.linalg.matrix_power].discrete


def power_sum(x):
    A = sp.csr_array((np.abs(x[[0, 1, 2]]) + 0.5, np.array([0, 2, 1]), np.array([0, 2, 3])), shape=(2, 3))
    return np.sum(A.power(x[1] + 2.0).toarray())


def test_sparse_power_exponent_forward():
    """A.power(n) with an active exponent: forward mode had a zero derivative for n (its name put
    it among the integer parameters)."""
    u = np.array([0.3, -0.7, 0.5])
    want = numerical_grad(power_sum, (X,))
    np.testing.assert_allclose(srcad.jvp(power_sum, (X,), (u,))[1], want @ u, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srcad.grad(power_sum)(X), want, rtol=1e-6, atol=1e-8)


def pnorm(z):
    return np.linalg.norm(z[:4] * np.array([1.0, -2.0, 0.5, 3.0]), z[4]) * z[0]


Z = np.array([0.7, -0.4, 1.3, 0.9, 2.6])       # ord = 2.6: a vector p-norm moves smoothly with p


def test_norm_order_is_differentiated():
    """np.linalg.norm(x, ord) w.r.t. ord (it had a zero derivative: `ord` was among the names
    taken as integers): reverse, forward and the Hessian over (x, ord) against differences."""
    want = numerical_grad(pnorm, (Z,))
    np.testing.assert_allclose(srcad.grad(pnorm)(Z), want, rtol=1e-6, atol=1e-8)
    u = np.array([0.3, -0.2, 1.0, 0.4, -0.8])
    np.testing.assert_allclose(srcad.jvp(pnorm, (Z,), (u,))[1], want @ u, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(srcad.hessian(pnorm)(Z), numerical_hessian(pnorm, (Z,)), rtol=1e-4, atol=1e-5)

