"""Calls: which callee a call names, decided in order. A spelling the registry knows is rewritten
first (spellings.py); dict(...), d.get/d.values()/d.items(), zip/enumerate and map become loops
(containers.py); a call of srcad's own operators is applied at transform time (operators.py);
a call of a rule with no derivative is kept whole; a nested def, an item of a module-level list of
functions and a factory's result are called by a module-level name (functions.py); anything else
is refused. The arguments become atoms."""
import ast
import builtins

from ...rules.registry import lookup
from ...syntax import N as name
from ..operators import inline_call, operator_call
from .containers import _DICT_VIEWS
from .nodes import _loc


class Calls:
    """A call as one operation on atoms (mixed into Normalizer)."""

    def call(self, e: ast.Call, hint: str) -> tuple[list[ast.stmt], ast.expr]:
        if isinstance(e.func, ast.Name) and e.func.id in self.lifted:
            lifted = self.lifted[e.func.id]
            e = ast.Call(name(lifted.name), e.args,
                         e.keywords + [ast.keyword(arg=c, value=name(c)) for c in lifted.captured])
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
