"""zeros: `x_bar = 0.0` then `x_bar = rt.add(x_bar, e)` -> `x_bar = e`, where a forward
must-analysis over branches and loops shows x_bar certainly holds the literal zero."""
import ast

from ...dataflow import Dataflow
from ...syntax import is_comment
from .fold import _NUM
from .nodes import _rt_helper, _scan, _simple_target, _target_names


class _MustBeZero(Dataflow):
    """Forward must-analysis: the names that certainly hold a literal zero (a frozenset; meet is
    the intersection). Records, for each `x = rt.add(x, e)`, whether x is certainly zero there."""
    forward = True

    def __init__(self, pinned):
        self.pinned = pinned
        self.hits = {}          # id(statement) -> (statement, x certainly zero there)

    def meet(self, a, b):
        return a & b

    def target(self, st, x):
        return x - _target_names(st.target)

    def transfer(self, st, zeros):
        if is_comment(st):
            return zeros
        if isinstance(st, ast.FunctionDef):
            return zeros - {st.name}
        x = _simple_target(st)
        if x is not None and _add_to(st, x) is not None:
            self.hits[id(st)] = (st, x in zeros and x not in self.pinned)
        if x is not None and _is_zero_literal(st.value):
            return zeros | {x}
        return zeros - _scan(st)[1]


class Zeros:
    """Zero adjoints never materialised (mixed into Cleanup)."""

    def _zeros(self):
        """`x = rt.add(x, e)` where x certainly holds a literal zero -> `x = e` (rt.add of a zero
        returns its other argument itself). "Certainly" is a forward must-analysis over branches
        and loops (srcad/dataflow.py): a zero set before a loop still holds at `rt.add` in the
        body only if every iteration sets it back to zero before the next one."""
        problem = _MustBeZero(self.pinned)
        problem.solve(self.fn.body, frozenset())
        changed = False
        for st, hit in problem.hits.values():
            if hit:
                st.value = st.value.args[1]
                changed = True
        return changed


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
