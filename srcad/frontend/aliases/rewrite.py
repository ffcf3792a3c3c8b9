"""The rewrite after the analysis: rebind the names a write reached (`y = z`), guard `t op= v`
with a run-time test, and `check_aliases`, the pass's entry point."""
import ast
from typing import TYPE_CHECKING

from ...errors import UnsupportedSyntaxError
from ..inplace import _loc, desugar_inplace
from .analysis import _Aliases

if TYPE_CHECKING:
    from ..parse import Parsed


def _rebind(name, source, guarded, st, rt_name):
    if isinstance(guarded, tuple):      # a slice: `y[1:] = v` written back, or `v = y[1:]` taken again
        how, view = guarded
        slice_ = ast.parse(view, mode="eval").body
        base = slice_.value.id
        if how == "store":
            slice_.ctx = ast.Store()
            node = ast.Assign([slice_], ast.Name(source, ast.Load()))
        else:
            node = ast.Assign([ast.Name(name, ast.Store())], slice_)
        test = ast.Call(ast.Attribute(ast.Name(rt_name, ast.Load()), "slices_are_views", ast.Load()),
                        [ast.Name(base, ast.Load())], [])
        return _loc(ast.If(test, [node], []), st)
    node = ast.Assign([ast.Name(name, ast.Store())], ast.Name(source, ast.Load()))
    if guarded:     # `z += x` updated z's array in place, or rebound a number: ask at run time
        test = ast.Call(ast.Attribute(ast.Name(rt_name, ast.Load()), "updates_in_place", ast.Load()),
                        [ast.Name(name, ast.Load())], [])
        node = ast.If(test, [node], [])
    return _loc(node, st)


def _guard(name, construct, hint, st, parsed, rt_name, readers):
    """`rt.refuse_shared_update(t, ..., v)`: raise, before `t op= ...` runs, if t holds an array
    whose memory v (a name read later) shares."""
    filename, line, col = parsed.where(st)
    args = [ast.Name(name, ast.Load())] + [ast.Constant(v) for v in (construct, filename, line, col, hint)] + \
        [ast.Name(r, ast.Load()) for r in readers]
    return _loc(ast.Expr(ast.Call(ast.Attribute(ast.Name(rt_name, ast.Load()), "refuse_shared_update",
                                                ast.Load()), args, [])), st)


def _binds(st):
    """The names a simple statement binds whenever it runs (compound statements: none for sure)."""
    if isinstance(st, ast.Assign):
        targets = st.targets
    elif isinstance(st, (ast.AugAssign, ast.AnnAssign)):
        targets = [st.target]
    else:
        return set()
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _apply(stmts, after, writer_of, rt_name, guards=None, parsed=None, bound=frozenset()):
    """stmts with the rebinds and guards inserted; `bound` holds the names certainly bound before
    stmts run (a guard's reader that may be unbound there, say on a loop's first trip, is refused:
    the check could not read it)."""
    out = []
    bound = set(bound)
    for st in stmts:
        inner = bound | ({n.id for n in ast.walk(st.target) if isinstance(n, ast.Name)}
                         if isinstance(st, (ast.For, ast.AsyncFor)) else set())
        for field_ in ("body", "orelse"):
            if isinstance(getattr(st, field_, None), list):
                setattr(st, field_, _apply(getattr(st, field_), after, writer_of, rt_name, guards, parsed,
                                           inner if field_ == "body" else bound))
        if guards and id(st) in guards:
            name, construct, hint, _, readers = guards[id(st)]
            unsure = [r for r in readers if r not in bound]
            if unsure:
                raise UnsupportedSyntaxError(
                    construct + f" (`{unsure[0]}` may not be bound yet when the write runs, so srcad cannot "
                                "check at run time whether they share memory)", *parsed.where(st), hint=hint)
            out.append(_guard(name, construct, hint, st, parsed, rt_name, readers))
        out.append(st)
        bound |= _binds(st)
        for name, guarded in after.get(id(st), {}).items():
            out.append(_rebind(name, writer_of(st), guarded, st, rt_name))
    return out


def _writer(st):
    t = st.targets[0] if isinstance(st, ast.Assign) else st.target
    return t.value.id if isinstance(t, ast.Subscript) else t.id


def check_aliases(parsed: "Parsed") -> "Parsed":
    """Desugar `out=`/copyto/fill, then reject or resolve every in-place write another name may
    see (see the module docstring). Changes `parsed.tree` in place and sets
    `parsed.global_writes`, the (line, name) pairs of writes into module-level objects."""
    from ... import runtime
    fn = parsed.tree
    desugar_inplace(parsed, fn)
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    a = _Aliases(parsed, fn, params).run()
    parsed.global_writes = a.global_writes
    if any(a.after.values()) or a.guards:
        rt_name = "rt"
        if parsed.env.get(rt_name, runtime) is not runtime:
            st = next(s for s in ast.walk(fn) if a.after.get(id(s)) or id(s) in a.guards)
            raise UnsupportedSyntaxError(
                "an in-place update of an array that another name holds, in a module where `rt` is not "
                "srcad.runtime", *parsed.where(st), hint="make a copy with `.copy()` before updating")
        parsed.env.setdefault(rt_name, runtime)
        bound = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        bound |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
        fn.body = _apply(fn.body, a.after, _writer, rt_name, a.guards, parsed, bound)
    return parsed
