"""fold: literal arithmetic (`2 * 0.5` -> `1.0`, `not True` -> `False`), a negation added or
subtracted written as the operator a person would use (`a + -b` -> `a - b`, `a - -b` -> `a + b`,
`-a + b` -> `b - a`: the same IEEE operations), and `if <literal>:` / `while False:` replaced by
the branch that runs."""
import ast

from .nodes import _blocks


_FOLD = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
         ast.Div: lambda a, b: a / b}
_NUM = (int, float)


class Fold:
    """Constant folding of a block and the blocks nested in it (mixed into Cleanup)."""

    def _fold_block(self, block):
        folder = _Folder()
        out = []
        for st in block:
            for field in ("value", "test", "iter"):
                e = getattr(st, field, None)
                if isinstance(e, ast.expr) and not isinstance(e, (ast.Name, ast.Constant)) and _foldable(e):
                    setattr(st, field, folder.visit(e))
            if isinstance(st, ast.Assign):      # index expressions of targets
                for t in st.targets:
                    if not isinstance(t, ast.Name) and _foldable(t):
                        folder.visit(t)
            for sub in _blocks(st):
                folder.folds += self._fold_block(sub)
            if isinstance(st, ast.If) and isinstance(st.test, ast.Constant):
                out += st.body if st.test.value else st.orelse
                folder.folds += 1
                continue
            if isinstance(st, ast.While) and isinstance(st.test, ast.Constant) and not st.test.value:
                out += st.orelse
                folder.folds += 1
                continue
            out.append(st)
        block[:] = out
        return folder.folds


def _negation(e):
    """Is e `-x` for an x that is not a literal (a negative literal is folded as a number), or a
    product or quotient whose leftmost factor is one (`-a * b / c`)?"""
    while type(e) is ast.BinOp and type(e.op) in (ast.Mult, ast.Div):
        e = e.left
    return type(e) is ast.UnaryOp and type(e.op) is ast.USub and type(e.operand) is not ast.Constant


def _negated(e):
    """e without its leading minus (e a `_negation`): -(-a * b / c) is a * b / c, exactly (IEEE
    rounding is symmetric in sign)."""
    if type(e) is ast.BinOp:
        return ast.copy_location(ast.BinOp(_negated(e.left), e.op, e.right), e)
    return e.operand


def _foldable(e):
    """Does e hold an operator or conditional applied to literals only (cheap test before folding)?"""
    stack = [e]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is ast.BinOp and type(n.left) is ast.Constant and type(n.right) is ast.Constant:
            return True
        if t is ast.BinOp and type(n.op) in (ast.Add, ast.Sub) and (_negation(n.right) or _negation(n.left)):
            return True
        if t is ast.UnaryOp and type(n.operand) is ast.Constant:
            return True
        if t is ast.BoolOp or t is ast.IfExp and type(n.test) is ast.Constant:
            return True
        if t is ast.Name or t is ast.Constant:
            continue
        for f in n._fields:
            v = getattr(n, f, None)
            if type(v) is list:
                stack.extend(x for x in v if isinstance(x, ast.AST))
            elif isinstance(v, ast.AST):
                stack.append(v)
    return False


class _Folder(ast.NodeTransformer):
    """Literal arithmetic folded: numbers, `not`/`and`/`or` of literals, `x if True else y`;
    `folds` counts the rewrites."""

    def __init__(self):
        self.folds = 0

    def visit(self, node):
        new = super().visit(node)
        if new is not node:
            self.folds += 1
        return new

    def visit_BinOp(self, node):
        self.generic_visit(node)
        a, b = node.left, node.right
        if isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and type(a.value) in _NUM \
                and type(b.value) in _NUM and type(node.op) in _FOLD:
            if isinstance(node.op, ast.Div) and b.value == 0:
                return node
            return ast.Constant(_FOLD[type(node.op)](a.value, b.value))
        if type(node.op) in (ast.Add, ast.Sub) and _negation(b):
            op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
            return ast.copy_location(ast.BinOp(a, op, _negated(b)), node)
        if isinstance(node.op, ast.Add) and _negation(a) and type(a) is ast.UnaryOp:
            return ast.copy_location(ast.BinOp(b, ast.Sub(), a.operand), node)
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        v = node.operand
        if isinstance(v, ast.Constant):
            if isinstance(node.op, ast.Not) and type(v.value) in (bool, type(None)) + _NUM:
                return ast.Constant(not v.value)
            if isinstance(node.op, ast.USub) and type(v.value) in _NUM:
                return ast.Constant(-v.value)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if all(isinstance(v, ast.Constant) and type(v.value) in (bool, type(None)) for v in node.values):
            vals = [v.value for v in node.values]
            out = vals[0]
            for v in vals[1:]:
                out = (out and v) if isinstance(node.op, ast.And) else (out or v)
            return ast.Constant(out)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant) and type(node.test.value) in (bool, type(None)):
            return node.body if node.test.value else node.orelse
        return node

    def visit_Lambda(self, node):
        return node


def _fold(e):
    return _Folder().visit(e)
