"""In-place writes: which names a write through another name reaches, and whether rebinding or
taking a slice again makes them right (else they are stale)."""
import ast

from ...syntax import source_lines
from ..inplace import _text
from .domain import ITEM, VIEW, WHOLE, _Origin, _Stale, _names_loaded


class Writes:
    """In-place writes and their reach (mixed into _Aliases)."""

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
