"""Statements: each user statement becomes statements of the normal form (an assignment of one
operation on atoms, a subscript write, a branch, a loop, a jump, a return), each keeping the
user line it comes from. Tuple unpacking, augmented assignments and chained targets are written
out; a subscript write whose source may share memory with its target is guarded."""
import ast

from ...syntax import N as name, assign, ast_copy, index_expr
from .nodes import _keep_line, _loc


class Statements:
    """Statements as statements of the normal form (mixed into Normalizer); loops are `Loops`',
    nested defs `Functions`'."""

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out = []
        for st in stmts:
            out += self.stmt(st)
        return out

    def stmt(self, st: ast.stmt) -> list[ast.stmt]:
        meth = getattr(self, "s_" + type(st).__name__, None)
        if meth is None:
            self.fail(st, f"the statement {type(st).__name__}")
        return [_keep_line(n, st) for n in meth(st)]

    def s_Pass(self, st):
        return []

    def s_Expr(self, st):
        if isinstance(st.value, ast.Constant):
            return []                                    # docstring
        if isinstance(st.value, ast.Call):
            s, rhs = self.call(st.value, "t")
            return s + [ast.Expr(rhs)]
        return []

    def s_Assert(self, st):
        return [st]

    s_Raise = s_Assert

    def s_AnnAssign(self, st):
        return [] if st.value is None else self.s_Assign(ast.Assign([st.target], st.value))

    def s_Assign(self, st):
        targets = st.targets
        if len(targets) > 1:
            s, a = self.atom(st.value, "t")
            return s + sum((self.bind(t, a) for t in targets), [])
        return self.bind(targets[0], st.value)

    def bind(self, target: ast.expr, value: ast.expr) -> list[ast.stmt]:
        if isinstance(target, ast.Name):
            s, rhs = self.flat(value, target.id)
            return s + [assign(target.id, rhs)]
        if isinstance(target, ast.Subscript):
            s1, v = self.atom(value, target.value.id)
            s2, sl = self.write_index(target)
            guard = self._overlap_guard(target, value, sl, v)
            return s1 + s2 + guard + [assign(ast.Subscript(name(target.value.id), sl, ast.Store()), v)]
        if isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                self.fail(target, "starred unpacking (`a, *rest = ...`)")
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                # a, b = b, a + b: every right-hand side is evaluated before any name is rebound
                s, vals = [], []
                rebound = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
                for v in value.elts:
                    if isinstance(v, ast.Name) and v.id in rebound:
                        t = self.temp(v.id + "_old")
                        s.append(assign(t, v))
                        vals.append(name(t))
                    else:
                        s2, a = self.atom(v, "t")
                        s += s2
                        vals.append(a)
                return s + sum((self.bind(t, v) for t, v in zip(target.elts, vals)), [])
            s, a = self.atom(value, "t")
            if isinstance(value, (ast.Name, ast.Subscript, ast.Attribute)) and not self._shown_not_dict(value):
                # `k1, k2 = d` unpacks a dict's keys: a value whose type the code does not show
                # goes through rt.loop_sequence (a dict's keys, any other sequence itself)
                t = self.temp("packed")
                s.append(_loc(assign(t, ast.Call(self.runtime_helper("loop_sequence"), [a], [])), value))
                a = name(t)
            elif not isinstance(a, ast.Name) or a.id in self.params or any(
                    isinstance(e, ast.Name) and e.id == a.id for e in target.elts):
                t = self.temp("packed")
                s.append(assign(t, a))
                a = name(t)
            for k, elt in enumerate(target.elts):
                s += self.bind(elt, ast.Subscript(a, ast.Constant(k), ast.Load()))
            return s
        self.fail(target, f"assignment to `{self.parsed.text(target)}`", "assign to a plain name (or to name[index])")

    def write_index(self, target):
        """The index of a subscript write, computed once if it reads the array it writes (`y[y < 0] = 0`)."""
        sl = target.slice
        reads_target = any(isinstance(n, ast.Name) and n.id == target.value.id for n in ast.walk(sl))
        if reads_target or any(isinstance(n, (ast.Compare, ast.Subscript)) for n in ast.walk(sl)):
            s, sl2 = self.index(sl)
            t = self.temp("where" if isinstance(sl, ast.Compare) else "idx")
            return s + [_loc(assign(t, sl2), sl)], name(t)
        return self.index(sl)

    def s_AugAssign(self, st):
        t = st.target
        if isinstance(t, ast.Name):
            return self.bind(t, ast.BinOp(name(t.id), st.op, st.value))
        if isinstance(t, ast.Subscript):
            s0, sl = self.write_index(t)
            old = self.temp(t.value.id + "_part")
            s1, v = self.atom(st.value, "t")
            new = self.temp(t.value.id + "_part")
            return (s0 + [assign(old, ast.Subscript(name(t.value.id), sl, ast.Load()))] + s1
                    + [assign(new, ast.BinOp(name(old), st.op, v)),
                       assign(ast.Subscript(name(t.value.id), sl, ast.Store()), name(new))])
        self.fail(t, f"augmented assignment to {type(t).__name__}")

    def s_Return(self, st):
        if st.value is None:
            return [ast.Return(ast.Constant(None))]
        s, a = self.atom(st.value, "result")
        return s + [ast.Return(a)]

    def s_If(self, st):
        s, c = self.condition(st.test)
        return s + [ast.If(c, self.block(st.body), self.block(st.orelse))]

    def s_While(self, st):
        s, c = self.condition(st.test)
        again = [ast_copy(n) for n in s]    # the test is evaluated again after each iteration
        loop = ast.While(c, self.block(st.body) + again, [])
        loop.again = len(again)
        return s + [loop]

    def s_Break(self, st):
        return [st]

    s_Continue = s_Break

    def _overlap_guard(self, target, value, sl, v):
        """`rt.refuse_overlapping_write(y, idx, v, ...)` before `y[idx] = v` when v may be a view
        of y (a subscript or attribute of y, or a name some statement sets to one): NumPy copies
        such a source element by element when it does not see the overlap (`v[::2] = v[0:3]`),
        which srcad, differentiating values, does not follow; the guard refuses exactly then."""
        y = target.value.id

        def view_of_y(e):
            while isinstance(e, (ast.Subscript, ast.Attribute)):
                e = e.value
            return isinstance(e, ast.Name) and e.id == y and e is not value
        if not isinstance(v, ast.Name):
            return []
        direct = isinstance(value, (ast.Subscript, ast.Attribute)) and view_of_y(value.value)
        named = isinstance(value, ast.Name) and any(
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)
            and isinstance(n.value, (ast.Subscript, ast.Attribute)) and view_of_y(n.value.value)
            for n in ast.walk(self.parsed.tree))
        if not (direct or named):
            return []
        text = f"{ast.unparse(target)} = {ast.unparse(value)}"
        filename, line, col = self.parsed.where(target)
        args = [name(y), index_expr(ast_copy(sl)), name(v.id)] + [ast.Constant(c) for c in (
            f"`{text}`, a write whose source shares memory with its target in a way NumPy copies element "
            f"by element (a later element reads one this write already changed)", filename, line, col,
            f"if the source's values before the write are meant, copy it first: "
            f"`{ast.unparse(target)} = {ast.unparse(value)}.copy()`; else write the loop out")]
        return [_loc(ast.Expr(ast.Call(self.runtime_helper("refuse_overlapping_write"), args, [])), target)]
