"""Peephole fusion of runtime helpers in a generated function.

When a temporary is made by one helper and read only once, by another helper, the pair can run
as one fused helper (rt.<fused>(*producer args, *consumer's other args)) that skips forming the
temporary. The table says which pairs fuse; each fused helper is defined in srcad.runtime as
exactly `consumer(..., producer(...), ...)`, with a fast path, and has its rule in
srcad/rules/runtime_rules.py (so Hessians differentiate through it).
"""
import ast
from collections import Counter

# (producer, consumer, position of the temporary among the consumer's args) -> fused helper
FUSIONS = {
    # a gathered row block's cotangent from `E[idx] @ w`: kept as its outer-product factors
    ("matmul_vjp_x", "index_vjp", 0): "index_matmul_vjp",
}


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


def fuse(fn):
    """Apply FUSIONS in place to a generated FunctionDef; returns it."""
    loads = Counter(n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    stores = Counter(n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    for node in ast.walk(fn):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                _fuse_block(block, loads, stores)
    return fn


def _fuse_block(block, loads, stores):
    made = {}        # temporary -> index in block of the statement making it
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
            fused = FUSIONS.get((_rt_call(producer), helper, pos))
            if fused is None or not _unchanged_between(block, j, i, producer.args):
                continue
            others = [a for k, a in enumerate(stmt.value.args) if k != pos]
            stmt.value = ast.Call(func=ast.Attribute(value=ast.Name(id="rt", ctx=ast.Load()), attr=fused,
                                                     ctx=ast.Load()), args=list(producer.args) + others, keywords=[])
            block[j] = ast.Pass()
            made[arg.id] = None
            break
        made[name] = i
    block[:] = [s for s in block if not isinstance(s, ast.Pass)] or [ast.Pass()]


def _unchanged_between(block, j, i, args):
    """No statement strictly between j and i rebinds a name the producer's arguments read."""
    names = {n.id for a in args for n in ast.walk(a) if isinstance(n, ast.Name)}
    for stmt in block[j + 1:i]:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in names:
                return False
    return True
