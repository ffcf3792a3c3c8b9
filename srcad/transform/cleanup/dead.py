"""dead: assignments to names not live afterwards whose value has no effect go; no empty
`else`, no `if` whose branches are both empty, no range loop with an empty body."""
import ast

from ...syntax import is_comment
from .nodes import _assigned, _blocks, _cannot_raise, _copy_pair, _empty, _plain_target, _pure, _target_names


class Dead:
    """Dead code and empty branches removed (mixed into Cleanup; reads its liveness)."""

    def _dead(self, block):
        changed = False
        out = []
        for st in block:
            for sub in _blocks(st):
                changed |= self._dead(sub)
            if isinstance(st, ast.Assign) and self._removable(st):
                changed = True
                continue
            out.append(st)
        block[:] = out
        return changed

    def _removable(self, st):
        """A dead statement that may go: st is dropped when none of its names is live after it."""
        pair = _copy_pair(st)
        if pair and pair[0] == pair[1]:
            return True         # `x = x`: a copy that reached its own source
        return self._droppable(st) and not any(self._is_live(n, st) for n in _assigned(st))

    def _droppable(self, st):
        """Could st go if its names were dead: an assignment to names only, of a value without
        effects (that could raise only where the primal already ran, or in the adjoint part)?"""
        key = ("drop", id(st))
        got = self._lv_memo.get(key)
        if got is None:
            got = self._lv_memo[key] = self._droppable_now(st)
        return got

    def _droppable_now(self, st):
        if not isinstance(st, ast.Assign) or not all(_plain_target(t) for t in st.targets):
            return False
        if _assigned(st) & self.pinned or not _pure(st.value, self.local_names):
            return False
        if isinstance(st.value, ast.Name) and st.value.id in self.consumed:
            return False        # the copy's reference keeps an in-place helper from writing its source
        return _cannot_raise(st.value) or self.primal_ran or id(st) in self.adjoint

    def _replayed(self, st):
        """Did the values st tests already pass the same test (a primal that ran, the adjoint)?"""
        return self.primal_ran or id(st) in self.adjoint

    def _branches(self, block):
        changed = False
        out = []
        for st in block:
            for sub in _blocks(st):
                changed |= self._branches(sub)
            if isinstance(st, ast.If):
                body_empty, else_empty = _empty(st.body), _empty(st.orelse)
                if st.orelse and else_empty:       # no `else: pass`
                    st.orelse = []
                    changed = True
                # (`if c:` asks bool(c), which raises for an array: on the user's values only
                # where the primal ran already, or in the adjoint part, which replays the test)
                if body_empty and else_empty and _cannot_raise(st.test) and self._replayed(st):
                    out += [s for s in st.body if is_comment(s)]
                    changed = True
                    continue
                if body_empty and not else_empty:     # the comments of the empty branch go above
                    out += [s for s in st.body if is_comment(s)]
                    st.test = _negate(st.test)
                    st.body, st.orelse = st.orelse, []
                    changed = True
            elif isinstance(st, ast.For) and _empty(st.body) and not st.orelse and self._replayed(st) \
                    and _pure(st.iter, self.local_names) \
                    and _is_range(st.iter) and not any(self._is_live(n, st) for n in _target_names(st.target)) \
                    and _plain_target(st.target):
                out += [s for s in st.body if is_comment(s)]
                changed = True
                continue
            out.append(st)
        block[:] = out
        return changed


def _is_range(e):
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
        if e.func.id == "range":
            return True
        if e.func.id == "reversed" and len(e.args) == 1:
            inner = e.args[0]
            if isinstance(inner, ast.Subscript):
                inner = inner.value
            return _is_range(inner)
    return False


def _negate(test):
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return ast.UnaryOp(ast.Not(), test)
