"""fence: reject, before any code runs, every construct srcad does not support."""
import ast

from ..errors import UnsupportedSyntaxError
from .parse import Parsed

_REJECT = {
    ast.Try: ("`try` statements", "move the error handling outside the differentiated function"),
    ast.With: ("`with` statements", "move the context manager outside the differentiated function"),
    ast.AsyncWith: ("`async with`", ""),
    ast.AsyncFor: ("`async for`", ""),
    ast.Await: ("`await`", ""),
    ast.Yield: ("`yield` (generators)", "return a list or an array instead"),
    ast.YieldFrom: ("`yield from` (generators)", "return a list or an array instead"),
    ast.Global: ("`global` declarations", "pass the value as an argument and return the new value"),
    ast.Nonlocal: ("`nonlocal` declarations", "pass the value as an argument and return the new value"),
    ast.Lambda: ("`lambda`", "define the function with def at module level; srcad transforms it too"),
    ast.SetComp: ("set comprehensions", "write a for loop"),
    ast.Delete: ("`del`", "let the name go out of scope, or assign None"),
    ast.ClassDef: ("class definitions inside a differentiated function", "define the class at module level"),
    ast.AsyncFunctionDef: ("async functions", ""),
    ast.NamedExpr: ("the walrus operator `:=`", "assign in a separate statement"),
    ast.Import: ("`import` inside the function", "import at module level"),
    ast.ImportFrom: ("`import` inside the function", "import at module level"),
    ast.Match: ("`match` statements", "use if/elif/else"),
    ast.Starred: ("starred expressions (`*args`)", "pass the arguments one by one"),
}


class _Fence(ast.NodeVisitor):
    """The fence pass: walks the user's syntax tree and raises at the first construct srcad
    does not support.

    Input: a parsed function's tree (`Parsed.tree`), exactly as the user wrote it.
    Output: none; the tree is not changed.
    Invariant: after it returns, the tree holds only constructs the later passes handle (no
    try/with/yield/async, no attribute or nested-subscript targets, no loop `else`, nested
    defs one level deep without decorators or *args)."""

    def __init__(self, parsed):
        self.parsed = parsed

    def fail(self, node, construct, hint=""):
        raise UnsupportedSyntaxError(construct, *self.parsed.where(node), hint=hint)

    def generic_visit(self, node):
        for cls, (what, hint) in _REJECT.items():
            if isinstance(node, cls):
                self.fail(node, what, hint)
        if isinstance(node, ast.FunctionDef):
            a = node.args
            if node.decorator_list or a.vararg or a.kwarg or a.posonlyargs:
                self.fail(node, "a nested function with decorators, *args or **kwargs",
                          "define the function at module level; calls to it are transformed too")
            if any(isinstance(n, (ast.FunctionDef, ast.Lambda)) for b in node.body for n in ast.walk(b)):
                self.fail(node, "nested function definitions more than one level deep",
                          "define the function at module level; calls to it are transformed too")
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and any(g.is_async for g in node.generators):
            self.fail(node, "async comprehensions")
        if isinstance(node, (ast.For, ast.While)) and node.orelse:
            self.fail(node, f"`{type(node).__name__.lower()} ... else`", "use a flag variable instead")
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                self._check_target(t)
        super().generic_visit(node)

    def _check_target(self, t):
        if isinstance(t, ast.Attribute):
            self.fail(t, "assignment to an attribute (`obj.attr = ...`)",
                      "return the new value instead of storing it on an object")
        if isinstance(t, ast.Subscript) and not isinstance(t.value, ast.Name):
            self.fail(t, "assignment into a nested subscript (`y[i][j] = v`)", "write y[i, j] = v")
        if isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                self._check_target(e)


def fence(parsed: Parsed) -> None:
    """Raise UnsupportedSyntaxError for the first unsupported construct in the function."""
    fn = parsed.tree
    a = fn.args
    if a.vararg or a.kwarg or a.posonlyargs:
        raise UnsupportedSyntaxError("`*args`, `**kwargs` or positional-only parameters in a differentiated "
                                     "function", *parsed.where(fn), hint="name every parameter")
    for stmt in fn.body:
        _Fence(parsed).visit(stmt)
