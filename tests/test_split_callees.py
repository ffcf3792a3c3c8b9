"""grad's code runs a user function's primal sweep once: the callee's split adjoint keeps its
frame and is resumed in the adjoint sweep (srcad/transform/split.py, srcad/runtime/frames.py).
Every gradient is compared with central finite differences."""
import re

import numpy as np

import srcad
from srcad import cache
from srcad.api.gradients import _signature
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


def split_text(f, wrt=0, args=None):
    return cache.text(f, "reverse", wrt, "value+split", None if args is None else _signature(args, {}))


def value_line(text, callee):
    """The line of `callee`'s split adjoint that makes the value it yields."""
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(callee + "_value = "))


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


# ---- what a split adjoint hands over, and the copy of its value (split.py: _drop_needless_snapshot)
def stacked(w, h):
    # writes in place (list appends), returns fresh arrays: yielded without a copy
    rows = []
    for k in range(3):
        rows.append(np.tanh(w * h + k))
    return np.sum(h * w), np.stack(rows)


def uses_stacked(w, h):
    total = 0.0
    for _ in range(3):
        s, m = stacked(w, h)
        h = m[1] * s
        total = total + np.sum(m * m)
    return total


def filled(w, h):
    # writes its output in place: the copy is kept
    out = np.zeros(3)
    out[0] = np.sum(w * h)
    out[1:] = np.exp(h[:2]) * w[1]
    return out, np.sin(h)


def uses_filled(w, h):
    total = 0.0
    for _ in range(2):
        out, s = filled(w, h)
        h = out * s
        total = total + np.sum(out * s)
    return total


def made_then_written(w, h):
    # `first` is fresh, but a write follows it (into buf): both keep their copy
    first = np.exp(w * h)
    buf = np.ones(3)
    buf[1] = np.sum(first)
    return first, buf


def uses_made_then_written(w, h):
    first, buf = made_then_written(w, h)
    return np.sum(first * buf)


def caller_writes(w, h):
    # the caller writes in place into the (uncopied) fresh output of `stacked`; the callee's
    # adjoint reads that array (np.tanh's value): the caller's restore must come first
    s, m = stacked(w, h)
    m[0, 1] = 5.0 * s
    m *= 2.0
    m[2] += m[1]
    return np.sum(m * m) + s


def test_fresh_outputs_are_yielded_without_a_copy():
    w, h = np.array([0.3, -0.7, 1.1]), np.array([0.2, 0.4, -0.1])
    assert_grad_close(uses_stacked, (w, h), srcad.grad(uses_stacked)(w, h))
    assert_grad_close(uses_stacked, (w, h), srcad.grad(uses_stacked, wrt=1)(w, h), wrt=1)
    text = split_text(uses_stacked, args=(w, h))
    assert "split_forward(callee_frames, stacked_split" in text
    # the stacked array goes uncopied (np.sum's number: rt.snapshot returns it as it is)
    assert re.fullmatch(r"stacked_value = \(rt\.snapshot\(\w+\), \w+\)", value_line(text, "stacked"))


def test_outputs_written_in_place_keep_their_copy():
    w, h = np.array([0.3, -0.7, 1.1]), np.array([0.2, 0.4, -0.1])
    assert_grad_close(uses_filled, (w, h), srcad.grad(uses_filled)(w, h))
    line = value_line(split_text(uses_filled, args=(w, h)), "filled")
    assert "rt.snapshot(filled)" in line or "rt.snapshot(out)" in line
    assert_grad_close(uses_made_then_written, (w, h), srcad.grad(uses_made_then_written)(w, h))
    assert_grad_close(uses_made_then_written, (w, h), srcad.grad(uses_made_then_written, wrt=1)(w, h), wrt=1)
    line = value_line(split_text(uses_made_then_written, args=(w, h)), "made_then_written")
    assert line == "made_then_written_value = rt.snapshot(made_then_written)"


def test_caller_writing_into_an_uncopied_output():
    w, h = np.array([0.3, -0.7, 1.1]), np.array([0.2, 0.4, -0.1])
    assert_grad_close(caller_writes, (w, h), srcad.grad(caller_writes)(w, h))
    assert_grad_close(caller_writes, (w, h), srcad.grad(caller_writes, wrt=1)(w, h), wrt=1)
    assert "split_forward(callee_frames, stacked_split" in split_text(caller_writes)


def scaled(x, *, scale):
    return np.sin(x) * scale


def keyword_calls(x):
    return np.sum(scaled(x, scale=2.0) * scaled(x * 3.0, scale=0.5))


def test_keyword_calls_and_yielded_gradients():
    x = np.array([0.3, -0.7, 1.1])
    assert_grad_close(keyword_calls, (x,), srcad.grad(keyword_calls)(x))
    text = split_text(keyword_calls)
    assert "split_forward_kw(callee_frames, scaled_split, (x,), {'scale': 2.0})" in text and "yield x_bar" in text


def test_a_frame_that_returns_its_gradients():
    # a split adjoint with other returns hands its gradients over with StopIteration
    def split(x, g_bar=1.0):
        y = yield x * 2.0
        return y * 2.0

    def gen(x, k=0, g_bar=1.0):
        y = yield x * 2.0
        yield y * 3.0 + k

    stack = []
    x, z = np.ones(2), np.ones(2)
    frames.split_forward(stack, split, x)
    frames.split_forward_kw(stack, gen, (z,), {"k": 1})
    assert len(stack[-1]) == 4 and len(stack[0]) == 3       # keywords only where there are some
    # without the keyword: not gen's frame (the recomputing adjoint runs), with it: the frame
    assert frames.split_backward(stack, gen, lambda z, g_bar: -1.0, "g_bar", 5.0, z) == -1.0
    assert frames.split_backward_kw(stack, gen, None, "g_bar", 5.0, (z,), {"k": 1}) == 16.0
    assert frames.split_backward(stack, split, None, "g_bar", 5.0, x) == 10.0 and not stack
