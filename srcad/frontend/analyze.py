"""analyze: what each statement does, and which values carry derivatives (activity analysis).

A value is *active* when it depends on a differentiated input through differentiable
operations, and *useful* when it reaches the output. Integers, booleans, shapes and indices
are never active: comparisons, `len`, `.shape` and friends have no derivative. The analysis is
flow-insensitive (a name is active if any assignment to it is), which is sound for loops.
What each statement does (its `Op`) is classify.py's; this module is activity and the writes
refused once it is known.
"""
import ast

from ..dataflow import reach
from ..errors import MissingRuleError, UnsupportedSyntaxError
from ..rules.registry import lookup
from .callees import is_inplace_func, is_inplace_method_of_global
from .classify import Classify
from .ops import Op, OpKind
from .parse import Parsed

__all__ = ["Analysis", "Op", "OpKind"]


class Analysis(Classify):
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
        return {id(op) for op in self._all_ops() if op.kind == OpKind.ASSIGN and op.rule is pop
                and op.target in indices}

    def _active(self, active):
        """Names that depend on the wrt names through differentiable operations (flow-insensitive:
        a name is active if any assignment to it is)."""
        restores = self._restores()
        feeds = {}      # operand name -> targets of the operations it carries a derivative into
        for op in self._all_ops():
            if op.target and op.kind != OpKind.MUTATE and id(op) not in restores and \
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

    def is_active(self, op: Op) -> bool:
        """Does this statement need an adjoint (or tangent)?"""
        if op.target is None or op.target not in self.active or op.target not in self.useful:
            return False
        if not any(n in self.active for _, n in op.operands):
            return False
        if op.kind == OpKind.MUTATE:
            return False
        if op.missing:
            fn, line, col = self.parsed.where(op.node)
            raise MissingRuleError(op.missing, fn, line, col, fix=op.missing_fix)
        if op.unsupported:
            raise UnsupportedSyntaxError(op.unsupported.construct, *self.parsed.where(op.node),
                                         hint=op.unsupported.hint)
        return op.rule is None or not op.rule.nondiff

    def check_mutations(self, mode: str = "reverse") -> None:
        """Refuse the in-place method calls a derivative would have to follow (in `mode`, "reverse"
        or "forward": reverse mode cannot undo a `pop` of a differentiated list either)."""
        for op in self._all_ops():
            if op.kind == OpKind.MUTATE and any(n in self.active for _, n in op.operands):
                call = op.node.value
                raise UnsupportedSyntaxError(
                    f"the in-place method call `{self.parsed.text(call.func)}(...)` with a differentiated argument",
                    *self.parsed.where(op.node),
                    hint="build the container with item assignments (`d[key] = v`), `append`, or a new display")
            if op.kind in (OpKind.MUTATE, OpKind.POP) and op.target in self.active and op.target in self.useful \
                    and (op.kind == OpKind.MUTATE or mode == "reverse"):
                call = op.node.value
                raise UnsupportedSyntaxError(
                    f"the in-place method call `{self.parsed.text(call.func)}(...)` on a differentiated value",
                    *self.parsed.where(op.node), hint="write the result to a new name instead")
        self._check_shared_writes()

    def _check_shared_writes(self):
        """Writes that carry a derivative where srcad cannot follow it: into a module-level object
        or closure cell (directly or through a local alias, see aliases.py), or through an
        in-place method or function other than append."""
        shared = self.parsed.global_writes
        for op in self._all_ops():
            if op.kind not in (OpKind.SETITEM, OpKind.APPEND, OpKind.MUTATE, OpKind.CALL):
                continue
            call = op.node.value if isinstance(op.node, ast.Expr) else None
            names = [n for _, n in op.operands] if op.kind in (OpKind.SETITEM, OpKind.APPEND) else \
                [n.id for a in call.args + [k.value for k in call.keywords] for n in ast.walk(a)
                 if isinstance(n, ast.Name)]
            if not any(n in self.active for n in names):
                continue
            line = getattr(op.node, "user_line", getattr(op.node, "lineno", 0))
            text = self.parsed.line_text(line)
            if op.kind == OpKind.CALL and is_inplace_method_of_global(self.parsed, call.func, self.locals):
                op = Op(OpKind.MUTATE, op.node, ast.unparse(call.func.value))
            elif op.kind == OpKind.CALL:
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
            if op.kind == OpKind.MUTATE:
                raise UnsupportedSyntaxError(
                    f"the in-place method call `{self.parsed.text(call.func)}(...)` with a value that depends on the "
                    f"differentiated input (`{text}`)", *self.parsed.where(op.node),
                    hint="build a new value instead (`xs = xs + [v]`, `y[idx] = v`, `y = np.sort(y)`)")

