"""An operator of srcad applied inside differentiated code: `srcad.grad(f)(x)` in a function srcad
transforms. The operator is applied once, at transform time, and its result (a function
srcad composes, srcad/composition.py) is bound to a fresh module-level name the generated code
calls. The operators are known by their mark `__srcad_operator__` (set in srcad/api/), so
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


# ---- srcad.jvp / srcad.vjp called inside differentiated code -----------------------------------
def inline_call(normalizer, call):
    """`srcad.jvp(f, (x, ...), (v, ...))` inside a function srcad transforms, f a module-level name
    and the primals and tangents tuple (or list) displays: a call `jvp_of_f(x, ..., v, ...)` of a
    function srcad composes (the operator's mark `__srcad_inline__` builds it: srcad/composition.py
    `inline_jvp`). `srcad.vjp` there (marked None) is a named error: its pullback is a local
    function. None for any other call."""
    found, op = normalizer.resolve(call.func) if normalizer.is_global_ref(call.func) else (False, None)
    if not found or not hasattr(op, "__srcad_inline__"):
        return None
    parsed = normalizer.parsed
    build = op.__srcad_inline__
    if build is None:
        raise UnsupportedSyntaxError(
            "`srcad.vjp` called inside a differentiated function (the pullback it returns is a local function, "
            "which srcad does not differentiate)", *parsed.where(call),
            hint="compute the vector-Jacobian product as a gradient: with `def inner(x, v): return np.sum(f(x) * v)` "
                 "at module level, `srcad.grad(inner)(x, v)` is vjp's pullback(v) and can be called here")
    f_ok, f = (normalizer.resolve(call.args[0]) if call.args and normalizer.is_global_ref(call.args[0])
               else (False, None))
    shown = len(call.args) == 3 and not call.keywords and all(
        isinstance(a, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in a.elts)
        for a in call.args[1:]) and len(call.args[1].elts) == len(call.args[2].elts)
    if not (f_ok and callable(f) and shown):
        raise UnsupportedSyntaxError(
            f"`{ast.unparse(call)}` inside a differentiated function, in a form srcad does not transform",
            *parsed.where(call),
            hint="call srcad.jvp(f, (x, ...), (v, ...)) with f a module-level function and the primals and "
                 "tangents written out as tuples of the same length")
    if isinstance(call.args[0], ast.Name):
        parsed.extra_watch.append((parsed, call.args[0].id, f))
    primals, tangents = call.args[1].elts, call.args[2].elts
    idx = tuple(k for k, t in enumerate(tangents) if not (isinstance(t, ast.Constant) and t.value is None))
    fname = normalizer.temp(f"jvp_{ast.unparse(call.args[0])}".replace(".", "_"))
    parsed.env[fname] = build(f, len(primals), idx)
    return ast.Call(ast.Name(fname, ast.Load()), list(primals) + [tangents[k] for k in idx], [])
