"""negs: negations the adjoint templates write one rule at a time, moved to where they cost least
or cancel, and a term accumulated twice written once, doubled. Only in the adjoint part (its
values are cotangents: floating point), and only where the result is the same IEEE value:

hoist    `rt.unbroadcast(-g, x)` -> `-rt.unbroadcast(g, x)`, `np.sum(-g, axis)` -> `-np.sum(g, axis)`
         (also np.mean): a sum of negated terms is the negated sum, added in the same order
         (rounding to nearest is symmetric in sign). The negation then runs on the reduced value.
         (One difference in bits: a sum of terms that cancel exactly is +0.0 either way, so its
         negation is -0.0 where the old code gave +0.0; equal as numbers.)
sink     `t = -a * b / c` whose single read reaches, through products and quotients of names
         read once (`u = t * w`), a place that absorbs a sign: `-u` (cancels), `y + u`, `y - u`,
         `u + y` (become `y - u`, `y + u`, `y - u`), `y += u` -> the leading minus goes and the
         absorbing place flips. No new operation anywhere; each name on the way holds the
         negated value, which only the next step reads. (sigmoid's adjoint: two negations that
         cancel.)
double   `x = T` then `x = rt.add(x, T)` with the same pure term T (`g * a`, the two terms of
         `a * a`) -> `x = T * 2`: doubling is exact, so T + T and T * 2 are the same bits; and
         `x = -e`, ..., `x = rt.add(x, T)` -> `x = T - e` (T a product or quotient: a number).
"""
import ast

from ...rules.registry import fact_of_chain, facts
from .nodes import _attr_chain, _module, _pure_call, _rt_helper, _runtime, _scan, _simple_target

_PRODUCT = (ast.Mult, ast.Div)


def _neg(e):
    return type(e) is ast.UnaryOp and type(e.op) is ast.USub and type(e.operand) is not ast.Constant


def _hoistable(call, local):
    """Is call `f(-g, ...)` for an f the registry declares odd in its first argument, passing only
    the parameters it names (np.sum: not dtype=, initial=, where=)?"""
    if type(call) is not ast.Call or not call.args or not _neg(call.args[0]) \
            or any(type(a) is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    chain = _attr_chain(call.func)
    if chain is None or len(chain) < 2 or chain[0] in local or chain[0] not in ("rt", "np"):
        return False
    root = _runtime() if chain[0] == "rt" else _module("np")
    odd = fact_of_chain(root, chain[1:], "odd")
    if not odd:
        return False
    entry = facts(_resolve(root, chain[1:]))
    if entry is None or len(call.args) > len(entry.params):
        return False
    passed = entry.params[:len(call.args)] + [k.arg for k in call.keywords]
    return all(p in odd[-1] for p in passed)


def _resolve(root, chain):
    obj = root
    for name in chain:
        obj = getattr(obj, name, None)
    return obj


class _Hoister(ast.NodeTransformer):
    """Rewrites each hoistable reduction in an expression; `count` says how many."""

    def __init__(self, local):
        self.local = local
        self.count = 0

    def visit_Call(self, node):
        self.generic_visit(node)
        if _hoistable(node, self.local):
            node.args[0] = node.args[0].operand
            self.count += 1
            return ast.copy_location(ast.UnaryOp(ast.USub(), node), node)
        return node

    def visit_Lambda(self, node):
        return node


def _pure_term(e, local):
    """Is e built of names, literals, arithmetic and calls the registry declares pure (evaluating
    it twice gives one value and has no effect)?"""
    for n in ast.walk(e):
        t = type(n)
        if t in (ast.Name, ast.Load, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Mult, ast.Div, ast.Add,
                 ast.Sub, ast.USub, ast.Attribute):
            continue
        if t is ast.Call and _pure_call(n, local):
            continue
        return False
    return True


def _doubles_term(e):
    """Is T's value numeric (a product or quotient, or one reduced by rt.unbroadcast), so that
    T * 2 is T + T (never a list repeated)?"""
    if type(e) is ast.Call and e.args:
        e = e.args[0]
    return type(e) is ast.BinOp and type(e.op) in _PRODUCT


class Negs:
    """The negation and doubling rewrites (mixed into Cleanup)."""

    def _negs(self):
        local = self.local_names
        hoister = _Hoister(local)
        changed = False
        stmts = self._adjoint_statements()
        for st in stmts:
            if isinstance(st, (ast.Assign, ast.AugAssign, ast.Return, ast.Expr)) and st.value is not None:
                st.value = hoister.visit(st.value)
        changed |= hoister.count > 0
        for _ in range(64):             # (one sink per index of the reads; few per function)
            if not self._sink(stmts):
                break
            changed = True
        changed |= self._double(self.fn.body)
        return changed

    def _adjoint_statements(self):
        out, stack = [], list(self.fn.body)
        while stack:
            st = stack.pop()
            if isinstance(st, ast.FunctionDef):
                continue
            if id(st) in self.adjoint:
                out.append(st)
            for f in ("body", "orelse"):
                sub = getattr(st, f, None)
                if isinstance(sub, list):
                    stack.extend(sub)
        return out

    # -- sink ---------------------------------------------------------------------------------

    def _sink(self, stmts):
        adjoint_defs = {}
        for st in stmts:
            t = _simple_target(st)
            if t is not None:
                adjoint_defs[t] = st
        starts = [(t, st) for t, st in adjoint_defs.items() if _negation_chain(st.value)]
        if not starts:
            return False
        stores, loads = {}, {}     # name -> count of bindings; name -> [(Name, parents, statement)]
        self._index(self.fn.body, stores, loads)
        for t, st in starts:
            end = self._chain_end(t, stores, loads, adjoint_defs)
            if end is None:
                continue
            name, parents = end
            _absorb(name, parents)
            st.value = _strip(st.value)
            return True         # the index is stale now: the caller indexes again
        return False

    def _single(self, t, stores, loads, defs):
        return (t in defs and stores.get(t) == 1 and len(loads.get(t, ())) == 1 and t not in self.params
                and t not in self.pinned and t not in self.consumed)

    def _chain_end(self, t, stores, loads, defs):
        """The read that absorbs t's sign, through single-read products (see the docstring), or None."""
        seen = set()
        while t not in seen and self._single(t, stores, loads, defs):
            seen.add(t)
            name, parents, st = loads[t][0]
            p = parents[-1] if parents else None
            if type(p) is ast.UnaryOp and type(p.op) is ast.USub:
                return name, parents
            if type(p) is ast.BinOp and type(p.op) in (ast.Add, ast.Sub) and \
                    (p.right is name or p.left is name and type(p.op) is ast.Add):
                return name, parents
            if type(p) is ast.AugAssign and p.value is name and type(p.op) in (ast.Add, ast.Sub) \
                    and id(p) in self.adjoint:
                return name, parents
            k = len(parents) - 1           # climb the products and quotients
            while k >= 0 and type(parents[k]) is ast.BinOp and type(parents[k].op) in _PRODUCT:
                k -= 1
            top = parents[k] if k >= 0 else None
            u = _simple_target(top) if top is not None else None
            if u is None or top is not st or top.value is not (parents[k + 1] if k + 1 < len(parents) else name):
                return None
            t = u
        return None

    def _index(self, block, stores, loads):
        def visit(node, parents, st):
            if type(node) is ast.Name:
                if type(node.ctx) is ast.Load:
                    loads.setdefault(node.id, []).append((node, parents, st))
                else:
                    stores[node.id] = stores.get(node.id, 0) + 1
                return
            if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                 ast.GeneratorExp)):
                if isinstance(node, ast.FunctionDef):
                    stores[node.name] = stores.get(node.name, 0) + 2     # never a single binding
                return
            for child in ast.iter_child_nodes(node):
                visit(child, parents + [node], st if not isinstance(child, ast.stmt) else child)
        for st in block:
            visit(st, [], st)

    # -- double -------------------------------------------------------------------------------

    def _double(self, block):
        changed = False
        for st in block:
            for f in ("body", "orelse"):
                sub = getattr(st, f, None)
                if isinstance(sub, list) and not isinstance(st, ast.FunctionDef):
                    changed |= self._double(sub)
        k, real = 0, [i for i, st in enumerate(block) if not _is_comment(st)]
        for a, b in zip(real, real[1:]):
            first, second = block[a], block[b]
            if id(first) not in self.adjoint or id(second) not in self.adjoint:
                continue
            x = _simple_target(first)
            if x is None or _simple_target(second) != x or x in self.pinned:
                continue
            v = second.value
            if not (type(v) is ast.Call and _rt_helper(v) == "add" and "rt" not in self.local_names
                    and len(v.args) == 2 and not v.keywords and type(v.args[0]) is ast.Name
                    and v.args[0].id == x):
                continue
            term = first.value
            if ast.dump(term) != ast.dump(v.args[1]) or not _doubles_term(term) \
                    or not _pure_term(term, self.local_names) or x in _names(term):
                continue
            first.value = ast.copy_location(ast.BinOp(term, ast.Mult(), ast.Constant(2)), term)
            block[b] = None
            k += 1
        if k:
            block[:] = [st for st in block if st is not None]
        return self._negated_then_added(block) or changed or k > 0

    def _negated_then_added(self, block):
        """`x = -e`, statements that neither mention x nor bind e's names (no comment between: both
        in one user line's adjoint), then `x = rt.add(x, T)` -> `x = T - e` there: (-e) + T is
        T - e, the same IEEE operation (T a product or quotient: a number, never a list)."""
        drop = set()
        for i, first in enumerate(block):
            x = _simple_target(first)
            if x is None or x in self.pinned or id(first) not in self.adjoint or not _neg(first.value) \
                    or not _pure_term(first.value, self.local_names):
                continue
            e = first.value.operand
            e_names = _names(e)
            if x in e_names:
                continue
            for second in block[i + 1:]:
                if _is_comment(second) or id(second) not in self.adjoint:
                    break
                v = second.value if _simple_target(second) == x else None
                if type(v) is ast.Call and _rt_helper(v) == "add" and "rt" not in self.local_names \
                        and len(v.args) == 2 and not v.keywords and type(v.args[0]) is ast.Name \
                        and v.args[0].id == x and _doubles_term(v.args[1]) and x not in _names(v.args[1]) \
                        and _pure_term(v.args[1], self.local_names):
                    second.value = ast.copy_location(ast.BinOp(v.args[1], ast.Sub(), e), v)
                    drop.add(id(first))
                    break
                loads, stores, odd = _scan(second)
                if odd or x in loads or x in stores or stores & e_names:
                    break
        if drop:
            block[:] = [st for st in block if id(st) not in drop]
        return bool(drop)


def _names(e):
    return {n.id for n in ast.walk(e) if type(n) is ast.Name}


def _is_comment(st):
    return type(st) is ast.Expr and type(st.value) is ast.Constant and type(st.value.value) is str


def _negation_chain(e):
    """Is e `-x * ...` (a leading minus on the leftmost factor of products and quotients)?"""
    while type(e) is ast.BinOp and type(e.op) in _PRODUCT:
        e = e.left
    return _neg(e)


def _strip(e):
    if type(e) is ast.BinOp:
        e.left = _strip(e.left)
        return e
    return e.operand


def _absorb(name, parents):
    """name (now holding the negated value) at its absorbing place: flip the place."""
    p = parents[-1]
    if type(p) is ast.UnaryOp:
        _replace(parents[-2] if len(parents) > 1 else None, p, name)
    elif type(p) is ast.AugAssign:
        p.op = ast.Sub() if type(p.op) is ast.Add else ast.Add()
    elif p.right is name:
        p.op = ast.Sub() if type(p.op) is ast.Add else ast.Add()
    else:                                   # u + y -> y - u
        p.left, p.right, p.op = p.right, name, ast.Sub()


def _replace(parent, old, new):
    for f, v in ast.iter_fields(parent):
        if v is old:
            setattr(parent, f, new)
            return
        if type(v) is list:
            for i, x in enumerate(v):
                if x is old:
                    v[i] = new
                    return
    raise AssertionError("node not found in its parent")
