"""Nested AD where srcad's own generated code, differentiated again, defines a function under a
name the outer derivative would also give out (`objective_vjp`): the unit is built again with the
name reserved, never two functions of one name in a module (the second one shadowed the first)."""
import numpy as np

import srcad
from fdcheck import assert_grad_close


def objective(p1, p2):
    return np.sum(p1 * p1 * p2) - np.sum(np.sin(p2) * p2)


def neg_objective(p2, p1):
    return -objective(p1, p2)


d_neg = srcad.grad(neg_objective)


def step(p1, start):
    x = start - 0.1 * d_neg(start, p1)
    return objective(p1, x) + np.sum(x * p1)


def test_outer_gradient_needs_the_callee_wrt_both_arguments():
    rng = np.random.default_rng(3)
    p1, start = rng.standard_normal(3), rng.standard_normal(3)
    for wrt in (0, 1):
        got = srcad.grad(step, wrt=wrt)(p1, start)
        assert_grad_close(step, (p1, start), got, wrt=wrt, rtol=1e-6, atol=1e-8)


def test_the_module_defines_each_name_once():
    import ast
    text = srcad.emit(step, args=(np.ones(3), np.ones(3)))
    names = [n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
    derivatives = [n for n in names if n.endswith(("_vjp", "_jvp")) or "_vjp_" in n]
    assert len(derivatives) == len(set(derivatives)), names
