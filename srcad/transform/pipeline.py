"""The pipeline: every pass srcad runs, in order, in one place.

`derive` runs the passes on one function (the function asked for, and each user function it
calls); `build` runs them for a whole module and ends with cleanup and emit. Every pass has a
name (`STAGES`), and `srcad.emit(f, stage=NAME)` prints the code as it stands after that pass:

    parse       the function's syntax tree, every called name resolved to an object
    fence       refuses what srcad does not support (file:line:col, the construct)
    aliases     desugars `out=`/copyto/fill; refuses or resolves in-place writes another name sees
    normalize   one operation per statement, temporaries named after what they hold
    analyze     activity: which names carry derivatives and reach the output (shown as comments)
    kinds       reverse mode: what is sure about each value (float or array, dtype, ndim)
    reverse     the adjoint: a primal sweep with a tape, then the adjoint sweep
    forward     the tangent: each statement followed by its tangent statement
    fuse        runtime helpers whose result only feeds another one, fused into one call
    checkpoint  reverse mode with checkpoint=k: range loops reversed by the revolve driver
    cleanup     dead code, copies, constant folding, no zero adjoints
    emit        the standalone module: header, imports, a comment per user line

Options travel in one frozen `Options` value; no pass reads options from anywhere else.
"""
import ast
import re
import types
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Literal

from ..errors import SrcadError
from ..frontend.aliases import check_aliases
from ..frontend.analyze import Analysis
from ..frontend.fence import fence
from ..frontend.normalize import normalize
from ..frontend.parse import parse_function
from .checkpoint import checkpoint_loops
from .cleanup import cleanup
from .compile import is_generated
from .emit import module_text, unparse_with_comments
from .forward import Forward
from .fuse import fuse
from .kinds import Kinds, param_kinds
from .reverse import Reverse
from .split import derive_splits, split_calls
from ..syntax import name_result
from .unit import NameTaken, Unit, origin_of, refuse_reverse_over_tape, wrt_names_of

if TYPE_CHECKING:
    from ..frontend.normalize import Normalizer
    from ..frontend.parse import Parsed

Mode = Literal["reverse", "forward"]

REVERSE_STAGES = ("parse", "fence", "aliases", "normalize", "analyze", "kinds", "reverse", "fuse",
                  "checkpoint", "cleanup", "emit")
FORWARD_STAGES = ("parse", "fence", "aliases", "normalize", "analyze", "forward", "cleanup", "emit")
STAGES = ("parse", "fence", "aliases", "normalize", "analyze", "kinds", "reverse", "forward", "fuse",
          "checkpoint", "cleanup", "emit")

_VARIANT = re.compile(r"^(plain|value|checked)(\+numerics)?(\+split)?(?:\+ckpt(\d+))?$")


@dataclass(frozen=True)
class Options:
    """Everything that decides the generated code of one function, in one value.

    mode: "reverse" (an adjoint `<f>_vjp`) or "forward" (a tangent `<f>_jvp`); wrt: the
    differentiated parameters (positions or names); row_sparse: names whose gradient is a
    RowSparse; return_value: the adjoint also returns f's value (grad's `<f>_value_and_vjp`);
    checked: it computes and checks the value (grad's checked seed) but returns the gradient only
    (forward over it, hvp/hessian/jvp of grad, then carries no tangent of the value);
    check_numerics: the adjoint names the line whose derivative first became NaN or Inf;
    checkpoint: k snapshots for binomial checkpointing of range loops (None: tape everything);
    split: callees' primal sweeps run once, their adjoints resumed from kept frames (split.py);
    signature: the abstract signature of the arguments the code is specialised to (None: any);
    compile: Cython back end asked for (read by the compiled path, not by these passes);
    stage: the pass after which the pipeline stops and shows its code ("emit": the module)."""
    mode: Mode = "reverse"
    wrt: int | str | tuple = 0
    row_sparse: tuple[str, ...] = ()
    return_value: bool = False
    checked: bool = False
    check_numerics: bool = False
    checkpoint: int | None = None
    split: bool = False
    signature: object = None
    compile: bool = False
    stage: str = "emit"

    @classmethod
    def from_variant(cls, mode: Mode, wrt, row_sparse=(), variant: str = "plain", signature=None) -> "Options":
        """The options a cache variant names: "plain" | "value" | "checked", then "+numerics", "+split", "+ckpt<k>"."""
        m = _VARIANT.match(variant)
        if not m:
            raise ValueError(f"not a cache variant: {variant!r}")
        return cls(mode=mode, wrt=wrt, row_sparse=tuple(row_sparse), return_value=m.group(1) != "plain",
                   checked=m.group(1) == "checked",
                   check_numerics=bool(m.group(2)), split=bool(m.group(3)),
                   checkpoint=int(m.group(4)) if m.group(4) else None,
                   signature=signature)


def check_stage(stage: str, mode: str) -> None:
    """A named error for a stage that is no pass of `mode`'s pipeline, listing those that are."""
    valid = REVERSE_STAGES if mode == "reverse" else FORWARD_STAGES
    if stage not in valid:
        other = "forward" if mode == "reverse" else "reverse"
        also = f" ({stage!r} is a pass of {other} mode: pass mode={other!r})" if stage in STAGES else ""
        raise SrcadError(f"stage={stage!r} is not a pass of srcad's {mode} mode{also}. Pass one of "
                         f"{', '.join(valid)}.")


class _Reached(Exception):
    """The pipeline reached the stage asked for: `text` is the code as it stands."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


def _show(unit: Unit, stage: str, render: Callable[[], str]) -> None:
    if unit.options.stage == stage:
        raise _Reached(render())


def _code(*functions: ast.FunctionDef, note: str = "") -> str:
    return note + "\n\n".join(unparse_with_comments(f).rstrip("\n") for f in functions) + "\n"


def _silent(stage: str, render: Callable[[], str]) -> None:
    pass


def prepare(func: types.FunctionType, show=_silent) -> tuple["Parsed", ast.FunctionDef, "Normalizer"]:
    """The front of the pipeline: parse -> fence -> aliases -> normalize (Parsed, the normalized
    function, its Normalizer, whose Namer the later passes draw fresh names from)."""
    parsed = parse_function(func)
    show("parse", lambda: _code(parsed.tree))
    fence(parsed)
    show("fence", lambda: _code(parsed.tree))
    parsed.generated = is_generated(parsed.func)
    if not parsed.generated:    # srcad's own adjoint, transformed again, is alias-safe by construction
        check_aliases(parsed)
    show("aliases", lambda: _code(parsed.tree))
    fn, normalizer = normalize(parsed)
    name_result(fn, normalizer.namer, normalizer.locals)
    show("normalize", lambda: _code(fn))
    return parsed, fn, normalizer


def derive(unit: Unit, func: types.FunctionType, wrt, *, name: str | None = None, top_level: bool = True,
           return_value: bool = False, row_sparse=(), params=None) -> tuple[ast.FunctionDef, str | list[str]]:
    """The passes on one function, in order: (the generated function, the seed parameter's name
    in reverse mode / the wrt names in forward mode). A callee is derived by the same passes
    (Unit.callee_vjp / callee_jvp call back here); only the top-level function stops at a stage.
    A callee's `params` are the kinds its call site knows for its parameters (kinds.call_kinds)."""
    o = unit.options
    show = (lambda stage, render: _show(unit, stage, render)) if top_level else _silent
    parsed, fn, normalizer = prepare(func, show)
    if unit.mode == "reverse":
        refuse_reverse_over_tape(parsed)
    unit.parsed.append(parsed)
    wrt_names = wrt_names_of(fn, wrt)
    an = Analysis(fn, parsed, normalizer.locals, wrt_names)
    an.check_mutations(unit.mode)
    show("analyze", lambda: _code(fn, note=_activity(an)))
    if unit.mode == "forward":
        name = name or unit.fresh(fn.name + "_jvp")
        unit.names.add(name)
        kinds = Kinds(fn, an, param_kinds(func, o.signature if top_level else None))   # callees: any arguments
        fwd = Forward(fn, an, parsed, normalizer.namer, wrt_names, unit, kinds)
        # its tangent parameters, named before the body is (a recursive call passes them): `x_dot`, or
        # `x_dot_2` where the function already has an `x_dot` (forward mode over tangent code)
        unit.tangent_params[name] = {w: fwd.dot(w) for w in wrt_names}
        out = fwd.run(name)
        out.srcad_from = origin_of(parsed)
        unit.functions.append(out)
        show("forward", lambda: _code(*unit.emission_order(out)))
        return out, wrt_names
    seed = normalizer.namer.fresh(fn.name + "_bar")
    name = name or unit.fresh(fn.name + "_vjp")
    # the top level's kinds from the call's signature; a callee's, from what its call site knows
    kinds = Kinds(fn, an, param_kinds(func, o.signature) if top_level else dict(params or ()))
    show("kinds", lambda: _code(fn, note=_kinds(kinds)))
    rev = Reverse(fn, an, parsed, normalizer.namer, wrt_names, unit, seed, top_level,
                  row_sparse=[n for n in wrt_names if n in set(row_sparse)], check_numerics=o.check_numerics,
                  checkpoint=o.checkpoint, kinds=kinds, tuple_wrt=isinstance(wrt, tuple))
    out = rev.run(name, return_value=return_value)
    show("reverse", lambda: _code(*unit.emission_order(out)))
    out = fuse(out)
    show("fuse", lambda: _code(*unit.emission_order(out)))
    if rev.ckpt:        # after fusion: the loop's code is exactly that of checkpoint=None
        out = checkpoint_loops(rev, out)
    show("checkpoint", lambda: _code(*unit.emission_order(out)))
    out.srcad_origin = (parsed, wrt_names)
    out.srcad_from = origin_of(parsed)
    out.srcad_kinds = kinds     # (split.py: which outputs of a split twin are fresh arrays)
    unit.functions.append(out)
    return out, seed


def build(func, options: Options) -> tuple[str, dict, str, list]:
    """(module text, names srcad supplies, main function name, watch) of func's derivative: the
    passes of `derive` on func and its callees, then cleanup and emit. The watch lists the
    (parsed function, free name, object) bindings the text was built from. With
    options.stage other than "emit", the code after that pass instead (the rest are None)."""
    if not hasattr(func, "__code__"):        # not a Python function: parse says so, in a sentence
        parse_function(func)
    reserved: set = set()
    while True:
        unit = Unit(options, derive, reserved)
        try:
            return _build(unit, func, options)
        except _Reached as r:
            return r.text, {}, "", []
        except NameTaken as taken:      # srcad's generated code, copied in, uses a name given out
            if taken.name in reserved:
                raise
            reserved.add(taken.name)
        except SrcadError:
            # the split twins (split.py) are a speed-up of the recomputing adjoints: a module they
            # cannot be part of (a callee whose lifted functions are made again, ...) is built
            # without them, and an error that is not theirs is raised by that build
            if not options.split:
                raise
            options = replace(options, split=False)


def _build(unit: Unit, func, o: Options):
    if o.mode == "reverse":
        # grad/value_and_grad's module holds the variant that also returns the value; emit's, the
        # plain `<f>_vjp` of the API
        name = func.__name__ + ("_value_and_vjp" if o.return_value and not o.checked else "_vjp")
        main, _ = derive(unit, func, o.wrt, name=name, return_value=o.return_value, row_sparse=o.row_sparse)
        if o.checked:       # `return (value, grads)` -> `return grads`: the value is still checked
            main.body[-1].value = main.body[-1].value.elts[1]
        _, wrt_names = main.srcad_origin
    else:
        main, wrt_names = derive(unit, func, o.wrt, name=func.__name__ + "_jvp")
    splits = derive_splits(unit) if o.split and o.mode == "reverse" and o.checkpoint is None else {}
    twins = {id(v[0]) for v in splits.values()}     # a split twin runs its own primal sweep
    functions = unit.emission_order(main)
    # cleanup on each generated function (the user's own functions, copied in, stay as written);
    # a callee's adjoint runs after the caller's primal sweep called the callee
    main_primal_ran = o.mode == "reverse" and not o.return_value
    primal = {id(f) for f in unit.primal_defs.values()}
    for f in functions:
        if id(f) not in primal:
            cleanup(f, primal_ran=main_primal_ran if f is main else o.mode == "reverse" and id(f) not in twins)
    if splits:
        functions = split_calls(unit, functions, splits)
    _show(unit, "cleanup", lambda: _code(*functions))
    imports, supplied = unit.imports_and_env(functions)
    text = module_text(_header(func, o.mode, wrt_names), imports, functions, supplied)
    return text, supplied, main.name, unit.watch


def _header(func, mode, wrt_names):
    code = func.__code__
    return [f"srcad {mode} mode of `{func.__name__}` ({code.co_filename}:{code.co_firstlineno}), "
            f"wrt=({', '.join(wrt_names)},)",
            "generated code: a standalone module that imports only numpy, scipy and srcad.runtime"]


def _activity(an: Analysis) -> str:
    return (f"# active (depend on wrt): {', '.join(sorted(an.active)) or '-'}\n"
            f"# useful (reach the output): {', '.join(sorted(an.useful)) or '-'}\n")


def _kinds(kinds: Kinds) -> str:
    lines = []
    for name, k in kinds.assigned():
        if k.cat is not None:
            shape = f" ndim={k.ndim}" if k.ndim is not None else ""
            lines.append(f"# {name}: {k.cat}{' ' + k.dtype if k.dtype else ''}{shape}")
    return "\n".join(dict.fromkeys(lines)) + "\n" if lines else "# kinds: nothing sure (no example arguments)\n"


def derivative(func, mode: Mode, wrt) -> tuple[ast.FunctionDef, list[ast.FunctionDef]]:
    """The passes up to (not including) cleanup: (main function, all functions in emission order)."""
    unit = Unit(Options(mode=mode, wrt=wrt), derive)
    main, _ = derive(unit, func, wrt, name=func.__name__ + ("_vjp" if mode == "reverse" else "_jvp"))
    return main, unit.emission_order(main)


def stage_text(func, options: Options) -> str:
    """The code of func's derivative after the pass options.stage."""
    check_stage(options.stage, options.mode)
    return build(func, options)[0]


__all__ = ["Options", "STAGES", "REVERSE_STAGES", "FORWARD_STAGES", "prepare", "derive", "build",
           "derivative", "stage_text", "check_stage", "replace"]
