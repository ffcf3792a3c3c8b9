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
from enum import StrEnum

import numpy as np

from ..errors import MissingRuleError, SrcadError
from ..rules.registry import facts
from ..syntax import N, assign, ast_copy, comment, index_expr, is_comment, names_read, rt
from .kinds import real
from .templates import bound_mapping, instantiate, param_of, primal_statement


class Own(StrEnum):
    """What is known of the array a cotangent name holds (with its shape token, in `Reverse.own`)."""
    OWNED = "owned"     # a new array of the value's shape that only this name holds: updated in place
    FULL = "full"       # an array of the value's shape, which another name may hold too


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
    differentiated, the cotangent seed's name, and the Kinds of its values (None: none known).
    Output (`run`): a FunctionDef `<f>_vjp(params..., seed)` that runs the primal sweep, taping
    what later statements overwrite, then the adjoint sweep, and returns the cotangents of wrt.
    Invariants: only active and useful names get cotangents (`<name>_bar`); each adjoint reads
    the primal values of its own moment (every overwritten value is popped back before the
    adjoints of earlier statements run); the primal sweep computes exactly what the user's
    code does."""

    def __init__(self, fn, analysis, parsed, namer, wrt, unit, seed, top_level=True, row_sparse=(),
                 check_numerics=False, checkpoint=None, kinds=None, tuple_wrt=False):
        self.check_numerics, self.current = check_numerics, None
        self.tuple_wrt = tuple_wrt      # wrt was a tuple: the cotangents are returned as one
        self.kinds = kinds      # what each value is (transform/kinds.py); None: nothing known
        self.bar_of = {}        # cotangent name -> its primal's name
        self.own = {}           # cotangent name -> (Own, shape token)
        # owned cotangent arrays (updated in place) only where every differentiated value is a
        # known float64 number or array: no complex, float32, sparse or container cotangents
        self.buffers = kinds is not None and checkpoint is None and not row_sparse and all(
            real(k) for name, k in kinds.assigned() if name in analysis.active)
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
        self._if_memo = {}      # see _adj_if_memo

    # -- bookkeeping -----------------------------------------------------------------------
    def bar(self, v):
        if v not in self.bars:
            self.bars[v] = self.namer.fresh(v + "_bar")
            self.bar_of[self.bars[v]] = v
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

    def contribute(self, code, live, v, expr, accumulate=None, item=None):
        """Add expr to v's cotangent. item: the index when expr is the cotangent of v[item], a
        number read from a known 1-d float array (then it goes into an owned buffer)."""
        b = self.bar(v)
        kind = self._buffer_kind(v)
        state = self._state(b, kind)
        if item is not None and kind is not None and kind.ndim == 1 and (b not in live or state == Own.OWNED):
            if b not in live:       # a buffer of v's shape, owned by this cotangent
                code.append(assign(b, _zeros_like(v)))
                code.append(ast.Assign(targets=[ast.Subscript(N(b), ast_copy(item), ast.Store())], value=expr))
                live.add(b)
            else:
                code.append(ast.AugAssign(ast.Subscript(N(b), ast_copy(item), ast.Store()), ast.Add(), expr))
            self.own[b] = (Own.OWNED, kind.shape)
        elif b in live and accumulate is None and state == Own.OWNED:
            code.append(ast.AugAssign(N(b, True), ast.Add(), expr))     # in place: b is an owned array
        elif b in live and accumulate is None and (state == Own.FULL or self._real_number(v)):
            # a plain sum: b is an array of v's shape (or both are numbers): a new owned array
            code.append(assign(b, ast.BinOp(N(b), ast.Add(), expr)))
            self._set_own(b, (Own.OWNED, kind.shape) if state else None)
        elif b in live:
            code.append(assign(b, instantiate(accumulate, {"__bar__": N(b)}) if accumulate is not None
                               else rt("add", N(b), expr)))
            self.own.pop(b, None)
        else:
            code.append(assign(b, expr))
            live.add(b)
            self._set_own(b, self._fullness(expr, kind) if kind is not None else None)
        if self.check_numerics and self.current is not None:
            line = getattr(self.current, "user_line", 0)
            import linecache
            raw = linecache.getline(self.parsed.filename, line)
            col = len(raw) - len(raw.lstrip())
            where = f"{self.parsed.filename}:{line}:{col}: {self.parsed.line_text(line)}"
            code.append(ast.Expr(rt("check_finite", N(b), ast.Constant(self.parsed.value_text(v, self.sites.get(v))),
                                    ast.Constant(where))))

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
            return self._adj_if_memo(st, live)
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
                self.bar_of[g] = v
                code.append(assign(g, N(b)))
                self._set_own(g, (Own.FULL, self.own[b][1]) if b in self.own else None)
                ans = v
                if op.rule is not None and op.rule.needs_ans:
                    ans = self.bars.setdefault((v, "ans"), self.namer.fresh(v + "_out"))
                    code.append(assign(ans, N(v)))
                live.discard(b)
                self.own.pop(b, None)
                if overwrites:
                    code.append(self.marker("pop", v, st))
                code += self.contributions(op, g, ans, live)
            else:
                code += self.contributions(op, b, v, live)
                live.discard(b)
                self.own.pop(b, None)
                if overwrites:
                    code.append(self.marker("pop", v, st))
        else:
            live.discard(b)
            self.own.pop(b, None)
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
            expr = self._known_reduction(op, p, g) or instantiate(template, mapping)
            others = [a for q, a in op.bound.items() if q != p and q in op.rule.vjp]
            # a constant never widens the shape, except an int in a product, which repeats a list (`xs * 2`)
            if op.rule.broadcast and not all(isinstance(a, ast.Constant) and not (
                    op.rule.key == "op:Mult" and type(a.value) is int) for a in others) \
                    and not self._same_shape(op.node, n):
                if self._real_number(n):    # summed down to a number: all of it
                    expr = ast.Call(ast.Attribute(N("np"), "sum", ast.Load()), [expr], [])
                else:
                    expr = rt("unbroadcast", expr, N(n))     # a Python number never widens the shape
            fused = instantiate(op.rule.accumulate, mapping) if op.rule.accumulate is not None else None
            item = self._number_item(op, n) if op.rule.key == "op:Subscript" else None
            self.contribute(code, live, n, N(g) if item is not None else expr, fused, item)
        return code

    # -- cotangents the kinds let us keep in owned arrays ---------------------------------------
    def _buffer_kind(self, v, st=None, where="before"):
        """The kind of v (a known float64 array of fixed shape) when its cotangent may live in an
        array that only it holds and that is updated in place; else None."""
        if not self.buffers or v is None:
            return None
        st = self.current if st is None else st
        if st is None:
            return None
        k = self.kinds.exit(st, v) if where == "exit" else self.kinds.before(st, v)
        if k.cat == "array" and k.dtype == "d" and k.ndim and k.shape is not None:
            return k
        return None

    def _set_own(self, b, state):
        if state:
            self.own[b] = state
        else:
            self.own.pop(b, None)

    def _state(self, b, kind):
        """Own.OWNED / Own.FULL when b holds an array of kind's shape (owned: that only b holds), else None."""
        s = self.own.get(b)
        return s[0] if s is not None and kind is not None and s[1] == kind.shape else None

    def _real_number(self, v):
        k = self.kinds.before(self.current, v) if self.kinds is not None and self.current is not None else None
        return k is not None and k.rank0 and k.dtype == "d" and self.buffers

    def _fullness(self, expr, kind):
        """(Own.OWNED, shape) when expr makes a new array of kind's shape, (Own.FULL, shape) when it
        names one (an alias), None when it may be smaller (a number, the symbolic zero) or is not
        known."""
        if self._full(expr, kind.shape):
            return (Own.OWNED if _fresh(expr) else Own.FULL, kind.shape)
        return None

    def _shape_of(self, e):
        """The shape token of an expression's value in the adjoint of the current statement, or
        None; rank-0 values give ()."""
        if isinstance(e, ast.Constant) and type(e.value) in (int, float):
            return ()
        if isinstance(e, ast.Name):
            v = self.bar_of.get(e.id)
            if v is not None:       # a cotangent: its primal's shape only when known materialised
                return () if self._kind_here(v).rank0 else None
            k = self._kind_here(e.id)
            return k.shape if k.dense else None
        return None

    def _kind_here(self, v):
        """The kind of v's version that the adjoint of the current statement deals with: what the
        statement assigns, if it assigns v, else what v holds before it."""
        st = self.current
        if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) and st.targets[0].id == v:
            return self.kinds.result(st)
        return self.kinds.before(st, v)

    def _full(self, e, shape):
        """Is e's value an array of exactly `shape` (not a smaller stand-in)?"""
        if isinstance(e, ast.Name):
            v = self.bar_of.get(e.id)
            if v is not None:
                s = self.own.get(e.id)
                return s is not None and s[1] == shape
            return self._shape_of(e) == shape
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)):
            for a, b in ((e.left, e.right), (e.right, e.left)):
                if self._full(a, shape) and (self._full(b, shape) or self._rank0(b) or
                                             self._operand_within(b, shape)):
                    return True
            return False
        if _is_rt_call(e, "unbroadcast") and len(e.args) == 2 and isinstance(e.args[1], ast.Name):
            # summed down to the operand's shape from a full array of the result's shape
            res = self.kinds.result(self.current)
            return res.shape is not None and self._shape_of(e.args[1]) == shape and \
                self.bar_of.get(e.args[1].id) is None and self._full(e.args[0], res.shape)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return self._full(e.operand, shape)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name) \
                and e.func.value.id == "np" and e.args and not e.keywords:
            f = getattr(np, e.func.attr, None)
            if isinstance(f, np.ufunc) and len(e.args) == 1:
                return self._full(e.args[0], shape)
            if _kind_of(f) == "same" and isinstance(e.args[0], ast.Name):     # np.full_like(x, v): x's shape
                return self.bar_of.get(e.args[0].id) is None and self._shape_of(e.args[0]) == shape
        return False

    def _operand_within(self, e, shape):
        """Is e an operand of the current statement, whose result has `shape` (so e broadcasts
        into it)?"""
        if not isinstance(e, ast.Name) or self.bar_of.get(e.id) is not None:
            return False
        st = self.current
        res = self.kinds.result(st) if isinstance(st, ast.Assign) else None
        if res is None or res.shape != shape or not self._kind_here(e.id).dense:
            return False
        op = self.an.op(st)
        return any(isinstance(a, ast.Name) and a.id == e.id for a in op.bound.values())

    def _rank0(self, e):
        if isinstance(e, (ast.BinOp,)):
            return self._rank0(e.left) and self._rank0(e.right)
        if isinstance(e, ast.UnaryOp):
            return self._rank0(e.operand)
        return self._shape_of(e) == ()

    def _number_item(self, op, n):
        """The index of `y = n[i]` when it reads one number of a known 1-d float array (an int
        constant or an int loop variable), else None."""
        idx = op.bound.get("idx")
        if not isinstance(idx, (ast.Constant, ast.Name)) or self._buffer_kind(n) is None:
            return None
        if isinstance(idx, ast.Constant):
            ok = type(idx.value) is int
        else:
            k = self.kinds.before(op.node, idx.id)
            ok = k.cat == "py" and k.dtype == "l"
        return idx if ok and self.kinds.result(op.node).rank0 else None

    def _int_index(self, st, x, idx):
        """Does x[idx] (before st) read one number of a known 1-d array at an int?"""
        if self.kinds is None:
            return False
        k = self.kinds.before(st, x)
        if k.cat != "array" or k.ndim != 1 or k.dtype not in ("d", "f", "l", "?"):
            return False
        if isinstance(idx, ast.Constant):
            return type(idx.value) is int
        if isinstance(idx, ast.Name):
            ki = self.kinds.before(st, idx.id)
            return ki.cat == "py" and ki.dtype == "l"
        return False

    def _int_read(self, op):
        """`y = x[i]` with x a known 1-d array and i an int: it runs as written (not rt.getitem)."""
        if op.kind != "assign" or op.rule is None or op.rule.key != "op:Subscript":
            return False
        x = op.bound.get("x")
        return isinstance(x, ast.Name) and self._int_index(op.node, x.id, op.bound.get("idx"))

    def _written_number(self, st, y, v):
        """The index of `y[i] = v` when it writes one number (v) into a known 1-d float array
        at an int constant or int loop variable, else None."""
        idx = st.targets[0].slice
        kind = self._buffer_kind(y)
        if kind is None or kind.ndim != 1 or not isinstance(v, ast.Name) or \
                not self.kinds.before(st, v.id).rank0:
            return None
        if isinstance(idx, ast.Constant):
            return idx if type(idx.value) is int else None
        if isinstance(idx, ast.Name):
            k = self.kinds.before(st, idx.id)
            return idx if k.cat == "py" and k.dtype == "l" else None
        return None

    def _same_shape(self, st, n):
        """Is the operand n known to have the shape of st's result (then its cotangent needs no
        unbroadcast: the result's cotangent has that shape, or is the scalar zero)?"""
        if self.kinds is None:
            return False
        res, arg = self.kinds.result(st), self.kinds.before(st, n)
        return res.shape is not None and res.shape == arg.shape and res.dense and arg.dense

    def _known_reduction(self, op, p, g):
        """The adjoint of a full sum or mean of a known float array as plain NumPy: g spread over
        x's shape (np.full_like), instead of the general rt.sum_vjp."""
        if self.kinds is None or p != "x" or _kind_of(op.rule.key) not in ("reduction:sum", "reduction:mean"):
            return None
        b = op.bound
        if set(b) - {"x", "axis", "keepdims"} or not isinstance(b.get("x"), ast.Name):
            return None
        if not all(isinstance(b.get(q, ast.Constant(None)), ast.Constant) for q in ("axis", "keepdims")) or \
                b.get("axis", ast.Constant(None)).value is not None or \
                b.get("keepdims", ast.Constant(False)).value is not False:
            return None
        x = self.kinds.before(op.node, b["x"].id)
        if x.cat != "array" or x.dtype not in ("d", "f") or not x.ndim:
            return None
        like = self._shape_source(op.node, b["x"].id, x)
        fill = N(g)
        if _kind_of(op.rule.key) == "reduction:mean":
            fill = ast.BinOp(fill, ast.Div(), ast.Attribute(N(like), "size", ast.Load()))
        return ast.Call(ast.Attribute(N("np"), "full_like", ast.Load()), [N(like), fill], [])

    def _shape_source(self, st, name, kind):
        """A name that lends `name`'s shape and dtype to the adjoint of st: a parameter that is
        never assigned and has the same kind there (nothing to tape for it), else name itself."""
        for p in self.params:
            if p != name and self.sites[p] == [(None, 0)] and self.kinds.before(st, p) == kind:
                return p
        return name

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
                    self.contribute(code, live, v.id, rt("unbroadcast", rt("index_bar", N(b), ast_copy(idx)),
                                                         N(v.id)))
                code.append(assign(b, rt("zero_at", N(b), ast_copy(idx))))
                self.own.pop(b, None)
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
            self.own.pop(b, None)
        code.append(self.marker("unappend", xs, st))
        return code

    def _branch(self, blocks, live, st=None):
        """Materialise, before a branch or loop, the cotangents its adjoint leaves live that were
        not live before: the other branch (or the next iteration) must find them defined."""
        newly = set()
        own = dict(self.own)
        while True:     # a loop body can make a cotangent live that an earlier statement of the next
            found = set()   # iteration reads, so repeat until nothing new turns up
            for block in blocks:
                after = live | newly
                self.own = dict(own)
                self.adjoint_block(block, after)
                found |= after - live
            if found <= newly:
                break
            newly |= found
        self.own = own
        init = [self._zero(b, st, "exit") for b in sorted(newly)]
        live |= newly
        return init, newly

    def _finish(self, body, entry, live, st=None, where="exit"):
        for b in sorted(entry - live):
            body.append(self._zero(b, st, where))
        return body or [ast.Pass()]

    def _zero(self, b, st, where):
        """`b = 0.0`, the symbolic zero; for the cotangent of a known float array (at the point
        `where` of the compound statement st), an owned array of zeros instead."""
        v = self.bar_of.get(b)
        kind = self._buffer_kind(v, st, where) if v is not None and st is not None else None
        if kind is not None:
            self.own[b] = (Own.OWNED, kind.shape)
            return assign(b, _zeros_like(v))
        self.own.pop(b, None)
        return assign(b, ast.Constant(0.0))

    def _adj_if_memo(self, st, live):
        """adj_if, once per (statement, live cotangents, owned state). Finding what a branch
        makes live (_branch) writes the adjoint of its blocks, and an enclosing branch or loop
        does so again, so nested ifs (every lowered `return` nests the rest of the function in
        one) would cost a power of their depth. The adjoint is a function of that state (names,
        markers and pullbacks are kept per statement), so a repeat hands back the same code and
        leaves the same state; only the last call's code reaches the output."""
        if self.ckpt:       # (a checkpointed loop records the live set of its last adjoint)
            return self.adj_if(st, live)
        try:
            key = (id(st), frozenset(live), frozenset(self.own.items()))
            hash(key)
        except TypeError:
            return self.adj_if(st, live)
        got = self._if_memo.get(key)
        if got is None:
            code = self.adj_if(st, live)
            got = self._if_memo[key] = (code, frozenset(live), dict(self.own))
        code, live_out, own_out = got
        live.clear()
        live.update(live_out)
        self.own = dict(own_out)
        return list(code)

    def adj_if(self, st, live):
        init, _ = self._branch([st.body, st.orelse], live, st)
        entry = set(live)
        l1, l2 = set(entry), set(entry)
        own = dict(self.own)
        body = self.adjoint_block(st.body, l1)
        own1, self.own = self.own, dict(own)
        orelse = self.adjoint_block(st.orelse, l2)
        own2 = self.own
        if not body and not orelse:
            self.own = own
            return init
        self.own = own1
        body = self._finish(body, entry, l1, st, "before")
        own1, self.own = self.own, own2
        orelse = self._finish(orelse, entry, l2, st, "before") if orelse or entry - l2 else []
        self.own = _meet(own1, self.own)
        if orelse == [ast.Pass()]:
            orelse = []
        node = ast.If(ast_copy(st.test), body, orelse)
        return [comment(f"adjoint of L{st.user_line}: {self.parsed.line_text(st.user_line)}")] + init + [node]

    def adj_loop(self, st, live):
        init, _ = self._branch([st.body], live, st)
        entry = set(live)
        own = dict(self.own)
        while True:     # what the body keeps owned must hold at its start in every iteration
            self.own = dict(own)
            inner = set(entry)
            body = self.adjoint_block(st.body, inner)
            if body:
                body = self._finish(body, entry, inner, st, "exit")
            kept = _meet(own, self.own)
            if kept == own:
                break
            own = kept
        self.own = own
        if not body:
            return init
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
                elif self._int_index(st, t.value.id, t.slice):      # a number: nothing shares it
                    saved = ast.Subscript(N(t.value.id), ast_copy(t.slice), ast.Load())
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
                    out.append(ast_copy(op.node) if self._int_read(op) else primal_statement(op, self._dense_at(op)))
        return out

    def _dense_at(self, op):
        """name -> is its value sure to be dense where op runs (the kinds pass); None: nothing known."""
        if self.kinds is None:
            return None
        return lambda name: self.kinds.before(op.node, name).dense

    def primal_user_rule(self, op, depth):
        pb = self.pullbacks[id(op.node)]
        call = ast_copy(op.rhs)
        parts = self._custom_parts(op)
        if parts:       # custom_vjp: y, residuals = rt.custom_fwd_pair(fwd(...), f), checked a pair
            new = rt("custom_fwd_pair", ast.Call(N(parts[0]), call.args, call.keywords), ast_copy(call.func))
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
            seed = N(self.seed)
            if self.kinds is not None and self.kinds.exit_of_body(ret.id).cat == "array":
                # a size-1 array's seed may be a number: give it the array's shape, which the
                # adjoints that know shapes rely on
                seed = rt("broadcast_like", seed, N(ret.id))
            seed_code.append(assign(b, seed))
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
            if self.top_level and b in live and self.own.get(b, ("",))[0] == Own.OWNED and not self.row_sparse:
                grads.append(val)       # already what finalize makes: a new float64 array of w's shape
            elif self.top_level:
                args = [val, N(w)] + ([ast.Constant(True)] if w in self.row_sparse else [])
                grads.append(rt("finalize", *args))
            else:
                grads.append(val)
        out = grads[0] if len(grads) == 1 and not self.tuple_wrt else ast.Tuple(grads, ast.Load())
        if return_value:
            out = ast.Tuple([ast.Constant(None), out], ast.Load())
        doc = ast.Expr(ast.Constant(self._docstring()))
        body = [doc] + ([assign(self.tape, ast.List([], ast.Load()))] if uses_tape else []) + _dedupe(inits) + primal
        if return_value:    # grad/value_and_grad: keep the output, check it, then seed its cotangent
            value = self.namer.fresh(fn.name + "_value")
            known_number = self.kinds is not None and isinstance(ret, ast.Name) and \
                self.kinds.exit_of_body(ret.id).rank0
            body.append(assign(value, ast_copy(ret) if known_number else rt("snapshot", ast_copy(ret))))
            body.append(assign(self.seed, rt("seed", N(value), N(self.seed))))
            out = ast.Tuple([N(value), out.elts[1]], ast.Load())
        if adjoint or seed_code and seed_code[0].targets[0].id in live:
            # (a returned argument has no adjoint statement: its cotangent is the seed itself)
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


def _fresh(e):
    """Does evaluating e make a new array (rather than hand back one that a name holds)? Only for
    the forms _full accepts: arithmetic, NumPy ufuncs and *_like constructors, rt.unbroadcast."""
    if isinstance(e, (ast.BinOp, ast.UnaryOp)):
        return True
    if _is_rt_call(e, "unbroadcast"):       # hands back its argument when the shapes agree
        return _fresh(e.args[0])
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and \
        isinstance(e.func.value, ast.Name) and e.func.value.id == "np"


def _is_rt_call(e, name):
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == name and \
        isinstance(e.func.value, ast.Name) and e.func.value.id == "rt"


def _meet(a, b):
    """The ownership facts that hold on both paths."""
    return {k: (Own.OWNED if v[0] == b[k][0] == Own.OWNED else Own.FULL, v[1]) for k, v in a.items()
            if k in b and b[k][1] == v[1]}


def _zeros_like(v):
    return ast.Call(ast.Attribute(N("np"), "zeros_like", ast.Load()), [N(v)], [])


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


def _kind_of(key):
    """The result kind the registry declares for an operation (rules/numpy_rules.py), or None."""
    entry = facts(key)
    return entry.kind if entry is not None else None
