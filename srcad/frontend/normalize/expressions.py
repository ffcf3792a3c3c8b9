"""Expressions: a nested expression becomes statements that compute its parts into fresh
temporaries, and one operation on atoms (names and constants). Indices stay whole (they are never
differentiated, but calls in them are hoisted); comparisons and boolean logic stay whole (they
carry no derivative); conditional expressions become if statements; branch and loop tests
become names."""
import ast

from ...rules.fact_values import InPlace
from ...rules.registry import FactSet, facts
from ...syntax import N as name, assign
from .names import _constants
from .nodes import _has_call, _is_atom, _loc

_INACTIVE_EXPR = (ast.Compare, ast.BoolOp, ast.JoinedStr, ast.Set, ast.FormattedValue)
# methods that change a list or dict in place: as values (`v = d.pop(k)`) they are not differentiated
# (facts declared in the registry, rules/numpy_rules.py)
_IN_PLACE = FactSet("inplace", InPlace.CONTAINER, methods=True)


class Expressions:
    """Expressions as one operation on atoms (mixed into Normalizer); calls are `Calls.call`'s."""

    def atom(self, expr: ast.expr, hint: str = "t") -> tuple[list[ast.stmt], ast.expr]:
        """(statements, atom): expr computed into a fresh temporary unless it is already an atom."""
        if _is_atom(expr) or self.is_global_ref(expr):
            return [], expr
        stmts, rhs = self.flat(expr, hint)
        if isinstance(rhs, ast.Name):
            return stmts, rhs
        t = self.temp(self.namer.describe(rhs, hint))
        return stmts + [_loc(assign(t, rhs), expr)], name(t)

    def atoms(self, exprs: list[ast.expr], hint: str) -> tuple[list[ast.stmt], list[ast.expr]]:
        stmts, out = [], []
        for e in exprs:
            s, a = self.atom(e, hint)
            stmts += s
            out.append(a)
        return stmts, out

    def index(self, sl: ast.expr, hint: str = "idx") -> tuple[list[ast.stmt], ast.expr]:
        """Subscript indices stay whole (they are never differentiated), but calls are hoisted."""
        if not _has_call(sl):
            return [], sl
        if isinstance(sl, ast.Tuple):
            stmts, elts = [], []
            for e in sl.elts:
                s, a = self.index(e)
                stmts += s
                elts.append(a)
            return stmts, ast.Tuple(elts=elts, ctx=ast.Load())
        if isinstance(sl, ast.Slice):
            stmts, parts = [], []
            for p in (sl.lower, sl.upper, sl.step):
                s, a = self.index(p) if p is not None else ([], None)
                stmts += s
                parts.append(a)
            return stmts, ast.Slice(*parts)
        t = self.temp(hint)
        return [_loc(assign(t, sl), sl)], name(t)

    def _subscript_call(self, value):
        """`np.r_[...]`: an object the registry declares applied by subscripting (items as arguments)."""
        if not self.is_global_ref(value):
            return False
        found, obj = self.resolve(value)
        entry = facts(obj) if found else None
        return entry is not None and entry.subscript

    def items(self, sl, hint):
        """The items of `np.r_[a, b + 1, 0:3]` as atoms (slices and strings kept whole)."""
        if isinstance(sl, ast.Tuple):
            stmts, elts = [], []
            for e in sl.elts:
                s, a = ([], e) if isinstance(e, ast.Slice) else self.atom(e, hint)
                stmts += s
                elts.append(a)
            return stmts, ast.Tuple(elts=elts, ctx=ast.Load())
        return ([], sl) if isinstance(sl, ast.Slice) else self.atom(sl, hint)

    def flat(self, e: ast.expr, hint: str = "t") -> tuple[list[ast.stmt], ast.expr]:
        """(statements, rhs): rhs is one operation on atoms (or an inactive expression kept whole)."""
        if _is_atom(e) or self.is_global_ref(e) and not isinstance(e, ast.Call):
            return [], e
        if isinstance(e, _INACTIVE_EXPR) or isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return [], e
        if isinstance(e, ast.BinOp):
            s1, a = self.atom(e.left, hint)
            s2, b = self.atom(e.right, hint)
            if isinstance(e.op, ast.Add) and (self._shown_sequence(e.left) or self._shown_sequence(e.right)):
                # `xs + [v]` joins lists: rt.concat's adjoint splits the cotangent between them
                return s1 + s2, _loc(ast.Call(self.runtime_helper("concat"), [a, b], []), e)
            if isinstance(e.op, ast.Mult):
                # `[v] * n` repeats a list: rt.repeat's adjoint adds the copies' cotangents up
                for seq, n, node in ((a, b, e.left), (b, a, e.right)):
                    if self._shown_sequence(node) and not _constants(node):
                        return s1 + s2, _loc(ast.Call(self.runtime_helper("repeat"), [seq, n], []), e)
            return s1 + s2, _loc(ast.BinOp(a, e.op, b), e)
        if isinstance(e, ast.UnaryOp):
            s, a = self.atom(e.operand, hint)
            return s, _loc(ast.UnaryOp(e.op, a), e)
        if isinstance(e, ast.Attribute):
            s, a = self.atom(e.value, hint)
            return s, _loc(ast.Attribute(a, e.attr, ast.Load()), e)
        if isinstance(e, ast.Subscript):
            s1, a = self.atom(e.value, hint)
            s2, sl = self.index(e.slice) if not self._subscript_call(e.value) else self.items(e.slice, hint)
            return s1 + s2, _loc(ast.Subscript(a, sl, ast.Load()), e)
        if isinstance(e, (ast.Tuple, ast.List)):
            s, elts = self.atoms(e.elts, hint)
            return s, _loc(type(e)(elts=elts, ctx=ast.Load()), e)
        if isinstance(e, (ast.ListComp, ast.GeneratorExp, ast.DictComp)):
            return self.comprehension(e, hint)
        if isinstance(e, ast.Dict):
            return self.dict_display(e, hint)
        if isinstance(e, ast.IfExp):
            t = self.temp(hint)
            s0, c = self.condition(e.test)
            b1, v1 = self.flat(e.body, hint)
            b2, v2 = self.flat(e.orelse, hint)
            node = _loc(ast.If(c, b1 + [_loc(assign(t, v1), e)], b2 + [_loc(assign(t, v2), e)]), e)
            return s0 + [node], name(t)
        if isinstance(e, ast.Call):
            if self._local_method(e, _IN_PLACE) and not (e.func.attr == "pop" and not e.args):
                self.fail(e, f"the in-place method `{self.parsed.text(e.func)}(...)` used as a value",
                          "read what you need first (`v = d[key]`), then build a new dict or list "
                          "without it instead of changing this one")
            return self.call(e, hint)
        self.fail(e, f"the expression {type(e).__name__}")

    def _local_method(self, e, names):
        """Is e a call of one of these methods on a local value (not on a module)?"""
        return isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in names \
            and not self.is_global_ref(e.func)

    def condition(self, test: ast.expr) -> tuple[list[ast.stmt], ast.expr]:
        """A branch or loop test as a name (the test itself is never differentiated)."""
        if isinstance(test, ast.Name):
            return [], test
        s, t = [], test
        if _has_call(test) and not isinstance(test, _INACTIVE_EXPR):
            s, t = self.flat(test, "cond")
        c = self.temp("cond")
        return s + [_loc(assign(c, t), test)], name(c)
