"""Shape facts from the abstract signature's dimension classes (inputs.dim_classes,
transform/kinds): arrays whose axes are proven equal need no `rt.unbroadcast` in the adjoint,
and the gradient stays right where broadcasting does change a shape (a size-one axis, a
coincidence of sizes in one call and not in the next). Every gradient against central finite
differences."""
import numpy as np

import srcad
from fdcheck import assert_grad_close
from srcad.inputs import dim_classes
from srcad.transform.kinds import param_kinds, signature


def _check(f, args, wrt=(0,)):
    g = srcad.grad(f, wrt=wrt)(*args)
    for k, w in enumerate(wrt):
        assert_grad_close(f, args, g[k], wrt=w)


def test_dim_classes():
    assert dim_classes((np.ones((4, 3)), 2.0, np.ones(3), np.ones((1, 4)))) == ((2, 3), None, (3,), (1, 2))
    assert dim_classes((1.0, np.float64(2.0), np.ones(()))) is None
    # the classes, not the sizes, are in the key: one module for (5, 3) and (7, 2), another for (3, 3)
    assert signature((np.ones((5, 3)),)) == signature((np.ones((7, 2)),)) != signature((np.ones((3, 3)),))
    k = param_kinds(lambda a, b: a, signature((np.ones((4, 3)), np.ones(3))))
    assert k["a"].dimensions == (2, 3) and k["b"].dimensions == (3,)


def cell(w, b, h, x):
    gate = 1.0 / (1.0 + np.exp(-(x * w[0] + b[0])))
    change = np.tanh(h * w[1] + b[1])
    return np.sum(gate * change + h * w[2])


def test_rows_of_equal_width_need_no_unbroadcast():
    rng = np.random.default_rng(0)
    args = (rng.normal(size=(3, 5)), rng.normal(size=(2, 5)), rng.normal(size=5), rng.normal(size=5))
    text = srcad.emit(cell, wrt=(0, 1, 2, 3), args=args)
    assert "unbroadcast" not in text
    _check(cell, args, wrt=(0, 1, 2, 3))


def test_size_one_axis_still_summed():
    rng = np.random.default_rng(1)
    # x's rows have one entry: x[i] * w[0] broadcasts (1,) against (5,)
    args = (rng.normal(size=(3, 5)), rng.normal(size=(2, 5)), rng.normal(size=5), rng.normal(size=(4, 1))[0])
    text = srcad.emit(cell, wrt=(0, 1, 2, 3), args=args)
    assert "unbroadcast" in text
    _check(cell, args, wrt=(0, 1, 2, 3))


def outer_sum(a, b):
    return np.sum(np.sin(a[:, None] * b[None, :]) + a[:, None])


def test_broadcast_that_changes_shape():
    rng = np.random.default_rng(2)
    for args in [(rng.normal(size=4), rng.normal(size=3)), (rng.normal(size=3), rng.normal(size=3)),
                 (rng.normal(size=1), rng.normal(size=3))]:
        _check(outer_sum, args, wrt=(0, 1))


def scaled(a, b):
    return np.sum(np.exp(a * b) * a)


def test_coincidence_in_one_call_not_the_next():
    """Equal sizes in the first call; then (3,) against (1,): a separate derivative, right."""
    rng = np.random.default_rng(3)
    d = srcad.grad(scaled, wrt=(0, 1))
    for args in [(rng.normal(size=3), rng.normal(size=3)), (rng.normal(size=3), rng.normal(size=1)),
                 (rng.normal(size=1), rng.normal(size=3))]:
        g = d(*args)
        for k in (0, 1):
            assert_grad_close(scaled, args, g[k], wrt=k)


def rows_in_a_loop(W, x):
    s = 0.0
    for i in range(W.shape[0]):
        s = s + np.sum(np.tanh(W[i] * x) * W[i])
    return s


def stacked_state(W, h):
    states = []
    for i in range(W.shape[0]):
        h = np.tanh(W[i] * h)
        states.append(h)
    S = np.stack(states)
    return np.sum(S[1] * S[0]) + np.sum(S @ W[0])


def products(A, B, v):
    C = A @ B
    m = C.max(axis=1, keepdims=True)
    return np.sum(np.exp(C - m)) + np.sum((C.T @ v) * B.sum(axis=0)) + np.sum(A.T * v)


def test_loops_stacks_products_reductions():
    rng = np.random.default_rng(4)
    W, x = rng.normal(size=(4, 3)), rng.normal(size=3)
    _check(rows_in_a_loop, (W, x), wrt=(0, 1))
    assert "unbroadcast" not in srcad.emit(rows_in_a_loop, wrt=(0, 1), args=(W, x))
    _check(stacked_state, (W, x), wrt=(0, 1))
    A, B, v = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=3)
    _check(products, (A, B, v), wrt=(0, 1, 2))
    # (4, 4) @ (4, 4): every axis one class; v of that size too
    A, B, v = rng.normal(size=(4, 4)), rng.normal(size=(4, 4)), rng.normal(size=4)
    _check(products, (A, B, v), wrt=(0, 1, 2))


# ---- a tuple's cotangent from reads of its items: a list literal, not index_vjp / add_at per read --
def pair(x, y):
    return np.sin(x) * y, x + y


def uses_pair(x, y, flag):
    t = pair(x, y)
    a = t[0]
    b = t[0]
    s = np.sum(a * b)
    if flag > 0:
        s = s + np.sum(t[1] * a)
    for i in range(3):
        u = pair(t[1], x)
        s = s + np.sum(u[1] ** 2) + np.sum(u[-2])
    return s


def test_tuple_items_cotangent_as_a_list():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=4), rng.normal(size=4)
    for flag in (1.0, -1.0):
        args = (x, y, flag)
        assert "index_vjp" not in srcad.emit(uses_pair, wrt=(0, 1), args=args)
        _check(uses_pair, args, wrt=(0, 1))
