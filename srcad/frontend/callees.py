"""What srcad knows about a called object, asked by several passes (aliases, analyze, methods):
is it a user function (transformed too), does it write into its arguments. The facts themselves
live in the registry (rules/); this module only asks it, so the passes that ask need not import
each other.
"""
import ast
import types

import numpy as np

from ..rules.registry import ANY, FactSet

SYSTEM_MODULES = ("numpy", "scipy", "srcad", "builtins", "math")

INPLACE_METHODS = FactSet("inplace", ANY, methods=True)   # methods that change their receiver
INPLACE_FUNCS = FactSet("inplace", ANY)                   # functions that write into their first argument


def is_user_function(obj) -> bool:
    """A Python function of the user's (srcad transforms it too), or one a srcad operator returned."""
    if not isinstance(obj, types.FunctionType):
        return False
    if hasattr(obj, "__srcad_derived__"):     # what a srcad operator returned: composed (srcad/composition.py)
        return True
    mod = getattr(obj, "__module__", "") or ""
    return mod.split(".")[0] not in SYSTEM_MODULES


def member(obj, table) -> bool:
    """obj in table, False for an unhashable obj (it is in no table)."""
    try:
        return obj in table
    except TypeError:
        return False


def is_inplace_func(obj) -> bool:
    """A numpy function that writes into its first argument (np.put, np.add.at, ...)."""
    if member(obj, INPLACE_FUNCS):
        return True
    return getattr(obj, "__name__", None) == "at" and isinstance(getattr(obj, "__self__", None), np.ufunc)


def is_inplace_method_of_global(parsed, func, locals_) -> bool:
    """`BUF.append(v)`, `G.fill(v)`: an in-place method of a module-level object (not a module)."""
    if not (isinstance(func, ast.Attribute) and func.attr in INPLACE_METHODS and
            parsed.is_global_ref(func.value, locals_)):
        return False
    found, obj = parsed.try_resolve(func.value, locals_)
    return found and not isinstance(obj, types.ModuleType)


def atom_names(atoms) -> list:
    """(key, name) of a call's arguments that are names; the items of a *args parameter are keyed
    (param, position)."""
    out = []
    for k, a in atoms:
        if isinstance(a, tuple):
            out += [((k, j), e.id) for j, e in enumerate(a) if isinstance(e, ast.Name)]
        elif isinstance(a, ast.Name):
            out.append((k, a.id))
    return out
