"""Fixes in the transformer passes (issue 28, "Found wrong"), each against an independent
reference: float64 central differences (tests/fdcheck.py) or an analytic value, in reverse and
forward mode, and to second order where it means something.

1. the printer: negative literals keep their parentheses (`(-1) ** j`), checked by round trips
   through `ast.parse` on generated expression trees;
"""
import ast
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import srcad
from srcad.syntax import to_source
from srcad.transform.cleanup import _fold
from fdcheck import numerical_grad


# ---- helpers -------------------------------------------------------------------------------------
def _tangents(args, wrt, t):
    return tuple(t if k == wrt else (0.0 if np.ndim(a) == 0 else np.zeros(np.shape(a)))
                 for k, a in enumerate(args))


def check_modes(f, args, wrt=0, second=False, rtol=1e-5, atol=1e-6):
    """srcad.grad and srcad.jvp of f against central differences (and srcad.hessian against
    differences of the FD-checked gradient when second)."""
    want = numerical_grad(f, args, wrt)
    g = srcad.grad(f, wrt=wrt)(*args)
    assert np.shape(g) == np.shape(args[wrt])
    np.testing.assert_allclose(np.ravel(g), want, rtol=rtol, atol=atol)
    rng = np.random.default_rng(0)
    t = rng.standard_normal(np.shape(args[wrt]))
    t = float(t) if np.ndim(args[wrt]) == 0 else t
    y, ydot = srcad.jvp(f, tuple(args), _tangents(args, wrt, t))
    np.testing.assert_allclose(y, f(*args), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.sum(ydot), want @ np.ravel(t), rtol=rtol, atol=atol)
    if second:
        x = np.asarray(args[wrt], dtype=float)
        h = 1e-5
        cols = []
        for k in range(x.size):
            e = np.zeros(x.size)
            e[k] = h
            hi, lo = list(args), list(args)
            hi[wrt] = (x.ravel() + e).reshape(x.shape) if x.ndim else float(x + h)
            lo[wrt] = (x.ravel() - e).reshape(x.shape) if x.ndim else float(x - h)
            cols.append((np.ravel(srcad.grad(f, wrt=wrt)(*hi)) - np.ravel(srcad.grad(f, wrt=wrt)(*lo))) / (2 * h))
        H = srcad.hessian(f, wrt=wrt)(*args)
        np.testing.assert_allclose(np.ravel(H), np.ravel(np.array(cols).T), rtol=1e-4, atol=1e-5)
    return g


# ---- 1. the printer ------------------------------------------------------------------------------
def _same(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, complex) or isinstance(b, complex):
        a, b = complex(a), complex(b)      # (Python's own complex literals drop a zero's sign)
        return all(x == y or math.isnan(x) and math.isnan(y) for x, y in ((a.real, b.real), (a.imag, b.imag)))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return type(a) is type(b) and a == b


_ENV = {"a": 2, "b": -3, "c": 0.5, "j": 3, "f": lambda *xs: xs}


def _run(thunk):
    try:
        return ("value", thunk())
    except Exception as e:          # both sides must fail alike
        return ("raises", type(e).__name__)


def _evaluate_tree(tree):
    code = compile(ast.fix_missing_locations(ast.Expression(tree)), "<tree>", "eval")
    return _run(lambda: eval(code, dict(_ENV)))


def _evaluate_text(text):
    return _run(lambda: eval(compile(text, "<text>", "eval"), dict(_ENV)))


def _load(n):
    return ast.Name(n, ast.Load())


_FLOATS = st.sampled_from([-1.0, -0.0, 0.0, 2.5, -2.5, -1e-3, 3.0, float("inf"), float("-inf"), float("nan")])
_INTS = st.integers(-3, 3)
_fleaf = st.one_of(_FLOATS.map(ast.Constant), st.sampled_from(["c"]).map(_load),
                   st.sampled_from([complex(-1, 2), complex(0.5, -1)]).map(ast.Constant))
# (no pure imaginary literal: Python's own text for one drops the real part's zero sign)


def _float_node(kids):
    """Float-valued trees: every operator, chains of `**` (floats only, so nothing grows without
    bound), unary minus and plus, conditional expressions."""
    bin_ops = st.sampled_from([ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow])
    return st.one_of(
        st.builds(lambda l, o, r: ast.BinOp(l, o(), r), kids, bin_ops, kids),
        st.builds(lambda o, v: ast.UnaryOp(o(), v), st.sampled_from([ast.USub, ast.UAdd]), kids),
        st.builds(lambda t, b, o: ast.IfExp(t, b, o), kids, kids, kids),
    )


_fexpr = st.recursive(_fleaf, _float_node, max_leaves=8)
_ileaf = st.one_of(_INTS.map(ast.Constant), st.sampled_from(["a", "b", "j"]).map(_load))


def _any_node(kids):
    """Everything else the generated code can hold: comparisons (chained), `not`, `~`, and/or,
    lambdas (called), starred arguments and elements, walrus, subscripts and attributes of
    literals, `(-1) ** j`."""
    cmp_ops = st.sampled_from([ast.Lt, ast.LtE, ast.Gt, ast.Eq, ast.NotEq])
    return st.one_of(
        st.builds(lambda l, o, r: ast.BinOp(l, o(), r), kids,
                  st.sampled_from([ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.BitAnd]), kids),
        st.builds(lambda base, e: ast.BinOp(base, ast.Pow(), e), _INTS.map(ast.Constant), _ileaf),
        st.builds(lambda o, v: ast.UnaryOp(o(), v), st.sampled_from([ast.USub, ast.Not, ast.Invert, ast.UAdd]), kids),
        st.builds(lambda l, ops, rs: ast.Compare(l, [o() for o in ops], rs[:len(ops)] + [rs[-1]] * (len(ops) - len(rs))),
                  kids, st.lists(cmp_ops, min_size=1, max_size=3), st.lists(kids, min_size=1, max_size=3)),
        st.builds(lambda o, vs: ast.BoolOp(o(), vs), st.sampled_from([ast.And, ast.Or]), st.lists(kids, min_size=2, max_size=3)),
        st.builds(lambda t, b, o: ast.IfExp(t, b, o), kids, kids, kids),
        st.builds(lambda body, arg: ast.Call(ast.Lambda(ast.arguments([], [ast.arg("x")], None, [], [], None, []),
                                                        ast.BinOp(body, ast.Mult(), _load("x"))), [arg], []), kids, kids),
        st.builds(lambda body: ast.Lambda(ast.arguments([], [], None, [], [], None, []), body), kids)
          .map(lambda lam: ast.Call(ast.IfExp(_load("a"), lam, lam), [], [])),
        st.builds(lambda xs, y: ast.Call(_load("f"), [ast.Starred(ast.Tuple(xs, ast.Load()), ast.Load()), y], []),
                  st.lists(kids, max_size=2), kids),
        st.builds(lambda xs, y: ast.Tuple([ast.Starred(ast.List(xs, ast.Load()), ast.Load()), y], ast.Load()),
                  st.lists(kids, max_size=2), kids),
        st.builds(lambda v: ast.Tuple([ast.NamedExpr(ast.Name("w", ast.Store()), v),
                                       ast.BinOp(_load("w"), ast.Pow(), ast.Constant(2))], ast.Load()), kids),
        st.builds(lambda xs: ast.Subscript(ast.Tuple(xs, ast.Load()), ast.Constant(-1), ast.Load()),
                  st.lists(kids, min_size=1, max_size=3)),
        st.builds(lambda v: ast.Attribute(v, "real", ast.Load()), kids),
        _fexpr,
    )


_expr = st.recursive(st.one_of(_ileaf, _fleaf), _any_node, max_leaves=10)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_expr)
def test_printer_round_trip(tree):
    """parse(print(tree)) computes what tree computes; so does the folded tree's text."""
    text = to_source(tree)
    assert _same(_evaluate_text(text), _evaluate_tree(tree)), text
    folded = to_source(_fold(ast.parse(text, mode="eval").body))
    assert _same(_evaluate_text(folded), _evaluate_tree(tree)), (text, folded)


@pytest.mark.parametrize("src, want", [
    ("(-1) ** 2", 1), ("(-1.0) ** 2", 1.0), ("(-2) ** -1", -0.5), ("(-0.0) ** 1", -0.0),
    ("-(1) ** 2", -1), ("(-1).__add__(5)", 4), ("(-2j) ** 2", (-4 + 0j)), ("(-(2.0)) ** 2 ** 0.5", (-2.0) ** 2 ** 0.5),
    ("(lambda x: -x ** 2)(-3)", -9), ("(-1) if a else 2", -1), ("[*(-1, -2)][1] ** 2", 4),
])
def test_printer_folded_negative_literals(src, want):
    """The cleanup pass folds `-(1)` into the literal -1; the printed text keeps the value."""
    folded = _fold(ast.parse(src, mode="eval").body)
    assert _same(_evaluate_text(to_source(folded))[1], want), to_source(folded)


def det_by_minors(a):
    n = a.shape[0]
    if n == 1:
        return a[0, 0]
    s = 0.0
    for j in range(n):
        cols = [k for k in range(n) if k != j]
        s = s + (-1) ** j * a[0, j] * det_by_minors(a[1:][:, cols])
    return s


def signs(x):
    s = 0.0
    for j in range(3):
        s = s + (-1) ** j * x[j] ** 2 + (-2.0) ** 2 * x[j] - (-1) ** (j + 1) * x[j]
    return s


def test_determinant_by_minors():
    a = np.random.default_rng(1).standard_normal((3, 3))
    g = check_modes(det_by_minors, (a,), second=True)
    np.testing.assert_allclose(g, np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10)     # Jacobi's formula


def test_negative_literal_powers():
    x = np.array([1.0, 2.0, 3.0])
    g = check_modes(signs, (x,), second=True)
    np.testing.assert_allclose(g, [2 * 1 + 4 + 1, -2 * 2 + 4 - 1, 2 * 3 + 4 + 1])
    assert "(-1) ** j" in srcad.emit(signs)
