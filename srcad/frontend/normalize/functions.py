"""Function values srcad resolves at transform time, so that every call names a module-level
function it can transform: a nested def is lifted to one (the outer values it reads passed as
keyword arguments); `fs[k](...)` for a module-level list of functions calls the item; `make(a)(x)`
calls a function made from the factory's own lines; `for g in (np.sin, np.cos):` is unrolled."""
import ast
import linecache
import textwrap
import types
from typing import Callable, NamedTuple

from ...errors import SrcadError
from ...syntax import N as name, ast_copy, source_lines, to_source
from ..callables import ItemWatch
from ..callees import is_user_function
from ..freshness import definition_watch
from ..parse import parse_function
from .nodes import _loc


class Lifted(NamedTuple):
    """A nested def lifted to a module-level function: the name the normalized code calls it by,
    the outer names it reads (passed as keyword arguments at each call), and the function."""
    name: str
    captured: list[str]
    function: Callable


class Functions:
    """Nested defs, items of function lists, factories, loops over functions (mixed into Normalizer)."""

    def s_FunctionDef(self, st):
        """A nested def is lifted to a function of its own: the outer values it reads become
        keyword parameters, passed at each call (so a call sees their current values, as a
        closure would), and srcad transforms it like any other called function."""
        inner_locals = {a.arg for a in st.args.args + st.args.kwonlyargs} | {
            x.id for b in st.body for x in ast.walk(b) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}
        code = self.parsed.func.__code__
        outer = self.locals | set(code.co_freevars)
        captured = sorted({x.id for b in st.body for x in ast.walk(b) if isinstance(x, ast.Name)
                           and isinstance(x.ctx, ast.Load) and x.id in outer and x.id not in inner_locals})
        # (named after the function it is in too: two functions transformed together may each
        # define an `h`, and the generated module holds both)
        lifted = self.namer.fresh(f"{st.name}_in_{self.parsed.tree.name.strip('_') or 'f'}")
        args = ast.arguments(posonlyargs=[], args=st.args.args, vararg=None,
                             kwonlyargs=st.args.kwonlyargs + [ast.arg(c) for c in captured],
                             kw_defaults=st.args.kw_defaults + [None] * len(captured), kwarg=None,
                             defaults=st.args.defaults)
        node = ast.FunctionDef(name=lifted, args=args, body=st.body, decorator_list=[], returns=None,
                               type_params=[])
        self.lifted[st.name] = Lifted(lifted, captured, _lift(node, self.parsed, st))
        self.parsed.env[lifted] = self.lifted[st.name].function
        return []

    def _unrolled_functions(self, st):
        """`for g in (np.sin, np.cos): ...` (a display of module-level functions, or a module-level
        list or tuple of functions): the body once per function, `g` replaced by it (as `fs[k]`
        for a module-level fs, which a call then resolves). None for any other loop, and when the
        body jumps out (break/continue) or `g` is assigned in the body or read after the loop."""
        it, g = st.iter, st.target
        if not isinstance(g, ast.Name):
            return None
        if isinstance(it, (ast.Tuple, ast.List)):
            items = it.elts
            if not items or not all(self.is_global_ref(i) and callable(self.resolve(i)[1]) for i in items):
                return None
        elif isinstance(it, ast.Name) and self.is_global_ref(it):
            found, seq = self.resolve(it)
            if not found or not isinstance(seq, (list, tuple)) or not 0 < len(seq) <= 64 \
                    or not all(callable(f) and not isinstance(f, type) for f in seq):
                return None
            items = [ast.Subscript(name(it.id), ast.Constant(k), ast.Load()) for k in range(len(seq))]
        else:
            return None
        jumps = any(isinstance(n, (ast.Break, ast.Continue)) for b in st.body for n in _outside_loops(b))
        stored = any(isinstance(n, ast.Name) and n.id == g.id and not isinstance(n.ctx, ast.Load)
                     for b in st.body for n in ast.walk(b))
        read_elsewhere = sum(isinstance(n, ast.Name) and n.id == g.id for n in ast.walk(self.parsed.tree)) \
            != 1 + sum(isinstance(n, ast.Name) and n.id == g.id for b in st.body for n in ast.walk(b))
        if jumps or stored or read_elsewhere:
            return None

        class _Put(ast.NodeTransformer):
            def __init__(self, item):
                self.item = item

            def visit_Name(self, node):
                return ast.copy_location(ast_copy(self.item), node) if node.id == g.id else node
        out = []
        for item in items:
            for b in st.body:
                out.append(_Put(item).visit(ast_copy(b)))
        return out

    def _function_item(self, e):
        """`fs[k](...)` with fs a module-level list or tuple (or dict) and k a literal: the function
        it holds now, under a module-level name of the generated code (watched: the code is made
        again if fs[k] is rebound). None for any other callee."""
        f = e.func
        if not (isinstance(f, ast.Subscript) and isinstance(f.value, ast.Name) and self.is_global_ref(f.value)
                and isinstance(f.slice, ast.Constant)):
            return None
        found, seq = self.resolve(f.value)
        try:
            obj = seq[f.slice.value] if found else None
        except (TypeError, KeyError, IndexError):
            return None
        if not callable(obj):
            return None
        base = getattr(obj, "__name__", "function")
        base = base if isinstance(base, str) and base.isidentifier() else "function"
        own = next((k for k, v in self.parsed.env.items() if v is obj and k == base), None) or self.namer.fresh(base)
        self.parsed.env[own] = obj
        self.parsed.extra_watch.append((ItemWatch(self.parsed), (f.value.id, f.slice.value), obj))
        return _loc(ast.Call(name(own), e.args, e.keywords), e)

    def _applied_factory(self, e):
        """`make(a)(x)`, make a module-level function whose last statement returns a function it
        defines (`def h(t): ...; return h`, or `h = lambda t: ...`): the call of a function made
        from make with `return h(t)` in place of `return h` (its source at make's own lines),
        which srcad transforms like any other. None for any other callee."""
        inner = e.func
        if not self.is_global_ref(inner.func) or e.keywords or any(isinstance(a, ast.Starred) for a in e.args):
            return None
        found, make = self.resolve(inner.func)
        if not found or not isinstance(make, types.FunctionType) or not is_user_function(make) \
                or make.__code__.co_freevars or hasattr(make, "__srcad_derived__"):
            return None
        try:
            tree = parse_function(make).tree
        except (SrcadError, OSError, TypeError):     # not a factory srcad can read: refused below
            return None
        ret = tree.body[-1] if tree.body else None
        if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Name)) or ret.lineno != ret.end_lineno:
            return None
        h = ret.value.id
        defs = [st for st in tree.body if isinstance(st, ast.FunctionDef) and st.name == h]
        stores = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == h and not isinstance(n.ctx, ast.Load)]
        if len(defs) != 1 or stores or defs[0].args.vararg or defs[0].args.kwarg or defs[0].args.kwonlyargs \
                or len(e.args) != len(defs[0].args.args) or tree.args.vararg or tree.args.kwarg:
            return None
        filename = make.__code__.co_filename
        lines = linecache.getlines(filename)
        if not lines or not lines[ret.lineno - 1].strip() == f"return {h}" or tree.body[0].lineno <= tree.lineno:
            return None
        taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(tree)
                                                                                if isinstance(a, ast.arg)}
        params = []
        for a in defs[0].args.args:
            p = a.arg + "_applied"
            while p in taken:
                p += "_"
            taken.add(p)
            params.append(p)
        applied = self.namer.fresh(f"{make.__name__}_applied")
        stub = ast.FunctionDef(name=applied, args=ast.arguments(
            posonlyargs=[], args=tree.args.args, vararg=None, kwonlyargs=tree.args.kwonlyargs + [ast.arg(p) for p in params],
            kw_defaults=tree.args.kw_defaults + [None] * len(params), kwarg=None, defaults=tree.args.defaults),
            body=[ast.Pass()], decorator_list=[], returns=None, type_params=[])
        header = ast.unparse(ast.fix_missing_locations(ast.Module(body=[stub], type_ignores=[]))).splitlines()[0]
        first = tree.body[0].lineno
        body = lines[first - 1:tree.end_lineno]
        k = ret.lineno - first
        indent = body[k][:len(body[k]) - len(body[k].lstrip())]
        body[k] = f"{indent}return {h}({', '.join(params)})\n"
        text = "\n" * (first - 2) + header + "\n" + textwrap.indent(textwrap.dedent("".join(body)), "    ")
        name_ = f"<srcad-lifted {filename}:{tree.lineno} {applied}>"
        linecache.cache[name_] = (len(text), None, source_lines(text), name_)
        ns = {}
        try:
            exec(compile(text, name_, "exec"), make.__globals__, ns)
        except SyntaxError:
            return None
        func = ns[applied]
        func.__defaults__, func.__kwdefaults__ = make.__defaults__, dict(make.__kwdefaults__ or {}) or None
        self.parsed.env[applied] = func
        self.parsed.extra_watch += definition_watch(make)
        kws = list(inner.keywords) + [ast.keyword(arg=p, value=a) for p, a in zip(params, e.args)]
        return _loc(ast.Call(name(applied), list(inner.args), kws), e)


def _outside_loops(node):
    """The nodes of a statement that are not inside a loop or function of its own."""
    yield node
    if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
        return
    for child in ast.iter_child_nodes(node):
        yield from _outside_loops(child)


def _lift(node, parsed, where):
    """A real function made from a lifted nested def. Its source is registered under a name that
    says where it came from, with the user's own body lines at their own line numbers, so the
    generated code quotes the user's lines."""
    filename = f"<srcad-lifted {parsed.filename}:{where.lineno} {where.name}>"
    stub = ast.FunctionDef(name=node.name, args=node.args, body=[ast.Pass()], decorator_list=[],
                           returns=None, type_params=[])
    header = ast.unparse(ast.fix_missing_locations(ast.Module(body=[stub], type_ignores=[]))).splitlines()[0]
    first = where.body[0].lineno
    lines = linecache.getlines(parsed.filename)[first - 1:where.end_lineno]
    if first > where.lineno and lines:
        body = textwrap.indent(textwrap.dedent("".join(lines)), "    ")
        text = "\n" * (first - 2) + header + "\n" + body
    else:   # a one-line def: its body as srcad reads it
        node.lineno = node.col_offset = 0
        text = to_source(ast.Module(body=[node], type_ignores=[])) + "\n"
    linecache.cache[filename] = (len(text), None, source_lines(text), filename)
    ns = {}
    exec(compile(text, filename, "exec"), parsed.func.__globals__, ns)
    return ns[node.name]
