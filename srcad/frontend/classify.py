"""classify: what each normalized statement does, as an `Op` (ops.py): its kind, the rule that
differentiates it (looked up in the registry, its parameters bound to the call's atoms), or the
user function it calls (methods.py for `self.f(...)`), or the name of the missing rule, and the
operands that may carry a derivative into its target. A missing rule is recorded here and raised
by the activity analysis (analyze.py) only when an active value reaches it."""
import ast
import types

from ..errors import SrcadError, UnsupportedSyntaxError
from ..rules.registry import facts, lookup
from ..syntax import index_expr
from .callables import transformable
from .callees import atom_names as _names, is_user_function
from .methods import is_user_method, method_call, method_of_object
from .ops import Op, OpKind, Unsupported


def _restore_item():
    from ..runtime import restore_item
    return restore_item


def _is_data(obj):
    """A value whose subscript reads an item (an array, a container, a number, a sparse matrix)."""
    import numpy as np
    import scipy.sparse as sp
    return isinstance(obj, (np.ndarray, np.generic, list, tuple, dict, str, bytes, range, int, float,
                            types.MappingProxyType)) or sp.issparse(obj) or isinstance(obj, type)


def _namedtuple_fields(cls, call):
    """The arguments of `P(...)`, P a namedtuple class, in field order (None if not all given)."""
    if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
        return None
    given = dict(zip(cls._fields, call.args))
    given.update({k.arg: k.value for k in call.keywords})
    if any(isinstance(a, ast.Starred) for a in call.args) or set(given) != set(cls._fields):
        return None
    return [given[name] for name in cls._fields]


def _array_attribute(name):
    """Is `name` an attribute of arrays, numbers or sparse matrices (never a namedtuple field)?"""
    import numpy as np
    import scipy.sparse as sp
    return any(hasattr(t, name) for t in (np.ndarray, np.float64, float, sp.csr_array, sp.csr_matrix))


def _value_names(node):
    """Names whose value may become the value of `a or b` / an item of `{a, b}` (not those only
    compared or negated: a comparison's result is a bool)."""
    if isinstance(node, (ast.Compare, ast.JoinedStr)) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return []
    if isinstance(node, (ast.BoolOp, ast.Set)):
        return [n for v in (node.values if isinstance(node, ast.BoolOp) else node.elts) for n in _value_names(v)]
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


def _bound_receiver(method, f):
    """The first argument of a bound method `f` names: for a classmethod, the class it is bound
    to (`type(m)` when reached through an instance, as Python passes it: never the instance), else
    the instance, read where the call reads it (`m` in `m.g(x)`, `h.__self__` for `h = m.g`)."""
    if isinstance(method.__self__, type):
        return ast.Constant(method.__self__)
    return f.value if isinstance(f, ast.Attribute) else ast.Attribute(f, "__self__", ast.Load())


def _user_call_method(obj):
    """`obj.__call__` for an instance (not a class) whose class defines `__call__` as a user's
    Python function: calling obj runs that method with obj first; None for anything else."""
    if isinstance(obj, type):
        return None
    method = getattr(obj, "__call__", None)
    return method if is_user_method(method) and method.__self__ is obj else None


class Classify:
    """Each statement's Op, in `ops` (mixed into Analysis, which gives `fn`, `parsed`, `locals`)."""

    def op(self, st):
        return self.ops[id(st)]

    def _classify_block(self, stmts):
        for st in stmts:
            self.ops[id(st)] = self._classify(st)
            for field_ in ("body", "orelse"):
                self._classify_block(getattr(st, field_, []) or [])

    def _resolve(self, node):
        return self.parsed.try_resolve(node, self.locals)

    def _global(self, node):
        return self.parsed.is_global_ref(node, self.locals)

    def _bind(self, rule, args, kws, node, fname):
        try:
            b = rule.signature.bind(*args, **{k.arg: k.value for k in kws})
        except TypeError as exc:
            if isinstance(rule.key, str) and rule.key.startswith("."):     # a method: its receiver is not listed
                params = ", ".join(str(p) for p in list(rule.signature.parameters.values())[1:])
                hint = (f"srcad's rule for the method `{rule.key}` takes ({params}): call it with those "
                        f"arguments")
            else:
                params = ", ".join(str(p) for p in rule.signature.parameters.values())
                hint = (f"srcad's rule for `{fname}` takes ({params}): call it with those arguments, or register "
                        f"a rule of your own for it with srcad.register_vjp and srcad.register_jvp")
            raise UnsupportedSyntaxError(f"the call `{self.parsed.text(node)}` ({exc})", *self.parsed.where(node),
                                         hint=hint) from None
        return dict(b.arguments)

    def _call(self, op, call):
        f = call.func
        if self._global(f):
            found, obj = self._resolve(f)
            if not found:
                raise SrcadError(f"the name `{self.parsed.text(f)}` is not defined where the function is defined (a typo, "
                                 f"or a module-level name that does not exist yet). Define it, or import it at "
                                 f"module level, before differentiating the function.", *self.parsed.where(call))
            rule = lookup(obj)
            fname = self.parsed.text(f)
            if rule is None and _namedtuple_fields(obj, call):    # a namedtuple built from its fields
                rule = lookup("op:NamedTuple")
                op.rule, op.bound = rule, self._bind(rule, _namedtuple_fields(obj, call), [], call, fname)
            elif rule is not None and (rule.nondiff or rule.user_vjp or rule.user_jvp):
                op.rule = rule
                if not rule.nondiff:
                    op.operands = _names(list(enumerate(call.args)) + [(k.arg, k.value) for k in call.keywords])
                return
            elif rule is not None:
                op.rule, op.bound = rule, self._bind(rule, call.args, call.keywords, call, fname)
            elif is_user_function(obj) or is_user_method(obj):
                op.callee = transformable(obj)
                if is_user_method(obj):     # a method of a global object: its receiver goes first
                    op.callee, op.receiver = method_of_object(obj), _bound_receiver(obj, f)
                op.operands = _names(list(enumerate(call.args)) + [(k.arg, k.value) for k in call.keywords])
                return
            elif _user_call_method(obj) is not None:     # emb(x): an object whose class defines __call__ in Python
                op.callee, op.receiver = method_of_object(_user_call_method(obj)), f
                op.operands = _names(list(enumerate(call.args)) + [(k.arg, k.value) for k in call.keywords])
                return
            else:
                op.missing, op.missing_fix = fname, getattr(facts(obj), "refusal", None)
                op.operands = _names(list(enumerate(call.args)) + [(k.arg, k.value) for k in call.keywords])
                return
        elif method_call(self, op, call):      # self.helper(x), self.enc.forward(x), super().m(x)
            return
        else:  # method of a local value
            rule = lookup("." + f.attr)
            fname = self.parsed.text(f)
            if rule is None:
                op.missing = fname
                op.operands = _names([("self", f.value)] + list(enumerate(call.args)))
                return
            op.rule = rule
            if rule.nondiff:
                return
            op.bound = self._bind(rule, [f.value] + call.args, call.keywords, call, fname)
        if self._discrete_cast(op):
            return
        op.operands = _names(list(op.bound.items()))   # every argument: an active one without a rule raises

    def _discrete_cast(self, op):
        """A cast whose dtype (the parameter the rule declares `cast`) is an integer or bool dtype
        known here (`x.astype(int)`, `np.asarray(x, dtype="int32")`): its result carries no
        derivative, declared by the registry's "op:DiscreteCast". A dtype known only at run time
        is left to the rule (its helpers decide from the result's dtype)."""
        import numpy as np
        param = op.rule.cast if op.rule is not None else None
        node = op.bound.get(param) if param else None
        if not isinstance(node, ast.AST):
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found, value = True, node.value
        elif self._global(node):
            found, value = self._resolve(node)
        else:
            return False
        try:
            kind = np.dtype(value).kind if found and value is not None else None
        except (TypeError, ValueError):
            return False
        if kind is None or kind not in "biu":
            return False
        op.rule, op.bound, op.operands = lookup("op:DiscreteCast"), {}, []
        return True

    def _subscript_call(self, op, rhs):
        """`np.r_[a, b]`: a module-level object that is not data, subscripted. With a rule declared
        `subscript` (its items the arguments) it is differentiated by that rule; any other such
        object (a class with __getitem__, an index trick with no rule) is a missing rule when an
        active value is among the items, never an index read that carries nothing."""
        found, obj = self._resolve(rhs.value)
        if not found or _is_data(obj):
            return False
        items = rhs.slice.elts if isinstance(rhs.slice, ast.Tuple) else [rhs.slice]
        rule = lookup(obj)
        plain = all(isinstance(i, ast.Name) or isinstance(i, ast.Constant) and isinstance(i.value, (int, float))
                    for i in items)
        if rule is not None and rule.subscript and rule.nondiff:     # np.s_[...]: an index, no derivative
            op.rule, op.bound, op.operands = rule, {}, []
            return True
        if rule is not None and rule.subscript and plain:
            op.rule, op.bound = rule, self._bind(rule, items, [], rhs, self.parsed.text(rhs.value))
            if not rule.nondiff:
                op.operands = _names(list(op.bound.items()))
            return True
        op.missing = f"{self.parsed.text(rhs.value)}[...]" + ("" if rule is None or not rule.subscript else
                                                        " with a slice, a string or an expression among its items")
        op.operands = [(("idx", j), n.id) for j, n in enumerate(ast.walk(rhs.slice)) if isinstance(n, ast.Name)]
        return True

    def _classify(self, st):
        if isinstance(st, ast.Assign):
            t, rhs = st.targets[0], st.value
            if isinstance(t, ast.Subscript):
                op = Op(OpKind.SETITEM, st, t.value.id, rhs, operands=_names([("v", rhs)]))
                return op
            op = Op(OpKind.ASSIGN, st, t.id, rhs)
            if isinstance(rhs, ast.Name) and rhs.id in self.locals:
                op.rule, op.bound = lookup("op:Copy"), {"x": rhs}
            elif isinstance(rhs, ast.BinOp):
                op.rule = lookup("op:" + type(rhs.op).__name__)
                op.bound = {"x": rhs.left, "y": rhs.right}
            elif isinstance(rhs, ast.UnaryOp) and not isinstance(rhs.op, ast.Not):
                op.rule = lookup("op:" + type(rhs.op).__name__)
                op.bound = {"x": rhs.operand}
            elif isinstance(rhs, ast.Call):
                self._call(op, rhs)
                return op
            elif isinstance(rhs, ast.Attribute) and not self._global(rhs):
                op.rule = lookup("." + rhs.attr)
                op.bound = {"x": rhs.value}
                if op.rule is None and not _array_attribute(rhs.attr):
                    # a namedtuple's field (a pytree argument; checked when the derivative runs)
                    op.rule, op.bound["name"] = lookup("op:Field"), ast.Constant(rhs.attr)
                    op.bound["where"] = ast.Constant("%s:%d:%d" % self.parsed.where(rhs))
                if op.rule is None:
                    op.missing = self.parsed.text(rhs)
                    op.operands = _names([("x", rhs.value)])
                    return op
            elif isinstance(rhs, ast.Subscript) and self._global(rhs.value) and self._subscript_call(op, rhs):
                return op
            elif isinstance(rhs, ast.Subscript):
                op.rule, op.bound = lookup("op:Subscript"), {"x": rhs.value, "idx": index_expr(rhs.slice)}
            elif isinstance(rhs, (ast.Tuple, ast.List, ast.Dict)):
                op.kind = OpKind.DISPLAY    # operands keyed by position (a dict's: of its values)
                op.operands = _names(list(enumerate(rhs.values if isinstance(rhs, ast.Dict) else rhs.elts)))
                return op
            elif isinstance(rhs, (ast.BoolOp, ast.Set)):
                # `a or b` is one of its operands, `{a, b}` holds them: a derivative would flow
                # through, and srcad has no rule for either (never a silent zero)
                names = _value_names(rhs)
                what = "a set display" if isinstance(rhs, ast.Set) else f"`{type(rhs.op).__name__.lower()}`"
                op.unsupported = Unsupported(
                    f"{what} over a value that depends on the differentiated input (`{self.parsed.text(rhs)}`)",
                    "use a list for a collection of values" if isinstance(rhs, ast.Set) else
                    "write the choice as an if statement, or np.where(cond, a, b)")
                op.operands = [(("v", j), n) for j, n in enumerate(names)]
                return op
            else:
                return op       # constants, globals, comparisons: no derivative
            if op.rule is None:
                op.missing = type(rhs.op).__name__ if hasattr(rhs, "op") else self.parsed.text(rhs)
                op.operands = _names(list(op.bound.items()))   # an active operand raises, never a silent zero
                return op
            if not op.rule.nondiff:
                op.operands = _names(list(op.bound.items()))
            return op
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            f = st.value.func
            if isinstance(f, ast.Attribute) and not self._global(f) and f.attr == "append":
                return Op(OpKind.APPEND, st, f.value.id, st.value.args[0], operands=_names([("v", st.value.args[0])]))
            if isinstance(f, ast.Attribute) and not self._global(f) and f.attr == "pop" and not st.value.args:
                return Op(OpKind.POP, st, f.value.id)     # undoing an append (as generated adjoints do)
            if isinstance(f, ast.Attribute) and not self._global(f):
                return Op(OpKind.MUTATE, st, f.value.id, operands=_names(list(enumerate(st.value.args))))
            args = st.value.args
            if self._global(f) and self._resolve(f)[1] is _restore_item() and isinstance(args[0], ast.Name):
                # generated adjoint code undoing a dict item write (transformed again for a Hessian)
                return Op(OpKind.RESTORE_ITEM, st, args[0].id, args[2], operands=_names([("v", args[2])]))
            return Op(OpKind.CALL, st)
        kinds = {ast.If: OpKind.IF, ast.For: OpKind.FOR, ast.While: OpKind.WHILE, ast.Return: OpKind.RETURN,
                 ast.Break: OpKind.BREAK}
        return Op(kinds.get(type(st), OpKind.OTHER), st)
