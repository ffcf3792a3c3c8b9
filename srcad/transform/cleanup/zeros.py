"""zeros: `x_bar = 0.0` then `x_bar = rt.add(x_bar, e)` -> `x_bar = e`, where a forward
must-analysis over branches and loops shows x_bar certainly holds the literal zero."""
import ast

from ...syntax import is_comment
from .fold import _NUM
from .nodes import _rt_helper, _scan, _simple_target, _target_names


class Zeros:
    """Zero adjoints never materialised (mixed into Cleanup)."""

    def _zeros(self):
        """`x = rt.add(x, e)` where x certainly holds a literal zero -> `x = e` (rt.add of a zero
        returns its other argument itself). "Certainly" is a forward must-analysis over branches
        and loops: a zero set before a loop still holds at `rt.add` in the body only if every
        iteration sets it back to zero before the next one (else the first write must dominate)."""
        self._zero_hits = {}
        self._zflow(self.fn.body, frozenset(), None)
        changed = False
        for st, hit in self._zero_hits.values():
            if hit:
                st.value = st.value.args[1]
                changed = True
        return changed

    def _zflow(self, block, zeros, loop):
        """Names holding a literal zero after block (None: the end is not reached)."""
        for st in block:
            if zeros is None:
                return None
            zeros = self._zstmt(st, zeros, loop)
        return zeros

    def _zstmt(self, st, zeros, loop):
        if is_comment(st):
            return zeros
        if isinstance(st, ast.If):
            return _meet(self._zflow(st.body, zeros, loop), self._zflow(st.orelse, zeros, loop))
        if isinstance(st, (ast.For, ast.While)):
            head = zeros
            target = _target_names(st.target) if isinstance(st, ast.For) else frozenset()
            while True:
                breaks, conts = [], []
                end = self._zflow(st.body, head - target, (breaks, conts))
                new = zeros
                for z in [end] + conts:
                    new = _meet(new, z)
                if new == head:
                    break
                head = new
            out = self._zflow(st.orelse, head, loop)
            for z in breaks:
                out = _meet(out, z)
            return out
        if isinstance(st, ast.Break):
            loop[0].append(zeros)
            return None
        if isinstance(st, ast.Continue):
            loop[1].append(zeros)
            return None
        if isinstance(st, (ast.Return, ast.Raise)):
            return None
        if isinstance(st, ast.FunctionDef):
            return zeros - {st.name}
        x = _simple_target(st)
        if x is not None and _add_to(st, x) is not None:
            self._zero_hits[id(st)] = (st, x in zeros and x not in self.pinned)
        if x is not None and _is_zero_literal(st.value):
            return zeros | {x}
        return zeros - _scan(st)[1]


def _meet(a, b):
    """Names zero on both paths (None: a path that does not arrive)."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _is_zero_literal(e):
    return isinstance(e, ast.Constant) and type(e.value) in _NUM and e.value == 0


def _add_to(st, x):
    """e when st is `x = rt.add(x, e)`, else None."""
    if _simple_target(st) != x or not isinstance(st.value, ast.Call) or _rt_helper(st.value) != "add":
        return None
    call = st.value
    if call.keywords or len(call.args) != 2 or not (isinstance(call.args[0], ast.Name) and call.args[0].id == x):
        return None
    e = call.args[1]
    return None if isinstance(e, ast.Starred) else e
