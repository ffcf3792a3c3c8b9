"""Can a user function be run a second time and give the same values? Reverse mode may re-run a
called function inside the caller's adjoint (its `<g>_vjp` recomputes g's primal sweep); that is
right only when the second run repeats the first. A function that draws random numbers from a
shared generator, writes into a module-level object, or rebinds a global would not: the
adjoint would then differentiate other values than the ones f returned. `rerun_hazard` names the
first such construct it finds (following the user functions g calls), or None.
"""
import ast
import random
import types

import numpy as np

from ..rules.registry import facts, fact_of_chain
from .callees import is_inplace_method_of_global, is_user_function
from .parse import parse_function

_SHARED_STATE = (np.random.Generator, np.random.RandomState, np.random.BitGenerator, random.Random)


def _chain(f):
    out = []
    while isinstance(f, ast.Attribute):
        out.append(f.attr)
        f = f.value
    return [f.id] + out[::-1] if isinstance(f, ast.Name) else None


def _locals(tree):
    names = {a.arg for a in ast.walk(tree.args) if isinstance(a, ast.arg)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, ast.FunctionDef) and n is not tree:
            names.add(n.name)
    return names


def _resolve(parsed, chain):
    obj = parsed.env.get(chain[0])
    for name in chain[1:]:
        if obj is None:
            return None
        obj = getattr(obj, name, None)
    return obj


def _impure(parsed, chain):
    """The call `a.b.c(...)` (chain) has effects a second run would not repeat."""
    root = parsed.env.get(chain[0])
    if root is None or (getattr(root, "__name__", "") or "").startswith("srcad."):
        return False        # (srcad's runtime: its effects are its own tape's, repeated by a second run)
    entry = facts(root) if not isinstance(root, (int, float, str)) else None
    if entry is not None and entry.pure is False or False in fact_of_chain(root, chain[1:], "pure"):
        return True
    obj = _resolve(parsed, chain)
    if isinstance(getattr(obj, "__self__", None), _SHARED_STATE) or isinstance(root, _SHARED_STATE):
        return True
    mod = getattr(obj, "__module__", "") or ""
    return mod == "random" or mod.startswith("numpy.random")


def rerun_hazard(func, seen=None):
    """(parsed, node, what) for the first construct of func (or of a user function it calls) that a
    second run would not repeat, or None."""
    seen = set() if seen is None else seen
    if func in seen:
        return None
    seen.add(func)
    parsed = parse_function(func)
    tree = parsed.tree
    local = _locals(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return parsed, node, f"rebinds the shared name `{node.names[0]}`"
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AugAssign) else []
        for t in targets:
            if isinstance(t, (ast.Subscript, ast.Attribute)):
                chain = _chain(t.value)
                if chain is not None and chain[0] not in local and chain[0] in parsed.env:
                    return parsed, node, f"writes into the module-level object `{chain[0]}`"
        if isinstance(node, ast.Call):
            chain = _chain(node.func)
            if chain is None or chain[0] in local:
                continue
            if _impure(parsed, chain):
                return parsed, node, f"calls `{'.'.join(chain)}`, which draws from or changes shared state"
            if is_inplace_method_of_global(parsed, node.func, local):
                return parsed, node, f"changes the module-level object `{chain[0]}` with `.{chain[-1]}(...)`"
            callee = _resolve(parsed, chain)
            if is_user_function(callee):
                found = rerun_hazard(callee, seen)
                if found is not None:
                    return found
    for line, name in sorted(getattr(parsed, "global_writes", ()) or ()):
        return parsed, tree, f"writes into the module-level object `{name}` (line {line})"
    return None



def writes_in_place(func, seen=None, depth=0):
    """May func (or a user function it calls) change an object in place (an item or attribute
    written, a mutating method or `out=`, a call it cannot follow)? False only when sure not."""
    seen = set() if seen is None else seen
    if func in seen:
        return False        # (a recursion adds no write of its own)
    if depth > 6:
        return True
    seen.add(func)
    parsed = parse_function(func)
    local = _locals(parsed.tree)
    for node in ast.walk(parsed.tree):
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Delete, ast.Lambda, ast.Yield, ast.Await)) or \
                isinstance(node, ast.FunctionDef) and node is not parsed.tree:
            return True
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
        if any(isinstance(n, (ast.Subscript, ast.Attribute)) for t in targets for n in ast.walk(t)):
            return True
        if isinstance(node, ast.Call):
            chain = _chain(node.func)
            if chain is None or chain[0] in local or any(k.arg in ("out", None) for k in node.keywords):
                return True     # a local called, or a method that may change its object
            obj = _resolve(parsed, chain)
            if is_user_function(obj):
                if writes_in_place(obj, seen, depth + 1):
                    return True
                continue
            entry = facts(obj) if callable(obj) and not isinstance(obj, type) else None
            if entry is None or entry.pure is False or getattr(entry, "inplace", False):
                return True     # no registry entry, or one that says it writes
    return False
