"""The forward pass on its own (srcad/transform/forward.py): each active statement is followed by
its tangent, inactive ones get none, and the tangents equal analytic directional derivatives."""
import ast

import numpy as np

import srcad


def chain(x, y):
    k = 3
    z = k * 2
    a = x * y
    b = np.exp(a) + z
    return np.sum(b)


def looped(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sum(x * x) * i
    return s


def _jvp_def(func, wrt=0):
    tree = ast.parse(srcad.emit(func, wrt=wrt, mode="forward"))
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef))


def _assigned(stmts):
    return [ast.unparse(st.targets[0]) for st in stmts if isinstance(st, ast.Assign)]


def test_each_active_statement_is_followed_by_its_tangent():
    names = _assigned(_jvp_def(chain).body)
    for v in ("a", "b"):
        assert names[names.index(v) + 1] == v + "_dot"
    assert "k_dot" not in names and "z_dot" not in names          # inactive: no tangent
    x, y, v = np.linspace(-1, 1, 4), np.linspace(0.5, 2, 4), np.linspace(1, 2, 4)
    value, tangent = srcad.jvp(chain, (x, y), (v, np.zeros(4)))
    np.testing.assert_allclose(value, np.sum(np.exp(x * y) + 6), rtol=1e-14)
    np.testing.assert_allclose(tangent, np.sum(np.exp(x * y) * y * v), rtol=1e-13)


def test_a_loop_carries_its_tangent_inside_the_loop():
    fn = _jvp_def(looped)
    loop = next(n for n in fn.body if isinstance(n, ast.For))
    assert "s_dot" in _assigned(loop.body)
    x, v = np.linspace(-1, 1, 3), np.array([0.5, -1.0, 2.0])
    _, tangent = srcad.jvp(looped, (x, 4), (v, None))
    np.testing.assert_allclose(tangent, (0 + 1 + 2 + 3) * np.sum(2 * x * v), rtol=1e-13)
