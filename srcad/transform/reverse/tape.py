"""tape: what the primal sweep saves for the adjoint sweep, and where it pops it back.

The primal sweep pushes onto one list (the tape) the old value of a re-assigned name, the entries
a subscript write replaces, the trip counts of loops that can end early and the pullbacks of
registered rules inside loops; the adjoint sweep pops them in reverse order. Which saves are
needed is only known once the whole adjoint has been written: the adjoint sweep leaves a marker
(`_Marker`) where a value would be popped back, and `_resolve_tape` keeps the markers of the
names some adjoint reads (a fixed point: dropping a save can empty a branch whose test then
needs no saving either), turning each into its pop; the primal sweep pushes for the kept ones.
"""
import ast
from enum import StrEnum

from ...dataflow import fixpoint
from ...syntax import N, assign, ast_copy, index_expr, is_comment, names_read, rt
from ..kinds import Cat


class TapeOp(StrEnum):
    """What the adjoint sweep does with a value the primal sweep saved (a marker's kind)."""
    POP = "pop"                 # pops it back into the name it was saved from
    RESTORE = "restore"         # writes it back into the item an item write overwrote
    UNAPPEND = "unappend"       # undoes a list append (`xs.pop()`)


class _Marker:
    """A tape operation whose need is only known once the whole adjoint has been written."""
    counter = 0

    def __init__(self, kind: TapeOp, var: str, stmt: ast.stmt):
        _Marker.counter += 1
        self.key = f"\x00srcad-marker-{_Marker.counter}"
        self.kind, self.var, self.stmt = kind, var, stmt

    def node(self):
        return ast.Expr(ast.Constant(self.key))



class Tape:
    """Where each name is assigned (`sites`, loop `depth`), the tape markers and their resolution:
    the state of the Reverse class it is mixed into (transform/reverse/driver.py)."""

    def _collect_sites(self, stmts, depth):
        for st in stmts:
            self.depth[id(st)] = depth
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                self.sites[st.targets[0].id].append((st, depth))
            elif isinstance(st, ast.For):
                self.sites[st.target.id].append((st, depth))
            if isinstance(st, (ast.For, ast.While)):
                self._collect_sites(st.body, depth + 1)
            elif isinstance(st, ast.If):       # 0.5: inside a branch but not in a loop
                self._collect_sites(st.body, depth if depth >= 1 else 0.5)
                self._collect_sites(st.orelse, depth if depth >= 1 else 0.5)

    def _find_recomputed(self, stmts, outside):
        """Names a loop body assigns once from its loop variable, constants and such names by
        Python int or bool arithmetic (`j = i + 1`, `k = j % 3`): the reversed loop recomputes
        them at the top of each step instead of taping them. Each is assigned only there, directly
        in the body of a `for` loop (which its adjoint rebinds to the same values), before any read
        of it in the body, and read nowhere outside the body. Fills `self.recomputed`:
        name -> (statement, id(loop))."""
        for st in stmts:
            if isinstance(st, ast.For) and isinstance(st.target, ast.Name) and self.kinds is not None \
                    and self.checkpoint is None and len(self.sites[st.target.id]) == 1:
                # (the loop variable assigned nowhere else: the reversed loop gives back its values)
                known = {st.target.id}
                elsewhere = outside | names_read([s for s in stmts if s is not st]) | names_read([st.iter])
                for k, inner in enumerate(st.body):
                    if not (isinstance(inner, ast.Assign) and isinstance(inner.targets[0], ast.Name)):
                        continue
                    v, val = inner.targets[0].id, inner.value
                    kind = self.kinds.result(inner)
                    if isinstance(val, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)) and \
                            kind.cat is Cat.PY and kind.dtype in ("l", "?") and \
                            all(isinstance(n, (ast.Name, ast.Constant)) or not isinstance(n, ast.expr) or
                                isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp))
                                for n in ast.walk(val)) and \
                            names_read([val]) <= known and len(self.sites[v]) == 1 and \
                            v not in elsewhere and v not in names_read(st.body[:k]):
                        self.recomputed[v] = (inner, id(st))
                        known.add(v)
            for field_ in ("body", "orelse"):
                block = getattr(st, field_, None)
                if block and isinstance(block, list):
                    rest = names_read([s for s in stmts if s is not st])
                    self._find_recomputed(block, outside | rest)

    def _recompute_at_top(self, loop, body):
        """The recomputed names of this loop, assigned again at the top of its adjoint's step."""
        mine = [st for st, lid in self.recomputed.values() if lid == id(loop)]
        order = {id(s): k for k, s in enumerate(loop.body)}
        return [ast_copy(st) for st in sorted(mine, key=lambda s: order[id(s)])] + body

    def _overwrites(self, st, v):
        """Does this assignment (possibly) replace a value of v that an earlier statement read?"""
        sites = self.sites[v]
        first_stmt, first_depth = sites[0]
        return not (first_stmt is st and first_depth < 1)

    def _in_loop(self, st):
        return self.depth.get(id(st), 0) >= 1

    def marker(self, kind: TapeOp, var: str, st: ast.stmt) -> ast.Expr:
        key = (kind, id(st))
        if key not in self.markers:
            self.markers[key] = _Marker(kind, var, st)
        return self.markers[key].node()

    def _kept(self, kind: TapeOp, st: ast.stmt) -> bool:
        m = self.markers.get((kind, id(st)))
        return m is not None and m.key in self.kept

    def _resolve_tape(self, adjoint):
        """The adjoint sweep with its markers resolved into pops, keeping (in `kept`, which the
        primal sweep's pushes read) only the tape operations needed: a name is saved only if some
        adjoint reads it; dropping a save can empty a branch whose test then needs no saving
        either, hence the fixed point."""
        resolved = adjoint

        def reads(needed):
            nonlocal resolved
            self.kept = {m.key for m in self.markers.values()
                         if (m.var in needed and m.var not in self.recomputed) or
                         m.kind is not TapeOp.POP and m.var in self.an.active}
            resolved = self._resolve_markers(ast_copy(adjoint))
            return names_read(resolved) | self.ckpt_reads
        fixpoint(names_read(adjoint) | self.ckpt_reads, reads)
        return resolved

    def _tape_inits(self):
        """`x = None` before the primal sweep for each saved name whose first binding is inside a
        loop or branch (its first push finds it defined)."""
        inits = []
        for m in self.markers.values():
            if m.key in self.kept and m.kind is TapeOp.POP and m.var not in self.params:
                first_stmt, first_depth = self.sites[m.var][0]
                if first_depth != 0:
                    inits.append(assign(m.var, ast.Constant(None)))
        return inits

    def _resolve_markers(self, stmts):
        by_key = {m.key: m for m in self.markers.values()}
        out = []
        for st in stmts:
            key = st.value.value if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) else None
            if isinstance(key, str) and key in by_key:
                m = by_key[key]
                if key not in self.kept:
                    continue
                if m.kind is TapeOp.POP:
                    out.append(assign(m.var, _pop(self.tape)))
                elif m.kind is TapeOp.RESTORE and m.var in self.dict_names:
                    t = m.stmt.targets[0]
                    out.append(ast.Expr(rt("restore_item", N(t.value.id), index_expr(ast_copy(t.slice)),
                                           _pop(self.tape))))
                elif m.kind is TapeOp.RESTORE:
                    t = m.stmt.targets[0]
                    out.append(ast.Assign(targets=[ast.Subscript(N(t.value.id), ast_copy(t.slice), ast.Store())],
                                          value=_pop(self.tape)))
                else:       # TapeOp.UNAPPEND
                    out.append(ast.Expr(ast.Call(ast.Attribute(N(m.var), "pop", ast.Load()), [], [])))
                continue
            for field_ in ("body", "orelse"):
                if getattr(st, field_, None):
                    setattr(st, field_, self._resolve_markers(getattr(st, field_)) or [ast.Pass()])
            if isinstance(st, ast.If) and st.orelse == [ast.Pass()]:
                st.orelse = []
            out.append(st)
        return _drop_empty(out)


def _push(tape, value):
    return ast.Expr(ast.Call(ast.Attribute(N(tape), "append", ast.Load()), [value], []))


def _pop(tape):
    return ast.Call(ast.Attribute(N(tape), "pop", ast.Load()), [], [])


def _dedupe(stmts):
    seen, out = set(), []
    for s in stmts:
        key = ast.dump(s)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _drop_empty(stmts):
    """Loops and branches whose adjoint came out empty disappear; comments over nothing too."""
    out = []
    for st in stmts:
        if isinstance(st, (ast.For, ast.If)) and all(isinstance(b, ast.Pass) for b in st.body) and \
                all(isinstance(b, ast.Pass) for b in getattr(st, "orelse", [])):
            continue
        out.append(st)
    cleaned = []
    for k, st in enumerate(out):
        if is_comment(st) and (k + 1 == len(out) or is_comment(out[k + 1])):
            continue
        cleaned.append(st)
    return cleaned
