"""The alias analysis of expressions: the objects an expression's value may share memory with,
and what a call does (numpy functions by the registry's facts, user functions by their
summaries)."""
import ast
import builtins
import inspect
import types

from ..callees import INPLACE_METHODS as _INPLACE_METHODS, is_inplace_func, is_user_function, member as _member
from ..inplace import _loc, _text
from .domain import (ITEM, VIEW, WHOLE, _ADDS_ITEMS, _ITEM_METHODS, _PLAIN_ATTRS, _Stale, _UNBOUND_ARGS, _VIEW_FUNCS,
                     _VIEW_METHODS, _basic_index, _names_loaded)


class Expressions:
    """Expressions and calls (mixed into _Aliases)."""

    def is_local(self, name):
        return name in self.locals

    def resolve(self, func):
        if self.parsed.is_global_ref(func, self.locals):
            return self.parsed.try_resolve(func, self.locals)
        return False, None

    def check_reads(self, node, S):
        for n in _names_loaded(node):
            s = S.stale.get(n.id)
            if s is None or not self.strict:
                continue
            construct = f"{s.construct}, while `{n.id}` is read again (line {n.lineno})"
            if s.guard is not None:     # decided at run time: is the name written an array, seen by n?
                g = self.guards.setdefault(id(s.node), (s.guard, construct, s.hint, s.node, []))
                if n.id not in g[4]:
                    g[4].append(n.id)
                continue
            self.fail(s.node, construct, s.hint)

    def ev(self, e, S):
        """The objects the value of `e` may refer to (reads are checked by the caller)."""
        if e is None or isinstance(e, (ast.Constant, ast.JoinedStr, ast.Compare)):
            return frozenset()
        if isinstance(e, ast.Name):
            if self.is_local(e.id):
                return S.pts.get(e.id, frozenset())
            return frozenset({(("global", e.id), WHOLE)})
        if isinstance(e, ast.Attribute):
            if self.parsed.is_global_ref(e, self.locals):
                return frozenset({(("global", _text(e)), WHOLE)})
            base = self.ev(e.value, S)
            if e.attr in _PLAIN_ATTRS:
                return frozenset()
            return frozenset((b, VIEW if k != ITEM else ITEM) for b, k in base)
        if isinstance(e, ast.Subscript):
            base = self.ev(e.value, S)
            self.ev(e.slice, S)
            if _basic_index(e.slice) or any(k == ITEM for _, k in base):
                return self.parts(base)
            return S.alloc((id(e), None))
        if isinstance(e, ast.Call):
            return self.call(e, S)
        if isinstance(e, ast.IfExp):
            self.ev(e.test, S)
            return self.ev(e.body, S) | self.ev(e.orelse, S)
        if isinstance(e, ast.BoolOp):
            out = frozenset()
            for v in e.values:
                out |= self.ev(v, S)
            return out
        if isinstance(e, (ast.BinOp, ast.UnaryOp)):
            parts = self.ev(e.left, S) | self.ev(e.right, S) if isinstance(e, ast.BinOp) else self.ev(e.operand, S)
            return S.alloc((id(e), None)) | frozenset((b, ITEM) for b, k in parts if k == ITEM)
        if isinstance(e, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            parts = frozenset()
            for v in (e.values if isinstance(e, ast.Dict) else e.elts):
                parts |= self.ev(v, S)
            return self.container(e, S, parts)
        if isinstance(e, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            parts = frozenset()
            for n in _names_loaded(e):
                if self.is_local(n.id):
                    parts |= S.pts.get(n.id, frozenset())
            return self.container(e, S, parts)
        if isinstance(e, ast.Slice):
            for p in (e.lower, e.upper, e.step):
                self.ev(p, S)
            return frozenset()
        return frozenset()

    def container(self, e, S, items):
        """A new list, tuple, dict or set holding `items`."""
        self.containers.add((id(e), None))
        return S.alloc((id(e), None)) | frozenset((b, ITEM) for b, _ in items)

    def parts(self, refs):
        """What an item of a value may refer to: a view of an array, an item of a container."""
        return frozenset((b, VIEW) for b, k in refs
                         if k == ITEM or not (b[0] == "site" and b[1] in self.containers))

    def call(self, e, S):
        f = e.func
        for kw in e.keywords:
            if kw.arg == "out" and not (isinstance(kw.value, ast.Constant) and kw.value.value is None):
                self.fail(e, f"`out=` inside a larger expression (`{_text(e)}`)",
                          "call it as a statement of its own (`np.f(..., out=y)`), or assign the result")
        args = [self.ev(a, S) for a in e.args]
        kws = {kw.arg: self.ev(kw.value, S) for kw in e.keywords}
        everything = frozenset().union(*args, *kws.values())
        found, obj = self.resolve(f)
        if found and isinstance(f, ast.Attribute) and f.attr in _INPLACE_METHODS and \
                not isinstance(self.resolve(f.value)[1], types.ModuleType):
            found = False       # `BUF.append(v)` on a module-level list: a method of a value
        if found:
            if is_inplace_func(obj) and e.args:
                self.write(S, e.args[0], args[0], f"`{_text(e)}`")
                return frozenset()
            if is_user_function(obj):
                return self.user_call(e, S, self.summary(obj), obj=obj)
            if obj in (builtins.list, builtins.tuple, builtins.dict, builtins.sorted):
                return self.container(e, S, self.parts(everything))
            if _member(obj, _VIEW_FUNCS):
                return S.alloc((id(e), None)) | frozenset((b, VIEW) for b, _ in everything)
            return S.alloc((id(e), None))
        if isinstance(f, ast.Name) and f.id in self.nested:
            captured, summary = self.nested[f.id]     # the call reads the outer names it captures
            self.check_reads(ast.Tuple([_loc(ast.Name(c, ast.Load()), e) for c in captured], ast.Load()), S)
            return self.user_call(e, S, summary, obj=None, captured=captured)
        if isinstance(f, ast.Attribute):        # a method of a local value
            recv = self.ev(f.value, S)
            if f.attr in _INPLACE_METHODS:
                if f.attr in _ADDS_ITEMS:
                    self.add_items(S, f.value, recv, everything)
                else:
                    self.write(S, f.value, recv, f"`{_text(e)}`")
            if f.attr in _ITEM_METHODS:
                return S.alloc((id(e), None)) | self.parts(recv)
            if f.attr in _VIEW_METHODS or f.attr == "astype" and any(
                    kw.arg == "copy" for kw in e.keywords):
                return S.alloc((id(e), None)) | frozenset((b, VIEW) for b, _ in recv)
            if f.attr == "copy":     # a list's copy holds the same items
                return S.alloc((id(e), None)) | frozenset((b, ITEM) for b, k in recv if k == ITEM)
            return S.alloc((id(e), None))
        return S.alloc((id(e), None)) | frozenset((b, VIEW) for b, _ in everything)

    def user_call(self, e, S, summary, obj, captured=()):
        """A call of a user function: its result may be (a view of) an argument; a write into a
        parameter writes into the caller's object."""
        bound = self.bind_args(obj, e) if obj is not None else self.bind_nested(e)
        out = S.alloc((id(e), None))
        for p, kind in summary.returns.items():
            arg = bound.get(p)
            if arg is None and p in captured:
                arg = ast.Name(p, ast.Load())
            if arg is None:
                if bound is _UNBOUND_ARGS:
                    out |= frozenset((b, VIEW) for a in e.args for b, _ in self.ev(a, S))
                continue
            out |= frozenset((b, kind if k == WHOLE else VIEW) for b, k in self.ev(arg, S))
        for p, (node, construct, maybe) in summary.writes.items():
            arg = bound.get(p) if bound is not _UNBOUND_ARGS else None
            implicit = arg is None and p in captured
            if implicit:
                arg = ast.Name(p, ast.Load())
            if arg is None or isinstance(arg, ast.Constant):
                continue
            refs = self.ev(arg, S)
            if all(b[0] == "site" and b[1][0] == id(arg) for b, _ in refs):
                continue        # a temporary no name holds: `g(y * 2.0)`
            fname = _text(e.func)
            where = f"{self.callee_file(obj)}:{getattr(node, 'lineno', 0)}"
            whose = f"`{p}`, a variable of the enclosing function" if implicit else f"its parameter `{p}`"
            what = f"`{_text(e)}`, which writes into {whose} ({construct} at {where})"
            hint = (f"srcad passes values into calls, not memory: have `{fname}` return the new value and "
                    f"assign it (`{_text(arg)} = {fname}(...)`), or pass a copy")
            guard = arg.id if maybe and isinstance(arg, ast.Name) else None
            blocks = self.note_write(refs, None, what)
            for m, mrefs in S.pts.items():
                if any(b in blocks for b, _ in mrefs) and m not in S.stale:
                    S.stale[m] = _Stale(self.current, f"{what}, changing `{m}`", hint, guard)
        return out

    def callee_file(self, obj):
        if obj is None:
            return self.parsed.filename
        try:
            return inspect.getsourcefile(obj) or "?"
        except TypeError:
            return "?"

    def bind_args(self, obj, e):
        try:
            b = inspect.signature(obj).bind(*e.args, **{k.arg: k.value for k in e.keywords if k.arg})
        except (TypeError, ValueError):
            return _UNBOUND_ARGS
        return dict(b.arguments)

    def bind_nested(self, e):
        name = e.func.id
        node = self.nested_defs.get(name)
        if node is None:
            return _UNBOUND_ARGS
        names = [a.arg for a in node.args.args]
        out = dict(zip(names, e.args))
        out.update({k.arg: k.value for k in e.keywords if k.arg})
        return out
