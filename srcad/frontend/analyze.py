"""analyze: what each statement does, and which values carry derivatives (activity analysis).

A value is *active* when it depends on a differentiated input through differentiable
operations, and *useful* when it reaches the output. Integers, booleans, shapes and indices
are never active: comparisons, `len`, `.shape` and friends have no derivative. The analysis is
flow-insensitive (a name is active if any assignment to it is), which is sound for loops.
"""
import ast
import types
from dataclasses import dataclass, field
from enum import StrEnum

from ..dataflow import reach
from ..errors import MissingRuleError, SrcadError, UnsupportedSyntaxError
from ..rules.registry import facts, lookup
from ..syntax import index_expr
from .callables import transformable
from .callees import atom_names as _names, is_inplace_func, is_inplace_method_of_global, is_user_function
from .methods import is_user_method, method_call, method_of_object
from .parse import Parsed


class OpKind(StrEnum):
    """What kind of statement an Op is (a str, so `op.kind == "assign"` reads as before)."""
    ASSIGN = "assign"               # name = operation
    SETITEM = "setitem"             # name[index] = value
    APPEND = "append"               # name.append(value)
    POP = "pop"                     # name.pop(): undoing an append (generated adjoints)
    MUTATE = "mutate"               # an in-place method or function on name
    RESTORE_ITEM = "restore_item"   # generated adjoints undoing a dict item write
    CALL = "call"                   # a call for its effect
    IF = "if"
    FOR = "for"
    WHILE = "while"
    RETURN = "return"
    BREAK = "break"
    OTHER = "other"


@dataclass
class Op:
    """What one normalized statement does: its kind, target, the rule that differentiates it,
    and the operands that may carry a derivative."""
    kind: OpKind
    node: ast.AST
    target: str = None
    rhs: ast.AST = None
    rule: object = None
    bound: dict = field(default_factory=dict)     # rule parameter -> argument atom
    operands: list = field(default_factory=list)  # [(param, name)] arguments that may carry derivatives
    callee: object = None                         # a user function, transformed too
    missing: str = None                           # a called function that has no rule
    missing_fix: str = None                       # what to write instead (the registry's `refusal` fact)
    unsupported: tuple = None                     # (construct, hint): refused if it carries a derivative
    receiver: object = None                       # what a method callee takes first (an atom)

    def __post_init__(self):
        self.kind = OpKind(self.kind)     # a kind that is none of OpKind's is an error here


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


class Analysis:
    """The analysis pass: classification and activity (see the module docstring).

    Input: a normalized function, its Parsed, its local names and the names differentiated.
    Output (attributes): `ops` (id(statement) -> Op, with the rule found for each call),
    `active` (names that depend on a differentiated input), `useful` (names that reach the
    output).
    Invariants: the function is not changed; a call with no rule is an error only when it
    carries a derivative (raised in program order, at the user's line); activity is
    flow-insensitive, hence sound for loops."""

    def __init__(self, fn: ast.FunctionDef, parsed: Parsed, locals_: set[str], wrt: list[str]):
        self.fn, self.parsed = fn, parsed
        self.locals = set(locals_) | {a.arg for a in fn.args.args + fn.args.kwonlyargs} | {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.ops = {}
        self._classify_block(fn.body)
        self.active = self._active(set(wrt))
        self.useful = self._useful()
        for op in self.ops.values():        # in program order: the first call with no rule is named
            self.is_active(op)

    # -- classification ------------------------------------------------------------------
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
            from ..errors import UnsupportedSyntaxError
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
                if is_user_method(obj):     # a method of a global object: it goes first
                    op.callee, op.receiver = method_of_object(obj), f.value
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
                op.kind = "display"     # operands keyed by position (a dict's: of its values)
                op.operands = _names(list(enumerate(rhs.values if isinstance(rhs, ast.Dict) else rhs.elts)))
                return op
            elif isinstance(rhs, (ast.BoolOp, ast.Set)):
                # `a or b` is one of its operands, `{a, b}` holds them: a derivative would flow
                # through, and srcad has no rule for either (never a silent zero)
                names = _value_names(rhs)
                what = "a set display" if isinstance(rhs, ast.Set) else f"`{type(rhs.op).__name__.lower()}`"
                op.unsupported = (
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

    # -- activity ------------------------------------------------------------------------
    def _all_ops(self):
        return list(self.ops.values())

    def _restores(self):
        """In srcad's own adjoint code (transformed again for second order), `i = tape.pop()` gives
        a loop index back its old value: an integer, active only through its other assignments,
        not through the tape, which holds active values besides."""
        if not self.parsed.generated:
            return set()
        pop = lookup(".pop")
        indices = {st.target.id for st in ast.walk(self.fn) if isinstance(st, ast.For)
                   and isinstance(st.target, ast.Name)}
        return {id(op) for op in self._all_ops() if op.kind == "assign" and op.rule is pop
                and op.target in indices}

    def _active(self, active):
        """Names that depend on the wrt names through differentiable operations (flow-insensitive:
        a name is active if any assignment to it is)."""
        restores = self._restores()
        feeds = {}      # operand name -> targets of the operations it carries a derivative into
        for op in self._all_ops():
            if op.target and op.kind != "mutate" and id(op) not in restores and \
                    not (op.rule is not None and op.rule.nondiff):
                for p, n in op.operands:
                    if op.rule is None or op.rule.carries(p):
                        feeds.setdefault(n, []).append(op.target)
        return reach(active, lambda n: feeds.get(n, ()))

    def _useful(self):
        """Names whose value reaches a returned name."""
        returned = {node.value.id for node in ast.walk(self.fn)
                    if isinstance(node, ast.Return) and isinstance(node.value, ast.Name)}
        reads = {}      # target -> the operands of every operation assigning it
        for op in self._all_ops():
            if op.target is not None:
                reads.setdefault(op.target, []).extend(n for p, n in op.operands
                                                       if op.rule is None or op.rule.carries(p))
        return reach(returned, lambda n: reads.get(n, ()))

    def is_active(self, op):
        """Does this statement need an adjoint (or tangent)?"""
        if op.target is None or op.target not in self.active or op.target not in self.useful:
            return False
        if not any(n in self.active for _, n in op.operands):
            return False
        if op.kind == "mutate":
            return False
        if op.missing:
            fn, line, col = self.parsed.where(op.node)
            raise MissingRuleError(op.missing, fn, line, col, fix=op.missing_fix)
        if op.unsupported:
            raise UnsupportedSyntaxError(op.unsupported[0], *self.parsed.where(op.node), hint=op.unsupported[1])
        return op.rule is None or not op.rule.nondiff

    def check_mutations(self, mode="reverse"):
        self.mode = mode
        for op in self._all_ops():
            if op.kind == "mutate" and any(n in self.active for _, n in op.operands):
                from ..errors import UnsupportedSyntaxError
                call = op.node.value
                raise UnsupportedSyntaxError(
                    f"the in-place method call `{self.parsed.text(call.func)}(...)` with a differentiated argument",
                    *self.parsed.where(op.node),
                    hint="build the container with item assignments (`d[key] = v`), `append`, or a new display")
            if op.kind in ("mutate", "pop") and op.target in self.active and op.target in self.useful \
                    and (op.kind == "mutate" or self.mode == "reverse"):
                from ..errors import UnsupportedSyntaxError
                call = op.node.value
                raise UnsupportedSyntaxError(
                    f"the in-place method call `{self.parsed.text(call.func)}(...)` on a differentiated value",
                    *self.parsed.where(op.node), hint="write the result to a new name instead")
        self._check_shared_writes()

    def _check_shared_writes(self):
        """Writes that carry a derivative where srcad cannot follow it: into a module-level object
        or closure cell (directly or through a local alias, see aliases.py), or through an
        in-place method or function other than append."""
        from ..errors import UnsupportedSyntaxError
        shared = self.parsed.global_writes
        for op in self._all_ops():
            if op.kind not in ("setitem", "append", "mutate", "call"):
                continue
            call = op.node.value if isinstance(op.node, ast.Expr) else None
            names = [n for _, n in op.operands] if op.kind in ("setitem", "append") else \
                [n.id for a in call.args + [k.value for k in call.keywords] for n in ast.walk(a)
                 if isinstance(n, ast.Name)]
            if not any(n in self.active for n in names):
                continue
            line = getattr(op.node, "user_line", getattr(op.node, "lineno", 0))
            text = self.parsed.line_text(line)
            if op.kind == "call" and is_inplace_method_of_global(self.parsed, call.func, self.locals):
                op = Op(OpKind.MUTATE, op.node, ast.unparse(call.func.value))
            elif op.kind == "call":
                found, obj = self._resolve(call.func) if self._global(call.func) else (False, None)
                if found and is_inplace_func(obj):
                    raise UnsupportedSyntaxError(
                        f"`{self.parsed.text(call.func)}`, which writes into its first argument in place, with a value "
                        f"that depends on the differentiated input (`{text}`)", *self.parsed.where(op.node),
                        hint="write the new values with a subscript assignment (`y[idx] = v`) instead")
                continue
            if op.target not in self.locals or (line, op.target) in shared:
                raise UnsupportedSyntaxError(
                    f"storing a value that depends on the differentiated input in a module-level object or "
                    f"closure variable (`{text}`)", *self.parsed.where(op.node),
                    hint="srcad cannot follow a derivative out of the function through shared state; return "
                         "the value instead (`has_aux=True` returns extra results beside the loss)")
            if op.kind == "mutate":
                raise UnsupportedSyntaxError(
                    f"the in-place method call `{self.parsed.text(call.func)}(...)` with a value that depends on the "
                    f"differentiated input (`{text}`)", *self.parsed.where(op.node),
                    hint="build a new value instead (`xs = xs + [v]`, `y[idx] = v`, `y = np.sort(y)`)")

