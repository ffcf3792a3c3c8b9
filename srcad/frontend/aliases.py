"""aliases: which names may share memory, and what an in-place write does to the other names.

The passes after this one treat every name as a value: `y[i] = v` gives y a new value,
`z += x` rebinds z. Python agrees as long as no other name that is read later sees the object
written. This pass takes the fenced function (the user's syntax tree) and makes that hold, or
rejects the function before any code runs:

  * `np.f(..., out=y)`, `np.copyto(y, v)` and `y.fill(v)` become subscript writes `y[...] = ...`;
  * a write into an array that another name holds entirely (`z = y; z[0] = v`) is followed by
    rebinding that name (`y = z`); after `z += x` the rebinding is guarded by a run-time test,
    since `+=` updates an array in place but rebinds a name that holds a number;
  * any other name that may see the write (a view `v = y[:2]`, a list holding `y`, a name that
    is `y` on one branch only) is stale from then on, and reading it again is rejected with
    UnsupportedSyntaxError naming the write, the alias and the fix;
  * calling a user function that writes into one of its parameters (the caller's array) is
    rejected at the call: srcad passes values into calls, not memory;
  * writes into module-level objects and closure cells are recorded in `parsed.global_writes`;
    analyze rejects those that store a value carrying a derivative.

The analysis is a flow-sensitive may-alias analysis over abstract objects: allocation sites,
parameters and globals. A name refers to an object entirely (`whole`), shares some of its
memory (`view`), or is a container holding it (`item`). The most recent object of a site is
kept apart from the older ones, so that a fresh `y = np.zeros(3)` in each iteration of a loop
that appends `y` to a list is not a conflict. Types are not known here: an index that is a
name may be an integer, so `t = x[i]` may be a view of x (if x has two dimensions).
"""
import ast
import builtins
import inspect
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import SrcadError, UnsupportedSyntaxError
from ..rules.registry import FactSet
from ..syntax import source_lines
from .callees import INPLACE_METHODS as _INPLACE_METHODS, is_inplace_func, is_inplace_method_of_global
from .callees import is_user_function, member as _member
from .inplace import _loc, _text, desugar_inplace

if TYPE_CHECKING:
    from .parse import Parsed

WHOLE, VIEW, ITEM = "whole", "view", "item"

# what calls, methods and attributes do to memory: declared in the registry (rules/numpy_rules.py)
_VIEW_FUNCS = FactSet("alias", "view")                    # the result may share memory with the arguments
_VIEW_METHODS = FactSet("alias", "view", methods=True)    # ... with the receiver
_ITEM_METHODS = FactSet("alias", "item", methods=True)    # an item of the receiver (or a view of it)
_VIEW_ATTRS = FactSet("alias", "view-attribute", methods=True)
_PLAIN_ATTRS = FactSet("alias", "plain-attribute", methods=True)
_TRANSPOSES = FactSet("kind", "transpose", methods=True)        # `.T`: certainly an array's view
_ADDS_ITEMS = FactSet("adds_items", methods=True)


@dataclass(frozen=True)
class _Origin:
    """How a name got its value, for messages: a view of `base` (`text`), an alias, a holder."""
    kind: str
    base: str
    text: str
    line: int
    sure: bool = False      # certainly an array view (a slice, `.T`, a reshape), not maybe a number


@dataclass(frozen=True)
class _Stale:
    """A name that an in-place write through another name changed behind srcad's back."""
    node: ast.AST
    construct: str
    hint: str
    guard: str = None       # `name op= ...` through this name updates memory only if it holds an
    #                         array at run time: a read of the stale name asks for a run-time check


class _State:
    """The alias state at one program point: what each name points to, which names are stale,
    and which pairs of names hold one object on every path."""

    def __init__(self, pts=None, stale=None, origin=None, same=frozenset()):
        self.pts = dict(pts or {})          # name -> frozenset of (object, WHOLE|VIEW|ITEM)
        self.stale = dict(stale or {})      # name -> _Stale
        self.origin = dict(origin or {})    # name -> _Origin
        self.same = same                    # {a, b} pairs bound by `a = b` on every path: one object

    def copy(self):
        return _State(self.pts, self.stale, self.origin, self.same)

    def join(self, other):
        if other is None:
            return self.copy()
        out = self.copy()
        out.same = self.same & other.same
        for k, v in other.pts.items():
            out.pts[k] = out.pts.get(k, frozenset()) | v
        for k, v in other.stale.items():
            out.stale.setdefault(k, v)
        for k, v in other.origin.items():
            out.origin.setdefault(k, v)
        return out

    def settled(self, other):
        return other is not None and self.pts == other.pts and self.stale.keys() == other.stale.keys() \
            and self.same == other.same

    def bind(self, name, refs, origin=None):
        self.pts[name] = frozenset(refs)
        self.stale.pop(name, None)
        self.same = frozenset(p for p in self.same if name not in p)
        if origin is not None and origin.kind == WHOLE and origin.base != name:
            b = origin.base
            self.same |= {frozenset((name, b))} | {frozenset((name, k)) for p in self.same if b in p
                                                   for k in p if k != b}
        if origin is None:
            self.origin.pop(name, None)
        else:
            self.origin[name] = origin

    def alloc(self, key):
        """A fresh object from site `key`: the previous object of that site becomes an old one."""
        new, old = ("site", key, 0), ("site", key, 1)
        for name, refs in self.pts.items():
            if any(b == new for b, _ in refs):
                self.pts[name] = frozenset((old if b == new else b, k) for b, k in refs)
        return frozenset({(new, WHOLE)})


def _join(a, b):
    if a is None:
        return None if b is None else b.copy()
    return a.join(b)


def _names_loaded(node):
    """Names an expression reads, leaving out those bound by its own comprehensions."""
    bound = set()
    for n in ast.walk(node):
        if isinstance(n, ast.comprehension):
            bound |= {t.id for t in ast.walk(n.target) if isinstance(t, ast.Name)}
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id not in bound]


def _basic_index(sl):
    """Could this index select a view (basic indexing), rather than copy (advanced indexing)?"""
    parts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    return not any(isinstance(p, (ast.List, ast.ListComp, ast.Compare, ast.BoolOp)) or
                   isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.Invert) for p in parts)


@dataclass
class Summary:
    """What a user function does to its parameters' objects, as seen from a call."""
    returns: dict       # parameter -> WHOLE | VIEW: the result may be (a view of) that argument
    writes: dict        # parameter -> (node, construct, maybe): it writes into that argument's object
    #                     (maybe: through `p op= v`, which writes only if p holds an array)


_SUMMARIES = {}
_IN_PROGRESS = set()


class _Aliases:
    """The alias pass (see the module docstring): a flow-sensitive may-alias analysis.

    Input: a function's syntax tree after `desugar_inplace` (in-place results are subscript writes).
    Output (attributes, read by `check_aliases`): `after` (names to rebind after a write),
    `guards` (run-time checks before `t op= v`), `param_writes`, `global_writes`, `returns`.
    Invariant: the tree is not changed here; every write another live name may see is either
    resolved (rebinding, guard) or raised as UnsupportedSyntaxError at the user's line."""

    def __init__(self, parsed, fn, params, strict=True):
        self.parsed, self.fn, self.strict = parsed, fn, strict
        self.params = list(params)
        self.locals = set(self.params)
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.locals.add(node.id)
            elif isinstance(node, ast.arg):
                self.locals.add(node.arg)
            elif isinstance(node, ast.FunctionDef) and node is not fn:
                self.locals.add(node.name)
        self.loaded = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        self.after = {}             # id(statement) -> [(name to rebind, guarded)]
        self.param_writes = {}      # parameter -> (node, construct, only if an array: `p += v`)
        self.returns = set()
        self.global_writes = set()  # (line, name written through)
        self.nested = {}            # nested def name -> (captured names, Summary)
        self.exits, self.continues = [], []
        self.current = None         # the statement being analysed
        self.containers = set()     # sites that make lists, tuples, dicts, sets
        self.guards = {}            # id(statement) -> (name, construct, hint, statement): run-time checks

    # -- errors ----------------------------------------------------------------------------
    def fail(self, node, construct, hint):
        raise UnsupportedSyntaxError(construct, *self.parsed.where(node), hint=hint)

    def where(self, node):
        return getattr(node, "lineno", 0)

    # -- expressions -----------------------------------------------------------------------
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
                return self.user_call(e, S, summary_of(obj), obj=obj)
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

    # -- writes ----------------------------------------------------------------------------
    def add_items(self, S, target, recv, items):
        """`xs.append(v)`: every name that is xs now also holds v's objects."""
        blocks = {b for b, k in recv if k != ITEM}
        new = frozenset((b, ITEM) for b, _ in items)
        self.write(S, target, recv, None)
        for name, refs in list(S.pts.items()):
            if any(b in blocks for b, k in refs if k != ITEM):
                S.pts[name] = refs | new
        if isinstance(target, ast.Name) and len(items):
            arg = self.current_value_name
            if arg:
                S.origin[target.id] = _Origin(ITEM, (arg,), "", self.where(self.current))

    def write(self, S, target, refs, construct, op=None, value=None):
        """An in-place write through `target` (a name, or an expression) into the objects `refs`."""
        name = target.id if isinstance(target, ast.Name) else None
        st = self.current
        blocks = self.note_write(refs, name, construct, maybe=op is not None)
        construct = construct or f"`{source_lines(_text(st), False)[0]}`"
        fixes = self.after.setdefault(id(st), {})
        for m, mrefs in S.pts.items():
            if m == name or not any(b in blocks for b, _ in mrefs):
                continue
            if name is not None and self.must(S, name, m):
                if m in self.loaded:        # rebind m after the write (guarded after `op=`)
                    fixes[m] = op is not None
                continue
            view = self.exact_view(S, name, m, op)
            if view is not None:        # a slice of an array: write it back, or take it again
                if m in self.loaded:
                    fixes[m] = view
                continue
            fixes.pop(m, None)      # in a loop, a later pass over the write may find m only may-alias
            if m not in S.stale:
                S.stale[m] = self.stale(S, st, name, m, construct, target, op, value)
                if op is not None and not self.surely_array(S, name, m):
                    S.stale[m] = _Stale(*[getattr(S.stale[m], f) for f in ("node", "construct", "hint")],
                                        guard=name)

    def note_write(self, refs, name, construct, maybe=False):
        """The objects a write changes; writes into parameters and globals are noted."""
        st = self.current
        blocks = {b for b, k in refs if k != ITEM}
        construct = construct or f"`{source_lines(_text(st), False)[0]}`"
        for b in blocks:
            if b[0] == "global":
                self.global_writes.add((self.where(st), name or b[1]))
            elif b[0] == "param":
                old = self.param_writes.get(b[1])
                if old is None or old[2] and not maybe:
                    self.param_writes[b[1]] = (st, construct, maybe)
        if name is not None and not self.is_local(name):
            self.global_writes.add((self.where(st), name))
        return blocks

    @staticmethod
    def surely_array(S, n, m):
        """Does `n op= ...` surely write memory that m sees (n or m a sure view of the other)?
        Otherwise n may hold a number, which `op=` rebinds, and only the run time can tell."""
        on, om = S.origin.get(n), S.origin.get(m)
        return on is not None and on.kind == VIEW and on.sure and on.base == m or \
            om is not None and om.kind == VIEW and om.sure and om.base == n

    @staticmethod
    def must(S, n, m):
        """Are n and m surely the same object (one name bound to the other, or one fresh object)?"""
        a = S.pts.get(n)
        if not a or a != S.pts.get(m) or any(k != WHOLE for _, k in a):
            return False
        if frozenset((n, m)) in S.same:
            return True
        (b, k), = a if len(a) == 1 else ((None, None),)
        return b is not None and (b[0] == "param" or b[0] == "site" and b[2] == 0)

    def exact_view(self, S, n, m, op=None):
        """After a write through n, the statement that makes m's value right again, when one
        name is surely a slice `base[index]` of the other's one current array: ("store", view)
        writes n back into m (`y[1:] = v` after `v *= 2`), ("load", view) takes the slice m
        again (`v = y[1:]` after `y[1] = 0`). The index must mean the same at the write as where
        the slice was taken: constants, and names bound once outside any loop. `row = M[0]` is a
        view only if M has two dimensions: a subscript write `row[1] = ...` says it is (row is
        then an array), `row += ...` and a write into M do not. None otherwise."""
        if n is None:
            return None
        for how, view, whole in (("store", n, m), ("load", m, n)):
            o = S.origin.get(view)
            if o is None or o.kind != VIEW or o.base != whole or not (o.sure or how == "store" and op is None):
                continue
            try:
                expr = ast.parse(o.text, mode="eval").body
            except SyntaxError:
                return None
            obj = S.pts.get(whole, frozenset())
            if not (isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name)
                    and expr.value.id == whole and len(obj) == 1 and next(iter(obj))[1] == WHOLE
                    and S.pts.get(view) == frozenset({(next(iter(obj))[0], VIEW)})
                    and all(self.bound_once(x.id) for x in _names_loaded(expr.slice))):
                return None
            b = next(iter(obj))[0]
            if not (b[0] == "param" or b[0] == "site" and b[2] == 0):
                return None
            return how, o.text
        return None

    def bound_once(self, name):
        """Is `name` a parameter never rebound, or a local bound once outside any loop?"""
        if not hasattr(self, "_binds"):
            self._binds, self._in_loops = {}, set()
            for node in ast.walk(self.fn):
                if isinstance(node, (ast.For, ast.While, ast.comprehension)):
                    self._in_loops |= {t.id for t in ast.walk(node) if isinstance(t, ast.Name)
                                       and isinstance(t.ctx, ast.Store)}
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    self._binds[node.id] = self._binds.get(node.id, 0) + 1
        n = self._binds.get(name, 0)
        return name not in self._in_loops and (n == 0 and name in self.params or n == 1 and name not in self.params)

    def stale(self, S, st, n, m, construct, target, op, value):
        """How the write through n reaches m, and what to write instead."""
        on, om = S.origin.get(n), S.origin.get(m)
        what = f"{construct} writing into "
        if n is None:
            what += f"memory that `{m}` shares"
            hint = f"write into `{m}` itself with a subscript (`{m}[...] = ...`), or copy first (`.copy()`)"
        elif on is not None and on.kind == VIEW and on.base == m:
            what += f"`{n}`, a view of `{m}` (line {on.line})" if on.text else \
                f"`{n}`, an item of `{m}` (the loop at line {on.line})"
            if op is not None and on.text:
                hint = f"write `{on.text} {op}= {value}` instead (srcad treats `{n}` as a copy of `{on.text}`)"
            elif not on.text:   # a loop's item
                hint = (f"loop over the indices and write into `{m}` itself (`{m}[i] {op or ''}= ...`), or "
                        f"write the new value to a new name")
            else:
                hint = (f"write into `{m}` itself (`{m}[...] = ...`), or make `{n}` a copy: "
                        f"`{n} = {on.text or m}.copy()`")
        elif om is not None and om.kind == VIEW and om.base == n:
            what += f"`{n}`, which `{m}` is a view of (line {om.line})"
            hint = (f"make `{m}` a copy (`{m} = {om.text}.copy()`), or take the view after the write")
        elif om is not None and om.kind == ITEM and n in om.base:
            what += f"`{n}`, which `{m}` holds (line {om.line})"
            hint = f"store a copy (`{m}.append({n}.copy())`), or finish writing `{n}` before storing it"
        elif on is not None and on.kind == WHOLE and on.base == m or om is not None and om.kind == WHOLE \
                and om.base == n:
            line = (on if on is not None and on.base == m else om).line
            what += f"`{n}`, which may be the same array as `{m}` (line {line})"
            hint = f"make it a copy where it is assigned (`{n} = {m}.copy()`)"
        else:
            what += f"`{n}`, which may share memory with `{m}`"
            hint = f"make a copy with `.copy()` before writing into `{n}`"
        return _Stale(st, what, "srcad treats every name as a value; " + hint)

    # -- statements ------------------------------------------------------------------------
    def block(self, stmts, S):
        for st in stmts:
            if S is None:
                return None
            S = self.stmt(st, S)
        return S

    def stmt(self, st, S):
        self.current = st
        self.current_value_name = None
        meth = getattr(self, "s_" + type(st).__name__, None)
        if meth is None:
            self.check_reads(st, S)
            return S
        return meth(st, S)

    def origin_of(self, value, st):
        base, sure = value, False
        while isinstance(base, (ast.Subscript, ast.Attribute)) or isinstance(base, ast.Call) and (
                isinstance(base.func, ast.Attribute) and base.func.attr in _VIEW_METHODS
                or base.args and _member(self.resolve(base.func)[1], _VIEW_FUNCS)):
            if isinstance(base, ast.Call):
                sure = True
                base = base.func.value if isinstance(base.func, ast.Attribute) and \
                    base.func.attr in _VIEW_METHODS else base.args[0]
            else:
                sure = sure or isinstance(base, ast.Attribute) and base.attr in _TRANSPOSES or \
                    isinstance(base, ast.Subscript) and any(
                        isinstance(p, ast.Slice) or isinstance(p, ast.Constant) and p.value is Ellipsis
                        for p in (base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice]))
                base = base.value
        if isinstance(value, (ast.List, ast.Tuple)):    # `ys = [y, w]` holds y and w
            held = tuple(e.id for e in value.elts if isinstance(e, ast.Name) and self.is_local(e.id))
            return _Origin(ITEM, held, "", self.where(st)) if held else None
        if isinstance(base, ast.Name) and self.is_local(base.id):
            if base is value:
                return _Origin(WHOLE, base.id, "", self.where(st))
            return _Origin(VIEW, base.id, _text(value), self.where(st), sure)
        return None

    def assign_to(self, t, refs, S, value=None, st=None):
        if isinstance(t, ast.Name):
            S.bind(t.id, refs, self.origin_of(value, st) if value is not None else None)
        elif isinstance(t, ast.Subscript):
            self.check_reads(t, S)
            self.ev(t.slice, S)
            self.write(S, t.value, self.ev(t.value, S), None)
        elif isinstance(t, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(t.elts):
                parts = [self.ev(v, S) for v in value.elts]
                for sub, r, v in zip(t.elts, parts, value.elts):
                    self.assign_to(sub, r, S, v, st)
                return
            fresh = len(refs) == 1 and next(iter(refs))[0][0] == "site" and next(iter(refs))[1] == WHOLE \
                and next(iter(refs))[0][1][0] == id(value)
            for k, sub in enumerate(t.elts):
                if fresh:       # `q, r = np.linalg.qr(a)`: the pieces of a fresh result are fresh
                    self.assign_to(sub, S.alloc((id(value), k)), S)
                else:
                    self.assign_to(sub, frozenset((b, VIEW) for b, _ in refs), S)

    def s_Assign(self, st, S):
        self.check_reads(st.value, S)
        refs = self.ev(st.value, S)
        for t in st.targets:
            self.assign_to(t, refs, S, st.value, st)
        return S

    def s_AnnAssign(self, st, S):
        if st.value is None:
            return S
        return self.s_Assign(ast.Assign([st.target], st.value), S)

    def s_AugAssign(self, st, S):
        self.check_reads(st, S)
        t = st.target
        if isinstance(t, ast.Name):
            self.check_reads(ast.Name(t.id, ast.Load(), lineno=st.lineno, col_offset=st.col_offset), S)
        self.ev(st.value, S)
        op = _OPS.get(type(st.op), "?")
        if isinstance(t, ast.Name):
            refs = S.pts.get(t.id, frozenset()) if self.is_local(t.id) else self.ev(t, S)
            self.write(S, t, refs, None, op=op, value=_text(st.value))
            # a number is rebound, an array updated in place: either may hold afterwards; the
            # names rebound after the write (if it was in place) are the same object as t
            o = S.origin.get(t.id)
            if o is None or o.kind != VIEW or not o.sure:      # a slice of an array stays itself
                S.pts[t.id] = S.pts.get(t.id, frozenset()) | S.alloc((id(st), None))
            for m, how in self.after.get(id(st), {}).items():
                if not isinstance(how, tuple):      # rebound to t (a slice taken again keeps its own)
                    S.pts[m] = S.pts[t.id]
        else:
            self.assign_to(t, frozenset(), S)
        return S

    def s_Expr(self, st, S):
        self.check_reads(st.value, S)
        if isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) and st.value.args:
            a = st.value.args[0]
            self.current_value_name = a.id if isinstance(a, ast.Name) else None
        self.ev(st.value, S)
        return S

    def s_Return(self, st, S):
        self.check_reads(st, S)
        self.returns |= self.ev(st.value, S)
        return None

    def s_Assert(self, st, S):
        self.check_reads(st, S)
        return S

    s_Raise = s_Assert

    def s_Pass(self, st, S):
        return S

    def s_Break(self, st, S):
        if self.exits:
            self.exits[-1].append(S.copy())
        return None

    def s_Continue(self, st, S):
        if self.continues:
            self.continues[-1].append(S.copy())
        return None

    def s_If(self, st, S):
        self.check_reads(st.test, S)
        self.ev(st.test, S)
        a = self.block(st.body, S.copy())
        b = self.block(st.orelse, S.copy())
        return _join(a, b)

    def bind_target(self, st, S):
        """The loop variable(s) of `for` for one iteration."""
        it, t = st.iter, st.target
        found, obj = self.resolve(it.func) if isinstance(it, ast.Call) else (False, None)
        if found and obj is builtins.range:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    S.bind(n.id, frozenset())
            return
        if found and obj in (builtins.enumerate, builtins.zip) and isinstance(t, ast.Tuple):
            seqs = it.args if obj is builtins.zip else [None] + list(it.args[:1])
            for sub, seq in zip(t.elts, seqs):
                if seq is None:
                    self.assign_to(sub, frozenset(), S)
                else:
                    self.loop_item(sub, seq, S)
            return
        self.loop_item(t, it, S)

    def loop_item(self, t, seq, S):
        refs = self.parts(self.ev(seq, S))
        if isinstance(t, ast.Name):
            base = seq.id if isinstance(seq, ast.Name) and self.is_local(seq.id) else None
            S.bind(t.id, refs, _Origin(VIEW, base, "", self.where(t)) if base else None)
        else:
            self.assign_to(t, refs, S)

    def loop(self, st, S, head):
        """Iterate the loop's body to a fixed point; `head` runs at the top of every iteration."""
        entry = S
        for _ in range(50):
            self.exits.append([])
            self.continues.append([])
            H = entry.copy()
            head(H)
            end = self.block(st.body, H.copy())
            breaks, conts = self.exits.pop(), self.continues.pop()
            back = end
            for c in conts:
                back = _join(back, c)
            new_entry = _join(entry, back)
            if new_entry.settled(entry):
                out = _join(entry, H)       # a loop may run no iteration, or end after any
                out = _join(out, back)
                for b in breaks:
                    out = _join(out, b)
                return out
            entry = new_entry
        raise SrcadError(f"{self.parsed.filename}:{st.lineno}: srcad's alias analysis did not settle on this loop")

    def s_For(self, st, S):
        def head(H):
            self.current = st
            self.check_reads(st.iter, H)
            self.bind_target(st, H)
        return self.loop(st, S, head)

    def s_While(self, st, S):
        def head(H):
            self.current = st
            self.check_reads(st.test, H)
            self.ev(st.test, H)
        return self.loop(st, S, head)

    def s_FunctionDef(self, st, S):
        if st is self.fn:
            return S
        inner_locals = {a.arg for a in st.args.args + st.args.kwonlyargs} | {
            x.id for b in st.body for x in ast.walk(b) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}
        captured = sorted({x.id for b in st.body for x in ast.walk(b) if isinstance(x, ast.Name)
                           and isinstance(x.ctx, ast.Load) and x.id in self.locals and x.id not in inner_locals})
        params = [a.arg for a in st.args.args + st.args.kwonlyargs] + captured
        self.nested_defs[st.name] = st
        self.nested[st.name] = (captured, _summarize(self.parsed, st, params))
        S.bind(st.name, frozenset())
        return S

    # -- the whole function ----------------------------------------------------------------
    def run(self):
        self.nested_defs = {}
        S = _State()
        for p in self.params:
            S.bind(p, frozenset({(("param", p), WHOLE)}))
        self.block(self.fn.body, S)
        return self


class _Unbound(dict):
    """Marks a call whose arguments could not be bound to the callee's parameters."""


_UNBOUND_ARGS = _Unbound()


_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
        ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
        ast.LShift: "<<", ast.RShift: ">>"}


def _summarize(parsed, fn, params):
    a = _Aliases(parsed, fn, params, strict=False)
    try:
        a.run()
    except SrcadError:
        return Summary({p: VIEW for p in params}, {})
    returns = {}
    for b, k in a.returns:
        if b[0] == "param":
            returns[b[1]] = WHOLE if k == WHOLE and returns.get(b[1], WHOLE) == WHOLE else VIEW
    return Summary(returns, a.param_writes)


def summary_of(func: types.FunctionType) -> Summary:
    """What a user function does to its arguments' objects (cached per code object)."""
    from .parse import parse_function
    key = getattr(func, "__code__", func)
    if key in _SUMMARIES:
        return _SUMMARIES[key]
    if key in _IN_PROGRESS:      # recursion: the result may be any argument, no write known yet
        params = list(inspect.signature(func).parameters)
        return Summary({p: VIEW for p in params}, {})
    _IN_PROGRESS.add(key)
    try:
        parsed = parse_function(func)
        fn = parsed.tree
        params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
        desugar_inplace(parsed, fn)
        out = _summarize(parsed, fn, params)
    except (SrcadError, TypeError, ValueError, OSError):
        out = Summary({}, {})
    finally:
        _IN_PROGRESS.discard(key)
    _SUMMARIES[key] = out
    return out


# ---- the pass -------------------------------------------------------------------------------
def _rebind(name, source, guarded, st, rt_name):
    if isinstance(guarded, tuple):      # a slice: `y[1:] = v` written back, or `v = y[1:]` taken again
        how, view = guarded
        slice_ = ast.parse(view, mode="eval").body
        base = slice_.value.id
        if how == "store":
            slice_.ctx = ast.Store()
            node = ast.Assign([slice_], ast.Name(source, ast.Load()))
        else:
            node = ast.Assign([ast.Name(name, ast.Store())], slice_)
        test = ast.Call(ast.Attribute(ast.Name(rt_name, ast.Load()), "slices_are_views", ast.Load()),
                        [ast.Name(base, ast.Load())], [])
        return _loc(ast.If(test, [node], []), st)
    node = ast.Assign([ast.Name(name, ast.Store())], ast.Name(source, ast.Load()))
    if guarded:     # `z += x` updated z's array in place, or rebound a number: ask at run time
        test = ast.Call(ast.Attribute(ast.Name(rt_name, ast.Load()), "updates_in_place", ast.Load()),
                        [ast.Name(name, ast.Load())], [])
        node = ast.If(test, [node], [])
    return _loc(node, st)


def _guard(name, construct, hint, st, parsed, rt_name, readers):
    """`rt.refuse_shared_update(t, ..., v)`: raise, before `t op= ...` runs, if t holds an array
    whose memory v (a name read later) shares."""
    filename, line, col = parsed.where(st)
    args = [ast.Name(name, ast.Load())] + [ast.Constant(v) for v in (construct, filename, line, col, hint)] + \
        [ast.Name(r, ast.Load()) for r in readers]
    return _loc(ast.Expr(ast.Call(ast.Attribute(ast.Name(rt_name, ast.Load()), "refuse_shared_update",
                                                ast.Load()), args, [])), st)


def _apply(stmts, after, writer_of, rt_name, guards=None, parsed=None):
    out = []
    for st in stmts:
        for field_ in ("body", "orelse"):
            if isinstance(getattr(st, field_, None), list):
                setattr(st, field_, _apply(getattr(st, field_), after, writer_of, rt_name, guards, parsed))
        if guards and id(st) in guards:
            name, construct, hint, _, readers = guards[id(st)]
            out.append(_guard(name, construct, hint, st, parsed, rt_name, readers))
        out.append(st)
        for name, guarded in after.get(id(st), {}).items():
            out.append(_rebind(name, writer_of(st), guarded, st, rt_name))
    return out


def _writer(st):
    t = st.targets[0] if isinstance(st, ast.Assign) else st.target
    return t.value.id if isinstance(t, ast.Subscript) else t.id


def check_aliases(parsed: "Parsed") -> "Parsed":
    """Desugar `out=`/copyto/fill, then reject or resolve every in-place write another name may
    see (see the module docstring). Changes `parsed.tree` in place and sets
    `parsed.global_writes`, the (line, name) pairs of writes into module-level objects."""
    from .. import runtime
    fn = parsed.tree
    desugar_inplace(parsed, fn)
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    a = _Aliases(parsed, fn, params).run()
    parsed.global_writes = a.global_writes
    if any(a.after.values()) or a.guards:
        rt_name = "rt"
        if parsed.env.get(rt_name, runtime) is not runtime:
            st = next(s for s in ast.walk(fn) if a.after.get(id(s)) or id(s) in a.guards)
            raise UnsupportedSyntaxError(
                "an in-place update of an array that another name holds, in a module where `rt` is not "
                "srcad.runtime", *parsed.where(st), hint="make a copy with `.copy()` before updating")
        parsed.env.setdefault(rt_name, runtime)
        fn.body = _apply(fn.body, a.after, _writer, rt_name, a.guards, parsed)
    return parsed
