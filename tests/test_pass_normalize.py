"""The normalize pass on its own (srcad/frontend/normalize/): one operation per statement, jumps
lowered to flags, every loop over a range, user lines kept; and the normalized function, run as
Python, computes what the user's function computes (the user's function is the reference)."""
import ast
import inspect

import numpy as np
import pytest

from srcad.transform.pipeline import prepare


def nested(x, y):
    return np.sum(np.exp(-(x * y) ** 2) + 3.0 * np.sin(x)[::-1])


def branchy(x, n):
    total = 0.0
    for i in range(n):
        if i % 3 == 2:
            continue
        if np.max(x) > 50.0:
            break
        x = x * 1.5 + i
        total = total + np.sum(x)
    return total


def early(x, limit):
    for v in x:
        if v > limit:
            return v * 2.0
    while limit > 0.0:
        limit = limit - 1.5
    return np.sum(x) + limit


def listy(x):
    parts = [np.sin(v) for v in x if v > 0]
    y, z = x[0], x[-1]
    return sum(parts) + y * z


CASES = [
    (nested, (np.linspace(-1, 1, 5), np.linspace(0.5, 2, 5))),
    (branchy, (np.linspace(-1, 1, 4), 9)),
    (early, (np.array([0.5, 3.0, 1.0]), 2.0)),
    (early, (np.array([0.5, 1.0]), 4.0)),
    (listy, (np.array([0.5, -1.0, 2.0]),)),
]


def _run_normalized(func, args):
    parsed, fn, _ = prepare(func)
    namespace = dict(parsed.env)        # the function's globals, and `rt` (srcad's runtime helpers)
    exec(compile(ast.unparse(fn), f"<normalized {func.__name__}>", "exec"), namespace)
    return namespace[fn.name](*args)


@pytest.mark.parametrize("func,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_normalized_function_computes_the_users_value(func, args):
    expected = func(*[np.copy(a) for a in args])
    got = _run_normalized(func, [np.copy(a) for a in args])
    assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()   # same operations, same bits


def _atom(node):
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    return isinstance(node, ast.Tuple) and all(_atom(e) for e in node.elts)


def _index_atom(node):
    """An index: atoms, slices of atoms, or tuples of those."""
    if isinstance(node, ast.Slice):
        return all(p is None or _atom(p) for p in (node.lower, node.upper, node.step))
    if isinstance(node, ast.Tuple):
        return all(_index_atom(e) for e in node.elts)
    return _atom(node)


def _one_operation(value):
    if _atom(value) or isinstance(value, (ast.Compare, ast.BoolOp)):   # inactive tests kept whole
        return True
    if isinstance(value, ast.BinOp):
        return _atom(value.left) and _atom(value.right)
    if isinstance(value, ast.UnaryOp):
        return _atom(value.operand)
    if isinstance(value, ast.Call):
        return (all(_atom(a) for a in value.args) and all(_atom(k.value) for k in value.keywords)
                and (isinstance(value.func, ast.Name) or isinstance(value.func, ast.Attribute)))
    if isinstance(value, ast.Attribute):
        return _atom(value.value) or isinstance(value.value, ast.Attribute)   # np.newaxis, x.T
    if isinstance(value, ast.Subscript):
        return _atom(value.value) and _index_atom(value.slice)
    if isinstance(value, (ast.List, ast.Tuple)):
        return all(_atom(e) for e in value.elts)
    return False


def _check_block(stmts, in_loop, last_of_function, lines):
    for k, st in enumerate(stmts):
        last = k == len(stmts) - 1
        assert getattr(st, "user_line", st.lineno) in lines, ast.unparse(st)   # a line of the function
        if isinstance(st, ast.Assign):
            assert len(st.targets) == 1
            t = st.targets[0]
            if isinstance(t, ast.Subscript):
                assert _atom(t.value) and _index_atom(t.slice) and _atom(st.value), ast.unparse(st)
            else:
                assert isinstance(t, ast.Name), ast.unparse(st)
                assert _one_operation(st.value), ast.unparse(st)
        elif isinstance(st, ast.Expr):
            call = st.value
            assert isinstance(call, ast.Call) and all(_atom(a) for a in call.args), ast.unparse(st)
        elif isinstance(st, ast.If):
            assert isinstance(st.test, ast.Name), ast.unparse(st.test)
            if st.body and isinstance(st.body[0], ast.Break):
                assert in_loop and last and len(st.body) == 1 and not st.orelse   # `if flag: break`
                continue
            _check_block(st.body, in_loop, False, lines)
            _check_block(st.orelse, in_loop, False, lines)
        elif isinstance(st, ast.For):
            it = st.iter
            assert isinstance(it, ast.Call) and ast.unparse(it.func) == "range", ast.unparse(it)
            assert all(_atom(a) or ast.unparse(a.func) == "len" and _atom(a.args[0])   # range(len(xs))
                       for a in it.args) and not st.orelse
            _check_block(st.body, True, False, lines)
        elif isinstance(st, ast.While):
            assert isinstance(st.test, ast.Name) and not st.orelse
            _check_block(st.body, True, False, lines)
        elif isinstance(st, ast.Return):
            assert last_of_function and last and _atom(st.value), ast.unparse(st)
        else:
            raise AssertionError(f"a {type(st).__name__} left after normalize: {ast.unparse(st)}")


@pytest.mark.parametrize("func", [nested, branchy, early, listy])
def test_one_operation_per_statement_and_jumps_lowered(func):
    _, fn, _ = prepare(func)
    first = func.__code__.co_firstlineno
    lines = range(first, first + len(inspect.getsource(func).splitlines()))
    _check_block(fn.body, in_loop=False, last_of_function=True, lines=lines)
    kinds = {type(n) for n in ast.walk(fn)}
    assert ast.Continue not in kinds
    assert not kinds & {ast.ListComp, ast.GeneratorExp, ast.IfExp}


def test_each_statement_keeps_its_user_line():
    _, fn, _ = prepare(nested)
    first = nested.__code__.co_firstlineno
    # every statement of `nested` comes from its one line, the return
    assert {st.user_line for st in ast.walk(fn) if isinstance(st, ast.stmt)} - {first} == {first + 1}
    _, fn, _ = prepare(branchy)
    lines = {ast.unparse(st.targets[0]): st.user_line for st in ast.walk(fn)
             if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name)}
    first = branchy.__code__.co_firstlineno
    assert lines["x"] == first + 7           # x = x * 1.5 + i
    assert lines["total"] == first + 8       # total = total + np.sum(x)
