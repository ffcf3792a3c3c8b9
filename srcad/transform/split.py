"""Split callees: grad's code runs a user function's primal sweep once, not once more per adjoint.

A callee's adjoint `<g>_vjp` re-runs g's primal sweep before its adjoint sweep (call-tree
reversal by recomputation, srcad/transform/unit.py): a loop calling g pays g's primal twice, a
recursion of depth L pays its deepest levels L times (det by minors). For the code grad and
value_and_grad run (the "+split" cache variant; code that is differentiated again, or asked for
with `@srcad.checkpoint` or checkpoint=k, keeps recomputation), each callee adjoint gets a split
twin `<g>_split`: the same passes with g's value kept (the `return_value` adjoint), whose seed
line `s = rt.seed(value, s)` becomes `s = yield value`. A generator: run up to its yield it is
g's primal sweep with g's tape in its frame; resumed with the cotangent it is g's adjoint sweep,
which yields the gradients (a second yield, where it has no other return: no StopIteration).

In every generated function of the unit, a primal call `y = g(a, b)` whose adjoint call
`g_vjp(a, b, g_bar=y_bar)` has the same arguments becomes `y = rt.split_forward(callee_frames,
g_split, a, b)` and the adjoint call `rt.split_backward(callee_frames, g_split, g_vjp, 'g_bar',
y_bar, a, b)` (a call with keywords: the `_kw` pair, arguments as a tuple and a dict), which resumes the frame whose arguments are those very objects, or runs `g_vjp`
(the recomputation, as before) when there is none (srcad/runtime/frames.py).
"""
import ast

import numpy as np

from ..errors import SrcadError
from ..rules.registry import facts
from ..syntax import ast_copy, comment, is_rt_call
from .kinds.lattice import Cat
from .unit import Unit, _base_name, _identifier

FRAMES = "callee_frames"


def derive_splits(unit: "Unit") -> dict:
    """Derive the split twin of every callee adjoint in the unit (their own callees too):
    {adjoint name: (split FunctionDef, user function, the adjoint's seed parameter)}."""
    splits: dict = {}
    done: set = set()
    while True:
        todo = [(k, v) for k, v in list(unit.callees.items()) if k[0] != "jvp" and k not in done]
        if not todo:
            return splits
        for key, (vjp_name, seed) in todo:
            done.add(key)
            func, act, kinds = key
            if getattr(func, "__srcad_checkpoint__", False) or getattr(func, "__srcad_receiver__", None):
                continue        # recomputed on purpose (@srcad.checkpoint), or a method (called on self)
            name = unit.fresh(_identifier(_base_name(func)) + "_split")
            try:
                fn, split_seed = unit._derive(unit, func, act if len(act) > 1 else act[0], top_level=False,
                                              name=name, return_value=True, params=kinds)
            except SrcadError:
                continue
            fn.srcad_split_seed = split_seed
            splits[vjp_name] = (fn, func, seed)


def _as_generator(fn) -> bool:
    """`s = rt.seed(value, s)` -> `s = yield value`, `return (value, grads)` -> `yield grads` (or
    `return grads` where the function has other returns)."""
    seeds = [st for st in ast.walk(fn) if isinstance(st, ast.Assign) and is_rt_call(st.value, "seed")]
    ret = fn.body[-1] if fn.body else None
    if len(seeds) != 1 or not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)
                               and len(ret.value.elts) == 2) or seeds[0] not in fn.body:
        return False
    _drop_needless_snapshot(fn, seeds[0])
    seeds[0].value = ast.Yield(value=seeds[0].value.args[0])
    if sum(isinstance(n, ast.Return) for n in ast.walk(fn)) == 1:
        # the gradients, yielded: the frame is resumed once and dropped, and handing them over
        # this way is cheaper than a return's StopIteration (split_backward takes either)
        fn.body[-1] = ast.Expr(ast.Yield(value=ret.value.elts[1]))
    else:
        ret.value = ret.value.elts[1]
    if isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant):
        origin = getattr(fn, "srcad_from", ("the callee",))[0]
        fn.body[0].value = ast.Constant(
            f"{origin}'s split adjoint: run to its yield, {origin}'s primal sweep (yields the value); resumed "
            f"with the output cotangent {fn.srcad_split_seed}, its adjoint sweep (hands over what {origin}_vjp returns).")
    return True


def _drop_needless_snapshot(fn, seed_st):
    """`v = rt.snapshot(r)` before the yield copies g's value so that g's adjoint sweep, restoring
    what g wrote in place, cannot change what the caller holds. An output that is a fresh array
    (made by arithmetic or a NumPy function that makes a new value, a float/int/bool array by the
    kinds pass) after which g's primal sweep writes into nothing, and which is made at the top
    level of g (not in a loop or branch), is an object that no restore touches: it is yielded as
    it is. (The caller's own in-place writes into it its adjoint sweep undoes before it resumes
    the frame, as for a callee that writes nothing.) Anything not proven so keeps its copy."""
    kinds = getattr(fn, "srcad_kinds", None)
    at = next((k for k, st in enumerate(fn.body) if isinstance(st, ast.Assign) and len(st.targets) == 1
               and isinstance(st.value, ast.Call) and is_rt_call(st.value, "snapshot")), None)
    if kinds is None or at is None or not isinstance(fn.body[at + 1] if at + 1 < len(fn.body) else None, ast.Assign) \
            or fn.body[at + 1] is not seed_st or not isinstance(fn.body[at].value.args[0], ast.Name):
        return
    ret = fn.body[at].value.args[0].id
    defs = [k for k in range(at) if _assigns(fn.body[k], ret)]
    if not defs:
        return
    if len(fn.body[defs[-1]].targets) != 1 or any(ret in _stored(st) for st in fn.body[defs[-1] + 1:at]):
        return
    whole = fn.body[defs[-1]].value
    parts = whole.elts if isinstance(whole, ast.Tuple) else None
    names = [e.id if isinstance(e, ast.Name) else None for e in parts] if parts is not None else [ret]
    fresh = [n is not None and _fresh(fn.body, at, n, kinds) for n in names]
    if not any(fresh):
        return
    if parts is None:
        fn.body[at].value = ast.Name(ret, ast.Load())
    elif all(fresh):
        fn.body[at].value = ast.Name(ret, ast.Load())       # (a tuple: no one changes it)
    else:
        fn.body[at].value = ast.Tuple([ast.Name(n, ast.Load()) if f else _rt("snapshot", [ast_copy(e)])
                                       for n, f, e in zip(names, fresh, parts)], ast.Load())


def _assigns(st, name):
    return isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in st.targets)


def _fresh(body, end, name, kinds):
    """Is `name` at body[end] a new float/int/bool array made at the top level by its last
    assignment, with no in-place write of anything after it (see _drop_needless_snapshot)?"""
    kind = kinds.exit_of_body(name)
    if kind.cat is not Cat.ARRAY or kind.dtype not in ("d", "f", "l", "?"):
        return False
    defs = [k for k in range(end) if _assigns(body[k], name)]
    if not defs or len(body[defs[-1]].targets) != 1 or any(name in _stored(st) for st in body[defs[-1] + 1:end]):
        return False
    j = defs[-1]
    value = body[j].value
    if not (isinstance(value, (ast.BinOp, ast.UnaryOp)) or _new_value_call(value)):
        return False
    return all(_writes_nothing(st) for st in body[j + 1:end])


def _stored(st):
    return {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _new_value_call(call):
    """`np.f(...)` that the registry knows, with no alias fact (it makes a new value), no effects
    and no write (frontend/aliases reads the same facts)."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name) and call.func.value.id == "np"):
        return False
    if any(k.arg in (None, "out", "copy") for k in call.keywords):
        return False
    entry = facts(getattr(np, call.func.attr, None))
    return entry is not None and entry.pure is not False and entry.alias is None and entry.inplace is None


def _writes_nothing(st):
    """A straight-line statement that writes into no object: names bound (to anything) and items
    appended to a list named by a name (the tape), calls only of NumPy functions that make new values."""
    if isinstance(st, ast.Assign):
        if not all(isinstance(n, (ast.Name, ast.Tuple)) and all(isinstance(m, (ast.Name, ast.Tuple)) or
                                                               isinstance(m, ast.expr_context) for m in ast.walk(n))
                   for n in st.targets):
            return False
        value = st.value
    elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) \
            and st.value.func.attr == "append" and isinstance(st.value.func.value, ast.Name) \
            and len(st.value.args) == 1 and not st.value.keywords:
        value = st.value.args[0]
    else:
        return False
    for node in ast.walk(value):
        if isinstance(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda)):
            return False
        if isinstance(node, ast.Call) and not (_new_value_call(node) or is_rt_call(node, "shape_stand_in")):
            return False
    return True


def _key(unit, func, call):
    try:
        _, args = unit.bind_callee(func, call)
    except SrcadError:
        return None
    return (func, tuple(ast.dump(a) for a in args))


def _rt(helper, args, keywords=()):
    return ast.Call(ast.Attribute(ast.Name("rt", ast.Load()), helper, ast.Load()), list(args), list(keywords))


def _dict(keywords):
    """`{'a': x, **d}` of a call's keywords."""
    return ast.Dict([None if k.arg is None else ast.Constant(k.arg) for k in keywords], [k.value for k in keywords])


def split_calls(unit: "Unit", functions: list[ast.FunctionDef], splits: dict) -> list[ast.FunctionDef]:
    """Turn the split twins into generators and let every generated function call them (see the
    module docstring); returns the functions to emit (a twin that could not be made a generator
    is dropped, its calls left recomputing)."""
    ready = {vjp: v for vjp, v in splits.items() if _as_generator(v[0])}
    dropped = {id(v[0]) for vjp, v in splits.items() if vjp not in ready}
    functions = [f for f in functions if id(f) not in dropped]
    primal = {id(d) for d in unit.primal_defs.values()}
    by_name = {f.__name__: f for f in unit.primal_defs}
    for fn in functions:
        if id(fn) not in primal:
            _rewrite(unit, fn, ready, by_name)
    return functions


def _rewrite(unit, fn, ready, by_name):
    adjoint = {}        # key -> [(call node, adjoint name)]
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ready:
            split, func, seed = ready[node.func.id]
            given = [k for k in node.keywords if k.arg == seed]
            if len(given) != 1 or by_name.get(func.__name__) is not func:
                continue
            rest = [k for k in node.keywords if k.arg != seed]
            key = _key(unit, func, ast.Call(ast.Name(func.__name__, ast.Load()), node.args, rest))
            if key is not None:
                adjoint.setdefault(key, []).append((node, node.func.id))
    if not adjoint:
        return
    taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(fn.args)
                                                                     if isinstance(a, ast.arg)}
    frames, k = FRAMES, 1
    while frames in taken:
        k += 1
        frames = f"{FRAMES}_{k}"
    sites = [(st, by_name[st.value.func.id]) for st in ast.walk(fn)
             if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name)
             and st.value.func.id in by_name]
    keys = [_key(unit, func, st.value) for st, func in sites]
    used = set()
    for (st, func), key in zip(sites, keys):
        names = {name for _, name in adjoint.get(key, ())}
        if len(names) != 1 or keys.count(key) != 1:
            # no adjoint of this call here, two activity patterns of it, or two calls with the same
            # arguments (whose adjoints could not be told apart if only one ran): as it was
            continue
        split = ready[names.pop()][0]
        sig_params, args = unit.bind_callee(func, st.value)
        pos, kws = unit.call_parts(func, sig_params, args)
        head = [ast.Name(frames, ast.Load()), ast.Name(split.name, ast.Load())]
        st.value = _rt("split_forward_kw", head + [ast.Tuple(pos, ast.Load()), _dict(kws)]) if kws else \
            _rt("split_forward", head + pos)
        used.add(key)
    if not used:
        return
    for key in used:
        for node, vjp_name in adjoint[key]:
            split, func, seed = ready[vjp_name]
            given = next(k for k in node.keywords if k.arg == seed)
            head = [ast.Name(frames, ast.Load()), ast.Name(split.name, ast.Load()), ast.Name(vjp_name, ast.Load()),
                    ast.Constant(seed), given.value]
            rest = [k for k in node.keywords if k.arg != seed]
            helper = "split_backward_kw" if rest else "split_backward"
            node.args = head + ([ast.Tuple(node.args, ast.Load()), _dict(rest)] if rest else node.args)
            node.keywords = []
            node.func = ast.Attribute(ast.Name("rt", ast.Load()), helper, ast.Load())
    at = 1 if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) else 0
    fn.body[at:at] = [comment(f"{frames}: the split adjoints <g>_split of callees, each run by rt.split_forward up to its"),
                      comment("yield (g's primal sweep); rt.split_backward resumes it with g's cotangent (g's adjoint sweep),"),
                      comment("or calls <g>_vjp (recomputing g) when no frame of that call is kept"),
                      ast.Assign([ast.Name(frames, ast.Store())], ast.List([], ast.Load()), lineno=0)]
