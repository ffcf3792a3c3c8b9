"""The analyses built on srcad/dataflow.py (kinds, aliases, a checkpointed loop's state, the
names that hold dicts): one fact each, on a small program, against an answer worked out by hand."""
import ast
import textwrap

import numpy as np
import pytest

import srcad
from srcad.errors import UnsupportedSyntaxError
from srcad.frontend.analyze import Analysis
from srcad.transform.kinds import UNKNOWN, Kind, Kinds, param_kinds, signature
from srcad.transform.pipeline import prepare

from fdcheck import assert_grad_close


def _kinds(f, *args):
    parsed, fn, normalizer = prepare(f)
    an = Analysis(fn, parsed, normalizer.locals, [fn.args.args[0].arg])
    return fn, Kinds(fn, an, param_kinds(f, signature(args)))


def _x_kind(f, *args):
    """x's own kind: an array of x's shape (its shape token: the signature's dimension classes)."""
    return param_kinds(f, signature(args))["x"]


def _loop(fn):
    return next(st for st in ast.walk(fn) if isinstance(st, (ast.For, ast.While)))


# ---- kinds -------------------------------------------------------------------------------------
def k_number_then_array(x, n):
    y = 1.0
    for i in range(n):
        z = y * x
        y = x * 2.0
    return np.sum(z) + np.sum(y)


def test_kinds_a_value_that_turns_into_an_array_on_the_second_iteration():
    # by hand: y is a Python float on entry, a float64 array of x's shape after one iteration;
    # at the head the two join: rank 0 or 1, nothing sure. Inside the body, after `y = x * 2.0`,
    # y is the array.
    fn, k = _kinds(k_number_then_array, np.zeros(3), 2)
    loop = _loop(fn)
    assert k.before(loop.body[0], "y") == UNKNOWN
    assert k.exit(loop, "y") == UNKNOWN
    last = loop.body[-1]
    assert k.result(last) == _x_kind(k_number_then_array, np.zeros(3), 2)


def k_rank_down_and_up(x, n):
    y = x * 2.0
    for i in range(n):
        y = np.sum(y)
        y = x * y
    return np.sum(y)


def test_kinds_a_loop_head_joins_what_an_iteration_brings_back_not_its_middle():
    # by hand: y is x-shaped on entry and at the end of every iteration (x * number); it is a
    # number only between the two statements, which never reaches the head
    fn, k = _kinds(k_rank_down_and_up, np.zeros(3), 2)
    loop = _loop(fn)
    x_shaped = _x_kind(k_rank_down_and_up, np.zeros(3), 2)
    assert k.before(loop.body[0], "y") == x_shaped
    assert k.exit(loop, "y") == x_shaped
    assert k.exit_of_body("y") == x_shaped
    x = np.array([0.3, -0.2, 0.5])
    assert_grad_close(k_rank_down_and_up, (x, 2), srcad.grad(k_rank_down_and_up)(x, 2))



def k_rebound_after_the_loop(x, n):
    s = x * 2.0
    for i in range(n):
        s = s * 3.0
    s = np.sum(s)
    return s


def test_kinds_at_a_loops_exit_are_those_at_its_exit_not_after_later_statements():
    # by hand: when the loop ends s is x-shaped; only the statement after it makes s a number
    # (the environment stored for the loop's exit was the one later assignments wrote into)
    fn, k = _kinds(k_rebound_after_the_loop, np.zeros(3), 2)
    loop = _loop(fn)
    assert k.exit(loop, "s") == _x_kind(k_rebound_after_the_loop, np.zeros(3), 2)
    assert k.exit_of_body("s").rank0
    x = np.array([0.3, -0.2, 0.5])
    assert_grad_close(k_rebound_after_the_loop, (x, 2), srcad.grad(k_rebound_after_the_loop)(x, 2))

# ---- aliases -----------------------------------------------------------------------------------
def a_alias_from_the_second_iteration(x, n):
    y = x * 1.0
    z = np.zeros(3)
    for i in range(n):
        w = z           # the zeros in the first iteration; y from the second on
        z = y
    w[0] = 1.0
    return np.sum(y)


def a_no_alias(x, n):
    y = x * 1.0
    z = np.zeros(3)
    for i in range(n):
        w = z
    w[0] = 1.0
    return np.sum(y)


def test_aliases_a_name_that_holds_another_from_the_second_iteration_on():
    # by hand: after the loop w may be y (n >= 2), so writing w[0] changes y, which is read again
    with pytest.raises(UnsupportedSyntaxError, match=r"`w\[0\] = 1.0`.*may share memory with `y`"):
        srcad.grad(a_alias_from_the_second_iteration)(np.ones(3), 2)
    # without `z = y`, w is only ever the zeros: y's gradient is ones
    np.testing.assert_array_equal(srcad.grad(a_no_alias)(np.array([0.5, 1.0, 2.0]), 2), np.ones(3))


# ---- a checkpointed iteration's reads ----------------------------------------------------------
def test_checkpoint_a_name_a_pop_unbinds_is_read_by_the_next_inner_iteration():
    from srcad.transform.checkpoint import _exposed
    code = ast.parse(textwrap.dedent("""
        s = 0.0
        for j in range(m):
            t = s * 2.0
            s = tape.pop()
        u = t
        """)).body
    # by hand: the first inner iteration reads the s bound above; the pop gives s back its value
    # on entry to the block, which the second iteration reads; t may be unbound (no iteration)
    assert _exposed(code, "tape") == {"range", "m", "tape", "s", "t"}
    assert _exposed(code[:1] + code[2:], "tape") == {"t"}
