"""The integer-argument rule (API.md, turn 3) for the leaves of a differentiated pytree: a Python
int (or bool) leaf raises InputError naming the leaf and the fix, as an int array leaf and a
top-level int do; it was differentiated as a float. The fix the message gives works."""
import numpy as np
import pytest

import srcad
from srcad.errors import InputError


def f(d):
    return d["a"] * d["b"] ** 2


def g(xs):
    return xs[0] * xs[1] ** 3


@pytest.mark.parametrize("make", [
    lambda: srcad.grad(f)({"a": 2, "b": 3.0}),
    lambda: srcad.value_and_grad(f)({"a": 2.0, "b": 3}),
    lambda: srcad.grad(f)({"a": True, "b": 3.0}),
    lambda: srcad.jvp(f, ({"a": 2, "b": 3.0},), ({"a": 1.0, "b": 1.0},)),
    lambda: srcad.vjp(f, {"a": 2, "b": 3.0}),
    lambda: srcad.grad(g)([2.0, 3]),
    lambda: srcad.grad(g)((2, np.array(3.0))),
    lambda: srcad.hessian(g)([2.0, 3]),
])
def test_int_leaf_refused(make):
    with pytest.raises(InputError, match=r"item \[.*\].*integer dtype int.*astype\(float\)|item \[.*\].*bool"):
        make()


def test_fix_given_works():
    got = srcad.grad(f)({"a": float(2), "b": 3.0})
    assert got == {"a": 9.0, "b": 12.0}        # d/da a b^2 = b^2, d/db = 2ab
    np.testing.assert_allclose(srcad.grad(g)([2.0, float(3)]), [27.0, 54.0])


def test_int_leaf_in_argument_not_differentiated():
    """A count among the leaves of an argument that is not differentiated stays allowed."""
    def h(x, cfg):
        return x ** cfg["n"] * cfg["scale"]
    assert srcad.grad(h)(2.0, {"n": 3, "scale": 0.5}) == pytest.approx(0.5 * 3 * 4.0)
