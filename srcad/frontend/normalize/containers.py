"""Lists and dicts built by loops: comprehensions (and generator expressions) become a loop that
appends to a fresh list or writes items into a fresh dict; dict displays, `dict(...)`, `d.get`,
`d.values()`/`d.items()` and `map(f, xs)` are written with those, so derivatives flow through
subscripts."""
import ast
import builtins

from ...rules.fact_values import ResultKind
from ...rules.registry import FactSet
from ...syntax import N as name, assign, ast_copy
from .nodes import _loc

# d.keys(), d.values(), d.items() (facts declared in the registry, rules/numpy_rules.py)
_DICT_VIEWS = FactSet("kind", ResultKind.DICT_VIEW, methods=True)


class Containers:
    """Comprehensions, dict displays and dict calls, map (mixed into Normalizer)."""

    def dict_display(self, e, hint):
        """{k: v, ...}: the values as atoms, the keys whole (keys are never differentiated). A
        display whose keys might repeat (one of them computed) becomes item assignments in order,
        so a repeated key's earlier value gets no derivative, as it has no effect."""
        if any(k is None for k in e.keys):
            self.fail(e, "`**` unpacking in a dict display", "add the items one by one: d[key] = value")
        consts = [k.value for k in e.keys if isinstance(k, ast.Constant)]
        if len(consts) != len(set(consts)):
            self.fail(e, "a dict display that names the same key twice", "write each key once")
        stmts = []
        if len(consts) == len(e.keys) or len(e.keys) == 1:
            keys = []
            for k in e.keys:
                s, k2 = self.index(k, "key")
                stmts += s
                keys.append(k2)
            s, vals = self.atoms(e.values, hint)
            return stmts + s, _loc(ast.Dict(keys, vals), e)
        out = self.temp(hint if hint != "t" else "items")
        self.locals.add(out)
        self.dicts.add(out)
        body = [_loc(assign(out, ast.Dict([], [])), e)]
        body += [_loc(ast.Assign([ast.Subscript(name(out), k, ast.Store())], v), e) for k, v in zip(e.keys, e.values)]
        return self.block(body), name(out)

    def dict_method(self, e, hint):
        """`d.get(k, default)` is `d[k] if k in d else default`; `d.values()` and `d.items()` are
        lists built by a loop over d's keys (subscripts, so derivatives flow through them);
        `d.keys()` has no derivative."""
        s, recv = self.atom(e.func.value, "mapping")
        attr = e.func.attr
        if attr == "get":
            if e.keywords or not 1 <= len(e.args) <= 2:
                self.fail(e, "this form of `.get`", "call d.get(key) or d.get(key, default)")
            s2, key = self.atom(e.args[0], "key")
            default = e.args[1] if len(e.args) == 2 else ast.Constant(None)
            test = ast.Compare(key, [ast.In()], [recv])
            s3, rhs = self.flat(_loc(ast.IfExp(test, ast.Subscript(recv, key, ast.Load()), default), e), hint)
            return s + s2 + s3, rhs
        if e.args or e.keywords:
            self.fail(e, f"`.{attr}(...)` with arguments", f"call .{attr}() without arguments")
        if attr == "keys":
            return s, _loc(ast.Call(ast.Attribute(recv, "keys", ast.Load()), [], []), e)
        k = self.temp("key")
        elt = ast.Subscript(recv, name(k), ast.Load())
        if attr == "items":
            elt = ast.Tuple([name(k), elt], ast.Load())
        keys = ast.Call(ast.Attribute(recv, "keys", ast.Load()), [], [])
        comp = _loc(ast.ListComp(elt, [ast.comprehension(name(k, True), keys, [], 0)]), e)
        s2, rhs = self.comprehension(comp, attr)
        return s + s2, rhs

    def dict_call(self, e, hint):
        """dict(), dict(a=..., b=...), dict(d) (a copy of a dict), dict(pairs) (a list, tuple, zip
        or .items() of (key, value) pairs) and dict(d_or_pairs, b=...) as displays, comprehensions
        and item writes."""
        if len(e.args) > 1 or any(kw.arg is None for kw in e.keywords):
            self.fail(e, "this form of `dict(...)`", "write a dict display {key: value, ...} or add items one by one")
        if not e.args:
            disp = ast.Dict([ast.Constant(kw.arg) for kw in e.keywords], [kw.value for kw in e.keywords])
            return self.flat(_loc(disp, e), hint)
        src = e.args[0]
        k, v = self.temp("key"), self.temp("value")
        if self._pairs(src):
            comp = ast.DictComp(name(k), name(v), [ast.comprehension(
                ast.Tuple([name(k, True), name(v, True)], ast.Store()), src, [], 0)])
        else:
            comp = ast.DictComp(name(k), ast.Subscript(src, name(k), ast.Load()),
                                [ast.comprehension(name(k, True),
                                                   ast.Call(ast.Attribute(src, "keys", ast.Load()), [], []), [], 0)])
        if not e.keywords:
            return self.flat(_loc(comp, e), hint)
        out = self.temp(hint if hint != "t" else "items")
        self.locals.add(out)
        self.dicts.add(out)
        body = [_loc(assign(out, comp), e)]
        body += [_loc(ast.Assign([ast.Subscript(name(out), ast.Constant(kw.arg), ast.Store())], kw.value), e)
                 for kw in e.keywords]
        return self.block(body), name(out)

    def _pairs(self, src):
        """Is src, the argument of dict(...), written as (key, value) pairs rather than a mapping?"""
        if isinstance(src, (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)):
            return True
        if isinstance(src, ast.Call) and isinstance(src.func, ast.Attribute) and src.func.attr == "items":
            return True
        if isinstance(src, ast.Call) and self.is_global_ref(src.func):
            found, obj = self.resolve(src.func)
            return found and obj in (builtins.zip, builtins.enumerate)
        return isinstance(src, ast.Name) and src.id in self.sequences

    def comprehension(self, e: ast.ListComp | ast.GeneratorExp | ast.DictComp, hint: str) -> tuple[list[ast.stmt], ast.expr]:
        """[elt for t in xs if c] (or a generator expression): a loop that appends to a fresh list.
        The comprehension's own names get fresh names, so they never touch the function's."""
        rename = {}
        for gen in e.generators:
            for t in ast.walk(gen.target):
                if isinstance(t, ast.Name):
                    rename.setdefault(t.id, self.temp(t.id))
        self.locals |= set(rename.values())

        class _Rename(ast.NodeTransformer):
            def visit_Name(self, node):
                return ast.copy_location(ast.Name(rename.get(node.id, node.id), node.ctx), node)
        out = self.temp(hint if hint != "t" else "items")
        self.locals.add(out)
        if isinstance(e, ast.DictComp):     # {k: v for ...}: a loop of item assignments
            self.dicts.add(out)
            body = [ast.Assign([ast.Subscript(name(out), _Rename().visit(ast_copy(e.key)), ast.Store())],
                               _Rename().visit(ast_copy(e.value)))]
        else:
            body = [ast.Expr(ast.Call(ast.Attribute(name(out), "append", ast.Load()),
                                      [_Rename().visit(ast_copy(e.elt))], []))]
        for gen in reversed(e.generators):
            for cond in reversed(gen.ifs):
                body = [ast.If(_Rename().visit(ast_copy(cond)), body, [])]
            body = [ast.For(_Rename().visit(ast_copy(gen.target)), _Rename().visit(ast_copy(gen.iter)), body, [])]
        empty = ast.Dict([], []) if isinstance(e, ast.DictComp) else ast.List([], ast.Load())
        stmts = [_loc(assign(out, empty), e)] + [_loc(b, e) for b in body]
        return self.block(stmts), name(out)

    def map_call(self, e, hint):
        """map(f, xs, ...): the list [f(x, ...) for x, ... in zip(xs, ...)], built by a loop that srcad differentiates; in a loop head, the loop runs over that list."""
        f, seqs = (e.args[0], e.args[1:]) if e.args else (None, [])
        if e.keywords or not seqs or any(isinstance(a, ast.Starred) for a in e.args):
            self.fail(e, "this form of map", "call map(f, xs) (or map(f, xs, ys)) with the function and the sequences")
        names = [f"item{k}" for k in range(len(seqs))]      # (renamed fresh by comprehension)
        elt = _loc(ast.Call(ast_copy(f), [name(n) for n in names], []), e)
        if len(seqs) == 1:
            target, it = name(names[0], True), seqs[0]
        else:
            target = ast.Tuple([name(n, True) for n in names], ast.Store())
            it = _loc(ast.Call(name("zip"), list(seqs), []), e)
        comp = ast.ListComp(elt, [ast.comprehension(target, it, [], 0)])
        return self.comprehension(_loc(comp, e), "map_items")
