"""A compilation unit: the derivative of one function plus everything it calls, as one module.

Callees that are user functions are differentiated too, once per pattern of active arguments
(`g_vjp`, `g_vjp_2`, ...). Their adjoint recomputes their primal sweep (call-tree reversal by
recomputation), which keeps the caller's tape small and makes recursion work unchanged; grad's
code adds split twins that keep the callee's frame instead (split.py).
"""
import ast
import importlib
import inspect
import keyword
import math
import re
import textwrap
import types
from typing import TYPE_CHECKING

from ..errors import SrcadError, UnsupportedSyntaxError
from ..frontend.freshness import definition_watch
from ..frontend.parse import parse_function
from .compile import is_generated
from ..syntax import Namer, names_read

if TYPE_CHECKING:
    from ..frontend.parsed import Parsed
    from .pipeline import Options

_ALLOWED_MODULES = ("numpy", "scipy", "math", "srcad")
_KINDS_PER_CALLEE = 4       # derivations of one callee for different argument kinds, at most


def wrt_names_of(fn: ast.FunctionDef, wrt: int | str | tuple) -> list[str]:
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    out = []
    for w in (wrt if isinstance(wrt, tuple) else (wrt,)):
        if isinstance(w, str):
            if w not in params:
                raise SrcadError(f"wrt={w!r} names no parameter of {fn.name}, whose parameters are {params}. "
                                 f"Pass wrt as one of those names or as a position.")
            out.append(w)
        else:
            if not isinstance(w, int) or not -len(fn.args.args) <= w < len(fn.args.args):
                raise SrcadError(f"wrt={w!r} is not a positional parameter of {fn.name}, which takes "
                                 f"{len(fn.args.args)} positional arguments {[a.arg for a in fn.args.args]}. "
                                 f"Pass wrt as a position from 0 to {len(fn.args.args) - 1}, or as a name.")
            out.append(fn.args.args[w].arg)
    return out


class NameTaken(Exception):
    """A function copied into the unit has a name the unit gave a generated function: build the
    unit again with that name reserved (pipeline.build)."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


class Unit:
    """A compilation unit: the bookkeeping of one generated module, for the function asked for
    and every user function it calls (the passes themselves run in pipeline.py's `derive`, which
    the unit calls back for each callee).

    Input: the Options, and the pipeline's `derive`.
    Output: `functions`, the generated FunctionDefs in emission order (primal copies, callees'
    derivatives, then the main one), ready for emit.
    Invariants: each (callee, active arguments) pair is differentiated once; generated names
    are unique in the unit; every generated function remembers the user function it comes
    from (`srcad_from`), so errors can be placed on the user's code."""

    def __init__(self, options: "Options", derive, reserved=()):
        self.options = options
        self.mode = options.mode
        self._derive = derive        # the pipeline's passes on one function (srcad/transform/pipeline.py)
        self.functions = []          # generated functions, in emission order
        self.primal_defs = {}        # user function -> its (copied) definition
        self.callees = {}            # (func, active params, argument kinds) -> (name, seed name)
        self.parsed = []             # every Parsed in the unit (for free names)
        self.reserved = frozenset(reserved)     # names of functions copied in (found by an earlier try)
        self.names = set(reserved)
        self.tangent_params = {}     # generated tangent function -> {param: its tangent parameter}
        self.extra_env = {}          # names the generated module reaches that the user's code does not bind
        self.watch = []

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def emission_order(self, main: ast.FunctionDef) -> list[ast.FunctionDef]:
        """The module's functions: primal copies of the callees, their derivatives, then main."""
        return list(self.primal_defs.values()) + [f for f in self.functions if f is not main] + [main]

    def tangent_param(self, name, param):
        """The name of the tangent parameter of `param` in the generated tangent function `name`."""
        return self.tangent_params[name][param]

    def callee_jvp(self, func, act_params):
        key = ("jvp", func, act_params)
        if key not in self.callees:
            self.add_primal(func)
            name = self.fresh(_identifier(_base_name(func)) + "_jvp")
            self.callees[key] = name
            self._derive(self, func, act_params if len(act_params) > 1 else act_params[0], name=name, top_level=False)
        return self.callees[key]

    def bind_callee(self, func, call, receiver=None, parsed=None):
        """The callee's parameter names and the call's argument atoms, in parameter order (a
        method's receiver first: `self.helper(x)` calls helper(self, x))."""
        sig = inspect.signature(func)
        where = parsed.where(call) if parsed is not None else ()
        first = []
        if isinstance(receiver, ast.Constant) and isinstance(receiver.value, type):    # a classmethod's class
            name = f"{receiver.value.__name__}_class"
            self.extra_env[name] = receiver.value
            first = [ast.Name(id=name, ctx=ast.Load())]
        elif receiver is not None:
            first = [receiver]
        try:
            b = sig.bind(*first, *call.args, **{k.arg: k.value for k in call.keywords})
        except TypeError as exc:
            raise SrcadError(f"the call `{ast.unparse(call)}` does not match the signature of {func.__name__} "
                             f"({exc}). Pass the arguments {func.__name__} takes.", *where) from None
        names, args = [], []
        for p, param in sig.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise UnsupportedSyntaxError(
                    f"the call `{ast.unparse(call)}` of {func.__name__}, which takes *args or **kwargs (srcad does "
                    f"not transform such functions)", *where, hint=f"Name every parameter of {func.__name__}")
            names.append(p)
            if p in b.arguments:
                args.append(b.arguments[p])
            else:
                args.append(ast.Constant(param.default) if _is_literal(param.default)
                            else ast.Name(id=self._default_name(func, p), ctx=ast.Load()))
        return names, args

    @staticmethod
    def call_parts(func, names, args):
        """(positional args, keywords) of a call of func's derivative: keyword-only parameters
        are passed by keyword."""
        params = inspect.signature(func).parameters
        pos = [a for p, a in zip(names, args) if params[p].kind != params[p].KEYWORD_ONLY]
        kws = [ast.keyword(arg=p, value=a) for p, a in zip(names, args) if params[p].kind == params[p].KEYWORD_ONLY]
        return pos, kws

    def supply(self, obj, fallback="supplied"):
        """A module-level name under which the generated module reaches obj (a function srcad
        calls that the user's code does not name, such as a custom_vjp's fwd and bwd); `fallback`
        when obj's own name is no identifier (a lambda)."""
        for name, v in self.extra_env.items():
            if v is obj:
                return name
        base = getattr(obj, "__name__", fallback)
        if not base.isidentifier() or keyword.iskeyword(base):
            base = fallback
        name = self.fresh(base)
        while any(name in p.env and p.env[name] is not obj for p in self.parsed):
            name = self.fresh(base)     # the user's module means something else by this name
        self.extra_env[name] = obj
        return name

    def _default_name(self, func, p):
        name = f"{func.__name__}_default_{p}"
        self.extra_env[name] = inspect.signature(func).parameters[p].default
        return name

    def callee_vjp(self, func, act_params, kinds=None):
        """(adjoint name, seed name) of func's adjoint for these active parameters and the kinds
        the call site knows for its parameters (kinds.call_kinds; None: any arguments): each such
        triple is derived once, with those kinds (plain NumPy where they make it sure). After
        _KINDS_PER_CALLEE specialisations of one callee (a recursion whose arguments' kinds keep
        changing), further calls share the general derivation."""
        if kinds is not None and (func, act_params, kinds) not in self.callees and \
                sum(k[:2] == (func, act_params) and k[2] is not None for k in self.callees) >= _KINDS_PER_CALLEE:
            kinds = None
        key = (func, act_params, kinds)
        if key not in self.callees:
            self.add_primal(func)
            name = self.fresh(_identifier(_base_name(func)) + "_vjp")
            # the seed's name as reverse() gives it (`_l2` -> `l2_bar`): a recursive call uses it
            seed = Namer(()).fresh(f"{func.__name__}_bar")
            self.callees[key] = (name, seed)
            wrt = act_params if len(act_params) > 1 else act_params[0]     # by name: keyword-only too
            _, seed = self._derive(self, func, wrt, top_level=False, name=name, params=kinds)
            self.callees[key] = (name, seed)
        return self.callees[key]

    def add_primal(self, func):
        if func in self.primal_defs or getattr(func, "__srcad_receiver__", None):
            return      # (a method is called as `self.m(...)`, never by its bare name: no copy needed)
        parsed = parse_function(func)
        node = parsed.tree
        if node.name in self.names - self.reserved and node.name not in {d.name for d in self.primal_defs.values()}:
            # a name this unit already gave a generated function (srcad's own generated code,
            # differentiated again, defines `f_vjp` too): the unit starts again with it reserved
            raise NameTaken(node.name)
        self.parsed.append(parsed)
        node.srcad_from = origin_of(parsed)
        self.names.add(node.name)
        self.primal_defs[func] = node

    # -- free names ------------------------------------------------------------------------
    def imports_and_env(self, functions: list[ast.FunctionDef]) -> tuple[list[str], dict]:
        """Import lines for the modules the code names, and the objects srcad supplies itself."""
        defined = {f.name for f in functions} | {"np", "rt"}
        free = _free_names(functions)
        env = {}
        self.watch = []     # (parsed, name, object): generated code is stale once a binding changes
        for p in self.parsed:
            for k in free & p.env.keys():
                v = p.env[k]
                if p.current(k) is v:
                    self.watch.append((p, k, v))
                if k in env and env[k] is not v and not _same_generated(env[k], v):
                    raise SrcadError(f"the name `{k}` means different things in the modules of the functions "
                                     f"srcad transforms together (in {p.filename} and another). Rename one of "
                                     f"them.", p.filename, p.tree.lineno, 0)
                env.setdefault(k, v)
            self.watch += p.extra_watch
            self.watch += definition_watch(p.func)      # its code object and defaults
        env.update(self.extra_env)
        imports = ["import numpy as np"]
        supplied, constants = {}, []
        for name in sorted(free - defined):
            if name not in env:
                continue
            obj = env[name]
            line = _import_line(name, obj)
            if line:
                if line not in imports:
                    imports.append(line)
                if isinstance(obj, types.ModuleType):   # scipy.special.x needs `import scipy.special`
                    for sub in sorted(_submodules(name, obj, functions)):
                        if f"import {sub}" not in imports:
                            imports.append(f"import {sub}")
            elif _constant_source(obj) is not None:      # a plain constant is written into the module
                constants.append(f"{name} = {_constant_source(obj)}")
            else:
                supplied[name] = obj
        imports.append("from srcad import runtime as rt")
        return imports + ([""] + constants if constants else []), supplied


def _same_generated(a, b):
    """A generated function and another copy of it, or of the user function it was copied from
    (srcad's code transformed again holds the functions it calls as copies in its own module): the
    same syntax tree, whose free names are checked on their own."""
    if not (is_generated(a) or is_generated(b)) or not (callable(a) and callable(b)):
        return False
    try:
        return a.__name__ == b.__name__ and _tree_text(a) == _tree_text(b)
    except (OSError, TypeError, SyntaxError, AttributeError):
        return False


def refuse_reverse_over_tape(parsed: "Parsed") -> None:
    """Reverse mode over srcad's own generated code that keeps a tape (an adjoint of a loop, of list
    appends, of item writes undone): the tape's pops are not differentiated in reverse mode yet. Said
    so, with what works (forward mode over the adjoint), rather than run."""
    if not parsed.generated:
        return
    for n in ast.walk(parsed.tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "pop":
            origin = re.search(r"`(\w+)`", parsed.line_text(parsed.tree.lineno - 1) or "")
            raise UnsupportedSyntaxError(
                f"reverse mode over the adjoint srcad generated{' from `' + origin.group(1) + '`' if origin else ''}, "
                f"which replays a tape (a loop, list appends or item writes: `{ast.unparse(n)}`), as in "
                f"srcad.grad(srcad.grad(f))", *parsed.where(n),
                hint="take the second derivative by forward mode over the gradient: srcad.jacobian(srcad.grad(f)), "
                     "srcad.hessian(f) or srcad.hvp(f) (or srcad.jvp of a function calling srcad.grad(f))")


def _tree_text(func):
    return ast.dump(ast.parse(textwrap.dedent(inspect.getsource(func))))


def origin_of(parsed: "Parsed") -> tuple[str, str, int]:
    return parsed.func.__name__, parsed.filename, parsed.tree.lineno


def _base_name(func):
    """A callee's name in generated code: a method's carries the class that defines it (`Encoder_forward`)."""
    if not getattr(func, "__srcad_receiver__", None):
        return func.__name__
    owner = func.__qualname__.split(".")[-2:-1] or [func.__srcad_receiver__.cls.__name__]
    owner = owner[0] if owner[0].isidentifier() else func.__srcad_receiver__.cls.__name__
    return f"{owner}_{func.__name__}"


def _identifier(name):
    """A Python identifier made from a function's name (`<lambda>` becomes `lambda_`)."""
    out = re.sub(r"\W", "_", name).strip("_") or "f"
    return out + "_" if keyword.iskeyword(out) else out


def _constant_source(v):
    """Python source for a plain constant (a number, string, bool or None), else None."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return repr(v) if v is None or isinstance(v, (bool, int, float, str)) else None


def _is_literal(v):
    return v is None or isinstance(v, (bool, int, float, str, complex))


def _free_names(functions):
    """Names the generated functions read but do not bind (their parameters and assigned names
    are local, even when the user's module has a global of the same name)."""
    import builtins
    free = set()
    for fn in functions:
        bound = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}
        bound |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        bound |= {d.name for d in ast.walk(fn) if isinstance(d, (ast.FunctionDef, ast.ClassDef)) and d is not fn}
        free |= names_read([fn]) - bound
    return {n for n in free if not hasattr(builtins, n)}


def _import_line(name, obj):
    if isinstance(obj, types.ModuleType):
        mod = obj.__name__
        if mod.split(".")[0] not in _ALLOWED_MODULES:
            return None
        if mod == name:
            return f"import {mod}"
        if "." in mod and mod.endswith("." + name):
            parent = mod.rsplit(".", 1)[0]
            return f"from {parent} import {name}"
        return f"import {mod} as {name}"
    mod = getattr(obj, "__module__", None)
    if not mod or mod.split(".")[0] not in _ALLOWED_MODULES or getattr(obj, "__name__", None) is None:
        return None
    parts = mod.split(".")
    # the most public module that exposes the object: scipy.special rather than scipy.special._logsumexp
    for k in range(1, len(parts) + 1):
        cand = ".".join(parts[:k])
        try:
            m = importlib.import_module(cand)
        except ImportError:
            continue
        if getattr(m, obj.__name__, None) is obj:
            as_ = "" if obj.__name__ == name else f" as {name}"
            return f"from {cand} import {obj.__name__}{as_}"
    return None


def _submodules(name, module, functions):
    """Submodules reached through attribute chains on a module name (scipy.special.logsumexp)."""
    out = set()
    for f in functions:
        for n in ast.walk(f):
            if isinstance(n, ast.Attribute):
                chain, node = [], n
                while isinstance(node, ast.Attribute):
                    chain.append(node.attr)
                    node = node.value
                if isinstance(node, ast.Name) and node.id == name and name == module.__name__:
                    obj, path = module, [name]
                    for attr in reversed(chain):
                        obj = getattr(obj, attr, None)
                        if not isinstance(obj, types.ModuleType):
                            break
                        path.append(attr)
                        out.add(".".join(path))
    return out
