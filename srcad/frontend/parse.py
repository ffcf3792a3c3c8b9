"""parse: read a function's source, and resolve the names it uses to real objects."""
import ast
import copy
import inspect
import linecache
import textwrap
import types

from ..errors import SrcadError, UnsupportedSyntaxError
from .callables import _refuse_wrapper, transformable
from .freshness import check_def, check_source
from .loop_items import _loop_item_writes
from .parsed import Parsed, Receiver

__all__ = ["Parsed", "parse_function", "lambda_def"]


def _free_env(func):
    env = dict(func.__globals__)
    code = func.__code__
    for name, cell in zip(code.co_freevars, func.__closure__ or ()):
        try:
            env[name] = cell.cell_contents
        except ValueError:
            pass
    return env


def lambda_def(func, filename):
    """The lambda's `def` (named as func), from the line it is on: the lambda whose argument names
    are the code's and whose span holds every position the code's instructions come from."""
    code = func.__code__
    line = code.co_firstlineno
    try:
        module = ast.parse("".join(linecache.getlines(filename)))
    except SyntaxError:
        module = None
    nargs = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) \
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    names = list(code.co_varnames[:nargs])
    found = [n for n in ast.walk(module) if isinstance(n, ast.Lambda) and n.lineno == line
             and [a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs] +
             [a.arg for a in (n.args.vararg, n.args.kwarg) if a is not None] == names] if module else []
    spots = {(p[0], p[2]) for p in code.co_positions()     # (instructions with no span of their own: none)
             if p[0] is not None and p[2] is not None and (p[1], p[3]) > (p[0], p[2])}

    def holds(n):
        return all((n.lineno, n.col_offset) <= s <= (n.end_lineno, n.end_col_offset) for s in spots)
    found = [n for n in found if holds(n)]
    # a lambda inside another: the innermost one that holds the code
    found = [n for n in found if not any(m is not n and m in ast.walk(n) for m in found)] if spots else found
    if not found:
        raise UnsupportedSyntaxError("a lambda whose source srcad cannot find", filename, line, 0,
                                     hint="define the function with def")
    if len(found) > 1:
        raise UnsupportedSyntaxError(
            f"{len(found)} lambdas with the same arguments on one line, which srcad cannot tell apart "
            f"(this Python keeps no column positions)", filename, line, found[0].col_offset,
            hint="put each lambda on a line of its own, or define the function with def")
    lam = found[0]
    node = ast.FunctionDef(name=func.__name__, args=lam.args, body=[ast.Return(lam.body)],
                           decorator_list=[], returns=None, type_comment=None)
    ast.copy_location(node, lam)
    ast.copy_location(node.body[0], lam.body)
    node.end_lineno, node.end_col_offset = lam.end_lineno, lam.end_col_offset
    return node


def _mangle_private_attributes(func, node):
    """`self.__k` in a method body means `self._Class__k` (Python mangles private names inside a
    class); the generated code runs outside the class, so it spells the mangled name. The class is
    the one whose mangled spelling the compiled function itself uses."""
    names = set(func.__code__.co_names)
    scopes = [p for p in func.__qualname__.split(".")[:-1] if p != "<locals>" and p.strip("_")]
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr.startswith("__") and not n.attr.endswith("__"):
            n.attr = next((m for m in ("_" + c.lstrip("_") + n.attr for c in reversed(scopes)) if m in names), n.attr)


def parse_function(func: types.FunctionType) -> "Parsed":
    """Parse `func` into a `Parsed` whose line numbers match the file the function lives in."""
    # never inspect.unwrap: a decorated function is differentiated as its wrapper computes it
    func = transformable(func) if isinstance(func, types.FunctionType) else func
    _refuse_wrapper(func)
    if not isinstance(func, types.FunctionType):
        raise SrcadError(f"srcad transforms Python functions; got {func!r} of type {type(func).__name__}. Pass a "
                         f"function defined with def (or a lambda, a method, or a functools.partial of one).")
    try:
        lines, start = inspect.getsourcelines(func)
        filename = inspect.getsourcefile(func) or func.__code__.co_filename
    except (OSError, TypeError) as exc:
        raise SrcadError(
            f"cannot read the source of {func.__qualname__}: {exc}. srcad reads source code; define the "
            f"function in a .py file (not in exec() or an interactive prompt without a file).") from None
    exact = check_source(func, start)     # the text read is the code that runs (else: reload)
    if func.__name__ == "<lambda>" or getattr(func, "__srcad_lambda__", False):
        node = lambda_def(transformable(func), filename)
        original = copy.deepcopy(node)
        env = _free_env(func)
        _default_values(func, node, env)
        return Parsed(func, node, filename, env, extra_watch=list(getattr(func, "__srcad_watch__", ())),
                      original=original)
    src = textwrap.dedent("".join(lines))
    try:
        module = ast.parse(src)
    except SyntaxError as exc:
        raise UnsupportedSyntaxError(f"a function whose source cannot be parsed on its own ({exc.msg})",
                                     filename, start, 0, hint="define the function with def at module level")
    node = module.body[0]
    if isinstance(node, ast.AsyncFunctionDef):
        raise UnsupportedSyntaxError("async functions", filename, start, node.col_offset)
    if not isinstance(node, ast.FunctionDef):
        raise UnsupportedSyntaxError(f"{type(node).__name__} as a function definition (lambdas cannot be "
                                     f"transformed; use def)", filename, start, 0)
    if not exact:
        check_def(func, start, node)
    ast.increment_lineno(node, start - 1)
    node.decorator_list = []
    _mangle_private_attributes(func, node)
    method_of = getattr(func, "__srcad_receiver__", None)
    receiver = None
    if method_of is not None and node.args.args:
        receiver = Receiver(node.args.args[0].arg, method_of.kind, method_of.cls,
                            getattr(func, "__srcad_instance__", None))
    original = copy.deepcopy(node)
    env = _free_env(func)
    _default_values(func, node, env)
    _named_lambdas(node)
    _loop_item_writes(node, env)
    renamed = _rename_wrapper_closure(func, node, env)
    # a function srcad composed (srcad/composition.py): stale once the derivative it calls is
    return Parsed(func, node, filename, env, receiver=receiver if node.args.args else None,
                  extra_watch=list(getattr(func, "__srcad_watch__", ())), renamed=renamed, original=original)


def _named_lambdas(fn):
    """`g = lambda t: expr` in the function's body (at any depth of its blocks) is the nested
    `def g(t): return expr`, which srcad lifts and transforms like any nested def."""
    for block_owner in [fn] + [n for n in ast.walk(fn) if isinstance(n, (ast.If, ast.For, ast.While))]:
        for field_ in ("body", "orelse"):
            block = getattr(block_owner, field_, None)
            if not block:
                continue
            for k, st in enumerate(block):
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                        and isinstance(st.value, ast.Lambda):
                    lam = st.value
                    ret = ast.copy_location(ast.Return(lam.body), lam.body)
                    ret.end_lineno, ret.end_col_offset = lam.body.end_lineno, lam.body.end_col_offset
                    d = ast.FunctionDef(name=st.targets[0].id, args=lam.args, body=[ret], decorator_list=[],
                                        returns=None, type_comment=None, type_params=[])
                    block[k] = ast.copy_location(d, st)
                    d.end_lineno, d.end_col_offset = st.end_lineno, st.end_col_offset


def _is_literal(node):
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _default_values(func, node, env):
    """A parameter's default is the value its expression had when the def ran (`num=num` binds
    the enclosing `num` then): a default that is not a literal becomes a module-level name bound
    to that value (`f_default_num`), as the generated code runs where the expression means
    nothing (the parameter shadows the name it reads)."""
    args = node.args
    positional = args.posonlyargs + args.args
    first = len(positional) - len(args.defaults)
    pairs = [(positional[first + k], k, True) for k in range(len(args.defaults))] \
        + [(a, k, False) for k, a in enumerate(args.kwonlyargs) if args.kw_defaults[k] is not None]
    defaults, kwdefaults = func.__defaults__ or (), func.__kwdefaults__ or {}
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in func.__name__)
    for a, k, is_positional in pairs:
        expr = args.defaults[k] if is_positional else args.kw_defaults[k]
        if _is_literal(expr):
            continue
        if is_positional:
            if len(defaults) != len(args.defaults):
                continue
            value = defaults[k]
        elif a.arg in kwdefaults:
            value = kwdefaults[a.arg]
        else:
            continue
        name = f"{base}_default_{a.arg}"
        while name in env:
            name += "_"
        env[name] = value
        new = ast.copy_location(ast.Name(name, ast.Load()), expr)
        if is_positional:
            args.defaults[k] = new
        else:
            args.kw_defaults[k] = new


def _rename_wrapper_closure(func, node, env):
    """A decorator's wrapper reads the function it wraps from its closure, under one name for every
    function the decorator wraps (`g`): in the generated module, where closure variables become
    module-level names, each wrapper's gets the wrapped function's name (`g_of_f`), so that two
    decorated functions can be transformed together. Returns {new name: closure name}."""
    wrapped = getattr(func, "__srcad_wrapper_of__", None)
    if not wrapped or not func.__code__.co_freevars:
        return {}
    suffix = "".join(c if c.isalnum() or c == "_" else "_" for c in wrapped)
    taken = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | set(env)
    renamed = {}
    for v in func.__code__.co_freevars:
        new = f"{v}_of_{suffix}"
        while new in taken:
            new += "_"
        renamed[v] = new
        if v in env:
            env[new] = env[v]
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in renamed:
            n.id = renamed[n.id]
    return {new: old for old, new in renamed.items()}
