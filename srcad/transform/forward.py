"""forward: the tangent of a normalized function, each statement followed by its tangent.

Tangents are named `<name>_dot`. Every active name carries a real tangent (zeros are
materialised when an active name is assigned a constant), so tangent templates never see a
placeholder. Control flow is kept as it is: the tangent of an `if` is the same `if`.
"""
import ast
from typing import TYPE_CHECKING

from ..errors import MissingRuleError
from .kinds.lattice import Cat
from ..frontend.ops import OpKind
from ..syntax import N, assign, ast_copy, comment, index_expr, rt
from .templates import all_dense, bound_mapping, instantiate, param_of, primal_statement

if TYPE_CHECKING:
    from ..frontend.analyze import Analysis, Op
    from ..frontend.parsed import Parsed
    from ..syntax import Namer
    from .unit import Unit


class Forward:
    """The forward-mode pass: a normalized function -> its tangent (see the module docstring).

    Input: a normalized function, its Analysis, the Namer of its normalization and the names
    differentiated.
    Output (`run`): a FunctionDef `<f>_jvp(params..., tangents of wrt)` returning the value and
    its tangent.
    Invariants: every active and useful name carries a real tangent (`<name>_dot`), assigned
    right after its primal statement; control flow is the user's, unchanged.

    With the kinds of the values known (`kinds`, transform/kinds.py, as reverse mode has them),
    the code is plain NumPy where a runtime helper adds nothing: primal templates that serve
    sparse operands or array indices only are dropped (`z = X @ w`), a rule's `dense_jvp`
    templates replace its general ones for dense operands (`-y_dot * ans / y`, `np.mean(x_dot)`),
    tangent pieces add with `+`, no `rt.broadcast_like` where the shapes agree, and zeros are
    `0.0` / `np.zeros_like`. A tangent is taken to be of its primal's kind."""

    def __init__(self, fn: ast.FunctionDef, analysis: "Analysis", parsed: "Parsed", namer: "Namer",
                 wrt: list[str], unit: "Unit", kinds=None) -> None:
        self.fn, self.an, self.parsed, self.namer = fn, analysis, parsed, namer
        self.wrt, self.unit = list(wrt), unit
        self.kinds = kinds
        self.dots = {}

    def kind_at(self, st):
        """name -> what the kinds pass makes sure of its value before st; None: nothing known."""
        if self.kinds is None:
            return None
        return lambda name: self.kinds.before(st, name)

    def zeros(self, v, st):
        """A zero tangent for v, the value st assigns."""
        k = self.kinds.result(st) if self.kinds is not None else None
        if k is not None and k.cat is Cat.PY:
            return ast.Constant(0.0)
        if k is not None and k.cat is Cat.ARRAY and k.dtype in ("d", "f"):
            return ast.Call(ast.Attribute(N("np"), "zeros_like", ast.Load()), [N(v)], [])
        return rt("zeros_like", N(v))

    def _same_shape(self, op, names):
        """Are the shapes of all names (before op) sure to be that of op's result, every one dense?"""
        if self.kinds is None:
            return False
        res = self.kinds.result(op.node)
        return res.shape is not None and res.dense and all(
            self.kinds.before(op.node, n).shape == res.shape and self.kinds.before(op.node, n).dense for n in names)

    def dot(self, v: str) -> str:
        if v not in self.dots:
            self.dots[v] = self.namer.fresh(v + "_dot")
        return self.dots[v]

    def carries(self, v: str) -> bool:
        return v in self.an.active and v in self.an.useful

    def fail(self, op, what, func=None):
        fn, line, col = self.parsed.where(op.node)
        raise MissingRuleError(what, fn, line, col, mode="forward", func=func)

    # -- statements ------------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out, line = [], None
        for st in stmts:
            ul = getattr(st, "user_line", None)
            if ul != line and ul is not None and not isinstance(st, ast.Return):
                out.append(comment(f"L{ul}: {self.parsed.line_text(ul)}"))
                line = ul
            if isinstance(st, (ast.If, ast.For, ast.While)):
                line = None
            out += self.stmt(st)
        return out

    def stmt(self, st: ast.stmt) -> list[ast.stmt]:
        op = self.an.op(st)
        k = op.kind
        if k in (OpKind.ASSIGN, OpKind.DISPLAY):
            return self.assign(op)
        if k is OpKind.SETITEM:
            code = [ast_copy(st)]
            if self.carries(op.target):
                v = op.rhs
                v_dot = N(self.dot(v.id)) if isinstance(v, ast.Name) and self.carries(v.id) else ast.Constant(0.0)
                idx = ast_copy(st.targets[0].slice)
                code.append(assign(self.dot(op.target), rt("set_at", N(self.dot(op.target)), N(op.target),
                                                            index_expr(idx), v_dot)))
            return code
        if k is OpKind.APPEND:
            code = [ast_copy(st)]
            if self.carries(op.target):
                v = op.rhs
                v_dot = N(self.dot(v.id)) if isinstance(v, ast.Name) and self.carries(v.id) \
                    else rt("zeros_like", ast_copy(v))
                code.append(ast.Expr(ast.Call(ast.Attribute(N(self.dot(op.target)), "append", ast.Load()),
                                              [v_dot], [])))
            return code
        if k is OpKind.RESTORE_ITEM:       # rt.restore_item(d, key, old): the tangent dict is restored alike
            code = [ast_copy(st)]
            if self.carries(op.target):
                v = op.rhs
                v_dot = N(self.dot(v.id)) if isinstance(v, ast.Name) and self.carries(v.id) \
                    else rt("zeros_like", ast_copy(v))
                code.append(ast.Expr(rt("restore_item", N(self.dot(op.target)), ast_copy(st.value.args[1]), v_dot)))
            return code
        if k is OpKind.POP:
            code = [ast_copy(st)]
            if self.carries(op.target):
                code.append(ast.Expr(ast.Call(ast.Attribute(N(self.dot(op.target)), "pop", ast.Load()), [], [])))
            return code
        if k is OpKind.IF:
            return [ast.If(ast_copy(st.test), self.block(st.body) or [ast.Pass()], self.block(st.orelse))]
        if k is OpKind.FOR:
            body = self.block(st.body)
            if self.carries(st.target.id):     # a range index has no derivative, even where its
                # name carries one elsewhere (an adjoint that pops it back from an active tape)
                body.insert(0, assign(self.dot(st.target.id), rt("zeros_like", N(st.target.id))))
            return [ast.For(ast_copy(st.target), ast_copy(st.iter), body, [])]
        if k is OpKind.WHILE:
            return [ast.While(ast_copy(st.test), self.block(st.body), [])]
        if k is OpKind.RETURN:
            ret = st.value
            if isinstance(ret, ast.Name) and self.carries(ret.id):
                ret_dot = N(self.dot(ret.id))
            else:
                ret_dot = rt("zeros_like", ast_copy(ret))
            return [ast.Return(ast.Tuple([ast_copy(ret), ret_dot], ast.Load()))]
        return [ast_copy(st)]

    def assign(self, op: "Op") -> list[ast.stmt]:
        v = op.target
        kind = self.kind_at(op.node)
        if not self.carries(v):
            code = [primal_statement(op, kind)]
            if op.rule is not None and op.rule.key == ".pop" and self.carries(op.bound["xs"].id):
                # a loop index popped back from a list that carries tangents: keep the two in step
                code.append(ast.Expr(ast.Call(ast.Attribute(N(self.dot(op.bound["xs"].id)), "pop", ast.Load()),
                                              [], [])))
            return code
        if not self.an.is_active(op):      # an active name given a constant: its tangent is zero
            return [primal_statement(op, kind), assign(self.dot(v), self.zeros(v, op.node))]
        active = [(p, n) for p, n in op.operands if self.carries(n) or n in self.an.active]
        active = [(p, n) for p, n in active if n in self.an.active]
        if op.callee is not None:
            return self.call(op, active)
        if op.rule is not None and op.rule.user_jvp is not None:
            return self.user_rule(op, active)
        if op.rule is not None and op.rule.user_vjp is not None:
            fname = self.parsed.text(op.rhs.func)
            self.fail(op, f"`{fname}`, which has a reverse-mode rule (register_vjp) but no forward-mode one", fname)
        inplace = any(n == v for _, n in op.operands)
        ans = self.namer.fresh(v + "_new") if inplace else v
        if op.kind is OpKind.DISPLAY:
            is_dict = isinstance(op.rhs, ast.Dict)
            elts = [N(self.dot(e.id)) if isinstance(e, ast.Name) and e.id in self.an.active
                    else _zero_of(e) for e in (op.rhs.values if is_dict else op.rhs.elts)]
            tangent = ast.Dict([ast_copy(k) for k in op.rhs.keys], elts) if is_dict \
                else type(op.rhs)(elts=elts, ctx=ast.Load())
        else:
            mapping = bound_mapping(op.rule, op.bound)
            mapping["ans"] = N(ans)
            pieces = []
            dense = kind is not None and all_dense(op, kind)
            covered = set()     # the operands whose shapes the pieces' sum has (`ans`: all of them)
            for key, n in active:
                p, m = param_of(key, mapping)
                t = op.rule.dense_jvp.get(p) if dense and p in op.rule.dense_jvp else op.rule.jvp.get(p)
                if t is None:
                    self.fail(op, f"the argument `{p}` of `{self.parsed.text(op.rhs)}`", _callee_name(op.rhs))
                if isinstance(t, ast.Constant) and t.value == 0:
                    continue
                covered |= {p} | {x.id for x in ast.walk(t) if isinstance(x, ast.Name)}
                m = dict(m)
                m[p + "_dot"] = N(self.dot(n))
                pieces.append(_sign_on_primal(instantiate(t, m, floats=(p + "_dot",)), set(self.dots.values())))
            if not pieces:
                tangent = rt("zeros_like", N(ans))
            else:
                tangent = pieces[0]
                for piece in pieces[1:]:
                    tangent = rt("add", tangent, piece) if op.rule.jvp_join and not dense \
                        else ast.BinOp(tangent, ast.Add(), piece)
                others = [a for q, a in op.bound.items() if q in op.rule.jvp and not (
                    isinstance(a, ast.Name) and a.id in self.an.active)]
                # an elementwise tangent that reads every operand (or the result) has the result's
                # shape already: x_dot * y, -y_dot * ans / y; x_dot alone, of x + y, may not
                spans = "ans" in covered or all(q in covered for q, a in op.bound.items()
                                                if q in op.rule.jvp and not isinstance(a, ast.Constant))
                if op.rule.broadcast and not all(isinstance(a, ast.Constant) for a in others) \
                        and not spans and not self._same_shape(op, [n for _, n in active]):
                    tangent = rt("broadcast_like", tangent, N(ans))
        primal = primal_statement(op, kind)
        if not inplace:
            return [primal, assign(self.dot(v), tangent)]
        primal.targets = [N(ans, True)]
        return [primal, assign(self.dot(v), tangent), assign(v, N(ans))]

    def call(self, op, active):
        sig_params, args = self.unit.bind_callee(op.callee, op.rhs, op.receiver, self.parsed)
        act = tuple(p for p, a in zip(sig_params, args) if isinstance(a, ast.Name) and a.id in self.an.active)
        name = self.unit.callee_jvp(op.callee, act)
        kws = [ast.keyword(arg=self.unit.tangent_param(name, p), value=N(self.dot(a.id)))
               for p, a in zip(sig_params, args) if p in act]
        pos_args, kw_args = self.unit.call_parts(op.callee, sig_params, args)
        call = ast.Call(N(name), pos_args, kw_args + kws)
        target = ast.Tuple([N(op.target, True), N(self.dot(op.target), True)], ast.Store())
        return [ast.Assign(targets=[target], value=call)]

    def user_rule(self, op, active):
        call = op.rhs
        names = {n for _, n in active}
        prim = ast.Tuple([ast_copy(a) for a in call.args], ast.Load())
        tans = ast.Tuple([N(self.dot(a.id)) if isinstance(a, ast.Name) and a.id in names
                          else rt("zeros_like", ast_copy(a)) for a in call.args], ast.Load())
        target = ast.Tuple([N(op.target, True), N(self.dot(op.target), True)], ast.Store())
        return [ast.Assign(targets=[target], value=ast.Call(rt("user_jvp_rule", ast_copy(call.func)),
                                                            [prim, tans], []))]

    # -- the whole function ----------------------------------------------------------------
    def run(self, name: str) -> ast.FunctionDef:
        fn = self.fn
        # a parameter not differentiated that is assigned an active value somewhere: its reads before
        # that assignment see a zero tangent
        params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
        init = [assign(self.dot(p), rt("zeros_like", N(p))) for p in params if p not in self.wrt and self.carries(p)]
        body = init + self.block(fn.body)
        doc = ast.Expr(ast.Constant(
            f"{fn.name} and its tangent along {', '.join(d + '_dot' for d in self.wrt)} (forward mode): "
            f"returns (value, tangent)."))
        args = ast_copy(fn.args)
        dots = [ast.arg(self.dot(w)) for w in self.wrt]
        if fn.args.kwonlyargs:
            args.kwonlyargs += dots
            args.kw_defaults += [None] * len(dots)
        else:
            if args.defaults:       # tangents come after parameters with defaults: give them none
                args.kwonlyargs += dots
                args.kw_defaults += [None] * len(dots)
            else:
                args.args += dots
        return ast.FunctionDef(name=name, args=args, body=[doc] + body, decorator_list=[], returns=None,
                               type_params=[], lineno=fn.lineno, col_offset=0)


def _zero_of(e):
    """The zero tangent of an item of a list display: `0.0` for a number literal (what
    rt.zeros_like returns for it, without a call per item and sweep), else rt.zeros_like."""
    if isinstance(e, ast.Constant) and type(e.value) in (int, float):
        return ast.Constant(0.0)
    return rt("zeros_like", ast_copy(e))


def _sign_on_primal(e, dots):
    """A tangent piece with a negated tangent as a factor, (-t) * p, p * (-t) or (-t) / p (t a
    tangent's name, p free of tangents), with the sign on the primal factor instead: t * -p,
    -p * t, t / -p. The same numbers, bit for bit; p has a tangent's size or less, so a batch of
    tangents (srcad.batching) is negated never, p once for every direction."""
    if not isinstance(e, ast.BinOp) or not isinstance(e.op, (ast.Mult, ast.Div)):
        return e
    left, right = _sign_on_primal(e.left, dots), e.right

    def negated_dot(v):
        return isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub) and isinstance(v.operand, ast.Name) \
            and v.operand.id in dots

    def primal(v):
        return not any(isinstance(n, ast.Name) and n.id in dots for n in ast.walk(v))
    if negated_dot(left) and primal(right):
        return ast.BinOp(left.operand, e.op, ast.UnaryOp(ast.USub(), right))
    if isinstance(e.op, ast.Mult) and negated_dot(right) and primal(left):
        return ast.BinOp(ast.UnaryOp(ast.USub(), left), e.op, right.operand)
    return ast.BinOp(left, e.op, right)


def _callee_name(rhs):
    """The function a rule could be registered for, when the operation is a call of one."""
    return ast.unparse(rhs.func) if isinstance(rhs, ast.Call) else None
