"""Shapes first-class in the adjoint (transform/reverse/shapes.py): a value the adjoint reads only
for its shape is read from a kept value of the same kind, or its shape is written from the kinds'
tokens, and is then not computed at all; a full sum's or mean's cotangent is its one number where
the values are the same. Every gradient is checked against central finite differences (and
against the adjoint srcad writes with nothing known, which reads the values themselves)."""
import numpy as np
import pytest

import srcad
from fdcheck import assert_grad_close


def logistic(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    nll = -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
    return nll + 0.01 * np.sum(w ** 2)


def _data(n=40, bool_y=False):
    rng = np.random.default_rng(3)
    X, w = rng.normal(size=(n, 3)), 0.3 * rng.normal(size=3)
    y = rng.random(n) > 0.5
    return w, X, (y if bool_y else y.astype(float))


def _primal_sweep(text):
    """The primal sweep's code, without its comments (which quote the user's lines)."""
    return "\n".join(line for line in text.split("# adjoint sweep")[0].splitlines()
                     if not line.strip().startswith("#"))


@pytest.mark.parametrize("bool_y", [False, True])
def test_values_read_only_for_their_shape_are_not_computed(bool_y):
    args = _data(bool_y=bool_y)
    text = srcad.emit(logistic, args=args)
    primal = _primal_sweep(text)
    # np.log(p), y * log(p), ... feed only the mean, whose adjoint needs only their shape
    assert "np.log" not in primal and "prod_y" not in primal, primal
    assert "np.full_like(w" not in text           # the sum's cotangent: its number, times 2 * w
    assert "rt.matmul_vjp_y" not in text and "X.T @" in text
    g = srcad.grad(logistic)(*args)
    assert_grad_close(logistic, args, g)
    ns = {}
    exec(compile(srcad.emit(logistic), "<nothing known>", "exec"), ns)     # reads the values themselves
    assert np.array_equal(ns["logistic_vjp"](*args), g)


def mean_broadcast(a, b):
    return np.mean(np.sin(a) * b)


@pytest.mark.parametrize("shapes", [((5,), (1,)), ((1,), (5,)), ((4, 1), (1, 3)), ((4, 3), (3,)), ((3,), (4, 3))])
def test_a_mean_over_a_broadcast_reads_its_number_with_the_operands_shapes(shapes):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    text = srcad.emit(mean_broadcast, wrt=(0, 1), args=(a, b))
    assert "* b" not in _primal_sweep(text)       # the product feeds only the mean
    g = srcad.grad(mean_broadcast, wrt=(0, 1))(a, b)
    for k in (0, 1):
        assert g[k].shape == (a, b)[k].shape
        assert_grad_close(mean_broadcast, (a, b), g[k], wrt=k)


def sum_in_loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sum(x * x) * i
    return s


def test_zero_seed_and_loops_keep_their_arrays():
    rng = np.random.default_rng(1)
    w, X, y = _data()
    ns = {}
    exec(compile(srcad.emit(logistic, args=(w, X, y)), "<gen>", "exec"), ns)
    assert np.array_equal(ns["logistic_vjp"](w, X, y, 0.0), np.zeros(3))     # a zero cotangent: zeros, no error
    x = rng.normal(size=4)
    assert_grad_close(sum_in_loop, (x, 3), srcad.grad(sum_in_loop)(x, 3))


def centered(x, y):
    d = x - np.mean(x)
    return np.sum(d * d * y)


def test_a_kept_value_of_the_same_kind_lends_its_shape():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=6), rng.normal(size=6)
    assert_grad_close(centered, (x, y), srcad.grad(centered)(x, y))
    assert_grad_close(centered, (x, y), srcad.grad(centered, wrt=1)(x, y), wrt=1)


def rnn(W, U, xs, h0):
    h = h0
    for x in xs:
        a = W @ h + U @ x
        if np.sum(a) > 0:
            h = np.tanh(a)
        else:
            h = 0.5 * a
    return np.sum(h ** 2)


def rnn_sliced(W, xs, h0):
    h = h0
    for x in xs:
        a = W @ h + x[:4]
        if np.sum(a) > 0:
            h = np.tanh(a)
        else:
            h = 0.5 * a
    return np.sum(h ** 2)


def test_a_value_read_only_for_its_shape_is_taped_as_a_stand_in():
    rng = np.random.default_rng(4)
    args = (0.5 * rng.normal(size=(4, 4)), rng.normal(size=(4, 2)), rng.normal(size=(6, 2)), np.zeros(4))
    text = srcad.emit(rnn, args=args)
    # W @ h, U @ x and h0 have one shape (the signature's dimension classes prove it): W @ h is not
    # even read for its shape
    assert "Wh)" not in text.split("# adjoint sweep")[0] and "unbroadcast" not in text
    assert_grad_close(rnn, args, srcad.grad(rnn)(*args))
    # x[:4]'s length is not proven: W @ h lends its shape to the sum's adjoint
    args = (0.5 * rng.normal(size=(4, 4)), rng.normal(size=(6, 5)), np.zeros(4))
    text = srcad.emit(rnn_sliced, args=args)
    assert "tape.append(rt.shape_stand_in(Wh))" in text
    assert_grad_close(rnn_sliced, args, srcad.grad(rnn_sliced)(*args))
    from srcad import runtime as rt
    x = np.arange(2000.0).reshape(20, 100)[:, ::2]
    s = rt.shape_stand_in(x)
    assert (type(s), s.shape, s.dtype, s.strides, s.flags.writeable) == (np.ndarray, (20, 50), x.dtype, (0, 0), False)
    assert not s.any() and np.zeros_like(s).strides == np.zeros_like(x).strides
    small = np.ones(3)
    assert rt.shape_stand_in(small) is small and rt.shape_stand_in(2.5) == 2.5


def int_steps(x, n):
    s = 0.0
    for i in range(n):
        j = i + 1
        k = j % 3
        s = s + x[k] * j + np.sin(s) * x[j % 2]
    return s


def test_int_values_a_loop_derives_from_its_variable_are_recomputed_not_taped():
    x = np.array([0.3, -0.8, 1.1])
    text = srcad.emit(int_steps, args=(x, 5))
    assert "tape.append(j)" not in text and "tape.append(k)" not in text
    assert "reversed(range(n)):\n" in text and "        j = i + 1\n        k = j % 3\n        # adjoint of L" in text
    assert_grad_close(int_steps, (x, 5), srcad.grad(int_steps)(x, 5))
    assert_grad_close(int_steps, (x, 0), srcad.grad(int_steps)(x, 0))


def two_means(a, b, c):
    return np.mean(a * b) + np.mean(a * c) + np.mean(np.sin(a) * b)


@pytest.mark.parametrize("shapes", [((5,), (1,), (1,)), ((1,), (5,), (5,)), ((5,), (5,), (1,))])
def test_a_cotangent_broadcast_from_a_smaller_one_is_never_updated_in_place(shapes):
    rng = np.random.default_rng(5)
    args = tuple(rng.normal(size=s) for s in shapes)
    g = srcad.grad(two_means)(*args)
    assert_grad_close(two_means, args, g)
    w, X, _ = _data()
    y1 = np.array([0.7])        # broadcast against X @ w: same kinds, other shapes
    assert_grad_close(logistic, (w, X, y1), srcad.grad(logistic)(w, X, y1))


def rebinds_its_variable(x, n):
    s = 0.0
    for i in range(n):
        i = i * 2
        j = i + 1
        s = s + x[j % 3] * j
    return s


def test_a_loop_variable_assigned_in_the_body_keeps_the_tape():
    x = np.array([0.3, -0.8, 1.1])
    assert "tape.append(j)" in srcad.emit(rebinds_its_variable, args=(x, 4))
    assert_grad_close(rebinds_its_variable, (x, 4), srcad.grad(rebinds_its_variable)(x, 4))
