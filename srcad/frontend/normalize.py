"""normalize: one operation per statement, sugar removed, jumps turned into flags.

After this pass a function body holds only:
  name = <op on atoms>          (BinOp, UnaryOp, Call, Attribute, Subscript, Tuple/List display,
                                 a copy, or an *inactive* expression kept whole: comparisons,
                                 boolean logic, calls with no derivative)
  name[index] = atom            (subscript write)
  xs.append(atom)               (list mutation)
  if name: ... else: ...
  for name in range(...): ...   (every loop iterates over a range)
  while name: ...
  if name: break                (only as the last statement of a loop body)
  return atom                   (only as the last statement of the function)
Atoms are names and constants. Every statement keeps the line number of the user line it
came from, so generated code can say where each block comes from.
"""
import ast
import builtins

from ..errors import SrcadError, UnsupportedSyntaxError
from ..rules.registry import ANY, FactSet, facts, lookup
from ..syntax import N as name, Namer, assign, ast_copy, index_expr, source_lines, to_source
from .operators import inline_call, operator_call
from .parse import Parsed

_INACTIVE_EXPR = (ast.Compare, ast.BoolOp, ast.JoinedStr, ast.Set, ast.FormattedValue)
# (facts declared in the registry, rules/numpy_rules.py)
_DICT_VIEWS = FactSet("kind", "dict-view", methods=True)
# methods that change a list or dict in place: as values (`v = d.pop(k)`) they are not differentiated
_IN_PLACE = FactSet("inplace", "container", methods=True)
# methods that change their receiver, of any kind (xs.append(v), a.sort(), a.fill(v))
_CHANGES_RECEIVER = FactSet("inplace", ANY, methods=True)


def _is_atom(node):
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(isinstance(e, ast.Constant) or _is_atom(e) and not isinstance(e, ast.Name) for e in node.elts)
    return False


def _has_call(node):
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def _loc(new, old):
    for n in ast.walk(new):
        n.lineno = getattr(old, "lineno", 1)
        n.col_offset = getattr(old, "col_offset", 0)
        n.end_lineno, n.end_col_offset = n.lineno, n.col_offset
    return new


class Normalizer:
    """The normalize pass (see the module docstring).

    Input: a parsed function whose tree has been fenced and alias-checked.
    Output (through `normalize`): a new FunctionDef whose body holds one operation per
    statement on atoms (names and constants), with sugar removed (augmented assignments,
    comprehensions, dict displays, nested defs lifted), and `namer`, the fresh-name source
    later passes keep using.
    Invariants: every statement carries `user_line`, the user line it comes from; fresh names
    collide with no user name; the user's tree is copied, not changed."""

    def __init__(self, parsed):
        self.parsed = parsed
        fn = parsed.tree
        self.params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
        self.locals = set(self.params)
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.locals.add(node.id)
            elif isinstance(node, ast.arg):
                self.locals.add(node.arg)
        self.namer = Namer(self.locals | set(parsed.env))
        self.lifted = {}        # nested def name -> (lifted name, captured names, function)
        self.dicts, self.not_dicts = _dict_names(fn, parsed, self.locals)
        self.sequences = _sequence_names(fn, self.params)

    # -- helpers ---------------------------------------------------------------------------
    def fail(self, node, what, hint=""):
        raise UnsupportedSyntaxError(what, *self.parsed.where(node), hint=hint)

    def resolve(self, node):
        return self.parsed.try_resolve(node, self.locals)

    def is_global_ref(self, node):
        return self.parsed.is_global_ref(node, self.locals)

    def temp(self, hint):
        return self.namer.fresh(hint)

    # -- expressions -----------------------------------------------------------------------
    def atom(self, expr, hint="t"):
        """(statements, atom): expr computed into a fresh temporary unless it is already an atom."""
        if _is_atom(expr) or self.is_global_ref(expr):
            return [], expr
        stmts, rhs = self.flat(expr, hint)
        if isinstance(rhs, ast.Name):
            return stmts, rhs
        t = self.temp(self.namer.describe(rhs, hint))
        return stmts + [_loc(assign(t, rhs), expr)], name(t)

    def atoms(self, exprs, hint):
        stmts, out = [], []
        for e in exprs:
            s, a = self.atom(e, hint)
            stmts += s
            out.append(a)
        return stmts, out

    def index(self, sl, hint="idx"):
        """Subscript indices stay whole (they are never differentiated), but calls are hoisted."""
        if not _has_call(sl):
            return [], sl
        if isinstance(sl, ast.Tuple):
            stmts, elts = [], []
            for e in sl.elts:
                s, a = self.index(e)
                stmts += s
                elts.append(a)
            return stmts, ast.Tuple(elts=elts, ctx=ast.Load())
        if isinstance(sl, ast.Slice):
            stmts, parts = [], []
            for p in (sl.lower, sl.upper, sl.step):
                s, a = self.index(p) if p is not None else ([], None)
                stmts += s
                parts.append(a)
            return stmts, ast.Slice(*parts)
        t = self.temp(hint)
        return [_loc(assign(t, sl), sl)], name(t)

    def _subscript_call(self, value):
        """`np.r_[...]`: an object the registry declares applied by subscripting (items as arguments)."""
        if not self.is_global_ref(value):
            return False
        found, obj = self.resolve(value)
        entry = facts(obj) if found else None
        return entry is not None and entry.subscript

    def items(self, sl, hint):
        """The items of `np.r_[a, b + 1, 0:3]` as atoms (slices and strings kept whole)."""
        if isinstance(sl, ast.Tuple):
            stmts, elts = [], []
            for e in sl.elts:
                s, a = ([], e) if isinstance(e, ast.Slice) else self.atom(e, hint)
                stmts += s
                elts.append(a)
            return stmts, ast.Tuple(elts=elts, ctx=ast.Load())
        return ([], sl) if isinstance(sl, ast.Slice) else self.atom(sl, hint)

    def flat(self, e, hint="t"):
        """(statements, rhs): rhs is one operation on atoms (or an inactive expression kept whole)."""
        if _is_atom(e) or self.is_global_ref(e) and not isinstance(e, ast.Call):
            return [], e
        if isinstance(e, _INACTIVE_EXPR) or isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return [], e
        if isinstance(e, ast.BinOp):
            s1, a = self.atom(e.left, hint)
            s2, b = self.atom(e.right, hint)
            if isinstance(e.op, ast.Add) and (self._shown_sequence(e.left) or self._shown_sequence(e.right)):
                # `xs + [v]` joins lists: rt.concat's adjoint splits the cotangent between them
                return s1 + s2, _loc(ast.Call(self.runtime_helper("concat"), [a, b], []), e)
            if isinstance(e.op, ast.Mult):
                # `[v] * n` repeats a list: rt.repeat's adjoint adds the copies' cotangents up
                for seq, n, node in ((a, b, e.left), (b, a, e.right)):
                    if self._shown_sequence(node) and not _constants(node):
                        return s1 + s2, _loc(ast.Call(self.runtime_helper("repeat"), [seq, n], []), e)
            return s1 + s2, _loc(ast.BinOp(a, e.op, b), e)
        if isinstance(e, ast.UnaryOp):
            s, a = self.atom(e.operand, hint)
            return s, _loc(ast.UnaryOp(e.op, a), e)
        if isinstance(e, ast.Attribute):
            s, a = self.atom(e.value, hint)
            return s, _loc(ast.Attribute(a, e.attr, ast.Load()), e)
        if isinstance(e, ast.Subscript):
            s1, a = self.atom(e.value, hint)
            s2, sl = self.index(e.slice) if not self._subscript_call(e.value) else self.items(e.slice, hint)
            return s1 + s2, _loc(ast.Subscript(a, sl, ast.Load()), e)
        if isinstance(e, (ast.Tuple, ast.List)):
            s, elts = self.atoms(e.elts, hint)
            return s, _loc(type(e)(elts=elts, ctx=ast.Load()), e)
        if isinstance(e, (ast.ListComp, ast.GeneratorExp, ast.DictComp)):
            return self.comprehension(e, hint)
        if isinstance(e, ast.Dict):
            return self.dict_display(e, hint)
        if isinstance(e, ast.IfExp):
            t = self.temp(hint)
            s0, c = self.condition(e.test)
            b1, v1 = self.flat(e.body, hint)
            b2, v2 = self.flat(e.orelse, hint)
            node = _loc(ast.If(c, b1 + [_loc(assign(t, v1), e)], b2 + [_loc(assign(t, v2), e)]), e)
            return s0 + [node], name(t)
        if isinstance(e, ast.Call):
            if self._local_method(e, _IN_PLACE) and not (e.func.attr == "pop" and not e.args):
                self.fail(e, f"the in-place method `{self.parsed.text(e.func)}(...)` used as a value",
                          "read what you need first (`v = d[key]`), then build a new dict or list "
                          "without it instead of changing this one")
            return self.call(e, hint)
        self.fail(e, f"the expression {type(e).__name__}")

    def _local_method(self, e, names):
        """Is e a call of one of these methods on a local value (not on a module)?"""
        return isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in names \
            and not self.is_global_ref(e.func)

    def dict_display(self, e, hint):
        """{k: v, ...}: the values as atoms, the keys whole (keys are never differentiated). A
        display whose keys might repeat (one of them computed) becomes item assignments in order,
        so a repeated key's earlier value gets no derivative, as it has no effect."""
        if any(k is None for k in e.keys):
            self.fail(e, "`**` unpacking in a dict display", "add the items one by one: d[key] = value")
        consts = [k.value for k in e.keys if isinstance(k, ast.Constant)]
        if len(consts) != len(set(consts)):
            self.fail(e, "a dict display that names the same key twice", "write each key once")
        stmts = []
        if len(consts) == len(e.keys) or len(e.keys) == 1:
            keys = []
            for k in e.keys:
                s, k2 = self.index(k, "key")
                stmts += s
                keys.append(k2)
            s, vals = self.atoms(e.values, hint)
            return stmts + s, _loc(ast.Dict(keys, vals), e)
        out = self.temp(hint if hint != "t" else "items")
        self.locals.add(out)
        self.dicts.add(out)
        body = [_loc(assign(out, ast.Dict([], [])), e)]
        body += [_loc(ast.Assign([ast.Subscript(name(out), k, ast.Store())], v), e) for k, v in zip(e.keys, e.values)]
        return self.block(body), name(out)

    def dict_method(self, e, hint):
        """`d.get(k, default)` is `d[k] if k in d else default`; `d.values()` and `d.items()` are
        lists built by a loop over d's keys (subscripts, so derivatives flow through them);
        `d.keys()` has no derivative."""
        s, recv = self.atom(e.func.value, "mapping")
        attr = e.func.attr
        if attr == "get":
            if e.keywords or not 1 <= len(e.args) <= 2:
                self.fail(e, "this form of `.get`", "call d.get(key) or d.get(key, default)")
            s2, key = self.atom(e.args[0], "key")
            default = e.args[1] if len(e.args) == 2 else ast.Constant(None)
            test = ast.Compare(key, [ast.In()], [recv])
            s3, rhs = self.flat(_loc(ast.IfExp(test, ast.Subscript(recv, key, ast.Load()), default), e), hint)
            return s + s2 + s3, rhs
        if e.args or e.keywords:
            self.fail(e, f"`.{attr}(...)` with arguments", f"call .{attr}() without arguments")
        if attr == "keys":
            return s, _loc(ast.Call(ast.Attribute(recv, "keys", ast.Load()), [], []), e)
        k = self.temp("key")
        elt = ast.Subscript(recv, name(k), ast.Load())
        if attr == "items":
            elt = ast.Tuple([name(k), elt], ast.Load())
        keys = ast.Call(ast.Attribute(recv, "keys", ast.Load()), [], [])
        comp = _loc(ast.ListComp(elt, [ast.comprehension(name(k, True), keys, [], 0)]), e)
        s2, rhs = self.comprehension(comp, attr)
        return s + s2, rhs

    def dict_call(self, e, hint):
        """dict(), dict(a=..., b=...), dict(d) (a copy of a dict), dict(pairs) (a list, tuple, zip
        or .items() of (key, value) pairs) and dict(d_or_pairs, b=...) as displays, comprehensions
        and item writes."""
        if len(e.args) > 1 or any(kw.arg is None for kw in e.keywords):
            self.fail(e, "this form of `dict(...)`", "write a dict display {key: value, ...} or add items one by one")
        if not e.args:
            disp = ast.Dict([ast.Constant(kw.arg) for kw in e.keywords], [kw.value for kw in e.keywords])
            return self.flat(_loc(disp, e), hint)
        src = e.args[0]
        k, v = self.temp("key"), self.temp("value")
        if self._pairs(src):
            comp = ast.DictComp(name(k), name(v), [ast.comprehension(
                ast.Tuple([name(k, True), name(v, True)], ast.Store()), src, [], 0)])
        else:
            comp = ast.DictComp(name(k), ast.Subscript(src, name(k), ast.Load()),
                                [ast.comprehension(name(k, True),
                                                   ast.Call(ast.Attribute(src, "keys", ast.Load()), [], []), [], 0)])
        if not e.keywords:
            return self.flat(_loc(comp, e), hint)
        out = self.temp(hint if hint != "t" else "items")
        self.locals.add(out)
        self.dicts.add(out)
        body = [_loc(assign(out, comp), e)]
        body += [_loc(ast.Assign([ast.Subscript(name(out), ast.Constant(kw.arg), ast.Store())], kw.value), e)
                 for kw in e.keywords]
        return self.block(body), name(out)

    def _pairs(self, src):
        """Is src, the argument of dict(...), written as (key, value) pairs rather than a mapping?"""
        if isinstance(src, (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)):
            return True
        if isinstance(src, ast.Call) and isinstance(src.func, ast.Attribute) and src.func.attr == "items":
            return True
        if isinstance(src, ast.Call) and self.is_global_ref(src.func):
            found, obj = self.resolve(src.func)
            return found and obj in (builtins.zip, builtins.enumerate)
        return isinstance(src, ast.Name) and src.id in self.sequences

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
        self.lifted[st.name] = (lifted, captured, _lift(node, self.parsed, st))
        self.parsed.env[lifted] = self.lifted[st.name][2]
        return []

    def comprehension(self, e, hint):
        """[elt for t in xs if c] (or a generator expression): a loop that appends to a fresh list.
        The comprehension's own names get fresh names, so they never touch the function's."""
        rename = {}
        for gen in e.generators:
            for t in ast.walk(gen.target):
                if isinstance(t, ast.Name):
                    rename.setdefault(t.id, self.temp(t.id))
        self.locals |= set(rename.values())

        class _Rename(ast.NodeTransformer):
            def visit_Name(self, node):
                return ast.copy_location(ast.Name(rename.get(node.id, node.id), node.ctx), node)
        out = self.temp(hint if hint != "t" else "items")
        self.locals.add(out)
        if isinstance(e, ast.DictComp):     # {k: v for ...}: a loop of item assignments
            self.dicts.add(out)
            body = [ast.Assign([ast.Subscript(name(out), _Rename().visit(ast_copy(e.key)), ast.Store())],
                               _Rename().visit(ast_copy(e.value)))]
        else:
            body = [ast.Expr(ast.Call(ast.Attribute(name(out), "append", ast.Load()),
                                      [_Rename().visit(ast_copy(e.elt))], []))]
        for gen in reversed(e.generators):
            for cond in reversed(gen.ifs):
                body = [ast.If(_Rename().visit(ast_copy(cond)), body, [])]
            body = [ast.For(_Rename().visit(ast_copy(gen.target)), _Rename().visit(ast_copy(gen.iter)), body, [])]
        empty = ast.Dict([], []) if isinstance(e, ast.DictComp) else ast.List([], ast.Load())
        stmts = [_loc(assign(out, empty), e)] + [_loc(b, e) for b in body]
        return self.block(stmts), name(out)

    def call(self, e, hint):
        if isinstance(e.func, ast.Name) and e.func.id in self.lifted:
            lifted, captured, _ = self.lifted[e.func.id]
            e = ast.Call(name(lifted), e.args, e.keywords + [ast.keyword(arg=c, value=name(c)) for c in captured])
            _loc(e, e.args[0] if e.args else e.func)
        spelled = self.spelling(e)
        if spelled is not e:
            return self.flat(spelled, hint)
        found, obj = self.resolve(e.func) if self.is_global_ref(e.func) else (False, None)
        if found and obj is builtins.dict:
            return self.dict_call(e, hint)
        if not found and self._local_method(e, ("get", *_DICT_VIEWS)):
            return self.dict_method(e, hint)
        if found and obj in (builtins.zip, builtins.enumerate):
            # zip/enumerate outside a loop head: the list of tuples they give, built by a loop
            # (whose items are subscripts, so derivatives flow through them)
            k = len(e.args) if obj is builtins.zip else 2
            names = [self.temp("item") for _ in range(k)]
            target = ast.Tuple([name(n, True) for n in names], ast.Store())
            comp = ast.ListComp(ast.Tuple([name(n) for n in names], ast.Load()),
                                [ast.comprehension(target, e, [], 0)])
            return self.comprehension(_loc(comp, e), obj.__name__ + "_items")
        if found and obj is builtins.map:
            return self.map_call(e, hint)
        if found and (inline := inline_call(self, e)) is not None:
            # srcad.jvp(f, primals, tangents) here: a call of f's tangent code as a plain function
            return self.call(_loc(inline, e), hint)
        if found:
            rule = lookup(obj)
            if rule is not None and rule.nondiff:
                return [], e            # shapes, indices, draws: no derivative, kept whole
            func = e.func
            stmts = []
        elif isinstance(e.func, ast.Attribute):      # a method of a local value: x.sum(axis=0)
            stmts, recv = self.atom(e.func.value, hint)
            rule = lookup("." + e.func.attr)
            if rule is not None and rule.nondiff:
                return [], e
            func = ast.Attribute(recv, e.func.attr, ast.Load())
        elif isinstance(e.func, ast.Call) and ast.unparse(e.func.func) == "rt.user_jvp_rule":
            # generated tangent code, transformed again (forward over forward): the rule is opaque
            self.fail(e, f"the derivative of the tangent code of `{ast.unparse(e.func.args[0])}`, whose tangent "
                         f"is a user rule (srcad.custom_jvp/register_jvp) called from generated code",
                      "for second derivatives use srcad.hessian or srcad.hvp (reverse mode then forward mode), "
                      "which transform the rule")
        elif isinstance(e.func, ast.Call) and ast.unparse(e.func.func) == "rt.user_vjp_rule":
            # generated adjoint code, transformed again (hessian/hvp): a register_vjp pullback is opaque
            self.fail(e, f"the second derivative of `{ast.unparse(e.func.args[0])}`, whose derivative is a "
                         f"srcad.register_vjp rule (a Python pullback srcad cannot differentiate)",
                      "for hessian/hvp define it with srcad.custom_vjp (srcad differentiates its bwd in turn) "
                      "or srcad.custom_jvp (srcad transposes and differentiates its rule)")
        elif isinstance(e.func, ast.Call) and (applied := operator_call(self, e.func)) is not None:
            # `srcad.grad(f)(x)`: the operator applied once, here; its result is composed (srcad/composition.py)
            return self.call(_loc(ast.Call(name(applied), e.args, e.keywords), e), hint)
        elif self.is_global_ref(e.func):
            self.fail(e, f"a call of `{self.parsed.text(e.func)}`, a name that is not defined where the function is",
                      "define or import it at module level before differentiating the function")
        elif (item := self._function_item(e)) is not None:
            return self.call(item, hint)
        elif isinstance(e.func, ast.Call) and (applied := self._applied_factory(e)) is not None:
            return self.call(applied, hint)
        elif isinstance(e.func, ast.Call):
            self.fail(e, f"calling the result of the call `{self.parsed.text(e.func)}`, a function srcad cannot "
                         f"see when it generates the code",
                      "make the called function a module-level one that defines the function it returns "
                      "(`def h(t): ...` then `return h`), or call the function by its module-level name")
        else:
            self.fail(e, "a call of a local value (calling a function stored in a variable)",
                      "call the function by its module-level name")
        s, args = self.atoms(e.args, hint)
        stmts += s
        kws = []
        for kw in e.keywords:
            if kw.arg is None:
                self.fail(e, "`**kwargs` in a call", "pass the keyword arguments by name")
            s, a = self.atom(kw.value, kw.arg)
            stmts += s
            kws.append(ast.keyword(arg=kw.arg, value=a))
        return stmts, _loc(ast.Call(func, args, kws), e)

    def map_call(self, e, hint):
        """map(f, xs, ...): the list [f(x, ...) for x, ... in zip(xs, ...)], built by a loop that srcad differentiates; in a loop head, the loop runs over that list."""
        f, seqs = (e.args[0], e.args[1:]) if e.args else (None, [])
        if e.keywords or not seqs or any(isinstance(a, ast.Starred) for a in e.args):
            self.fail(e, "this form of map", "call map(f, xs) (or map(f, xs, ys)) with the function and the sequences")
        names = [f"item{k}" for k in range(len(seqs))]      # (renamed fresh by comprehension)
        elt = _loc(ast.Call(ast_copy(f), [name(n) for n in names], []), e)
        if len(seqs) == 1:
            target, it = name(names[0], True), seqs[0]
        else:
            target = ast.Tuple([name(n, True) for n in names], ast.Store())
            it = _loc(ast.Call(name("zip"), list(seqs), []), e)
        comp = ast.ListComp(elt, [ast.comprehension(target, it, [], 0)])
        return self.comprehension(_loc(comp, e), "map_items")

    def condition(self, test):
        """A branch or loop test as a name (the test itself is never differentiated)."""
        if isinstance(test, ast.Name):
            return [], test
        s, t = [], test
        if _has_call(test) and not isinstance(test, _INACTIVE_EXPR):
            s, t = self.flat(test, "cond")
        c = self.temp("cond")
        return s + [_loc(assign(c, t), test)], name(c)

    # -- statements ------------------------------------------------------------------------
    def block(self, stmts):
        out = []
        for st in stmts:
            out += self.stmt(st)
        return out

    def stmt(self, st):
        meth = getattr(self, "s_" + type(st).__name__, None)
        if meth is None:
            self.fail(st, f"the statement {type(st).__name__}")
        return [_keep_line(n, st) for n in meth(st)]

    def s_Pass(self, st):
        return []

    def s_Expr(self, st):
        if isinstance(st.value, ast.Constant):
            return []                                    # docstring
        if isinstance(st.value, ast.Call):
            s, rhs = self.call(st.value, "t")
            return s + [ast.Expr(rhs)]
        return []

    def s_Assert(self, st):
        return [st]

    s_Raise = s_Assert

    def s_AnnAssign(self, st):
        return [] if st.value is None else self.s_Assign(ast.Assign([st.target], st.value))

    def s_Assign(self, st):
        targets = st.targets
        if len(targets) > 1:
            s, a = self.atom(st.value, "t")
            return s + sum((self.bind(t, a) for t in targets), [])
        return self.bind(targets[0], st.value)

    def bind(self, target, value):
        if isinstance(target, ast.Name):
            s, rhs = self.flat(value, target.id)
            return s + [assign(target.id, rhs)]
        if isinstance(target, ast.Subscript):
            s1, v = self.atom(value, target.value.id)
            s2, sl = self.write_index(target)
            guard = self._overlap_guard(target, value, sl, v)
            return s1 + s2 + guard + [assign(ast.Subscript(name(target.value.id), sl, ast.Store()), v)]
        if isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                self.fail(target, "starred unpacking (`a, *rest = ...`)")
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                # a, b = b, a + b: every right-hand side is evaluated before any name is rebound
                s, vals = [], []
                rebound = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
                for v in value.elts:
                    if isinstance(v, ast.Name) and v.id in rebound:
                        t = self.temp(v.id + "_old")
                        s.append(assign(t, v))
                        vals.append(name(t))
                    else:
                        s2, a = self.atom(v, "t")
                        s += s2
                        vals.append(a)
                return s + sum((self.bind(t, v) for t, v in zip(target.elts, vals)), [])
            s, a = self.atom(value, "t")
            if isinstance(value, (ast.Name, ast.Subscript, ast.Attribute)) and not self._shown_not_dict(value):
                # `k1, k2 = d` unpacks a dict's keys: a value whose type the code does not show
                # goes through rt.loop_sequence (a dict's keys, any other sequence itself)
                t = self.temp("packed")
                s.append(_loc(assign(t, ast.Call(self.runtime_helper("loop_sequence"), [a], [])), value))
                a = name(t)
            elif not isinstance(a, ast.Name) or a.id in self.params or any(
                    isinstance(e, ast.Name) and e.id == a.id for e in target.elts):
                t = self.temp("packed")
                s.append(assign(t, a))
                a = name(t)
            for k, elt in enumerate(target.elts):
                s += self.bind(elt, ast.Subscript(a, ast.Constant(k), ast.Load()))
            return s
        self.fail(target, f"assignment to `{self.parsed.text(target)}`", "assign to a plain name (or to name[index])")

    def write_index(self, target):
        """The index of a subscript write, computed once if it reads the array it writes (`y[y < 0] = 0`)."""
        sl = target.slice
        reads_target = any(isinstance(n, ast.Name) and n.id == target.value.id for n in ast.walk(sl))
        if reads_target or any(isinstance(n, (ast.Compare, ast.Subscript)) for n in ast.walk(sl)):
            s, sl2 = self.index(sl)
            t = self.temp("where" if isinstance(sl, ast.Compare) else "idx")
            return s + [_loc(assign(t, sl2), sl)], name(t)
        return self.index(sl)

    def s_AugAssign(self, st):
        t = st.target
        if isinstance(t, ast.Name):
            return self.bind(t, ast.BinOp(name(t.id), st.op, st.value))
        if isinstance(t, ast.Subscript):
            s0, sl = self.write_index(t)
            old = self.temp(t.value.id + "_part")
            s1, v = self.atom(st.value, "t")
            new = self.temp(t.value.id + "_part")
            return (s0 + [assign(old, ast.Subscript(name(t.value.id), sl, ast.Load()))] + s1
                    + [assign(new, ast.BinOp(name(old), st.op, v)),
                       assign(ast.Subscript(name(t.value.id), sl, ast.Store()), name(new))])
        self.fail(t, f"augmented assignment to {type(t).__name__}")

    def s_Return(self, st):
        if st.value is None:
            return [ast.Return(ast.Constant(None))]
        s, a = self.atom(st.value, "result")
        return s + [ast.Return(a)]

    def s_If(self, st):
        s, c = self.condition(st.test)
        return s + [ast.If(c, self.block(st.body), self.block(st.orelse))]

    def s_While(self, st):
        s, c = self.condition(st.test)
        again = [ast_copy(n) for n in s]    # the test is evaluated again after each iteration
        loop = ast.While(c, self.block(st.body) + again, [])
        loop.again = len(again)
        return s + [loop]

    def s_Break(self, st):
        return [st]

    s_Continue = s_Break

    def s_For(self, st):
        it, target = st.iter, st.target
        unrolled = self._unrolled_functions(st)
        if unrolled is not None:
            return self.block(unrolled)
        self.loop_rebinds = {n.id for b in st.body for n in ast.walk(b)
                             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        found, obj = self.resolve(it.func) if isinstance(it, ast.Call) and self.is_global_ref(it.func) else (False, None)
        if found and obj is builtins.range:
            s, args = [], []
            for a in it.args:
                s2, a2 = self.index(a, "n")
                s += s2
                args.append(a2)
            if isinstance(target, ast.Name):
                return s + [ast.For(target, ast.Call(it.func, args, []), self.block(st.body), [])]
            k = self.temp("i")
            body = self.bind(target, name(k)) + self.block(st.body)
            return s + [ast.For(name(k, True), ast.Call(it.func, args, []), body, [])]
        # every other loop runs over an index: for k in range(n): target = item(k)
        self._refuse_live_iteration(st)
        if self._enumerate_index(it, target):    # for i, v in enumerate(xs): i is the loop index
            k = target.elts[0].id
            s, n, item = self.sequence(it.args[0])
            target = target.elts[1]
        else:
            k = self.temp("i")
            s, n, item = self.sequence(it)
        body = self.bind(target, item(name(k))) + self.block(st.body)
        return s + [ast.For(name(k, True), _range(n), body, [])]

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
        from .callables import ItemWatch
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
        import types
        from .analyze import is_user_function
        from .freshness import definition_watch
        from .parse import parse_function
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
        import linecache
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
        import textwrap
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

    def _overlap_guard(self, target, value, sl, v):
        """`rt.refuse_overlapping_write(y, idx, v, ...)` before `y[idx] = v` when v may be a view
        of y (a subscript or attribute of y, or a name some statement sets to one): NumPy copies
        such a source element by element when it does not see the overlap (`v[::2] = v[0:3]`),
        which srcad, differentiating values, does not follow; the guard refuses exactly then."""
        y = target.value.id

        def view_of_y(e):
            while isinstance(e, (ast.Subscript, ast.Attribute)):
                e = e.value
            return isinstance(e, ast.Name) and e.id == y and e is not value
        if not isinstance(v, ast.Name):
            return []
        direct = isinstance(value, (ast.Subscript, ast.Attribute)) and view_of_y(value.value)
        named = isinstance(value, ast.Name) and any(
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)
            and isinstance(n.value, (ast.Subscript, ast.Attribute)) and view_of_y(n.value.value)
            for n in ast.walk(self.parsed.tree))
        if not (direct or named):
            return []
        text = f"{ast.unparse(target)} = {ast.unparse(value)}"
        filename, line, col = self.parsed.where(target)
        args = [name(y), index_expr(ast_copy(sl)), name(v.id)] + [ast.Constant(c) for c in (
            f"`{text}`, a write whose source shares memory with its target in a way NumPy copies element "
            f"by element (a later element reads one this write already changed)", filename, line, col,
            f"if the source's values before the write are meant, copy it first: "
            f"`{ast.unparse(target)} = {ast.unparse(value)}.copy()`; else write the loop out")]
        return [_loc(ast.Expr(ast.Call(self.runtime_helper("refuse_overlapping_write"), args, [])), target)]

    def _refuse_live_iteration(self, st):
        """`for t in a:` whose body writes `a` in place (`a -= e`, `a[i] = e`, `a.sort()`):
        Python iterates the live object, so later items are the changed ones, while srcad reads
        the items of the value `a` had when the loop began. Refused with the line of the write."""
        it = st.iter
        roots = []
        for e in (it.args if isinstance(it, ast.Call) and self.is_global_ref(it.func) else [it]):
            while isinstance(e, (ast.Subscript, ast.Attribute)):
                e = e.value
            if isinstance(e, ast.Name) and e.id not in self.dicts:
                roots.append(e.id)
        if not roots:
            return

        def root(t):
            while isinstance(t, (ast.Subscript, ast.Attribute, ast.Starred)):
                t = t.value
            return t.id if isinstance(t, ast.Name) else None
        for node in (n for b in st.body for n in ast.walk(b)):
            targets = []
            if isinstance(node, ast.AugAssign):
                targets = [node.target]
            elif isinstance(node, ast.Assign):
                targets = [t for t in node.targets if isinstance(t, (ast.Subscript, ast.Attribute))]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in _CHANGES_RECEIVER:
                targets = [node.func.value]
            hit = next((root(t) for t in targets if root(t) in roots), None)
            if hit is not None:
                self.fail(node, f"`{ast.unparse(node).splitlines()[0]}` inside `for {_target_text(st.target)} in "
                                f"{ast.unparse(it)}:` (line {st.lineno}), which writes `{hit}` in place while the "
                                f"loop runs over it (Python then reads the changed items; srcad would read the "
                                f"items `{hit}` had when the loop began)",
                          f"loop over positions and read the item inside (`for i in range(len({hit})): "
                          f"... = {hit}[i]`), or over a copy (`for ... in {hit}.copy():`) if the loop should "
                          f"not see the writes")

    def mapping_sequence(self, it):
        """A loop over a dict (its keys) or over d.keys()/.values()/.items(): over a list of the
        keys taken before the loop, the values read as d[key]."""
        call = isinstance(it, ast.Call)
        what = it.func.attr if call else "keys"
        recv = it.func.value if call else it
        if isinstance(recv, ast.Name) and recv.id in self.dicts and recv.id in self.not_dicts:
            self.fail(it, f"a loop over `{recv.id}`, which holds a dict at one place and another value at another",
                      "give the dict a name of its own")
        s, r = self.atom(recv, "mapping")
        if isinstance(r, ast.Name) and r.id in self.loop_rebinds:
            t = self.temp(r.id + "_items")
            s, r = s + [assign(t, r)], name(t)
        view, ks = self.temp("view"), self.temp("keys")
        s += [_loc(assign(view, _method_call(r, "keys")), it),
              _loc(assign(ks, ast.Call(name("list"), [name(view)], [])), it)]

        def item(k):
            key = ast.Subscript(name(ks), k, ast.Load())
            if what == "keys":
                return key
            value = ast.Subscript(r, ast_copy(key), ast.Load())
            return value if what == "values" else ast.Tuple([key, value], ast.Load())
        return s, ast.Call(name("len"), [name(ks)], []), item

    def _enumerate_index(self, it, target):
        found, obj = self.resolve(it.func) if isinstance(it, ast.Call) and self.is_global_ref(it.func) else (False, None)
        return (found and obj is builtins.enumerate and isinstance(target, ast.Tuple) and
                isinstance(target.elts[0], ast.Name) and len(it.args) == 1)

    def sequence(self, it):
        """(statements, length, item): what a for loop iterates over, as a length and an indexer."""
        found, obj = self.resolve(it.func) if isinstance(it, ast.Call) and self.is_global_ref(it.func) else (False, None)
        if found and obj is builtins.enumerate:
            if len(it.args) != 1 or it.keywords:
                self.fail(it, "enumerate with a start value", "add the offset to the index in the loop body")
            s, n, item = self.sequence(it.args[0])
            return s, n, lambda k: ast.Tuple([k, item(k)], ast.Load())
        if found and obj is builtins.zip:
            if it.keywords:
                self.fail(it, "zip with keyword arguments", "call zip with the sequences only")
            parts = [self.sequence(a) for a in it.args]
            s = sum((p[0] for p in parts), [])
            n = parts[0][1] if len(parts) == 1 else ast.Call(name("min"), [p[1] for p in parts], [])
            return s, n, lambda k: ast.Tuple([p[2](k) for p in parts], ast.Load())
        if found and obj is builtins.reversed:      # the same items, last first: xs[-1 - k]
            if len(it.args) != 1 or it.keywords:
                self.fail(it, "this form of reversed", "call reversed(xs) with the one sequence")
            s, n, item = self.sequence(it.args[0])
            return s, n, lambda k: item(ast.BinOp(ast.Constant(-1), ast.Sub(), k))
        if self._local_method(it, _DICT_VIEWS) and not it.args or isinstance(it, ast.Name) and it.id in self.dicts:
            return self.mapping_sequence(it)
        s, seq = self.atom(it, "seq")
        if not self._shown_not_dict(it):
            # a value whose type the code does not show (an argument, d["layer"], self.params):
            # rt.loop_sequence gives a dict's keys, any other sequence itself
            t = self.temp((seq.id if isinstance(seq, ast.Name) else "seq") + "_items")
            call = ast.Call(self.runtime_helper("loop_sequence"), [seq], [])
            s, seq = s + [_loc(assign(t, call), it)], name(t)
        elif isinstance(seq, ast.Name) and seq.id in self.loop_rebinds:
            # `for t in v: v = ...` iterates over the original v: keep a reference to it
            t = self.temp(seq.id + "_items")
            s, seq = s + [assign(t, seq)], name(t)
        return s, ast.Call(name("len"), [seq], []), lambda k: ast.Subscript(seq, k, ast.Load())

    def _shown_sequence(self, e):
        """Does the code show that e is a list or tuple (a display, a comprehension, list(...),
        tuple(...), sorted(...), or a name every assignment gives one)?"""
        if isinstance(e, (ast.List, ast.Tuple, ast.ListComp)):
            return True
        if isinstance(e, ast.Call) and self.is_global_ref(e.func):
            found, obj = self.resolve(e.func)
            return found and obj in (builtins.list, builtins.tuple, builtins.sorted)
        return isinstance(e, ast.Name) and e.id in self.sequences

    def _shown_not_dict(self, it):
        """Does the code show that a loop's sequence is no dict (a display, a comprehension, or a
        name every assignment gives one)?"""
        if isinstance(it, (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.Constant)):
            return True
        return isinstance(it, ast.Name) and it.id in self.sequences

    def numpy_function(self, attr):
        """`np.<attr>` as normalized code calls it (a name of its own when the function's module
        means something else by `np`)."""
        import numpy
        if "np" not in self.locals and self.parsed.env.setdefault("np", numpy) is numpy:
            return ast.Attribute(name("np"), attr, ast.Load())
        own = self.namer.fresh(attr)
        self.parsed.env[own] = getattr(numpy, attr)
        return name(own)

    def spelling(self, e):
        """Spellings of calls that say the same as one srcad has a rule for, rewritten to it (the
        rewritten call keeps the user's place; the registry's `spelling` fact says which applies):
        `x.transpose(1, 0, 2)` is x.transpose((1, 0, 2)); `clip(min=, max=)` is np.clip(x, min, max);
        einsum's sublist form is its subscripts string; a reduction with `where=m` reduces
        np.where(m, x, fill) (mean divides by the count of m; max/min join `initial` in with
        np.maximum/np.minimum). Returns e itself when no spelling applies."""
        func, args, kws = e.func, list(e.args), list(e.keywords)
        method = isinstance(func, ast.Attribute) and not self.is_global_ref(func)
        if method:
            entry = facts("." + func.attr)
        else:
            found, obj = self.resolve(func) if self.is_global_ref(func) else (False, None)
            entry = facts(obj) if found else None
        how = getattr(entry, "spelling", None)
        if how is None or any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in kws):
            return e
        if how == "sublists":
            return self._einsum_sublists(e)
        if how == "axes":
            return _loc(ast.Call(func, [ast.Tuple(args, ast.Load())], kws), e) if method and len(args) > 1 else e
        if how == "min-max":
            # (ndarray.clip takes min=/max=, np.clip a_min=/a_max= (and min=/max= from NumPy 2.1))
            args = [func.value] + args if method else args
            kw = {k.arg: k.value for k in kws}
            lo, hi = kw.pop("min", None), kw.pop("max", None)
            if lo is None and hi is None or len(args) > 1 or kw:
                return e
            bounds = [b if b is not None else ast.Constant(None) for b in (lo, hi)]
            return _loc(ast.Call(self.numpy_function("clip"), args + bounds, []), e)
        kind, fill, reducer, joiner = how
        kw = {k.arg: k.value for k in kws}
        where, initial = kw.pop("where", None), kw.pop("initial", None) if joiner else None
        if where is None and initial is None or where is not None and joiner and initial is None:
            return e            # (numpy asks for `initial` with a `where` of max/min)
        if method:
            x, rest = func.value, args
        elif args:
            x, rest = args[0], args[1:]
        elif "a" in kw:
            x, rest = kw.pop("a"), []
        else:
            return e
        names = entry.params[1:]
        if len(rest) > len(names) or set(kw) - set(names):
            return e
        kw = dict(zip(names, rest)) | kw
        if where is not None:
            x = ast.Call(self.numpy_function("where"), [where, x, ast.Constant(fill) if joiner is None
                                                        else ast_copy(initial)], [])
        out = ast.Call(self.numpy_function(reducer), [x], [ast.keyword(arg=k, value=v) for k, v in kw.items()])
        if kind == "where-mean":
            count = ast.Call(self.runtime_helper("where_count"),
                             [ast_copy(where), ast_copy(x.args[1]), kw.get("axis", ast.Constant(None)),
                              kw.get("keepdims", ast.Constant(False))], [])
            out = ast.BinOp(out, ast.Div(), count)
        elif joiner is not None:
            out = ast.Call(self.numpy_function(joiner), [out, ast_copy(initial)], [])
        return _loc(out, e)

    def _einsum_sublists(self, e):
        """np.einsum(a, [0, 1], b, [1, 2], [0, 2]) (the sublist form, written with literal lists) is
        np.einsum('ab,bc->ac', a, b); e itself for any other form."""
        args = e.args
        if e.keywords or len(args) < 2 or isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            return e

        def letters(node):
            if not isinstance(node, (ast.List, ast.Tuple)):
                return None
            out = ""
            for item in node.elts:
                if isinstance(item, ast.Constant) and item.value is Ellipsis:
                    out += "..."
                elif isinstance(item, ast.Constant) and type(item.value) is int and 0 <= item.value < 52:
                    out += "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[item.value]
                else:
                    return None
            return out
        pairs, rest = args[:len(args) // 2 * 2], args[len(args) // 2 * 2:]
        ins = [letters(pairs[j + 1]) for j in range(0, len(pairs), 2)]
        out = letters(rest[0]) if rest else ""
        if any(i is None for i in ins) or out is None:
            if any(isinstance(a, (ast.List, ast.Tuple)) for a in args[1:]):
                self.fail(e, "np.einsum's sublist form with items other than literal integers and `...`",
                          "write the subscripts as a string: np.einsum('ij,jk->ik', a, b)")
            return e
        spec = ",".join(ins) + ("->" + out if rest else "")
        return _loc(ast.Call(e.func, [ast.Constant(spec)] + pairs[0::2], []), e)

    def runtime_helper(self, attr):
        """A helper of srcad.runtime as normalized code calls it: `rt.<attr>`, as in generated code,
        or under a name of its own when the function's module means something else by `rt`."""
        from .. import runtime
        if "rt" not in self.locals and self.parsed.env.setdefault("rt", runtime) is runtime:
            return ast.Attribute(name("rt"), attr, ast.Load())
        own = self.namer.fresh(attr)
        self.parsed.env[own] = getattr(runtime, attr)
        return name(own)


def _outside_loops(node):
    """The nodes of a statement that are not inside a loop or function of its own."""
    yield node
    if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
        return
    for child in ast.iter_child_nodes(node):
        yield from _outside_loops(child)


def _dict_names(fn, parsed, locals_):
    """(names some assignment gives a dict, names some assignment gives something else), for
    loops over a dict (its keys) and for the tape of item assignments (a key may be new)."""

    def is_dict(v, dicts):
        if isinstance(v, (ast.Dict, ast.DictComp)):
            return True
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "dict" \
                and "dict" not in locals_ and parsed.env.get("dict", builtins.dict) is builtins.dict:
            return True
        return isinstance(v, ast.Name) and v.id in dicts
    dicts, others = set(), set()
    changed = True
    while changed:
        changed = False
        others = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        if is_dict(node.value, dicts):
                            if t.id not in dicts:
                                dicts.add(t.id)
                                changed = True
                        else:
                            others.add(t.id)
                    else:
                        others |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension)):
                t = node.target
                others |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return dicts, others


def _constants(e):
    """A list or tuple display of constants only (`[0.0] * n` carries no derivative)."""
    return isinstance(e, (ast.List, ast.Tuple)) and all(isinstance(v, ast.Constant) for v in e.elts)


def _displays_a_sequence(v):
    """A list or tuple display or comprehension (`[a, b] + x` is an array when x is one)."""
    return isinstance(v, (ast.List, ast.Tuple, ast.ListComp))


def _sequence_names(fn, params):
    """Names every binding of which is a list or tuple display or comprehension (a loop over them
    needs no run-time test for a dict)."""
    shown, other = set(), set(params)
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    (shown if _displays_a_sequence(node.value) else other).add(t.id)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension, ast.NamedExpr)):
            other |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.arg)):
            other.add(node.arg)
    return shown - other


def _lift(node, parsed, where):
    """A real function made from a lifted nested def. Its source is registered under a name that
    says where it came from, with the user's own body lines at their own line numbers, so the
    generated code quotes the user's lines."""
    import linecache
    import textwrap
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


def _target_text(t):
    return ", ".join(map(ast.unparse, t.elts)) if isinstance(t, ast.Tuple) and t.elts else ast.unparse(t)


def _method_call(recv, attr):
    return ast.Call(ast.Attribute(recv, attr, ast.Load()), [], [])


def _range(n):
    return ast.Call(name("range"), [n], [])


def _keep_line(node, src):
    """Give a generated statement (and its parts) the user line it came from, unless it has one."""
    for n in ast.walk(node):
        if isinstance(n, (ast.stmt, ast.expr)) and not hasattr(n, "lineno"):
            n.lineno, n.col_offset = src.lineno, src.col_offset
            n.end_lineno, n.end_col_offset = src.lineno, src.col_offset
        if isinstance(n, ast.stmt) and not hasattr(n, "user_line"):
            # (statements made inside this one's expression too: a nested conditional
            # expression becomes an if within the if of the outer one)
            n.user_line = src.lineno
    return node


def normalize(parsed: Parsed) -> tuple[ast.FunctionDef, Normalizer]:
    """A normalized copy of the parsed function (see the module docstring), jumps lowered."""
    from .jumps import lower_jumps
    n = Normalizer(parsed)
    fn = parsed.tree
    body = n.block(fn.body)
    body = lower_jumps(body, n.namer, fn)
    new = ast.FunctionDef(name=fn.name, args=fn.args, body=body, decorator_list=[], returns=None,
                          type_params=[], lineno=fn.lineno, col_offset=0)
    new.user_line = fn.lineno
    new.dict_names = set(n.dicts)      # item writes into these may add a key: the tape says so
    return new, n
