"""The alias analysis's domain: abstract objects and how a name refers to one (WHOLE, VIEW,
ITEM), the state at a program point (points-to, stale names, origins, must-same pairs) and
its join, and the registry's facts on what calls, methods and attributes do to memory."""
import ast
from dataclasses import dataclass

from ...rules.fact_values import Alias, ResultKind
from ...rules.registry import FactSet

WHOLE, VIEW, ITEM = "whole", "view", "item"

# what calls, methods and attributes do to memory: declared in the registry (rules/numpy_rules.py)
_VIEW_FUNCS = FactSet("alias", Alias.VIEW)                    # the result may share memory with the arguments
_VIEW_METHODS = FactSet("alias", Alias.VIEW, methods=True)    # ... with the receiver
_ITEM_METHODS = FactSet("alias", Alias.ITEM, methods=True)    # an item of the receiver (or a view of it)
_VIEW_ATTRS = FactSet("alias", Alias.VIEW_ATTRIBUTE, methods=True)
_PLAIN_ATTRS = FactSet("alias", Alias.PLAIN_ATTRIBUTE, methods=True)
_TRANSPOSES = FactSet("kind", ResultKind.TRANSPOSE, methods=True)        # `.T`: certainly an array's view
_ADDS_ITEMS = FactSet("adds_items", methods=True)

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
        ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
        ast.LShift: "<<", ast.RShift: ">>"}


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


class _Unbound(dict):
    """Marks a call whose arguments could not be bound to the callee's parameters."""


_UNBOUND_ARGS = _Unbound()
