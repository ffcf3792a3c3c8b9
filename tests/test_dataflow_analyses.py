"""The analyses built on srcad/dataflow.py (kinds, aliases, a checkpointed loop's state, the
names that hold dicts): one fact each, on a small program, against an answer worked out by hand."""
import ast

import numpy as np

import srcad
from srcad.frontend.analyze import Analysis
from srcad.transform.kinds import UNKNOWN, Kind, Kinds, param_kinds, signature
from srcad.transform.pipeline import prepare

from fdcheck import assert_grad_close


def _kinds(f, *args):
    parsed, fn, normalizer = prepare(f)
    an = Analysis(fn, parsed, normalizer.locals, [fn.args.args[0].arg])
    return fn, Kinds(fn, an, param_kinds(f, signature(args)))


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
    assert k.result(last) == Kind("array", "d", 1, ("param", "x"))


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
    x_shaped = Kind("array", "d", 1, ("param", "x"))
    assert k.before(loop.body[0], "y") == x_shaped
    assert k.exit(loop, "y") == x_shaped
    assert k.exit_of_body("y") == x_shaped
    x = np.array([0.3, -0.2, 0.5])
    assert_grad_close(k_rank_down_and_up, (x, 2), srcad.grad(k_rank_down_and_up)(x, 2))
