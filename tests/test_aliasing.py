"""Aliasing and in-place writes (issue 13): what srcad differentiates, it differentiates right
(checked against central finite differences or an analytic value); what it cannot, it rejects
before any code runs, naming the construct, the place and the fix. Also the two generated-code
bugs the fuzzer found beside them: a loop variable reused by a second loop, and a cotangent
that a clamp zeroes before it reaches an operand broadcast against it."""
import numpy as np
import pytest

import srcad
from fdcheck import assert_grad_close, numerical_grad

X = np.array([0.3, -1.2, 2.0])


# ---- loops reusing their variable ------------------------------------------------------------
def two_loops_one_name(x):
    s = 0.0
    for i in range(2):
        s = s + x[i]
    for i in range(3):
        s = s + x[i] ** 2
    return s


def loop_variable_read_between_loops(x):
    s = 0.0
    for i in range(2):
        s = s + x[i] * x[2]
    t = x[i] * 3.0              # i is 1 here: the adjoint must see that i, not the next loop's
    for i in range(3):
        s = s + t * x[i]
    return s


def loop_variable_then_nested_reuse(x):
    s = 0.0
    for i in range(3):
        for j in range(2):
            s = s + x[i] * x[j]
        for j in range(3):
            s = s + np.sin(x[j]) * x[i]
    return s


@pytest.mark.parametrize("f", [two_loops_one_name, loop_variable_read_between_loops,
                               loop_variable_then_nested_reuse])
def test_loops_reusing_a_variable(f):
    assert_grad_close(f, (X,), srcad.grad(f)(X))


def test_two_loops_one_name_analytic():
    g = srcad.grad(two_loops_one_name)(X)
    np.testing.assert_allclose(g, [1 + 2 * X[0], 1 + 2 * X[1], 2 * X[2]])


# ---- a clamp that zeroes the cotangent -------------------------------------------------------
def clamp_then_outer(x, y):
    return np.minimum(-5.0, (np.outer(x, x) * y[:, None])[1, 1])


def clamp_max_then_broadcast(x):
    z = np.maximum(10.0, np.sum(x[:, None] * np.ones((3, 4))))
    return z + np.sum(x)


def clip_then_broadcast(x):
    a = np.reshape(x, (3, 1)) * np.arange(4.0)
    return np.clip(a[2, 1], -1.0, 1.0) * 2.0


def test_clamp_zero_cotangent_outer_is_zero():
    g = srcad.grad(clamp_then_outer)(X, X.copy())
    np.testing.assert_array_equal(g, np.zeros(3))
    g = srcad.grad(clamp_then_outer, wrt=1)(X, X.copy())
    np.testing.assert_array_equal(g, np.zeros(3))


@pytest.mark.parametrize("f", [clamp_max_then_broadcast, clip_then_broadcast])
def test_clamp_zero_cotangent_broadcast(f):
    g = srcad.grad(f)(X)
    assert g.shape == X.shape
    assert_grad_close(f, (X,), g)


def test_two_loops_one_name_forward_and_second_order():
    v = np.array([1.0, 0.5, -2.0])
    _, dy = srcad.jvp(two_loops_one_name, (X,), (v,))
    np.testing.assert_allclose(dy, np.dot([1 + 2 * X[0], 1 + 2 * X[1], 2 * X[2]], v))
    np.testing.assert_allclose(srcad.hessian(two_loops_one_name)(X), 2.0 * np.eye(3))


# ---- the table of issue 13: views, aliases and in-place writes ---------------------------------
def _line(func, text):
    """The file line of the first line of func that contains text."""
    import inspect
    lines, start = inspect.getsourcelines(func)
    return start + next(k for k, ln in enumerate(lines) if text in ln)


def _rejected(func, *args, **kw):
    with pytest.raises(srcad.UnsupportedSyntaxError) as info:
        srcad.grad(func, **kw)(*args)
    return info.value


def view_then_inplace(x):
    y = x * 1.0
    v = y[:2]
    v *= 3.0
    return np.sum(y ** 2)


def view_then_inplace_fixed(x):
    y = x * 1.0
    y[:2] *= 3.0
    return np.sum(y ** 2)


def view_in_a_loop_then_inplace(x):
    y = x * 1.0
    for i in range(2):
        v = y[i:]
        v *= 3.0
    return np.sum(y ** 2)


def test_view_then_inplace_is_written_back():
    """`v = y[:2]; v *= 3.0` changes y: srcad writes the slice back (`y[:2] = v`)."""
    g = srcad.grad(view_then_inplace)(X)
    np.testing.assert_allclose(g, [5.4, -21.6, 4.0])      # 2 * 9 x on the first two, 2 x on the last
    assert_grad_close(view_then_inplace, (X,), g)
    _, t = srcad.jvp(view_then_inplace, (X,), (np.ones(3),))
    np.testing.assert_allclose(t, 5.4 - 21.6 + 4.0)
    assert "y[:2] = v" in srcad.emit(view_then_inplace)


def test_view_whose_index_changes_then_inplace_is_rejected_naming_write_alias_and_fix():
    err = _rejected(view_in_a_loop_then_inplace, X)
    msg = str(err)
    assert err.filename.endswith("test_aliasing.py")
    assert err.lineno == _line(view_in_a_loop_then_inplace, "v *= 3.0")
    assert f"test_aliasing.py:{err.lineno}:{err.col}:" in msg
    assert "`v *= 3.0`" in msg                                           # the construct
    assert f"a view of `y` (line {_line(view_in_a_loop_then_inplace, 'v = y[i:]')})" in msg   # the alias
    assert "write `y[i:] *= 3.0` instead" in msg                          # the fix


def views_of_one_array_written_in_turn(x):
    M = np.outer(x, x) + 0.0
    blk = M[1:3, 1:3]
    blk -= np.eye(2) * x[0]
    row = M[0]
    row[1] = row[2] * x[1]
    v = M[:, 2]
    M[0, 2] = 7.0 * x[2]
    return np.sum(np.tanh(M)) * x[1] + np.sum(v * x)


def test_views_of_one_array_written_in_turn_first_and_second_order():
    g = srcad.grad(views_of_one_array_written_in_turn)(X)
    assert_grad_close(views_of_one_array_written_in_turn, (X,), g)
    u = np.array([0.3, -0.7, 1.1])
    _, t = srcad.jvp(views_of_one_array_written_in_turn, (X,), (u,))
    np.testing.assert_allclose(t, numerical_grad(views_of_one_array_written_in_turn, (X,)) @ u, rtol=1e-6)
    H = srcad.hessian(views_of_one_array_written_in_turn)(X)
    eps = 1e-6
    Hfd = np.array([(srcad.grad(views_of_one_array_written_in_turn)(X + eps * e)
                     - srcad.grad(views_of_one_array_written_in_turn)(X - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(H, Hfd, rtol=1e-5, atol=1e-6)


def alias_then_augassign(x):
    y = x * 2.0
    z = y
    z += x
    return np.sum(y * x)


def alias_then_setitem(x):
    y = x * 2.0
    z = y
    z[1] = x[0] ** 2
    return np.sum(y * x) + np.sum(z)


def alias_of_a_number_then_augassign(x):
    s = np.sum(x)
    t = s
    t += 1.0            # t holds a number: `+=` rebinds t, s keeps its value
    return s * t


def test_plain_alias_augassign_updates_both_names():
    g = srcad.grad(alias_then_augassign)(X)
    np.testing.assert_allclose(g, 6.0 * X)              # y is 3x: d sum(3 x^2) = 6x
    assert_grad_close(alias_then_augassign, (X,), g)
    assert alias_then_augassign(X.copy()) == srcad.value_and_grad(alias_then_augassign)(X.copy())[0]


def test_plain_alias_setitem_updates_both_names():
    assert_grad_close(alias_then_setitem, (X,), srcad.grad(alias_then_setitem)(X))


def test_alias_of_a_number_is_not_updated():
    g = srcad.grad(alias_of_a_number_then_augassign)(X)
    np.testing.assert_allclose(g, (2 * np.sum(X) + 1.0) * np.ones(3))


def out_multiply(x):
    y = np.zeros(3)
    np.multiply(x, x, out=y)
    return np.sum(y * x)


def out_multiply_result(x):
    y = np.ones(3)
    r = np.multiply(x, x, out=y)
    return np.sum(r * x) + np.sum(y)


def out_into_a_slice(x):
    y = np.ones(3)
    np.multiply(x[:2], 2.0, out=y[:2])
    return np.sum(y * x)


def copyto(x):
    y = np.zeros(3)
    np.copyto(y, x ** 2)
    return np.sum(y * x)


def fill(x):
    y = np.zeros(3)
    y.fill(x[0])
    return np.sum(y * x)


@pytest.mark.parametrize("f, want", [
    (out_multiply, lambda x: 3 * x ** 2),
    (out_multiply_result, lambda x: 3 * x ** 2 + 2 * x),
    (out_into_a_slice, lambda x: np.array([4 * x[0], 4 * x[1], 1.0])),
    (copyto, lambda x: 3 * x ** 2),
    (fill, lambda x: np.array([np.sum(x) + x[0], x[0], x[0]])),
])
def test_out_copyto_fill_are_differentiated(f, want):
    g = srcad.grad(f)(X)
    np.testing.assert_allclose(g, want(X))
    assert_grad_close(f, (X,), g)
    _, dy = srcad.jvp(f, (X,), (np.ones(3),))
    np.testing.assert_allclose(dy, np.sum(want(X)))


BUF = []


def append_to_module_list(x):
    BUF.append(x * 2.0)
    return np.sum(BUF[-1])


def write_into_module_array_through_alias(x):
    w = WEIGHTS
    w[0] = x[0]
    return np.sum(w * x)


WEIGHTS = np.ones(3)


def closure_list():
    seen = []

    def f(x):
        seen.append(np.sin(x))
        return np.sum(x)
    return f


def test_module_level_list_append_is_rejected():
    err = _rejected(append_to_module_list, X)
    assert err.lineno == _line(append_to_module_list, "BUF.append")
    assert "module-level object or closure variable" in str(err) and "BUF.append(x * 2.0)" in str(err)
    assert "return the value instead" in str(err)
    assert BUF == []                    # rejected before any code ran


def test_write_into_module_array_through_alias_is_rejected():
    err = _rejected(write_into_module_array_through_alias, X)
    assert err.lineno == _line(write_into_module_array_through_alias, "w[0] = x[0]")
    assert "module-level object" in str(err)
    np.testing.assert_array_equal(WEIGHTS, np.ones(3))


def test_closure_list_append_is_rejected():
    f = closure_list()
    err = _rejected(f, X)
    assert "closure variable" in str(err) and "seen.append" in str(err)


# ---- other writes another name sees: rejected with the write, the alias and the fix -----------
def write_base_then_read_view(x):
    y = x * 1.0
    for i in range(1, 2):
        v = y[i:]
    y[1] = 5.0
    return np.sum(v * x[1:])


def write_base_then_read_slice(x):
    y = x * 1.0
    v = y[1:]
    y[1] = 5.0
    return np.sum(v * x[1:])


def test_write_base_then_read_slice_takes_the_slice_again():
    g = srcad.grad(write_base_then_read_slice)(X)
    np.testing.assert_allclose(g, [0.0, 5.0, 2 * X[2]])      # v = [5, x2]: 5 x1 + x2^2
    assert_grad_close(write_base_then_read_slice, (X,), g)


def list_holds_then_write(x):
    y = x * 1.0
    ys = [y]
    y[0] = 0.0
    return np.sum(np.stack(ys))


def alias_on_one_branch(x):
    y = x * 1.0
    z = y if x[0] > 0 else x * 2.0
    z[0] = 7.0
    return np.sum(y * x)


def transpose_view_written(x):
    A = np.outer(x, x)
    B = A.T
    B[0, 1] = 0.0
    return np.sum(A)


def scale_first(a):
    a[0] = a[0] * 3.0
    return 0.0


def callee_writes_argument(x):
    y = x * 1.0
    scale_first(y)
    return np.sum(y ** 2)


def nested_def_writes_captured(x):
    y = x * 1.0

    def zero_second():
        y[1] = 0.0
        return 1.0
    zero_second()
    return np.sum(y)


@pytest.mark.parametrize("f, marker, words", [
    (write_base_then_read_view, "y[1] = 5.0", ["`y[1] = 5.0`", "which `v` is a view of", "`v = y[i:].copy()`"]),
    (list_holds_then_write, "y[0] = 0.0", ["`y[0] = 0.0`", "which `ys` holds", ".copy()"]),
    (alias_on_one_branch, "z[0] = 7.0", ["`z[0] = 7.0`", "`y` is read again", ".copy()"]),
    (transpose_view_written, "B[0, 1] = 0.0", ["a view of `A`", "`A` is read again", "`B = A.T.copy()`"]),
    (callee_writes_argument, "scale_first(y)", ["`scale_first(y)`", "its parameter `a`", "`a[0] = a[0] * 3.0`",
                                                "`y = scale_first(...)`"]),
    (nested_def_writes_captured, "    zero_second()\n", ["`zero_second()`", "a variable of the enclosing function",
                                                   "`y[1] = 0.0`"]),
])
def test_writes_another_name_sees_are_rejected(f, marker, words):
    err = _rejected(f, X)
    assert err.lineno == _line(f, marker), str(err)
    assert f"test_aliasing.py:{err.lineno}:{err.col}:" in str(err)
    for w in words:
        assert w in str(err), (w, str(err))


def loop_item_augassign(x):
    total = 0.0
    for t in x:
        t += 1.0        # a number for a 1-D x (rebound); a row, written in place, for a 2-D x
        total = total + t * t
    return total + np.sum(x)


def test_loop_item_augassign_depends_on_the_type_and_is_checked_when_it_runs():
    g = srcad.grad(loop_item_augassign)(X)
    np.testing.assert_allclose(g, 2 * (X + 1.0) + 1.0)
    with pytest.raises(srcad.UnsupportedSyntaxError) as info:
        srcad.grad(loop_item_augassign)(np.ones((2, 3)))
    assert info.value.lineno == _line(loop_item_augassign, "t += 1.0")
    assert "an item of `x`" in str(info.value) and "x[i] +=" in str(info.value)


# ---- common correct code stays accepted, and right ------------------------------------------------
def copy_then_write(x):
    y = x.copy()
    y[0] = np.sin(x[1])
    y[1:] *= 2.0
    return np.sum(y * x)


def zeros_then_index_writes(x):
    y = np.zeros(3)
    for i in range(3):
        y[i] = x[i] ** 2 + x[(i + 1) % 3]
    return np.sum(y * y)


def rebinding(x):
    x = x + 1.0
    x = x * x
    return np.sum(x)


def fresh_then_augassign(x):
    y = x * 2.0
    y += np.cos(x)
    y *= x
    return np.sum(y)


def param_written_in_place(x):
    x[0] = 2.0 * x[1]          # the caller's array; nothing else here sees it
    return np.sum(x ** 2)


def rows_built_in_a_loop(x):
    rows = []
    for i in range(3):
        row = np.zeros(3)
        row[i] = x[i]
        row *= 2.0
        rows.append(row)
    return np.sum(np.stack(rows) @ x)


def view_read_before_write(x):
    y = x * 1.0
    head = np.sum(y[:2])
    y[0] = 10.0 * x[2]
    return head * np.sum(y)


def accumulate_into_matrix(x):
    M = np.zeros((3, 3))
    for i in range(2):
        M += np.outer(x, x) * (i + 1.0)
    return np.sum(M)


def numbers_accumulate(x):
    s = 0.0
    p = 1.0
    for v in x:
        s += v
        p *= np.cos(v)
    return s * p


def two_results(x):
    return np.sin(x), x * x


def unpacked_results_are_distinct(x):
    q, r = two_results(x)
    q[0] = 1.0
    return np.sum(r * x) + np.sum(q * x)


def call_that_returns_new_value(x):
    y = x * 1.0
    y = bump_in_place(y)
    return np.sum(y ** 2)


def bump_in_place(a):
    a += 1.0
    return a


def alias_after_branch(x):
    if x[0] > 0:
        y = x.copy()
    else:
        y = np.zeros(3)
    z = y                   # the same object on both paths
    z += np.sin(x)
    z[1] = x[2] ** 2
    return np.sum(y * x)


@pytest.mark.parametrize("f", [alias_after_branch])
@pytest.mark.parametrize("x", [X, -X])
def test_alias_after_a_branch_is_the_same_object(f, x):
    assert_grad_close(f, (x,), srcad.grad(f)(x.copy()))


@pytest.mark.parametrize("f", [copy_then_write, zeros_then_index_writes, rebinding, fresh_then_augassign,
                               rows_built_in_a_loop, view_read_before_write, accumulate_into_matrix,
                               numbers_accumulate, call_that_returns_new_value])
def test_common_in_place_code_is_accepted_and_right(f):
    g = srcad.grad(f)(X.copy())
    assert_grad_close(f, (X,), g)


def test_write_into_the_parameter_itself_is_accepted_and_right():
    g = srcad.grad(param_written_in_place)(X.copy())
    np.testing.assert_allclose(g, [0.0, 2 * X[1] + 8 * X[1], 2 * X[2]])


def test_unpacked_results_are_distinct_objects():      # accepted: q and r do not alias each other
    g = srcad.grad(unpacked_results_are_distinct)(X)
    assert_grad_close(unpacked_results_are_distinct, (X,), g)


def nested_def_reads_a_stale_name(x):
    y = x * 1.0
    v = y[:2]
    v[0] = 4.0

    def total():
        return np.sum(y)
    return total() * x[2]


def test_a_nested_def_reading_an_array_written_through_a_slice():
    g = srcad.grad(nested_def_reads_a_stale_name)(X)
    assert_grad_close(nested_def_reads_a_stale_name, (X,), g)
