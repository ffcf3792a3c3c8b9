"""The reverse pass on its own (srcad/transform/reverse/): the shape of the adjoint it writes
(a primal sweep that saves on a tape only what an adjoint reads and the primal overwrites, then
the adjoint sweep with loops reversed and branches mirrored), and the gradients those adjoints
give, against analytic formulas."""
import ast

import numpy as np

import srcad


def straight(x, y):
    a = x * y
    b = np.sin(a)
    return np.sum(b * b)


def sines(x, n):
    for i in range(n):
        x = np.sin(x)
    return np.sum(x)


def branch(x, flag):
    if flag > 0:
        y = np.exp(x)
    else:
        y = x * x
    return np.sum(y)


def _vjp_def(func):
    tree = ast.parse(srcad.emit(func))
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef))


def _calls(tree, dotted):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == dotted]


def test_straight_line_code_needs_no_tape():
    fn = _vjp_def(straight)
    assert not _calls(fn, "tape.append") and not _calls(fn, "tape.pop")
    x, y = np.linspace(-1, 1, 5), np.linspace(0.5, 2.0, 5)
    a = x * y                                           # d sum(sin(xy)^2)/dx = 2 sin cos y
    np.testing.assert_allclose(srcad.grad(straight)(x, y), 2 * np.sin(a) * np.cos(a) * y, rtol=1e-13)


def test_a_loop_saves_what_it_overwrites_and_its_adjoint_runs_backwards():
    fn = _vjp_def(sines)
    loops = [n for n in fn.body if isinstance(n, ast.For)]
    forward, backward = loops
    assert ast.unparse(forward.iter) == "range(n)"
    assert ast.unparse(backward.iter) == "reversed(range(n))"
    # one value saved per trip (the x that sin reads, about to be overwritten), restored in reverse
    assert len(_calls(forward, "tape.append")) == 1 and len(_calls(backward, "tape.pop")) == 1
    x = np.linspace(-1, 1, 4)
    expected, v = np.ones_like(x), x.copy()
    for _ in range(5):                                  # chain rule by hand: prod of cos(x_k)
        expected *= np.cos(v)
        v = np.sin(v)
    np.testing.assert_allclose(srcad.grad(sines)(x, 5), expected, rtol=1e-13)


def test_the_adjoint_of_an_if_is_an_if():
    fn = _vjp_def(branch)
    ifs = [n for n in ast.walk(fn) if isinstance(n, ast.If)]
    assert len(ifs) == 2                                # the primal branch and its mirror
    x = np.linspace(-1, 1, 4)
    np.testing.assert_allclose(srcad.grad(branch)(x, 1), np.exp(x), rtol=1e-14)
    np.testing.assert_allclose(srcad.grad(branch)(x, -1), 2 * x, rtol=1e-14)


def test_each_adjoint_block_names_its_user_line():
    src = srcad.emit(sines)
    first = sines.__code__.co_firstlineno
    assert f"# adjoint of L{first + 2}: x = np.sin(x)" in src
    assert f"# adjoint of L{first + 1}: for i in range(n):" in src
