"""Peephole fusion of runtime helpers in a generated function.

When a temporary is made by one helper and read only once, by another helper, the pair can run
as one fused helper that skips forming the temporary: rt.<fused>(*producer args, *consumer's
other args), less the producer args the fusion drops. The producer's registry entry says which
pairs fuse (its `fusions` fact); each fused
helper is defined in srcad.runtime as exactly `consumer(..., producer(...), ...)`, with a fast
path, and has its rule in srcad/rules/runtime_rules.py (so Hessians differentiate through it).
Fusions repeat until none applies: one fusion can free a temporary for the next (the adjoint's
index_matmul_vjp no longer reads the gathered rows, so the forward gather can fuse with its
matmul).
"""
import ast
from collections import Counter

from ..rules.registry import facts
from ..syntax import is_comment

def fusion(producer, consumer, pos):
    """(fused helper, positions of producer args the fused helper does not take) when the helper
    `producer`'s result, passed as argument `pos` of `consumer`, fuses with it; else None. The
    fusions are declared on the producer's registry entry (rules/runtime_rules.py)."""
    from .. import runtime
    entry = facts(getattr(runtime, producer, None)) if producer else None
    return (entry.fusions or {}).get((consumer, pos)) if entry is not None else None


def _rt_call(node):
    """The helper name of `rt.<name>(...)` with positional arguments only, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "rt"
            and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)):
        return node.func.attr
    return None


def _single_assign(stmt):
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def fuse(fn: ast.FunctionDef) -> ast.FunctionDef:
    """Apply the declared fusions in place to a generated FunctionDef until none applies; returns it."""
    while _fuse_once(fn):
        pass
    return fn


def _fuse_once(fn):
    loads = Counter(n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    stores = Counter(n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    fused = False
    for node in ast.walk(fn):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                fused |= _fuse_block(block, loads, stores)
    return fused


def _fuse_block(block, loads, stores):
    """Fuse the pairs in one statement list; True if any was fused (the load counts are then
    stale: the caller counts again before the next round)."""
    made = {}        # temporary -> index in block of the statement making it
    moved = {}       # id of the line comment above a fused producer -> the fused helper
    fused_any = False
    for i, stmt in enumerate(block):
        name = _single_assign(stmt)
        helper = _rt_call(stmt.value) if name else None
        if helper is None:
            continue
        for pos, arg in enumerate(stmt.value.args):
            if not (isinstance(arg, ast.Name) and arg.id in made):
                continue
            j = made[arg.id]
            if j is None or loads[arg.id] != 1 or stores[arg.id] != 1:
                continue
            producer = block[j].value
            entry = fusion(_rt_call(producer), helper, pos)
            if entry is None or not _unchanged_between(block, j, i, producer.args):
                continue
            fused, dropped = entry
            kept = [a for k, a in enumerate(producer.args) if k not in dropped]
            others = [a for k, a in enumerate(stmt.value.args) if k != pos]
            stmt.value = ast.Call(func=ast.Attribute(value=ast.Name(id="rt", ctx=ast.Load()), attr=fused,
                                                     ctx=ast.Load()), args=kept + others, keywords=[])
            note = _comment_above(block, j)
            if note is not None:
                moved[id(note)] = fused
            block[j] = ast.Pass()
            made[arg.id] = None
            fused_any = True
            break
        made[name] = i
    block[:] = [s for s in block if not isinstance(s, ast.Pass)] or [ast.Pass()]
    for k, stmt in enumerate(block):     # a user line whose code all moved into a fused helper
        if id(stmt) in moved and (k + 1 == len(block) or is_comment(block[k + 1])):
            where = "  (computed below, inside rt."
            if where not in stmt.value.value:
                stmt.value.value += f"{where}{moved[id(stmt)]})"
    return fused_any


def _comment_above(block, j):
    for k in range(j - 1, -1, -1):
        if is_comment(block[k]):
            return block[k]
    return None


def _unchanged_between(block, j, i, args):
    """No statement strictly between j and i rebinds a name the producer's arguments read."""
    names = {n.id for a in args for n in ast.walk(a) if isinstance(n, ast.Name)}
    for stmt in block[j + 1:i]:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in names:
                return False
    return True
