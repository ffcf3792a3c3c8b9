"""adjoint: the adjoint sweep's statements: assignments, subscript writes, appends, calls.

`adjoint_block` visits a block's statements in reverse, with a comment per user line; the
adjoint of one assignment adds each active operand's share of the result's cotangent
(`contribute`): from the rule's vjp template, a registered rule's pullback, a custom_vjp's bwd,
a forward-only rule transposed, or a user function's own adjoint (derived once by the Unit).
After a statement's adjoint, a marker says where the values it overwrote are popped back
(transform/reverse/tape.py). Branches and loops are in control.py.
"""
import ast
import inspect

from ...errors import MissingRuleError, SrcadError, UnsupportedSyntaxError
from ...frontend.effects import rerun_hazard
from ...frontend.ops import OpKind
from ...syntax import N, assign, ast_copy, comment, index_expr, rt
from ..kinds import call_kinds, literal_kind
from ..templates import bound_mapping, instantiate, param_of
from .ownership import Own
from .tape import TapeOp, _pop


class AdjointStatements:
    """The adjoint of one statement (dispatch on its Op's kind) and of the calls in it: methods of
    the Reverse class they are mixed into (transform/reverse/driver.py)."""

    def adjoint_block(self, stmts, live):
        out, line = [], None
        for st in reversed(stmts):
            code = self.adjoint_stmt(st, live)
            if code:
                ul = getattr(st, "user_line", None)
                if ul != line and ul is not None and not isinstance(st, (ast.For, ast.While, ast.If)):
                    out.append(comment(f"adjoint of L{ul}: {self.parsed.line_text(ul)}"))
                    line = ul
                elif isinstance(st, (ast.For, ast.While, ast.If)):
                    line = None
                out += code
        return out

    def adjoint_stmt(self, st, live):
        self.current = st
        op = self.an.op(st)
        k = op.kind
        if k in (OpKind.ASSIGN, OpKind.DISPLAY):
            return self.adj_assign(op, live)
        if k is OpKind.SETITEM:
            return self.adj_setitem(op, live)
        if k is OpKind.APPEND:
            return self.adj_append(op, live)
        if k is OpKind.IF:
            return self._adj_if_memo(st, live)
        if k in (OpKind.FOR, OpKind.WHILE):
            return self.adj_loop(st, live)
        return []

    def adj_assign(self, op, live):
        v, st = op.target, op.node
        code = []
        if op.rule is not None and op.rule.user_vjp is not None and self.an.is_active(op):
            # a registered rule: the primal sweep keeps its pullback (on the tape inside loops)
            kept = "_residuals" if getattr(op.rule.user_vjp, "custom_fwd_bwd", None) else "_pullback"
            pb = self.pullbacks.setdefault(id(st), self.namer.fresh(v + kept))
            if self._in_loop(st):
                code.append(assign(pb, _pop(self.tape)))
        b = self.bar(v)
        overwrites = self._overwrites(st, v)
        if self.an.is_active(op) and b in live:
            if any(n == v for _, n in op.operands):   # x = f(x): read the old x after the pop
                g = self.bars.get((v, "g")) or self.namer.fresh(v + "_out_bar")
                self.bars[(v, "g")] = g
                self.bar_of[g] = v
                code.append(assign(g, N(b)))
                self._set_own(g, (Own.FULL, self.own[b][1]) if b in self.own and self.own[b][0] != Own.LIST else None)
                ans = v
                if op.rule is not None and op.rule.needs_ans:
                    ans = self.bars.setdefault((v, "ans"), self.namer.fresh(v + "_out"))
                    code.append(assign(ans, N(v)))
                live.discard(b)
                self.own.pop(b, None)
                self.filled.pop(b, None)
                if overwrites:
                    code.append(self.marker(TapeOp.POP, v, st))
                code += self.contributions(op, g, ans, live)
            else:
                code += self.contributions(op, b, v, live)
                live.discard(b)
                self.own.pop(b, None)
                self.filled.pop(b, None)
                if overwrites:
                    code.append(self.marker(TapeOp.POP, v, st))
        else:
            live.discard(b)
            self.own.pop(b, None)
            self.filled.pop(b, None)
            if overwrites:
                code.append(self.marker(TapeOp.POP, v, st))
        return code

    def contributions(self, op, g, ans, live):
        code = []
        active = [(p, n) for p, n in op.operands if n in self.an.active]
        if op.kind is OpKind.DISPLAY:
            for pos, n in active:
                key = ast_copy(op.rhs.keys[pos]) if isinstance(op.rhs, ast.Dict) else ast.Constant(pos)
                self.contribute(code, live, n, rt("item", N(g), key))
            return code
        if op.callee is not None:
            return self.callee_contributions(op, g, live, active)
        if op.rule is not None and op.rule.user_vjp is not None:
            pb = self.pullbacks[id(op.node)]
            cots = self.namer.fresh(op.target + "_cotangents")
            parts = self._custom_parts(op)
            if parts:       # custom_vjp: bwd(residuals, g), a call srcad can transform again, its
                # result checked (one cotangent per argument, each of its argument's shape)
                args = ast.Tuple([ast_copy(a) for a in op.rhs.args], ast.Load())
                code.append(assign(cots, rt("custom_cotangents", ast.Call(N(parts[1]), [N(pb), N(g)], []),
                                            ast_copy(op.rhs.func), args)))
            else:           # register_vjp: the pullback the rule returned
                code.append(assign(cots, ast.Call(N(pb), [N(g)], [])))
            for pos, n in active:
                if isinstance(pos, int):
                    self.contribute(code, live, n, rt("item", N(cots), ast.Constant(pos)))
            return code
        if op.rule is not None and op.rule.user_jvp is not None:
            return self.transposed_jvp(op, g, live, active)
        base = bound_mapping(op.rule, op.bound)
        base.update(g=N(g), ans=N(ans))
        for key, n in active:
            p, mapping = param_of(key, base)
            template = op.rule.vjp.get(p)
            if template is None:
                fn, line, col = self.parsed.where(op.node)
                raise MissingRuleError(f"the argument `{p}` of `{self.parsed.text(op.rhs)}`", fn, line, col,
                                       func=self.parsed.text(op.rhs.func) if isinstance(op.rhs, ast.Call) else None)
            if isinstance(template, ast.Constant) and template.value == 0:
                continue        # this argument only lends its shape
            spread = self._known_reduction(op, p, g)
            if spread is not None and self.bar(n) not in live:     # g spread over x's shape: its
                code += self._bind_fill(spread, n)                  # number bound once, if not a name
            expr = spread or self._known_matmul(op, p, g) or instantiate(template, mapping, floats=("g",))
            others = [a for q, a in op.bound.items() if q != p and q in op.rule.vjp]
            # a constant never widens the shape, except an int in a product, which repeats a list (`xs * 2`)
            if op.rule.broadcast and not all(isinstance(a, ast.Constant) and not (
                    op.rule.key == "op:Mult" and type(a.value) is int) for a in others) \
                    and not self._same_shape(op.node, n):
                if self._real_number(n):    # summed down to a number: all of it
                    expr = ast.Call(ast.Attribute(N("np"), "sum", ast.Load()), [expr], [])
                else:
                    expr = rt("unbroadcast", expr, N(n))     # a Python number never widens the shape
            expr = self._shape_reads(self._with_fill(op, g, expr), op)
            fused = instantiate(op.rule.accumulate, mapping) if op.rule.accumulate is not None else None
            item = self._number_item(op, n) if op.rule.key == "op:Subscript" else None
            tup = self._tuple_item(op, n) if op.rule.key == "op:Subscript" and not self.check_numerics else None
            if tup is not None and self.contribute_item(code, live, n, g, *tup):
                continue
            first = self.bar(n) not in live
            self.contribute(code, live, n, N(g) if item is not None else expr, fused, item)
            if first and item is None and fused is None:
                self._note_fill(n, g, spread, expr)
        return code

    def transposed_jvp(self, op, g, live, active):
        """A function with a forward rule only (custom_jvp, register_jvp): the rule is linear in the
        tangents, so its transpose is the rule's own adjoint w.r.t. the tangents (srcad transforms
        the rule's source), taken at zero tangents for the output cotangent (0, g)."""
        rule_fn, call = op.rule.user_jvp, op.rhs
        fn, line, col = self.parsed.where(op.node)

        def missing(reason):
            err = MissingRuleError(self.parsed.text(call.func), fn, line, col)
            err.args = (f"{err} It has a forward-mode rule only, which srcad transposes by transforming the "
                        f"rule's source; here it cannot: {reason}",)
            return err
        if call.keywords:
            raise missing("it is called with keyword arguments (pass them by position)")
        try:
            params = list(inspect.signature(rule_fn).parameters)
            vjp_name, seed = self.unit.callee_vjp(rule_fn, (params[1],))
        except (SrcadError, TypeError, ValueError, IndexError, OSError) as exc:
            raise missing(str(exc)) from None
        primals = ast.Tuple([ast_copy(a) for a in call.args], ast.Load())
        zeros = ast.Tuple([rt("zeros_like", ast_copy(a)) for a in call.args], ast.Load())
        # the seed (0, g), once the rule has been checked (a pair, y_dot of y's shape)
        out_bar = rt("custom_jvp_seed", N(g), ast_copy(call.func), primals)
        cots = self.namer.fresh(op.target + "_cotangents")
        code = [assign(cots, ast.Call(N(vjp_name), [primals, zeros], [ast.keyword(arg=seed, value=out_bar)]))]
        for pos, n in active:
            if isinstance(pos, int):
                self.contribute(code, live, n, rt("item", N(cots), ast.Constant(pos)))
        return code

    def _custom_parts(self, op):
        """(fwd name, bwd name) for a custom_vjp function, supplied to the generated module; None
        for a register_vjp rule."""
        parts = getattr(op.rule.user_vjp, "custom_fwd_bwd", None)
        if parts is None:
            return None
        base = ast.unparse(op.rhs.func).split(".")[-1]
        return tuple(self.unit.supply(f, f"{base}_{role}") for f, role in zip(parts, ("fwd", "bwd")))

    def callee_contributions(self, op, g, live, active):
        call = op.rhs
        sig_params, args = self.unit.bind_callee(op.callee, call, op.receiver, self.parsed)
        act_params = tuple(p for p, a in zip(sig_params, args)
                           if isinstance(a, ast.Name) and a.id in self.an.active)
        if not act_params:
            return []
        hazard = rerun_hazard(op.callee)
        if hazard is not None:      # its adjoint runs the callee again: a second run must repeat the first
            parsed, node, what = hazard
            raise UnsupportedSyntaxError(
                f"the call of `{op.callee.__name__}` with a differentiated argument: its adjoint runs "
                f"{op.callee.__name__} again, and `{parsed.tree.name}` {what} "
                f"({parsed.filename}:{getattr(node, 'lineno', parsed.tree.lineno)}), so the second run "
                f"would not give the values f returned", *self.parsed.where(op.node),
                hint="make the state an argument: draw or read it in f and pass it in "
                     "(`z = rng.normal(); y = g(x, z)`)")
        vjp_name, seed = self.unit.callee_vjp(op.callee, act_params, self._call_kinds(op, sig_params, args))
        pos_args, kws = self.unit.call_parts(op.callee, sig_params, args)
        expr = ast.Call(N(vjp_name), pos_args, kws + [ast.keyword(arg=seed, value=N(g))])
        code = []
        pairs = [(p, a.id) for p, a in zip(sig_params, args) if p in act_params]
        if len(pairs) == 1:
            self.contribute(code, live, pairs[0][1], expr)
        else:
            grads = self.namer.fresh(op.callee.__name__ + "_grads")
            code.append(assign(grads, expr))
            for k, (_, n) in enumerate(pairs):
                self.contribute(code, live, n, ast.Subscript(N(grads), ast.Constant(k), ast.Load()))
        return code

    def _call_kinds(self, op, params, args):
        """The kinds this call site knows for the callee's parameters (its derivation's key)."""
        if self.kinds is None:
            return None
        kinds = [self.kinds.before(op.node, a.id) if isinstance(a, ast.Name) else
                 literal_kind(a) for a in args]
        return call_kinds(params, kinds)

    def adj_setitem(self, op, live):
        y, st = op.target, op.node
        code = []
        b = self.bar(y)
        idx = index_expr(st.targets[0].slice)
        if y in self.an.active and y in self.an.useful and b in live:
            v = op.rhs
            item = self._written_number(st, y, v)
            item = item if item is not None and self._state(b, self._buffer_kind(y)) == Own.OWNED else None
            if item is not None:    # one number of an owned buffer: read it, then clear it in place
                if v.id in self.an.active:
                    self.contribute(code, live, v.id, ast.Subscript(N(b), ast_copy(item), ast.Load()))
                code.append(ast.Assign(targets=[ast.Subscript(N(b), ast_copy(item), ast.Store())],
                                       value=ast.Constant(0.0)))
            elif isinstance(v, ast.Name) and v.id == y:
                # `y[idx] = y`: the value written is y itself, so its share is y's own cotangent at
                # idx, read (as a copy) before that part is cleared, then added back
                part = self.namer.fresh(b + "_part")
                code.append(assign(part, rt("snapshot", rt("index_bar", N(b), ast_copy(idx)))))
                code.append(assign(b, rt("zero_at", N(b), ast_copy(idx))))
                self.own.pop(b, None)
                self.contribute(code, live, v.id, rt("unbroadcast", N(part), N(v.id)))
            else:
                if isinstance(v, ast.Name) and v.id in self.an.active:
                    self.contribute(code, live, v.id, self._shape_reads(
                        rt("unbroadcast", rt("index_bar", N(b), ast_copy(idx)), N(v.id)), op))
                code.append(assign(b, rt("zero_at", N(b), ast_copy(idx))))
                self.own.pop(b, None)
        self.filled.pop(b, None)
        code.append(self.marker(TapeOp.RESTORE, y, st))
        return code

    def adj_append(self, op, live):
        xs, st = op.target, op.node
        code = []
        b = self.bar(xs)
        if xs in self.an.active and b in live:
            v = op.rhs
            if isinstance(v, ast.Name) and v.id in self.an.active:
                self.contribute(code, live, v.id, rt("last", N(b)))
            code.append(assign(b, rt("drop_last", N(b))))
            self.own.pop(b, None)
            self.filled.pop(b, None)
        code.append(self.marker(TapeOp.UNAPPEND, xs, st))
        return code
