"""primal: the primal sweep: the user's code, plus the saves the adjoint sweep needs.

Each statement runs as the user wrote it (the rule's primal template where it differs), with,
before it, a push of each value it overwrites that some adjoint reads (the markers kept by
tape.py); a loop that can end early counts its trips; a registered rule's call keeps its
pullback (on the tape inside loops).
"""
import ast

from ...syntax import N, assign, ast_copy, comment, index_expr, rt
from ..templates import primal_statement
from .tape import TapeOp, _push


class PrimalSweep:
    """The primal sweep of a block, a loop and a registered rule's call: methods of the Reverse
    class they are mixed into (transform/reverse/driver.py)."""

    def primal_block(self, stmts, depth):
        out, line = [], None
        for st in stmts:
            ul = getattr(st, "user_line", None)
            if ul != line and ul is not None and not isinstance(st, (ast.Return,)):
                out.append(comment(f"L{ul}: {self.parsed.line_text(ul)}"))
                line = ul
            if isinstance(st, ast.Return):
                continue
            if self._kept(TapeOp.POP, st):
                v = st.targets[0].id if isinstance(st, ast.Assign) else st.target.id
                out.append(_push(self.tape, rt("shape_stand_in", N(v)) if v in self.shape_taped else N(v)))
            if self._kept(TapeOp.RESTORE, st):
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
                    out.append(ast_copy(op.node) if self._int_read(op) else primal_statement(op, self._kind_at(op)))
        return out

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
