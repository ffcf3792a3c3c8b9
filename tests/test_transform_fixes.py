"""Fixes in the transformer passes (issue 28, "Found wrong"), each against an independent
reference: float64 central differences (tests/fdcheck.py) or an analytic value, in reverse and
forward mode, and to second order where it means something.

1. the printer: negative literals keep their parentheses (`(-1) ** j`), checked by round trips
   through `ast.parse` on generated expression trees;
2. functions that return from every branch (if/elif/else, nested, in loops; random shapes);
3. an argument (or a constant) returned as it is;
4. nested conditional expressions (in defs, lambdas, tests, comprehensions);
5. the alias pass's run-time guards have registry entries (second order over views);
6. row_sparse=True with a differentiated number or a zero cotangent;
7. index writes that name an entry twice (only the write that lands gets cotangent);
8. loops over an array their body writes in place, and writes whose source overlaps the
   target: exact where NumPy's result is a copy's, a named error where it is not.
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
        st.builds(lambda left, o, r: ast.BinOp(left, o(), r), kids, bin_ops, kids),
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
        st.builds(lambda left, o, r: ast.BinOp(left, o(), r), kids,
                  st.sampled_from([ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.BitAnd]), kids),
        st.builds(lambda base, e: ast.BinOp(base, ast.Pow(), e), _INTS.map(ast.Constant), _ileaf),
        st.builds(lambda o, v: ast.UnaryOp(o(), v), st.sampled_from([ast.USub, ast.Not, ast.Invert, ast.UAdd]), kids),
        st.builds(lambda left, ops, rs: ast.Compare(left, [o() for o in ops], rs[:len(ops)] + [rs[-1]] * (len(ops) - len(rs))),
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
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
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


# ---- 2. returns from every branch ------------------------------------------------------------------
def branches(x):
    if x > 1:
        return x * 2
    elif x > 0:
        return x * 3
    else:
        return x * 4


def nested_branches(x, y):
    if x > 0:
        if y > 0:
            return x * y
        else:
            return np.sin(x) * 2.0
    elif x < -1:
        return x * x * 3.0
    else:
        if y > 1:
            return y * 3.0
        elif y < -1:
            return np.cos(x)
        return x * 5.0


def return_in_loop(x, y):
    v = x * 1.0
    for i in range(4):
        v = np.sin(v) * y
        if i == 2:
            if x > 0:
                return v * 2.0
            else:
                return v * 3.0
    return v


def return_in_while(x, y):
    v = x
    k = 0
    while k < 5:
        if k == 3:
            return v * y
        v = v * 1.5 + x
        k += 1
    return v


def array_branches(x, y):
    if y > 0:
        return np.sum(x * 2.0)
    elif y > -1:
        s = np.sum(np.sin(x))
        return s * y
    else:
        return np.prod(x)


@pytest.mark.parametrize("f, args", [
    (branches, (0.5,)), (branches, (1.5,)), (branches, (-0.5,)),
    (nested_branches, (0.5, 0.5)), (nested_branches, (0.5, -0.5)), (nested_branches, (-1.5, 0.2)),
    (nested_branches, (-0.5, 1.5)), (nested_branches, (-0.5, -1.5)), (nested_branches, (-0.5, 0.5)),
    (return_in_loop, (0.5, 0.7)), (return_in_loop, (-0.5, 0.7)), (return_in_while, (0.5, 0.7)),
    (array_branches, (np.array([0.5, 1.5, -1.0]), 0.5)), (array_branches, (np.array([0.5, 1.5, -1.0]), -0.5)),
    (array_branches, (np.array([0.5, 1.5, -1.0]), -1.5)),
])
def test_returns_in_branches(f, args):
    for wrt in range(len(args)):
        check_modes(f, args, wrt=wrt, second=np.ndim(args[wrt]) == 0)
    if f is branches:
        assert srcad.grad(branches)(0.5) == 3.0
        assert srcad.value_and_grad(branches)(0.5) == (1.5, 3.0)


def _random_program(seed):
    """A function of floats x, y whose control flow returns from several places: if/elif/else
    chains (nested, every branch returning or not), loops with a `return`, `break` or `continue`
    under a test; half of them end in a chain that returns from every branch. Tests read x, y
    (kept away from their thresholds) and the loop counter only, so finite differences hold."""
    import random
    rnd = random.Random(seed)

    def expr():
        c = rnd.choice(["2.0", "0.5", "1.5"])
        return rnd.choice([f"v * {c} + x", "np.sin(v) * y", f"np.tanh(v) * {c}", "x * y - v", f"np.cos(x) + v * {c}"])

    def ret():
        return "return " + rnd.choice(["v * 2.0", "v * x", "np.sin(v) + y", "v", "x", "y * 3.0", "1.0"])

    def cond(in_loop):
        return rnd.choice(["x > 0", "x > 1", "x < -1", "y > 0", "not x > 0"] + (["i == 1", "i > 0"] if in_loop else []))

    def block(ind, depth, in_loop, must_return):
        out = []
        for k in range(rnd.randint(1, 3)):
            r = rnd.random()
            if r < 0.3 or depth >= 3:
                out.append(ind + f"v = {expr()}")
            elif r < 0.6:
                out.append(ind + f"if {cond(in_loop)}:")
                out += block(ind + "    ", depth + 1, in_loop, rnd.random() < 0.5)
                m = rnd.randrange(3)
                if m:
                    out.append(ind + f"elif {cond(in_loop)}:")
                    out += block(ind + "    ", depth + 1, in_loop, rnd.random() < 0.5)
                if m or rnd.random() < 0.7:
                    out.append(ind + "else:")
                    out += block(ind + "    ", depth + 1, in_loop, rnd.random() < 0.5)
            elif r < 0.8 and not in_loop:
                out.append(ind + f"for i in range({rnd.randint(1, 3)}):")
                out += block(ind + "    ", depth + 1, True, False)
            elif r < 0.9 and in_loop:
                out += [ind + f"if {cond(True)}:", ind + "    " + rnd.choice(["break", "continue", ret()])]
            else:
                return out + [ind + ret()]
        return out + ([ind + ret()] if must_return else [])

    def all_return(ind, depth):
        out = [ind + f"if {cond(False)}:"]
        out += all_return(ind + "    ", depth + 1) if depth < 2 and rnd.random() < 0.4 else block(ind + "    ", 2, False, True)
        for _ in range(rnd.randrange(3)):
            out += [ind + f"elif {cond(False)}:"] + block(ind + "    ", 2, False, True)
        out.append(ind + "else:")
        out += all_return(ind + "    ", depth + 1) if depth < 2 and rnd.random() < 0.4 else block(ind + "    ", 2, False, True)
        return out

    lines = ["def prog(x, y):", "    v = x * 1.0"] + block("    ", 0, False, False)
    lines += all_return("    ", 0) if rnd.random() < 0.5 else ["    return v * x"]
    return "import numpy as np\n\n\n" + "\n".join(lines) + "\n"


def _load_source(src, name, tmp_path):
    import importlib.util
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("seed", range(16))
def test_random_return_shapes(seed, tmp_path):
    src = _random_program(seed)
    f = _load_source(src, f"returns_{seed}", tmp_path).prog
    for x, y in ((-1.5, 0.8), (-0.5, -0.7), (0.5, 0.8), (1.5, -0.7)):
        v, g = srcad.value_and_grad(f, wrt=(0, 1))(x, y)
        assert v == f(x, y), src
        for k in (0, 1):
            np.testing.assert_allclose(g[k], numerical_grad(f, (x, y), k), rtol=1e-5, atol=1e-6, err_msg=src)
        _, dy = srcad.jvp(f, (x, y), (1.0, -2.0))
        np.testing.assert_allclose(dy, g[0] - 2 * g[1], rtol=1e-9, atol=1e-9, err_msg=src)


# ---- 3. an argument returned as it is --------------------------------------------------------------
def returns_x(x, y):
    return x


def returns_y(x, y):
    return y


def returns_constant(x, y):
    return 3.0


def returns_x_after_loop(x, y):
    s = 0.0
    for i in range(3):
        s = s + y * i
    return x


def returns_sum_after_loop(x, y):
    s = 0.0
    for i in range(3):
        s = s + y * i
    return np.sum(x)


@pytest.mark.parametrize("f", [returns_x, returns_y, returns_constant, returns_x_after_loop])
def test_returned_argument_scalars(f):
    for wrt in (0, 1):
        check_modes(f, (1.5, 2.0), wrt=wrt, second=True)
    want = (1.0 if f in (returns_x, returns_x_after_loop) else 0.0, 1.0 if f is returns_y else 0.0)
    assert srcad.grad(f, wrt=(0, 1))(1.5, 2.0) == want
    _, pullback = srcad.vjp(f, 1.5, 2.0)
    assert pullback(2.0) == (2 * want[0], 2 * want[1])


@pytest.mark.parametrize("f", [returns_y, returns_constant, returns_sum_after_loop])
def test_returned_argument_arrays(f):
    x = np.array([1.0, -2.0, 0.5])
    g = check_modes(f, (x, 2.0), wrt=0, second=True)
    assert isinstance(g, np.ndarray) and g.shape == x.shape and g.dtype == np.float64
    check_modes(f, (x, 2.0), wrt=1)


def test_returned_array_argument_jacobian():
    x = np.array([1.0, -2.0, 0.5])
    for mode in ("forward", "reverse"):
        np.testing.assert_array_equal(srcad.jacobian(returns_x, mode=mode)(x, 2.0), np.eye(3))
        np.testing.assert_array_equal(srcad.jacobian(returns_y, mode=mode)(x, np.ones(2)), np.zeros((2, 3)))


# ---- 4. nested conditional expressions -------------------------------------------------------------
def nested_conditional(x, a, b, c):
    y = a if x > 0 else (b if x < -1 else c)
    return y * x


nested_conditional_lambda = lambda x, a: (a * x if x > 0 else (a * 2 * x if x < -1 else x * x * a)) * 2   # noqa: E731


def nested_conditional_in_def(x, a):
    def g(t):
        return t * a if t > 0 else (t * 3 if t < -1 else (t * t if t < -0.2 else np.sin(t)))
    return g(x) + g(x * 2)


def nested_conditional_in_test(x, a):
    y = a if (x if a > 0 else -x) > 0 else (x * 2 if x > 1 else a * a)
    return y * x


def nested_conditional_in_comprehension(x):
    ys = [v * (2 if v > 0 else (3 if v < -1 else 4)) for v in x if (v if v > 0 else -v) > 0.1]
    return np.sum(np.array(ys))


@pytest.mark.parametrize("x", [0.5, -0.6, -1.5, -0.15])
def test_nested_conditional_expressions(x):
    for wrt in (0, 1, 2, 3):
        check_modes(nested_conditional, (x, 1.0, 2.0, 3.0), wrt=wrt)
    want_a = {0.5: x, -0.6: 0.0, -1.5: 0.0, -0.15: 0.0}[x]
    assert srcad.grad(nested_conditional, wrt=1)(x, 1.0, 2.0, 3.0) == want_a
    for f in (nested_conditional_lambda, nested_conditional_in_def, nested_conditional_in_test):
        check_modes(f, (x, 2.0), wrt=0, second=True)
        check_modes(f, (x, -2.0), wrt=1)


def test_nested_conditional_in_comprehension():
    x = np.array([0.5, -0.5, -1.5, 0.05])
    g = check_modes(nested_conditional_in_comprehension, (x,), second=True)
    np.testing.assert_array_equal(g, [2.0, 4.0, 3.0, 0.0])


# ---- 7. index writes that name an entry twice --------------------------------------------------------
_W = np.arange(1.0, 6.0)
_W2 = np.arange(25.0).reshape(5, 5)


def write_list_index(x, v):
    y = x * 1.0
    y[[0, 2, 0, -1, 2]] = v
    return np.sum(y * _W)


def write_columns(x, v):
    y = np.outer(x, x)
    k = np.array([1, 1, 0])
    y[:, k] = v
    return np.sum(y * _W2)


def add_pairs(x, v):
    y = np.outer(x, x)
    r = np.array([1, 1, 0, 1])
    c = np.array([2, 2, 0, 2])
    y[r, c] += v * v
    return np.sum(y * _W2)


def write_2d_index(x, v):
    y = x * x
    k = np.array([[0, 1], [1, 4]])
    y[k] = v[:4].reshape(2, 2)
    return np.sum(y * _W)


def write_broadcast_number(x, v):
    y = x * 1.0
    y[np.array([1, 1, 3])] = v[0] * 2
    return np.sum(y * _W)


def add_negative_index(x, v):
    y = x * 1.0
    y[np.array([-1, 4, 0])] += v[:3]
    return np.sum(np.sin(y) * _W)


def test_repeated_index_writes_analytic():
    """y[[0, 2, 0, -1, 2]] = v: entries 0 and 2 keep v[2] and v[4]; v[0], v[1] land nowhere."""
    x, v = np.arange(1.0, 6.0), np.array([0.5, -1.0, 2.0, 3.0, 1.5])
    gx, gv = srcad.grad(write_list_index, wrt=(0, 1))(x, v)
    np.testing.assert_array_equal(gx, [0, 2, 0, 4, 0])
    np.testing.assert_array_equal(gv, [0, 0, 1, 5, 3])
    # y[r, c] += v*v applies once per entry: (1, 2) gets v[3]**2 only, (0, 0) gets v[2]**2
    gx, gv = srcad.grad(add_pairs, wrt=(0, 1))(x, v[:4])
    np.testing.assert_array_equal(gv, [0, 0, 2 * v[2] * _W2[0, 0], 2 * v[3] * _W2[1, 2]])
    np.testing.assert_allclose(gx, (_W2 + _W2.T) @ x)


@pytest.mark.parametrize("f", [write_list_index, write_2d_index, write_broadcast_number, add_negative_index,
                               write_columns, add_pairs])
def test_repeated_index_writes(f):
    x, v = np.arange(1.0, 6.0), np.array([0.5, -1.0, 2.0, 3.0, 1.5])
    if f is write_columns:
        v = np.outer(np.ones(5), v[:3])
    elif f is add_pairs:
        v = v[:4]
    second = f not in (write_columns, add_pairs)
    check_modes(f, (x, v), wrt=0, second=second)
    check_modes(f, (x, v), wrt=1, second=second)


# ---- 6. row_sparse=True where a derivative is a zero or a number ---------------------------------------
def rows_times_zero(E, s):
    return np.sum(E[np.array([0, 2])]) * 0.0 + s * 2.0


def rows_unused(E, s):
    return s * s


@pytest.mark.parametrize("s", [1.5, np.float64(1.5), np.array(1.5), np.float32(1.5)])
@pytest.mark.parametrize("f", [rows_times_zero, rows_unused])
def test_row_sparse_with_zero_and_number_derivatives(f, s):
    E = np.arange(12.0).reshape(4, 3)
    gE, gs = srcad.grad(f, wrt=(0, 1), row_sparse=True)(E, s)
    assert isinstance(gE, srcad.RowSparse)
    np.testing.assert_array_equal(gE.todense(), np.zeros((4, 3)))
    want = numerical_grad(f, (E, float(s)), 1)
    np.testing.assert_allclose(gs, want, rtol=1e-6)
    assert np.shape(gs) == np.shape(s) and type(gs) is type(srcad.grad(f, wrt=1)(E, s))
    value, gs2 = srcad.value_and_grad(f, wrt=1, row_sparse=True)(E, s)
    assert value == f(E, s) and gs2 == gs


# ---- 5. the alias pass's run-time tests compose (hessian transforms the code that holds them) ---------
def view_scaled_in_place(x):
    y = x * 1.0
    v = y[1:]
    v *= 2.0
    return np.sum(y * y * x)


def view_taken_again(x):
    y = np.sin(x)
    v = y[1:]
    y[0] = 5.0
    y += x
    return np.sum(v * v * x[1:])


def test_alias_guards_have_rules():
    """Every helper the alias pass writes into the user's code has a registry entry (each one
    answers a question about the argument's type, and carries no derivative)."""
    import re
    from pathlib import Path
    from srcad import runtime as rt
    from srcad.rules.registry import lookup
    text = Path(srcad.__file__).with_name("frontend").joinpath("aliases", "rewrite.py").read_text()
    helpers = set(re.findall(r'ast\.Name\(rt_name, ast\.Load\(\)\), "(\w+)"', text))
    assert {"slices_are_views", "updates_in_place", "refuse_shared_update"} <= helpers
    for h in helpers:
        rule = lookup(getattr(rt, h))
        assert rule is not None and rule.nondiff, h


@pytest.mark.parametrize("f", [view_scaled_in_place, view_taken_again])
def test_views_written_in_place_second_order(f):
    x = np.array([1.0, 2.0, 0.5])
    check_modes(f, (x,), second=True)
    assert "slices_are_views" in srcad.emit(f)


# ---- 8. a loop over an array that its body writes in place --------------------------------------------
def loop_over_live_rows(a):
    a = a * 1.0
    s = 0.0
    for t in a:
        s = s + np.sum(t * t)
        a -= 0.1 * a
    return s


def loop_over_live_rows_enumerate(a):
    a = a * 1.0
    s = 0.0
    for k, t in enumerate(a):
        s = s + np.sum(np.sin(t))
        a[1:] *= 2.0
    return s


def loop_over_positions(a):
    a = a * 1.0
    s = 0.0
    for i in range(len(a)):
        t = a[i]
        s = s + np.sum(t * t)
        a -= 0.1 * a
    return s


def loop_over_copy(a):
    a = a * 1.0
    s = 0.0
    for t in a.copy():
        s = s + np.sum(t * t)
        a -= 0.1 * a
    return s


def loop_then_rebind(a):
    s = 0.0
    for t in a:
        s = s + np.sum(t * t)
        a = a - 0.1 * a        # a new array: the loop goes on over the old one
    return s


@pytest.mark.parametrize("f, line", [(loop_over_live_rows, "a -= 0.1 * a"),
                                     (loop_over_live_rows_enumerate, "a[1:] *= 2.0")])
def test_loop_over_array_written_in_place_is_refused(f, line):
    a = np.arange(6.0).reshape(3, 2) + 1
    for op in (lambda: srcad.grad(f)(a), lambda: srcad.jvp(f, (a,), (np.ones_like(a),))):
        with pytest.raises(srcad.UnsupportedSyntaxError) as err:
            op()
        msg = str(err.value)
        assert f"`{line}` inside `for" in msg and "test_transform_fixes.py:" in msg and "range(len(a))" in msg


@pytest.mark.parametrize("f", [loop_over_positions, loop_over_copy, loop_then_rebind])
def test_loop_rewritten_as_the_error_says(f):
    a = np.arange(6.0).reshape(3, 2) + 1
    check_modes(f, (a,), second=True)


# ---- 8b. a write whose source overlaps its target -------------------------------------------------------
_W5 = np.arange(1.0, 6.0)


def strided_overlap(x):
    v = x * 1.0
    v[::2] = v[0:3]        # NumPy: element by element, v[4] gets the new v[2]
    return np.sum(v * _W5)


def strided_overlap_named(x):
    v = x * 1.0
    w = v[0:3]
    v[::2] = w
    return np.sum(v * _W5)


def shifted_overlap(x):
    v = x * 1.0
    v[1:4] = v[0:3]        # NumPy sees the overlap and copies the source first
    return np.sum(v * v * _W5)


def reversed_overlap(x):
    v = x * 1.0
    v[::-1] = v[:]
    return np.sum(v * _W5)


@pytest.mark.parametrize("f", [strided_overlap, strided_overlap_named])
def test_overlapping_write_numpy_copies_element_by_element_is_refused(f):
    x = np.arange(1.0, 6.0)
    v = x.copy()
    v[::2] = v[0:3]
    assert v[4] == 2.0          # (what NumPy does: the value v[2] got from this same write)
    for op in (lambda: srcad.grad(f)(x), lambda: srcad.jvp(f, (x,), (np.ones(5),))):
        with pytest.raises(srcad.UnsupportedSyntaxError) as err:
            op()
        assert "shares memory with its target" in str(err.value) and ".copy()" in str(err.value)
        assert "test_transform_fixes.py:" in str(err.value)


@pytest.mark.parametrize("f", [shifted_overlap, reversed_overlap])
def test_overlapping_write_numpy_buffers(f):
    check_modes(f, (np.array([1.0, -2.0, 0.5, 3.0, 1.5]),), second=True)


def test_overlap_probe_matches_numpy():
    """The guard's answer is NumPy's: refused exactly where NumPy's result differs from copying
    the source first."""
    from srcad.runtime import refuse_overlapping_write
    x = np.arange(1.0, 13.0)
    cases = [(np.s_[::2], np.s_[0:6]), (np.s_[1:5], np.s_[0:4]), (np.s_[0:4], np.s_[1:5]), (np.s_[::-1], np.s_[:]),
             (np.s_[::3], np.s_[2:6]), (np.s_[1::2], np.s_[0:6]), (np.s_[::2], np.s_[6:12])]
    for tgt, src in cases:
        numpy_way, copied = x.copy(), x.copy()
        numpy_way[tgt] = numpy_way[src]
        copied[tgt] = copied[src].copy()
        v = x.copy()
        try:
            refuse_overlapping_write(v, tgt, v[src], "c", "f", 1, 0, "h")
            refused = False
        except srcad.UnsupportedSyntaxError:
            refused = True
        assert refused == (not np.array_equal(numpy_way, copied)), (tgt, src)
