"""parse: read a function's source, and resolve the names it uses to real objects."""
import ast
import builtins
import copy
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass, field

from ..errors import SrcadError, UnsupportedSyntaxError
from .callables import _refuse_wrapper, transformable
from .freshness import check_def, check_source


_UNBOUND = object()


@dataclass
class Parsed:
    """A user function's syntax tree (line numbers as in its file) and what its names refer to."""
    func: object
    tree: ast.FunctionDef
    filename: str
    env: dict = field(default_factory=dict)   # free name -> object (closure cells, globals, builtins)
    receiver: tuple = None   # a method's (first parameter, "instance"|"class", class, instance ref or None)
    extra_watch: list = field(default_factory=list)   # (watch, key, object) beyond free names: callables.py
    generated: bool = False                   # srcad's own generated code, transformed again
    global_writes: set = field(default_factory=set)   # (line, name): writes into shared objects (aliases)
    renamed: dict = field(default_factory=dict)       # a decorator wrapper's closure names: new -> old
    original: object = None   # the function's tree as the user wrote it (error messages quote it: `text`)
    _by_place: dict = None

    def current(self, name):
        """What a free name of the function refers to now (closure cell, else module global)."""
        code = self.func.__code__
        name = self.renamed.get(name, name)
        if name in code.co_freevars:
            try:
                return self.func.__closure__[code.co_freevars.index(name)].cell_contents
            except ValueError:
                return _UNBOUND
        return self.func.__globals__.get(name, _UNBOUND)

    def text(self, node):
        """The user's own text for `node`, a node of the function as srcad rewrote it (temporaries
        such as `pow_x` in place of `x ** 2`): the expression the user wrote at node's place
        (file, line and column), read from the tree as parsed; ast.unparse(node) when the user's
        code has nothing there (srcad's own generated code, transformed again)."""
        found = self._user_node(node)
        return ast.unparse(found if found is not None else node)

    def value_text(self, v, sites=None):
        """How a message names the value of variable `v` of the rewritten function: `v` when the
        user's code has that name, else the user's expression that srcad computed into it (its
        first assignment among `sites`, (statement, depth) pairs)."""
        if self.original is None or any(isinstance(n, ast.Name) and n.id == v or isinstance(n, ast.arg)
                                        and n.arg == v for n in ast.walk(self.original)):
            return f"`{v}`"
        st = next((st for st, _ in sites or () if isinstance(st, ast.Assign)), None)
        found = self._user_node(st.value) if st is not None else None
        return f"`{ast.unparse(found)}`" if found is not None else f"`{v}`"

    def _user_node(self, node):
        if self.original is None or not hasattr(node, "lineno"):
            return None
        if self._by_place is None:
            by_place = {}
            for n in ast.walk(self.original):
                if isinstance(n, ast.expr) and hasattr(n, "lineno"):
                    by_place.setdefault((n.lineno, n.col_offset), []).append(n)
            self._by_place = by_place
        here = self._by_place.get((node.lineno, node.col_offset), [])
        if not here:
            return None

        def span(n):
            return (n.end_lineno or 0, n.end_col_offset or 0)
        same = [n for n in here if type(n) is type(node)]
        exact = [n for n in same if span(n) == span(node)]
        if exact:
            return exact[0]

        def head(n):        # what a call calls, an attribute's name
            n = n.func if isinstance(n, ast.Call) else n
            return n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else None
        alike = [n for n in same if head(n) == head(node)] or same or here
        return max(alike, key=span)

    def line_text(self, lineno):
        return linecache.getline(self.filename, lineno).strip()

    def where(self, node):
        return self.filename, getattr(node, "lineno", 0), getattr(node, "col_offset", 0)

    @staticmethod
    def is_global_ref(node, locals_):
        """A name or attribute chain that refers to a module-level object, not a local value."""
        if isinstance(node, ast.Name):
            return node.id not in locals_
        return isinstance(node, ast.Attribute) and Parsed.is_global_ref(node.value, locals_)

    def try_resolve(self, node, locals_):
        """(True, object) for a name the function does not assign, else (False, None)."""
        try:
            return True, self.resolve(node, locals_)
        except KeyError:
            return False, None

    def resolve(self, node, locals_):
        """The object an expression names (`np.sin`, a closure cell, a global), or raise KeyError."""
        if isinstance(node, ast.Name):
            if node.id in locals_:
                raise KeyError(node.id)
            if node.id in self.env:
                return self.env[node.id]
            if hasattr(builtins, node.id):
                return getattr(builtins, node.id)
            raise KeyError(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value, locals_)
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise KeyError(node.attr) from None
        raise KeyError(type(node).__name__)


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
    receiver = getattr(func, "__srcad_receiver__", None)
    if receiver is not None and node.args.args:
        receiver = (node.args.args[0].arg,) + receiver + (getattr(func, "__srcad_instance__", None),)
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


def _loop_item_writes(fn, env):
    """`for row in Y: row /= np.sum(row)` with Y a local name: writing into the loop's item writes
    into Y when the items are views (rows of an array, arrays in a list) and rebinds the item when
    they are numbers. Which one is decided when the code runs (rt.lists.items_are_views):

        if items_are_views(Y):
            for row_index in range(len(Y)):   # the body, `row` read and written as Y[row_index]
        else:
            for row_index in range(len(Y)):
                row = loop_item(Y[row_index])  # a value of its own
                # the body as written

    Applied when the body writes into `row` in place (`row op= ...`, `row[...] = ...`), never
    rebinds `row` or `Y` otherwise, and `row` is not read after the loop; Y is no parameter (a
    write into the caller's array is the alias pass's to check, when the code runs)."""
    from ..runtime import lists as rt_lists
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(fn)
                                                                           if isinstance(a, ast.arg)}

    def helper(base, obj):
        own = base
        while own in names or (own in env and env[own] is not obj):
            own += "_"
        env[own] = obj
        names.add(own)
        return own
    for owner in [n for n in ast.walk(fn) if hasattr(n, "body") and isinstance(n.body, list)]:
        for field_ in ("body", "orelse"):
            block = getattr(owner, field_, None) or []
            for k, st in enumerate(block):
                if not (isinstance(st, ast.For) and isinstance(st.target, ast.Name) and isinstance(st.iter, ast.Name)
                        and not st.orelse):
                    continue
                row, seq = st.target.id, st.iter.id
                if seq in params:       # the caller's array: left to the alias pass (checked when it runs)
                    continue
                body_nodes = [n for b in st.body for n in ast.walk(b)]
                writes = any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == row
                             or isinstance(n, (ast.Assign, ast.AugAssign)) and any(
                                 isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == row
                                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
                             for n in body_nodes)
                rebinds = any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in (row, seq)
                              and not _augmented_target(n, body_nodes) for n in body_nodes) \
                    or any(isinstance(n, (ast.AugAssign, ast.Assign)) and any(
                        isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == seq
                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])) for n in body_nodes)
                reads = sum(isinstance(n, ast.Name) and n.id == row for n in ast.walk(fn)) \
                    != 1 + sum(isinstance(n, ast.Name) and n.id == row for n in body_nodes)
                nested = any(isinstance(n, (ast.FunctionDef, ast.Lambda)) for n in body_nodes)
                if not writes or rebinds or reads or nested:
                    continue
                index = helper(row + "_index", None)
                env.pop(index)
                views, item = helper("items_are_views", rt_lists.items_are_views), helper("loop_item", rt_lists.loop_item)

                def at(node, _seq=seq, _index=index):
                    return ast.copy_location(ast.Subscript(ast.Name(_seq, ast.Load()), ast.Name(_index, ast.Load()),
                                                           node.ctx), node)

                indexed = any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == row
                              and isinstance(n.ctx, ast.Store) for n in body_nodes)

                class _Put(ast.NodeTransformer):
                    def visit_Name(self, node, _row=row, _at=at):
                        return _at(node) if node.id == _row else node

                    def visit_Subscript(self, node, _row=row, _seq=seq, _index=index):
                        # row[j] is Y[i, j] (one index, so that a write lands in Y)
                        if isinstance(node.value, ast.Name) and node.value.id == _row:
                            inner = self.visit(node.slice)
                            parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
                            idx = ast.Tuple([ast.Name(_index, ast.Load())] + list(parts), ast.Load())
                            return ast.copy_location(ast.Subscript(ast.Name(_seq, ast.Load()), idx, node.ctx), node)
                        return self.generic_visit(node)

                def loop(body, _st=st, _seq=seq, _index=index):
                    rng = ast.Call(ast.Name("range", ast.Load()), [ast.Call(ast.Name("len", ast.Load()),
                                                                            [ast.Name(_seq, ast.Load())], [])], [])
                    out = ast.For(ast.Name(_index, ast.Store()), rng, body, [], type_comment=None)
                    ast.copy_location(out, _st)
                    ast.copy_location(out.iter, _st.iter)
                    out.end_lineno, out.end_col_offset = _st.end_lineno, _st.end_col_offset
                    return ast.fix_missing_locations(out)
                viewed = loop([_Put().visit(_copy(b)) for b in st.body])
                first = ast.copy_location(ast.Assign([ast.Name(row, ast.Store())], ast.Call(
                    ast.Name(item, ast.Load()), [at(ast.Name(row, ast.Load()))], [])), st)
                ast.fix_missing_locations(first)
                plain = loop([first] + [_copy(b) for b in st.body])
                test = ast.copy_location(ast.Call(ast.Name(views, ast.Load()), [ast.Name(seq, ast.Load()),
                                                                                ast.Constant(indexed)], []), st)
                new = ast.copy_location(ast.If(test, [viewed], [plain]), st)
                new.end_lineno, new.end_col_offset = st.end_lineno, st.end_col_offset
                block[k] = ast.fix_missing_locations(new)


def _augmented_target(name_node, nodes):
    return any(isinstance(n, ast.AugAssign) and n.target is name_node for n in nodes)


def _copy(node):
    return copy.deepcopy(node)


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
    pairs = [(positional[first + k], k, "pos") for k in range(len(args.defaults))] \
        + [(a, k, "kw") for k, a in enumerate(args.kwonlyargs) if args.kw_defaults[k] is not None]
    defaults, kwdefaults = func.__defaults__ or (), func.__kwdefaults__ or {}
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in func.__name__)
    for a, k, kind in pairs:
        expr = args.defaults[k] if kind == "pos" else args.kw_defaults[k]
        if _is_literal(expr):
            continue
        if kind == "pos":
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
        if kind == "pos":
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
