"""rt.drop_last, the adjoint of `xs.append(v)`: popped in place (O(1)) when the cotangent name is
the list's only holder, copied when anything else holds it (srcad/runtime/lists.py). Gradients
against analytic formulas and central finite differences."""
import numpy as np

import srcad
from srcad.runtime import drop_last, last
from fdcheck import assert_grad_close


def test_sole_holder_pops_in_place_and_an_alias_never_changes():
    xs_bar = [1.0, 2.0, 3.0]
    same = id(xs_bar)
    xs_bar = drop_last(xs_bar)
    assert xs_bar == [1.0, 2.0] and id(xs_bar) == same
    held = [1.0, 2.0, 3.0]
    alias = held
    held = drop_last(held)
    assert held == [1.0, 2.0] and alias == [1.0, 2.0, 3.0]
    kept = [4.0, 5.0]
    box = (kept,)               # held by a container too (the tape, a list of lists)
    kept = drop_last(kept)
    assert kept == [4.0] and box[0] == [4.0, 5.0]
    assert drop_last(0.0) == 0.0 and last([1.0, 7.0]) == 7.0
    assert drop_last((1.0, 2.0)) == [1.0]


def built(x):
    xs = []
    for i in range(300):
        xs.append(x * i)
    return np.sum(np.stack(xs))


def test_long_list_of_appends():
    x = np.array([0.5, -1.0])
    assert np.array_equal(srcad.grad(built)(x), np.full(2, 299 * 300 / 2))


def push(xs, v):
    xs.append(v * 2.0)
    return xs


def through_callee(x):
    xs = []
    for i in range(4):
        xs = push(xs, np.sin(x) * i)
        xs.append(x * (i + 1.0))
    return np.sum(np.stack(xs) * np.stack(xs)[::-1])


def renamed(x):
    xs = []
    for i in range(3):
        xs.append(x * (i + 1.0))
        xs.append(np.exp(x * i))
    ys = xs                     # one list, two names: their cotangents may be one list too
    pair = (xs, ys)
    return np.sum(np.stack(ys) ** 2) + np.sum(np.stack(pair[0]) * 3.0) + np.sum(ys[1] * xs[4])


def test_lists_observed_under_other_names():
    x = np.array([0.3, -0.6, 1.2])
    for f in (through_callee, renamed):
        assert_grad_close(f, (x,), srcad.grad(f)(x))


def squares(x):
    xs = []
    for i in range(5):
        xs.append(x * x * i)
        xs.append(np.sin(x))
    return np.sum(np.stack(xs))


def test_second_order_through_list_pops():
    # forward over reverse: the tangent of the list's cotangent is popped too (rt.drop_last)
    x = np.array([0.3, -0.8])
    H = srcad.hessian(squares)(x)
    assert np.allclose(H, np.diag(2.0 * 10 - 5 * np.sin(x)), atol=1e-12)
