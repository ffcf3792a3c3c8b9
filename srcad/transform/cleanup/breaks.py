"""breaks: a loop's `break` flag turned back into the `break` the user wrote, where nothing else
reads the flag; and a `while` whose condition is a name computed just before the loop and again
at the end of its body reads the condition itself.

frontend/jumps.py lowers `break` to a flag so that every block runs to its end: `F = False`
before the loop, `F = True` where the user broke, every statement a break may skip guarded by
`G = not F` / `if G:`, and `if F: break` last in the body. Reverse mode needs that form only
where the adjoint replays a guard (it then reads G from the tape); a primal sweep that counts
its trips, and forward code, read neither flag. There the rewrite is exact: F is False wherever
a guard is reached (the only assignment of True is now the break itself), so each `if G:` runs
its body, and the loop leaves at the same point of the same iteration.

`C = e; while C: ...; C = e` (C a name the generated code made, read nowhere else, e's names
not rebound between the first assignment and the loop) -> `while e: ...`: the test the user
wrote, evaluated at the same points.
"""
import ast

from ...syntax import is_comment
from .nodes import _blocks


class Breaks:
    """Flags of lowered breaks restored as `break` (mixed into Cleanup)."""

    def _breaks(self) -> bool:
        reads, writes = _uses(self.fn)
        changed = False
        for block in _all_blocks(self.fn.body):
            for k, st in enumerate(block):
                if isinstance(st, (ast.For, ast.While)) and _restore_break(block, k, st, reads, writes, self.params):
                    changed = True
                    reads, writes = _uses(self.fn)
        for block in _all_blocks(self.fn.body):
            for k, st in enumerate(block):
                if isinstance(st, ast.While) and _inline_test(block, k, st, reads, writes, self.params):
                    changed = True
                    reads, writes = _uses(self.fn)
        return changed


def _all_blocks(body):
    out, stack = [], [body]
    while stack:
        b = stack.pop()
        out.append(b)
        for st in b:
            if not isinstance(st, ast.FunctionDef):
                stack.extend(_blocks(st))
    return out


def _uses(fn):
    """(name -> list of Name nodes reading it, name -> list of statements assigning it)."""
    reads, writes = {}, {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            reads.setdefault(node.id, []).append(node)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        writes.setdefault(n.id, []).append(node)
    return reads, writes


def _const_assign(st, value):
    return isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
        and isinstance(st.value, ast.Constant) and st.value.value is value


def _is_flag_break(st):
    """`if F: break` -> F, else None."""
    if isinstance(st, ast.If) and isinstance(st.test, ast.Name) and not st.orelse and \
            len(st.body) == 1 and isinstance(st.body[0], ast.Break):
        return st.test.id
    return None


def _restore_break(block, k, loop, reads, writes, params) -> bool:
    body = loop.body
    if loop.orelse or not body or (flag := _is_flag_break(body[-1])) is None or flag in params:
        return False
    sets = writes.get(flag, [])
    init = [s for s in sets if _const_assign(s, False)]
    trues = [s for s in sets if _const_assign(s, True)]
    if len(init) != 1 or len(init[0:1] + trues) != len(sets) or not trues or not any(s is init[0] for s in block[:k]):
        return False
    # the guards: G = not F, read only as the test of an `if G:` without else
    nots = {id(s.value.operand): s for blk in _all_blocks(body) for s in blk
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
            and isinstance(s.value, ast.UnaryOp) and isinstance(s.value.op, ast.Not)}
    tests = {id(s.test): s for blk in _all_blocks(body) for s in blk if isinstance(s, ast.If)}
    guard_sets, guard_ifs = [], []
    for node in reads.get(flag, []):
        if node is body[-1].test:
            continue
        if id(node) not in nots:
            return False
        guard_sets.append(nots[id(node)])
    for g_set in guard_sets:
        g = g_set.targets[0].id
        if len(writes.get(g, [])) != 1 or g in params:
            return False
        for node in reads.get(g, []):
            st = tests.get(id(node))
            if st is None or st.orelse:
                return False
            guard_ifs.append(st)
    # every path from a `F = True` to the end of the body meets only guards, guarded blocks, comments
    allowed = set(map(id, guard_ifs)) | {id(body[-1])} | set(map(id, guard_sets))
    path = _path_to(body, trues, loop)
    if path is None:
        return False
    for blk, pos in path:
        if not all(is_comment(s) or id(s) in allowed for s in blk[pos + 1:]):
            return False
    # rewrite: breaks, guards inlined, flag and test gone
    for blk, pos in path:
        if _const_assign(blk[pos], True):
            blk[pos] = ast.copy_location(ast.Break(), blk[pos])
    _rewrite(body, allowed, set(map(id, guard_ifs)))
    block[:] = [s for s in block if s is not init[0]]
    return True


def _path_to(body, targets, loop):
    """[(block, position)] of every target statement and each compound statement enclosing it, up
    to the loop body; None if one sits in a nested loop (a break there would leave that loop)."""
    out = []
    want = set(map(id, targets))

    def walk(blk):
        found = False
        for pos, s in enumerate(blk):
            if id(s) in want:
                out.append((blk, pos))
                found = True
            elif isinstance(s, ast.If):
                if any(walk(sub) for sub in (s.body, s.orelse)):
                    out.append((blk, pos))
                    found = True
            elif isinstance(s, (ast.For, ast.While)) and any(id(n) in want for n in ast.walk(s)):
                raise LookupError
        return found
    try:
        walk(body)
    except LookupError:
        return None
    return out if len([1 for blk, pos in out if id(blk[pos]) in want]) == len(want) else None


def _rewrite(blk, drop, inline):
    """Drop the statements in `drop` (and the comments right above them); splice the bodies of the
    `if G:` statements in `inline`."""
    out = []
    for s in blk:
        for sub in _blocks(s):
            _rewrite(sub, drop, inline)
        if id(s) in inline:
            while out and is_comment(out[-1]):
                out.pop()
            out += s.body
        elif id(s) in drop:
            while out and is_comment(out[-1]):
                out.pop()
        else:
            out.append(s)
    blk[:] = out


def _inline_test(block, k, loop, reads, writes, params) -> bool:
    """`C = e` before `while C:` and last in its body -> `while e:`."""
    if not isinstance(loop.test, ast.Name) or loop.orelse or not loop.body:
        return False
    c = loop.test.id
    last = loop.body[-1]
    if c in params or not (isinstance(last, ast.Assign) and len(last.targets) == 1
                           and isinstance(last.targets[0], ast.Name) and last.targets[0].id == c):
        return False
    j = next((j for j in range(k - 1, -1, -1) if isinstance(block[j], ast.Assign) and len(block[j].targets) == 1
              and isinstance(block[j].targets[0], ast.Name) and block[j].targets[0].id == c), None)
    if j is None or ast.dump(block[j].value) != ast.dump(last.value):
        return False
    if len(writes.get(c, [])) != 2 or len(reads.get(c, [])) != 1:
        return False
    e = last.value
    names = {n.id for n in ast.walk(e) if isinstance(n, ast.Name)}
    if any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.NamedExpr)) for n in ast.walk(e)):
        return False        # only operators and names: evaluated at the same points, nothing else
    between = block[j + 1:k]
    if any(isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and n.id in names
           for s in between for n in ast.walk(s)):
        return False
    loop.test = e
    loop.body.pop()
    while loop.body and is_comment(loop.body[-1]):
        loop.body.pop()
    del block[j]
    return True
