"""Inline a rule's template expression: its parameter names become the call's atoms."""
import ast
import inspect

import numpy as np

from ..frontend.ops import Op, OpKind
from ..rules.registry import Rule
from ..syntax import N, ast_copy
from .kinds.lattice import Cat


def instantiate(template: ast.AST, mapping: dict[str, ast.AST], floats: tuple[str, ...] = ()) -> ast.AST:
    """A copy of `template` with every name in `mapping` replaced by (a copy of) its AST, and
    arithmetic on constants folded (`x ** (2 - 1)` reads, and runs, as `x`). `floats`: the
    parameters bound to a cotangent or tangent (a float or complex value, never an int), whose
    product with the literal 1 is the value itself (`g * 1.0` reads `g`)."""
    class _Sub(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in mapping:
                new = ast_copy(mapping[node.id])
                if node.id in floats:
                    new.srcad_float = True
                return new
            return node
    return _Fold().visit(_Sub().visit(ast_copy(template)))


class _Fold(ast.NodeTransformer):
    """Folds arithmetic on numeric constants and `x ** 1` in an instantiated template."""

    _OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}

    def visit_BinOp(self, node):
        # `g * rt.power_slope(x, 2)` reads (and runs) as `g * 2 * x`; an exponent 0 or one known
        # only at run time keeps the helper (x**0 has slope 0, also at x == 0)
        slope = _constant_slope(node.right) if isinstance(node.op, ast.Mult) else None
        if slope is not None:
            x, y, c = slope
            node = ast.BinOp(ast.BinOp(node.left, ast.Mult(), c), ast.Mult(),
                             ast.BinOp(x, ast.Pow(), ast.BinOp(y, ast.Sub(), ast.Constant(1))))
        self.generic_visit(node)
        left, right = node.left, node.right
        num = (int, float)
        if isinstance(left, ast.Constant) and isinstance(right, ast.Constant) and \
                type(left.value) in num and type(right.value) in num and type(node.op) in self._OPS:
            return ast.Constant(self._OPS[type(node.op)](left.value, right.value))
        if isinstance(node.op, ast.Pow) and isinstance(right, ast.Constant) and right.value == 1 \
                and type(right.value) in num:
            return left
        if isinstance(node.op, ast.Mult):
            for one, other in ((right, left), (left, right)):
                if isinstance(one, ast.Constant) and type(one.value) in num and one.value == 1 \
                        and getattr(other, "srcad_float", False):
                    return other
        return node


    def visit_Call(self, node):
        # `np.sum(x_dot, axis=None, keepdims=False)` reads `np.sum(x_dot)`: a keyword given the value
        # NumPy's function takes when it is not passed (keepdims=False: the same for every NumPy
        # reduction, whose signature shows a sentinel for it)
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np":
            defaults = _numpy_defaults(f.attr)
            node.keywords = [k for k in node.keywords if not (
                isinstance(k.value, ast.Constant) and k.arg is not None and (
                    k.arg == "keepdims" and k.value.value is False
                    or k.arg in defaults and defaults[k.arg] is None and k.value.value is None))]
        return node


def _numpy_defaults(name: str) -> dict:
    """{parameter: default} of numpy's function `name` (empty when numpy has no such function or
    its signature cannot be read)."""
    if name not in _DEFAULTS:
        try:
            sig = inspect.signature(getattr(np, name))
            _DEFAULTS[name] = {p.name: p.default for p in sig.parameters.values() if p.default is not p.empty}
        except (AttributeError, TypeError, ValueError):
            _DEFAULTS[name] = {}
    return _DEFAULTS[name]


_DEFAULTS: dict = {}


def _constant_slope(node):
    """(x, c) for `rt.power_slope(x, y[, s])` with y (and s) numbers written in the code, c = y * s
    nonzero: the slope reads c * x ** (y - 1)."""
    def number(c):
        if isinstance(c, ast.UnaryOp) and isinstance(c.op, ast.USub) and isinstance(c.operand, ast.Constant):
            c = c.operand if type(c.operand.value) in (int, float) else c
            return -c.value if isinstance(c, ast.Constant) else None
        return c.value if isinstance(c, ast.Constant) and type(c.value) in (int, float) else None
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "rt.power_slope" and 2 <= len(node.args) <= 3 \
            and not node.keywords:
        y = number(node.args[1])
        s = number(node.args[2]) if len(node.args) == 3 else 1
        if y is not None and s is not None and y * s != 0:
            return node.args[0], ast.Constant(y), ast.Constant(y * s)
    return None


def bound_mapping(rule: Rule, bound: dict) -> dict[str, ast.AST]:
    """Parameter name -> argument AST, with defaults filled in for parameters not passed."""
    out = {}
    for p, param in rule.signature.parameters.items():
        if p in bound:
            v = bound[p]
            out[p] = v if isinstance(v, ast.AST) else (ast.Tuple(list(v), ast.Load()) if isinstance(v, tuple)
                                                       else ast.Constant(None))
        elif param.default is not param.empty:
            out[p] = ast.Constant(param.default)
        elif param.kind == param.VAR_POSITIONAL:      # no items passed: an empty tuple
            out[p] = ast.Tuple([], ast.Load())
    return out


def param_of(key: str | tuple, mapping: dict[str, ast.AST]) -> tuple[str, dict[str, ast.AST]]:
    """The rule parameter an operand key names, with `k` bound to the position for *args items."""
    if isinstance(key, tuple):
        mapping = dict(mapping, k=ast.Constant(key[1]))
        return key[0], mapping
    return key, mapping


def primal_statement(op: Op, kind=None) -> ast.stmt:
    """The statement as the generated code runs it: as written, or through the rule's primal
    template (`A @ X` runs as `rt.matmul(A, X)`, which sends a sparse A to the compiled kernel).
    `kind(name)`: what the kinds pass makes sure of that name's value here (None: nothing known).
    A rule whose primal template serves sparse operands only (`primal_sparse`), or an index that
    may be an array only (`primal_array_index`), then keeps the statement as written."""
    if op.kind is OpKind.ASSIGN and op.rule is not None and op.rule.primal is not None:
        if kind is not None and (op.rule.primal_sparse and all_dense(op, kind)
                                 or op.rule.primal_array_index and _int(op.bound.get("idx"), kind)):
            return ast_copy(op.node)
        mapping = bound_mapping(op.rule, op.bound)
        if op.rule.primal_when is None or op.rule.primal_when(mapping):
            return ast.Assign(targets=[N(op.target, True)], value=instantiate(op.rule.primal, mapping))
    return ast_copy(op.node)


def all_dense(op: Op, kind) -> bool:
    """Is every name among op's operands sure to hold a dense value (kind(name): its Kind)?"""
    return all(isinstance(a, ast.AST) for a in op.bound.values()) and \
        all(kind(n.id).dense for a in op.bound.values() for n in ast.walk(a) if isinstance(n, ast.Name))


def _int(idx, kind) -> bool:
    """Is the index an int (a literal, or a name the kinds pass knows holds a Python int)?"""
    if isinstance(idx, ast.Constant):
        return type(idx.value) is int
    if isinstance(idx, ast.Name):
        k = kind(idx.id)
        return k.cat is Cat.PY and k.dtype == "l"
    return False
