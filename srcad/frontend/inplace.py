"""inplace: in-place results written as what they are, subscript writes.

`np.f(..., out=y)` becomes `y[...] = np.f(...)` (and `r = np.f(..., out=y)` also `r = y`),
`np.copyto(y, v)` becomes `y[...] = v`, `y.fill(v)` becomes `y[...] = v` and a call the registry says
is `written_as` a helper, `np.add.at(y, idx, v)`, becomes `y[...] = rt.add_at_value(y, idx, v, 'add')`
(repeated indices accumulate); a target that is a
slice of a name (`out=y[:2]`) is written as `y[:2] = ...`. The alias analysis (aliases.py) then
treats them like any other subscript write, and the later passes differentiate them as such.
"""
import ast
from typing import TYPE_CHECKING

import numpy as np

from ..errors import UnsupportedSyntaxError
from ..rules.registry import facts

if TYPE_CHECKING:
    from .parse import Parsed


def _text(node):
    return ast.unparse(node)


def _loc(new, old):
    """new with every node placed at old's position (rewritten code keeps the user's line)."""
    for n in ast.walk(new):
        n.lineno, n.col_offset = old.lineno, old.col_offset
        n.end_lineno = getattr(old, "end_lineno", old.lineno)
        n.end_col_offset = getattr(old, "end_col_offset", old.col_offset)
    return new


def _whole(target):
    """`y[...]` as an assignment target."""
    return ast.Subscript(ast.Name(target.id, ast.Load()), ast.Constant(Ellipsis), ast.Store())


class _Desugar:
    """The in-place desugaring pass (see the module docstring).

    Input: a function body as the user wrote it (fenced).
    Output: the body with `out=`, `np.copyto` and `.fill` written as subscript writes.
    Invariant: statements keep the user's position; nothing else changes."""

    def __init__(self, parsed, locals_):
        self.parsed, self.locals = parsed, locals_

    def fail(self, node, construct, hint):
        raise UnsupportedSyntaxError(construct, *self.parsed.where(node), hint=hint)

    def resolve(self, f):
        if self.parsed.is_global_ref(f, self.locals):
            return self.parsed.try_resolve(f, self.locals)
        return False, None

    def target_of(self, node, t, what):
        """`y` -> `y[...]`; `y[a:b]` -> itself: where an in-place result goes."""
        if isinstance(t, ast.Tuple) and len(t.elts) == 1:
            t = t.elts[0]
        if isinstance(t, ast.Name):
            return _whole(t)
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            return ast.Subscript(ast.Name(t.value.id, ast.Load()), t.slice, ast.Store())
        self.fail(node, f"{what} into `{_text(t)}`", "write into a named array: `y[...] = ...`")

    def stmt(self, st):
        call = st.value if isinstance(st, (ast.Expr, ast.Assign)) else None
        if not isinstance(call, ast.Call):
            return [st]
        if isinstance(st, ast.Assign) and not (len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
            return [st]
        out = [kw for kw in call.keywords if kw.arg == "out"]
        if out and not (isinstance(out[0].value, ast.Constant) and out[0].value.value is None):
            if any(kw.arg == "where" for kw in call.keywords):
                self.fail(call, f"`out=` with `where=` (`{_text(call)}`)",
                          "write `y[...] = np.where(mask, np.f(...), y)`")
            target = self.target_of(call, out[0].value, "`out=` writing")
            new_call = ast.Call(call.func, call.args, [kw for kw in call.keywords if kw.arg != "out"])
            res = [_loc(ast.Assign([target], new_call), st)]
            if isinstance(st, ast.Assign):    # r = np.f(..., out=y): r is y
                whole = isinstance(target.slice, ast.Constant) and target.slice.value is Ellipsis
                src = ast.Name(target.value.id, ast.Load()) if whole else \
                    ast.Subscript(ast.Name(target.value.id, ast.Load()), target.slice, ast.Load())
                res.append(_loc(ast.Assign([st.targets[0]], src), st))
            return res
        if not isinstance(st, ast.Expr):
            return [st]
        found, obj = self.resolve(call.func)
        if found and obj is np.copyto and len(call.args) == 2:
            if any(kw.arg == "where" for kw in call.keywords):
                self.fail(call, f"`np.copyto` with `where=` (`{_text(call)}`)",
                          "write `y[...] = np.where(mask, v, y)`")
            return [_loc(ast.Assign([self.target_of(call, call.args[0], "`np.copyto`")], call.args[1]), st)]
        written = getattr(facts(obj), "written_as", None) if found else None
        if written and len(call.args) == 3 and not call.keywords:
            # np.add.at(y, idx, v): y[...] = rt.add_at_value(y, idx, v, 'add'), repeated indices accumulated
            helper, option = written
            value = ast.Call(self.runtime_helper(helper), [call.args[0], call.args[1], call.args[2],
                                                           ast.Constant(option)], [])
            return [_loc(ast.Assign([self.target_of(call, call.args[0], f"`{_text(call.func)}`")], value), st)]
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr == "fill" and len(call.args) == 1 and not call.keywords \
                and not self.parsed.is_global_ref(f.value, self.locals):
            return [_loc(ast.Assign([self.target_of(call, f.value, "`.fill`")], call.args[0]), st)]
        return [st]

    def runtime_helper(self, attr):
        """`rt.<attr>` as user-level code names it (a name of its own where `rt` means something else)."""
        from .. import runtime
        if "rt" not in self.locals and self.parsed.env.setdefault("rt", runtime) is runtime:
            return ast.Attribute(ast.Name("rt", ast.Load()), attr, ast.Load())
        own = f"_srcad_{attr}"
        self.parsed.env[own] = getattr(runtime, attr)
        return ast.Name(own, ast.Load())

    def block(self, stmts):
        out = []
        for st in stmts:
            if isinstance(st, (ast.If, ast.For, ast.While, ast.FunctionDef)):
                st.body = self.block(st.body)
            if isinstance(st, (ast.If, ast.For, ast.While)):
                st.orelse = self.block(st.orelse)
            out += self.stmt(st)
        return out


def desugar_inplace(parsed: "Parsed", fn: ast.FunctionDef) -> None:
    """Rewrite the function's in-place result forms as subscript writes (see the module docstring)."""
    locals_ = {a.arg for a in fn.args.args + fn.args.kwonlyargs} | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    fn.body = _Desugar(parsed, locals_).block(fn.body)
