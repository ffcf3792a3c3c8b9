"""pushes: a value a loop computes fresh in each iteration is taped where it exists, with no
`v = None` before the loop.

The reverse sweep saves a name before each assignment that overwrites it (`tape.append(v)` right
before `v = e`) and pops it back after that statement's adjoint; for a name first bound inside
the loop, the first iteration pushes a value that does not exist yet (the `v = None` the primal
sweep starts with). Where v is loop-local (assigned once, at the top level of the loop body,
read there only after that assignment, and only in that loop and its mirror in the adjoint), the
same tape reads better pushed at each exit of the iteration (the body's end and each `break` or
`continue` of the loop, all after the assignment) and popped first in the adjoint's iteration:
the pushes keep their order (the moved one is the iteration's last), and each adjoint iteration
reads the same value of v as before. The `v = None` then goes as dead code.
"""
import ast
import copy

from ...syntax import is_comment, is_rt_call
from .nodes import _blocks


class Pushes:
    """Loop-local values taped at the iteration's exits (mixed into Cleanup)."""

    def _pushes(self) -> bool:
        tapes = {st.targets[0].id for st in self.fn.body if isinstance(st, ast.Assign) and len(st.targets) == 1
                 and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.List) and not st.value.elts}
        changed = False
        for tape in tapes:
            for loop in [n for n in ast.walk(self.fn) if isinstance(n, (ast.For, ast.While))]:
                for v in _candidates(loop, tape):
                    changed |= _move(self.fn, loop, tape, v)
        return changed


def _push_of(st, tape):
    """`tape.append(v)` or `tape.append(rt.shape_stand_in(v))` -> v."""
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) \
            and st.value.func.attr == "append" and isinstance(st.value.func.value, ast.Name) \
            and st.value.func.value.id == tape and len(st.value.args) == 1 and not st.value.keywords:
        arg = st.value.args[0]
        if is_rt_call(arg, "shape_stand_in") and len(arg.args) == 1 and not arg.keywords:
            arg = arg.args[0]
        if isinstance(arg, ast.Name):
            return arg.id
    return None


def _is_pop(st, tape, v):
    return isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
        and st.targets[0].id == v and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) \
        and st.value.func.attr == "pop" and isinstance(st.value.func.value, ast.Name) \
        and st.value.func.value.id == tape and not st.value.args


def _candidates(loop, tape):
    out = []
    body = loop.body
    for a, st in enumerate(body[:-1]):
        v = _push_of(st, tape)
        nxt = body[a + 1]
        if v and isinstance(nxt, ast.Assign) and len(nxt.targets) == 1 and isinstance(nxt.targets[0], ast.Name) \
                and nxt.targets[0].id == v:
            out.append(v)
    return out


def _exits(body):
    """The break/continue statements of this loop (not of loops nested in it), with their blocks."""
    out = []
    for st in body:
        if isinstance(st, (ast.Break, ast.Continue)):
            out.append((body, st))
        elif isinstance(st, ast.If):
            out += _exits(st.body) + _exits(st.orelse)
        elif isinstance(st, (ast.With, ast.Try)):
            out.append((body, None))
    return out


def _move(fn, loop, tape, v) -> bool:
    body = loop.body
    a = next(k for k, st in enumerate(body) if _push_of(st, tape) == v)
    before, after = body[:a], body[a + 2:]
    if any(isinstance(n, ast.Return) for n in ast.walk(loop)):
        return False
    if any(isinstance(n, ast.Name) and n.id == v for st in before for n in ast.walk(st)):
        return False        # read (or bound) before its assignment: carried from the last iteration
    for part in (getattr(loop, "test", None), getattr(loop, "iter", None), getattr(loop, "target", None)):
        if part is not None and any(isinstance(n, ast.Name) and n.id == v for n in ast.walk(part)):
            return False
    if any(isinstance(n, ast.Name) and n.id == v and not isinstance(n.ctx, ast.Load)
           for st in after for n in ast.walk(st)) or loop.orelse:
        return False
    exits = _exits(body)
    early = {id(n) for st in before for n in ast.walk(st)}
    if any(st is None or id(st) in early for _, st in exits):
        return False        # an exit before the assignment: that iteration has no new value
    pushes = [n for n in ast.walk(fn) if isinstance(n, ast.stmt) and _push_of(n, tape) == v]
    pops = [(blk, st) for blk in _all_blocks(fn.body) for st in blk if _is_pop(st, tape, v)]
    if len(pushes) != 1 or len(pops) != 1:
        return False
    pop_block, pop = pops[0]
    mirror = next((n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While)) and n.body is pop_block), None)
    if mirror is None or mirror is loop:
        return False
    # every read of v: in the loop, or in the mirror before the pop
    k = pop_block.index(pop)
    allowed = {id(n) for n in ast.walk(loop)} | {id(n) for st in pop_block[:k + 1] for n in ast.walk(st)}
    if any(isinstance(n, ast.Name) and n.id == v and isinstance(n.ctx, ast.Load) and id(n) not in allowed
           for n in ast.walk(fn)):
        return False
    if _exits(mirror.body) or mirror.orelse:
        return False
    # rewrite: push at each exit and at the end; pop first in the mirror's iteration
    push = body.pop(a)
    # one push before the first statement that may leave the iteration, when nothing from there
    # on tapes or rebinds v (every path then passes it); else one before each exit and at the end
    first = next((q for q in range(a, len(body)) if _exits([body[q]])), len(body))
    if not any(_tape_op(n, tape) or isinstance(n, ast.Name) and n.id == v and not isinstance(n.ctx, ast.Load)
               for st in body[first:] for n in ast.walk(st)):
        body.insert(first, _copy_push(push))
    else:
        for blk, st in exits:
            blk.insert(blk.index(st), _copy_push(push))
        if not (body and isinstance(body[-1], (ast.Break, ast.Continue))):
            body.append(_copy_push(push))
    del pop_block[k]
    if k and is_comment(pop_block[k - 1]) and (k == len(pop_block) or is_comment(pop_block[k])):
        del pop_block[k - 1]        # the comment of a line whose adjoint held only the pop
    lead = next((j for j, st in enumerate(pop_block) if not is_comment(st)), len(pop_block))
    pop_block.insert(lead, pop)     # (under the first line's comment: errors name a line of the body)
    return True


def _tape_op(n, tape):
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
        and n.func.value.id == tape


def _copy_push(push):
    return copy.deepcopy(push)


def _all_blocks(body):
    out, stack = [], [body]
    while stack:
        b = stack.pop()
        out.append(b)
        for st in b:
            if not isinstance(st, ast.FunctionDef):
                stack.extend(_blocks(st))
    return out
