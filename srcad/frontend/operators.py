"""An operator of srcad applied inside differentiated code: `srcad.grad(f)(x)` in a function srcad
transforms. The operator is applied once, at transform time, and its result (a function
srcad composes, srcad/composition.py) is bound to a fresh module-level name the generated code
calls. The operators are known by their mark `__srcad_operator__` (set in srcad/api.py), so
this pass needs no import of the API above it.
"""
import ast

from ..errors import UnsupportedSyntaxError

# ---- an operator applied inside differentiated code: `srcad.grad(f)(x)` ------------------------
_APPLIED = {}       # (operator, ids of its arguments) -> (the arguments, what it returned)


def operator_call(normalizer, call):
    """For `srcad.grad(f, ...)` (any operator above) whose arguments are module-level names and
    constants, called at once inside a function srcad transforms: a fresh module-level name of
    that function bound to the operator's result, which is then a call of a function srcad
    composes (see the module docstring); None for any other call."""
    found, op = normalizer.resolve(call.func) if normalizer.is_global_ref(call.func) else (False, None)
    if not found or not getattr(op, "__srcad_operator__", False):
        return None
    parsed = normalizer.parsed
    values = []
    for a in list(call.args) + [k.value for k in call.keywords]:
        if isinstance(a, ast.Constant):
            values.append(a.value)
            continue
        ok, v = normalizer.resolve(a) if normalizer.is_global_ref(a) else (False, None)
        if not ok:
            raise UnsupportedSyntaxError(
                f"`{ast.unparse(call)}` applied inside the function with an argument that is not a module-level "
                f"name or a constant (`{ast.unparse(a)}`)", *parsed.where(call),
                hint=f"apply {ast.unparse(call.func)} at module level (`d{ast.unparse(call.args[0]) if call.args else 'f'} "
                     f"= {ast.unparse(call)}`) and call that")
        if isinstance(a, ast.Name):     # rebinding it makes the derivative stale
            parsed.extra_watch.append((parsed, a.id, v))
        values.append(v)
    pos, kws = values[:len(call.args)], dict(zip([k.arg for k in call.keywords], values[len(call.args):]))
    if any(k is None for k in kws):
        return None
    key = (op, tuple(id(v) for v in pos), tuple((k, id(v)) for k, v in kws.items()))
    held = _APPLIED.get(key)
    if held is None:
        if len(_APPLIED) > 1024:
            _APPLIED.clear()
        held = _APPLIED[key] = ((pos, kws), op(*pos, **kws))
    fname = normalizer.temp(f"{op.__name__}_{ast.unparse(call.args[0]) if call.args else 'f'}".replace(".", "_"))
    parsed.env[fname] = held[1]
    return fname
