"""emit: the generated module as text a person reads, with a comment per user line."""
import ast
import re

from ..errors import function_mark
from ..syntax import source_lines, to_source

_COMMENT = re.compile(r"^(\s*)(['\"])\\x00srcad-comment\\x00(.*)\2\s*$")


def unparse_with_comments(tree: ast.AST) -> str:
    text = to_source(tree)
    out = []
    for line in source_lines(text, False):
        m = _COMMENT.match(line)
        if m:
            body = m.group(3).encode().decode("unicode_escape") if "\\" in m.group(3) else m.group(3)
            out.append(f"{m.group(1)}# {body}")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _origin(f):
    """A comment naming the user function f comes from (errors are placed on the user's code by it)."""
    origin = getattr(f, "srcad_from", None)
    return function_mark(*origin) + "\n" if origin else ""


def module_text(header: list[str], imports: list[str], functions: list[ast.FunctionDef], supplied: dict) -> str:
    lines = [f"# {h}" for h in header]
    if supplied:
        lines.append("# names that srcad supplies when it loads this module (the function's free variables): "
                     + ", ".join(sorted(supplied)))
    lines += imports
    body = "\n\n".join(_origin(f) + unparse_with_comments(f).rstrip("\n") for f in functions)
    body = body.replace("\n\ndef ", "\n\n\ndef ").replace("\n\n# srcad: from", "\n\n\n# srcad: from")
    return "\n".join(lines) + "\n\n\n" + body + "\n"


def _header(func, mode, wrt_names):
    code = func.__code__
    return [f"srcad {mode} mode of `{func.__name__}` ({code.co_filename}:{code.co_firstlineno}), "
            f"wrt=({', '.join(wrt_names)},)",
            "generated code: a standalone module that imports only numpy, scipy and srcad.runtime"]


def build(func, mode, wrt, row_sparse=(), variant="plain", sig=None):
    """(module text, names srcad supplies, main function name, watch) for func's derivative; the
    watch lists the (parsed function, free name, object) bindings the text was built from. sig:
    the abstract signature of the arguments the code is specialised to (None: any arguments)."""
    from .unit import Unit
    if not hasattr(func, "__code__"):        # not a Python function: parse says so, in a sentence
        from ..frontend.parse import parse_function
        parse_function(func)
    unit = Unit(mode)
    unit.signature = sig
    parts = variant.split("+")
    unit.check_numerics = "numerics" in parts
    unit.checkpoint = next((int(p[4:]) for p in parts if p.startswith("ckpt")), None)
    if mode == "reverse":
        # grad/value_and_grad's module holds the variant that also returns the value; emit's, the
        # plain `<f>_vjp` of the API
        value = variant.startswith("value")
        name = func.__name__ + ("_value_and_vjp" if value else "_vjp")
        main, _ = unit.reverse(func, wrt, name=name, return_value=value, row_sparse=row_sparse)
        _, wrt_names = main.srcad_origin
        functions = list(unit.primal_defs.values()) + [f for f in unit.functions if f is not main] + [main]
    else:
        from .forward import forward_unit
        main, functions, wrt_names = forward_unit(unit, func, wrt)
    _clean(functions, unit, main, mode == "reverse" and not variant.startswith("value"))
    imports, supplied = unit.imports_and_env(functions)
    text = module_text(_header(func, mode, wrt_names), imports, functions, supplied)
    return text, supplied, main.name, unit.watch


def _clean(functions, unit, main, main_primal_ran):
    """The cleanup pass on each generated function (the user's own functions, copied in, stay as
    written). A callee's adjoint runs after the caller's primal sweep called the callee."""
    from .cleanup import cleanup
    primal = {id(f) for f in unit.primal_defs.values()}
    for f in functions:
        if id(f) not in primal:
            cleanup(f, primal_ran=main_primal_ran if f is main else unit.mode == "reverse")
