"""reverse: the adjoint of a normalized function, as a primal sweep followed by an adjoint sweep.

The primal sweep is the user's code, plus a tape (a Python list) that saves what the adjoint
will need but a later statement overwrites: the old value of a re-assigned name, the entries a
subscript write replaces, trip counts of loops that can end early. The adjoint sweep visits the
statements in reverse: the adjoint of an `if` is an `if` on the same (restored) test, the adjoint
of a loop is a loop over the same range reversed. After a statement's adjoint, the values it
overwrote are popped back, so every adjoint reads the primal values of its own moment.

Cotangents are named `<name>_bar`. A cotangent that nothing has reached yet is not materialised:
the first contribution assigns it, later ones go through `rt.add`.
"""
import ast
import inspect
from collections import defaultdict

from ..errors import MissingRuleError, SrcadError
from ..syntax import N, assign, ast_copy, comment, index_expr, is_comment, names_read, rt
from .templates import bound_mapping, instantiate, param_of, primal_statement


class _Marker:
    """A tape operation whose need is only known once the whole adjoint has been written."""
    counter = 0

    def __init__(self, kind, var, stmt):
        _Marker.counter += 1
        self.key = f"\x00srcad-marker-{_Marker.counter}"
        self.kind, self.var, self.stmt = kind, var, stmt

    def node(self):
        return ast.Expr(ast.Constant(self.key))


class Reverse:
    """The reverse-mode pass: a normalized function -> its adjoint (see the module docstring).

    Input: a normalized function, its Analysis, the Namer of its normalization, the names
    differentiated and the cotangent seed's name.
    Output (`run`): a FunctionDef `<f>_vjp(params..., seed)` that runs the primal sweep, taping
    what later statements overwrite, then the adjoint sweep, and returns the cotangents of wrt.
    Invariants: only active and useful names get cotangents (`<name>_bar`); each adjoint reads
    the primal values of its own moment (every overwritten value is popped back before the
    adjoints of earlier statements run); the primal sweep computes exactly what the user's
    code does."""

    def __init__(self, fn, analysis, parsed, namer, wrt, unit, seed, top_level=True, row_sparse=(),
                 check_numerics=False, checkpoint=None):
        self.check_numerics, self.current = check_numerics, None
        self.checkpoint = checkpoint       # k snapshots: top-level range loops reversed by revolve
        self.ckpt, self.ckpt_reads = {}, set()     # id(loop) -> cotangents live at its adjoint
        self.ckpt_line = {}
        self.fn, self.an, self.parsed, self.namer = fn, analysis, parsed, namer
        self.wrt, self.unit, self.seed, self.top_level = list(wrt), unit, seed, top_level
        self.row_sparse = set(row_sparse)
        self.dict_names = getattr(fn, "dict_names", set())
        self.bars = {}
        self.markers = {}       # (kind, id(stmt)) -> _Marker
        self.sites = defaultdict(list)     # name -> [(assigning statement, loop depth)]
        self.depth = {}                    # id(statement) -> loop depth (0.5: in a branch only)
        self.params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
        for p in self.params:
            self.sites[p].append((None, 0))
        self._collect_sites(fn.body, 0)
        self.tape = namer.fresh("tape")
        self.trips = {}         # id(loop) -> trip-count name
        self.pullbacks = {}     # id(stmt) -> pullback name (register_vjp rules)

    # -- bookkeeping -----------------------------------------------------------------------
    def bar(self, v):
        if v not in self.bars:
            self.bars[v] = self.namer.fresh(v + "_bar")
        return self.bars[v]

    def _collect_sites(self, stmts, depth):
        for st in stmts:
            self.depth[id(st)] = depth
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                self.sites[st.targets[0].id].append((st, depth))
            elif isinstance(st, ast.For):
                self.sites[st.target.id].append((st, depth))
            if isinstance(st, (ast.For, ast.While)):
                self._collect_sites(st.body, depth + 1)
            elif isinstance(st, ast.If):       # 0.5: inside a branch but not in a loop
                self._collect_sites(st.body, depth if depth >= 1 else 0.5)
                self._collect_sites(st.orelse, depth if depth >= 1 else 0.5)

    def _overwrites(self, st, v):
        """Does this assignment (possibly) replace a value of v that an earlier statement read?"""
        sites = self.sites[v]
        first_stmt, first_depth = sites[0]
        return not (first_stmt is st and first_depth < 1)

    def _in_loop(self, st):
        return self.depth.get(id(st), 0) >= 1

    def marker(self, kind, var, st):
        key = (kind, id(st))
        if key not in self.markers:
            self.markers[key] = _Marker(kind, var, st)
        return self.markers[key].node()

    def contribute(self, code, live, v, expr, accumulate=None):
        b = self.bar(v)
        if b in live:
            code.append(assign(b, instantiate(accumulate, {"__bar__": N(b)}) if accumulate is not None
                               else rt("add", N(b), expr)))
        else:
            code.append(assign(b, expr))
            live.add(b)
        if self.check_numerics and self.current is not None:
            line = getattr(self.current, "user_line", 0)
            import linecache
            raw = linecache.getline(self.parsed.filename, line)
            col = len(raw) - len(raw.lstrip())
            where = f"{self.parsed.filename}:{line}:{col}: {self.parsed.line_text(line)}"
            code.append(ast.Expr(rt("check_finite", N(b), ast.Constant(b), ast.Constant(where))))

    # -- adjoint of one statement ----------------------------------------------------------
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
        if k in ("assign", "display"):
            return self.adj_assign(op, live)
        if k == "setitem":
            return self.adj_setitem(op, live)
        if k == "append":
            return self.adj_append(op, live)
        if k == "if":
            return self.adj_if(st, live)
        if k in ("for", "while"):
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
                code.append(assign(g, N(b)))
                ans = v
                if op.rule is not None and op.rule.needs_ans:
                    ans = self.bars.setdefault((v, "ans"), self.namer.fresh(v + "_out"))
                    code.append(assign(ans, N(v)))
                live.discard(b)
                if overwrites:
                    code.append(self.marker("pop", v, st))
                code += self.contributions(op, g, ans, live)
            else:
                code += self.contributions(op, b, v, live)
                live.discard(b)
                if overwrites:
                    code.append(self.marker("pop", v, st))
        else:
            live.discard(b)
            if overwrites:
                code.append(self.marker("pop", v, st))
        return code

    def contributions(self, op, g, ans, live):
        code = []
        active = [(p, n) for p, n in op.operands if n in self.an.active]
        if op.kind == "display":
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
            if parts:       # custom_vjp: bwd(residuals, g), a call srcad can transform again
                code.append(assign(cots, ast.Call(N(parts[1]), [N(pb), N(g)], [])))
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
                raise MissingRuleError(f"the argument `{p}` of `{ast.unparse(op.rhs)}`", fn, line, col,
                                       func=ast.unparse(op.rhs.func) if isinstance(op.rhs, ast.Call) else None)
            if isinstance(template, ast.Constant) and template.value == 0:
                continue        # this argument only lends its shape
            expr = instantiate(template, mapping)
            others = [a for q, a in op.bound.items() if q != p and q in op.rule.vjp]
            if op.rule.broadcast and not all(isinstance(a, ast.Constant) for a in others):
                expr = rt("unbroadcast", expr, N(n))     # a Python number never widens the shape
            fused = instantiate(op.rule.accumulate, mapping) if op.rule.accumulate is not None else None
            self.contribute(code, live, n, expr, fused)
        return code

    def transposed_jvp(self, op, g, live, active):
        """A function with a forward rule only (custom_jvp, register_jvp): the rule is linear in the
        tangents, so its transpose is the rule's own adjoint w.r.t. the tangents (srcad transforms
        the rule's source), taken at zero tangents for the output cotangent (0, g)."""
        rule_fn, call = op.rule.user_jvp, op.rhs
        fn, line, col = self.parsed.where(op.node)

        def missing(reason):
            err = MissingRuleError(ast.unparse(call.func), fn, line, col)
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
        out_bar = ast.Tuple([ast.Constant(0.0), N(g)], ast.Load())
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
        vjp_name, seed = self.unit.callee_vjp(op.callee, act_params)
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

    def adj_setitem(self, op, live):
        y, st = op.target, op.node
        code = []
        b = self.bar(y)
        idx = index_expr(st.targets[0].slice)
        if y in self.an.active and y in self.an.useful and b in live:
            v = op.rhs
            if isinstance(v, ast.Name) and v.id in self.an.active:
                self.contribute(code, live, v.id, rt("unbroadcast", rt("index_bar", N(b), ast_copy(idx)), N(v.id)))
            code.append(assign(b, rt("zero_at", N(b), ast_copy(idx))))
        code.append(self.marker("restore", y, st))
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
        code.append(self.marker("unappend", xs, st))
        return code

    def _branch(self, blocks, live):
        """Materialise, before a branch or loop, the cotangents its adjoint leaves live that were
        not live before: the other branch (or the next iteration) must find them defined."""
        newly = set()
        while True:     # a loop body can make a cotangent live that an earlier statement of the next
            found = set()   # iteration reads, so repeat until nothing new turns up
            for block in blocks:
                after = live | newly
                self.adjoint_block(block, after)
                found |= after - live
            if found <= newly:
                break
            newly |= found
        init = [assign(b, ast.Constant(0.0)) for b in sorted(newly)]
        live |= newly
        return init, newly

    def _finish(self, body, entry, live):
        for b in sorted(entry - live):
            body.append(assign(b, ast.Constant(0.0)))
        return body or [ast.Pass()]

    def adj_if(self, st, live):
        init, _ = self._branch([st.body, st.orelse], live)
        entry = set(live)
        l1, l2 = set(entry), set(entry)
        body = self.adjoint_block(st.body, l1)
        orelse = self.adjoint_block(st.orelse, l2)
        if not body and not orelse:
            return init
        body = self._finish(body, entry, l1)
        orelse = self._finish(orelse, entry, l2) if orelse or entry - l2 else []
        if orelse == [ast.Pass()]:
            orelse = []
        node = ast.If(ast_copy(st.test), body, orelse)
        return [comment(f"adjoint of L{st.user_line}: {self.parsed.line_text(st.user_line)}")] + init + [node]

    def adj_loop(self, st, live):
        init, _ = self._branch([st.body], live)
        entry = set(live)
        inner = set(entry)
        body = self.adjoint_block(st.body, inner)
        if not body:
            return init
        body = self._finish(body, entry, inner)
        code = [comment(f"adjoint of L{st.user_line}: {self.parsed.line_text(st.user_line)}")] + init
        trips = self.trips.get(id(st))
        if trips and self._in_loop(st):
            code.append(assign(trips, _pop(self.tape)))
        if isinstance(st, ast.While):
            header = ast.For(N("_", True), ast.Call(N("range"), [N(trips)], []), body, [])
        else:
            rng = ast_copy(st.iter)
            if trips:
                rng = ast.Subscript(rng, ast.Slice(None, N(trips), None), ast.Load())
            header = ast.For(ast_copy(st.target), ast.Call(N("reversed"), [rng], []), body, [])
        code.append(header)
        if id(st) in self.ckpt:
            self.ckpt[id(st)] = set(entry)
            header.srcad_ckpt = id(st)
        if isinstance(st, ast.For) and self._overwrites(st, st.target.id):
            # the reversed loop rebinds its variable: give back the value it had before the loop
            # (none to give back before the variable's first binding)
            code.append(self.marker("pop", st.target.id, st))
        return code

    # -- primal sweep ----------------------------------------------------------------------
    def _kept(self, kind, st):
        m = self.markers.get((kind, id(st)))
        return m is not None and m.key in self.kept

    def primal_block(self, stmts, depth):
        out, line = [], None
        for st in stmts:
            ul = getattr(st, "user_line", None)
            if ul != line and ul is not None and not isinstance(st, (ast.Return,)):
                out.append(comment(f"L{ul}: {self.parsed.line_text(ul)}"))
                line = ul
            if isinstance(st, ast.Return):
                continue
            if self._kept("pop", st):
                v = st.targets[0].id if isinstance(st, ast.Assign) else st.target.id
                out.append(_push(self.tape, N(v)))
            if self._kept("restore", st):
                t = st.targets[0]
                if t.value.id in self.dict_names:     # the key may be new: rt.saved_item says so
                    saved = rt("saved_item", N(t.value.id), index_expr(ast_copy(t.slice)))
                else:
                    saved = ast.Call(ast.Attribute(N("np"), "copy", ast.Load()),
                                     [ast.Subscript(N(t.value.id), ast_copy(t.slice), ast.Load())], [])
                out.append(_push(self.tape, saved))
            if isinstance(st, ast.If):
                node = ast.If(ast_copy(st.test), self.primal_block(st.body, depth) or [ast.Pass()],
                              self.primal_block(st.orelse, depth))
                out.append(node)
                line = None
            elif isinstance(st, (ast.For, ast.While)):
                out += self.primal_loop(st, depth)
                line = None
            else:
                op = self.an.op(st)
                if op.rule is not None and op.rule.user_vjp is not None and id(st) in self.pullbacks:
                    out += self.primal_user_rule(op, depth)
                else:
                    out.append(primal_statement(op))
        return out

    def primal_user_rule(self, op, depth):
        pb = self.pullbacks[id(op.node)]
        call = ast_copy(op.rhs)
        parts = self._custom_parts(op)
        if parts:       # custom_vjp: y, residuals = fwd(...)
            new = ast.Call(N(parts[0]), call.args, call.keywords)
        else:
            new = ast.Call(rt("user_vjp_rule", call.func), call.args, call.keywords)
        code = [ast.Assign(targets=[ast.Tuple([N(op.target, True), N(pb, True)], ast.Store())], value=new)]
        if self._in_loop(op.node):
            code.append(_push(self.tape, N(pb)))
        return code

    def primal_loop(self, st, depth):
        trips = self.trips.get(id(st))
        pre, post = [], []
        body = self.primal_block(st.body, depth + 1)
        if trips:
            pre.append(assign(trips, ast.Constant(0)))
            body.insert(0, assign(trips, ast.BinOp(N(trips), ast.Add(), ast.Constant(1))))
            if depth >= 1:
                post.append(_push(self.tape, N(trips)))
        if isinstance(st, ast.For):
            node = ast.For(ast_copy(st.target), ast_copy(st.iter), body, [])
            if id(st) in self.ckpt:
                node.srcad_ckpt = id(st)
        else:
            node = ast.While(ast_copy(st.test), body, [])
        return pre + [node] + post

    def _prepare_loops(self, stmts):
        for st in stmts:
            if isinstance(st, (ast.For, ast.While)):
                ends_early = bool(st.body) and isinstance(st.body[-1], ast.If) and \
                    isinstance(st.body[-1].body[0], ast.Break)
                if isinstance(st, ast.While) or ends_early:
                    self.trips[id(st)] = self.namer.fresh(f"trips_L{st.user_line}")
                if self.checkpoint is not None and not self._in_loop(st):
                    from .checkpoint import check_loop
                    check_loop(self, st, ends_early)
                    self.ckpt[id(st)] = None
                    self.ckpt_line[id(st)] = st.user_line
                    self.ckpt_reads |= names_read(st.body)  # re-run steps read them in the adjoint sweep
                self._prepare_loops(st.body)
            elif isinstance(st, ast.If):
                self._prepare_loops(st.body)
                self._prepare_loops(st.orelse)

    # -- the whole function ----------------------------------------------------------------
    def run(self, name, return_value=False):
        fn = self.fn
        self._prepare_loops(fn.body)
        ret = fn.body[-1].value if fn.body and isinstance(fn.body[-1], ast.Return) else ast.Constant(None)
        live = set()
        seed_code = []
        if isinstance(ret, ast.Name) and ret.id in self.an.active:
            b = self.bar(ret.id)
            seed_code.append(assign(b, N(self.seed)))
            live.add(b)
        adjoint = self.adjoint_block(fn.body, live)
        # which tape operations are needed: a name is saved only if some adjoint reads it
        # which tape operations are needed: a name is saved only if some adjoint reads it; dropping
        # a save can empty a branch whose test then needs no saving either, hence the fixed point
        needed = names_read(adjoint) | self.ckpt_reads
        while True:
            self.kept = {m.key for m in self.markers.values()
                         if m.var in needed or m.kind != "pop" and m.var in self.an.active}
            resolved = self._resolve_markers(ast_copy(adjoint))
            now = names_read(resolved) | self.ckpt_reads
            if now == needed:
                break
            needed = now
        adjoint = resolved
        primal = self.primal_block(fn.body, 0)
        uses_tape = self.tape in names_read(primal)
        inits = []
        for m in self.markers.values():
            if m.key in self.kept and m.kind == "pop" and m.var not in self.params:
                first_stmt, first_depth = self.sites[m.var][0]
                if first_depth != 0:
                    inits.append(assign(m.var, ast.Constant(None)))
        grads = []
        for w in self.wrt:
            b = self.bar(w)
            val = N(b) if b in live else ast.Constant(0.0)
            if self.top_level:
                args = [val, N(w)] + ([ast.Constant(True)] if w in self.row_sparse else [])
                grads.append(rt("finalize", *args))
            else:
                grads.append(val)
        out = grads[0] if len(grads) == 1 and not self.unit.tuple_wrt(self) else ast.Tuple(grads, ast.Load())
        if return_value:
            out = ast.Tuple([ast.Constant(None), out], ast.Load())
        doc = ast.Expr(ast.Constant(self._docstring()))
        body = [doc] + ([assign(self.tape, ast.List([], ast.Load()))] if uses_tape else []) + _dedupe(inits) + primal
        if return_value:    # grad/value_and_grad: keep the output, check it, then seed its cotangent
            value = self.namer.fresh(fn.name + "_value")
            body.append(assign(value, rt("snapshot", ast_copy(ret))))
            body.append(assign(self.seed, rt("seed", N(value), N(self.seed))))
            out = ast.Tuple([N(value), out.elts[1]], ast.Load())
        if adjoint:
            body += [comment("adjoint sweep")] + seed_code + adjoint
        body.append(ast.Return(out))
        args = ast_copy(fn.args)
        args.kwonlyargs.append(ast.arg(self.seed))
        args.kw_defaults.append(ast.Constant(1.0))
        if not fn.args.kwonlyargs:     # keep the seed positional, after f's own parameters
            args.kwonlyargs, args.kw_defaults = [], []
            args.args.append(ast.arg(self.seed))
            args.defaults.append(ast.Constant(1.0))
        return ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None,
                               type_params=[], lineno=fn.lineno, col_offset=0)

    def _docstring(self):
        wrt = ", ".join(self.wrt)
        what = "tuple of gradients" if len(self.wrt) > 1 else "gradient"
        return (f"The {what} of {self.fn.name} with respect to {wrt}, for the output cotangent "
                f"{self.seed} (reverse mode).")

    def _resolve_markers(self, stmts):
        by_key = {m.key: m for m in self.markers.values()}
        out = []
        for st in stmts:
            key = st.value.value if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) else None
            if isinstance(key, str) and key in by_key:
                m = by_key[key]
                if key not in self.kept:
                    continue
                if m.kind == "pop":
                    out.append(assign(m.var, _pop(self.tape)))
                elif m.kind == "restore" and m.var in self.dict_names:
                    t = m.stmt.targets[0]
                    out.append(ast.Expr(rt("restore_item", N(t.value.id), index_expr(ast_copy(t.slice)),
                                           _pop(self.tape))))
                elif m.kind == "restore":
                    t = m.stmt.targets[0]
                    out.append(ast.Assign(targets=[ast.Subscript(N(t.value.id), ast_copy(t.slice), ast.Store())],
                                          value=_pop(self.tape)))
                else:
                    out.append(ast.Expr(ast.Call(ast.Attribute(N(m.var), "pop", ast.Load()), [], [])))
                continue
            for field_ in ("body", "orelse"):
                if getattr(st, field_, None):
                    setattr(st, field_, self._resolve_markers(getattr(st, field_)) or [ast.Pass()])
            if isinstance(st, ast.If) and st.orelse == [ast.Pass()]:
                st.orelse = []
            out.append(st)
        return _drop_empty(out)


def _push(tape, value):
    return ast.Expr(ast.Call(ast.Attribute(N(tape), "append", ast.Load()), [value], []))


def _pop(tape):
    return ast.Call(ast.Attribute(N(tape), "pop", ast.Load()), [], [])


def _dedupe(stmts):
    seen, out = set(), []
    for s in stmts:
        key = ast.dump(s)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _drop_empty(stmts):
    """Loops and branches whose adjoint came out empty disappear; comments over nothing too."""
    out = []
    for st in stmts:
        if isinstance(st, (ast.For, ast.If)) and all(isinstance(b, ast.Pass) for b in st.body) and \
                all(isinstance(b, ast.Pass) for b in getattr(st, "orelse", [])):
            continue
        out.append(st)
    cleaned = []
    for k, st in enumerate(out):
        if is_comment(st) and (k + 1 == len(out) or is_comment(out[k + 1])):
            continue
        cleaned.append(st)
    return cleaned
