"""grad's code runs a user function's primal sweep once: the callee's split adjoint keeps its
frame and is resumed in the adjoint sweep (srcad/transform/split.py, srcad/runtime/frames.py).
Every gradient is compared with central finite differences."""
import numpy as np

import srcad
from srcad import cache
from srcad.runtime import frames
from fdcheck import assert_grad_close

CALLS = []


def det(A):
    n = A.shape[0]
    if n == 1:
        return A[0, 0]
    total = 0.0
    sign = 1.0
    for j in range(n):
        keep = np.concatenate((np.arange(j), np.arange(j + 1, n)))
        total = total + sign * A[0, j] * det(A[1:, keep])
        sign = -sign
    return total


def det_of(A):
    return det(A)


def cell(w, h):
    return np.tanh(w * h + 0.5), np.sin(h)


def steps(w, h0):
    h = h0
    total = 0.0
    for t in range(4):
        h, s = cell(w, h)
        total = total + np.sum(s * h)
    return total


def mix(a, b):
    return np.sum(a * np.exp(b))


def both_ways(x, c):
    # the same callee with the derivative through its first, then its second argument
    return mix(x, c) + mix(c, x) * 0.5


def branchy(x, flag):
    y = mix(x, x)
    if flag:
        return y * 2.0
    return np.sum(x)


@srcad.checkpoint
def layer(h, w):
    return np.tanh(w * h)


def ckpt_loss(w, h):
    for _ in range(3):
        h = layer(h, w)
    return np.sum(h)


def split_text(f, wrt=0):
    return cache.text(f, "reverse", wrt, "value+split")


def test_recursion_runs_each_subtree_once_and_matches_fd():
    A = np.random.default_rng(0).random((4, 4))
    g = srcad.grad(det_of)(A)
    assert_grad_close(det_of, (A,), g)
    assert np.allclose(g, np.linalg.det(A) * np.linalg.inv(A).T)
    assert "rt.split_forward(callee_frames, det_split, A_item_3)" in split_text(det_of)


def test_loop_callee_with_tuple_output():
    w, h = np.array([0.3, -0.7, 1.1]), np.array([0.2, 0.4, -0.1])
    assert_grad_close(steps, (w, h), srcad.grad(steps)(w, h))
    assert_grad_close(steps, (w, h), srcad.grad(steps, wrt=1)(w, h), wrt=1)
    v, (gw, gh) = srcad.value_and_grad(steps, wrt=(0, 1))(w, h)
    assert v == steps(w, h)
    assert_grad_close(steps, (w, h), gh, wrt=1)


def test_two_activity_patterns_of_one_callee():
    x, c = np.array([0.1, 0.2]), np.array([0.3, -0.4])
    assert_grad_close(both_ways, (x, c), srcad.grad(both_ways)(x, c))


def test_callee_whose_adjoint_is_skipped_on_a_branch():
    x = np.array([0.5, -0.25])
    for flag in (True, False):
        assert_grad_close(lambda x: branchy(x, flag), (x,), srcad.grad(branchy)(x, flag))


def test_checkpointed_callee_keeps_recomputation():
    w, h = np.array([0.5, -0.3]), np.array([1.0, 2.0])
    assert_grad_close(ckpt_loss, (w, h), srcad.grad(ckpt_loss)(w, h))
    assert "split_forward" not in split_text(ckpt_loss)


def test_second_order_code_is_not_split():
    w, h = np.array([0.3, -0.7]), np.array([0.2, 0.4])
    H = srcad.hessian(steps)(w, h)
    eps = 1e-6
    g = srcad.grad(steps)
    fd = np.stack([(g(w + eps * e, h) - g(w - eps * e, h)) / (2 * eps) for e in np.eye(2)], axis=1)
    assert np.allclose(H, fd, atol=1e-6)


def test_backward_without_a_frame_recomputes():
    def split(x, g_bar=1.0):
        y = yield x * 2.0
        return y * 2.0

    def vjp(x, g_bar=1.0):
        CALLS.append(x)
        return g_bar * 2.0

    stack = []
    x, other = np.ones(2), np.ones(2)
    assert frames.split_forward(stack, split, x) is not None
    # a different argument object: the recomputing adjoint, the frame left alone
    assert frames.split_backward(stack, split, vjp, "g_bar", 3.0, other) == 6.0 and CALLS == [other]
    assert len(stack) == 1
    assert frames.split_backward(stack, split, vjp, "g_bar", 5.0, x) == 10.0 and not stack



def twice(x):
    # two calls with the same argument object, x changed in between, only the first differentiated
    y = x * 1.0
    a = mix(y, y)
    y[0] = 3.0
    b = mix(y, y)
    return a + 0.0 * np.sum(np.isfinite(b))


def test_two_calls_with_the_same_arguments_stay_recomputed():
    x = np.array([0.5, -0.25])
    assert_grad_close(twice, (x,), srcad.grad(twice)(x))
    assert "split_forward(" not in split_text(twice)
