"""control: the adjoint sweep's branches and loops.

The adjoint of an `if` is an `if` on the same (restored) test; the adjoint of a loop is a loop
over the same range reversed (a `while` or a loop that ends early: over its taped trip count).
The cotangents a branch or loop body makes live are materialised before it (`_branch`), so that
the other branch and the next iteration find them defined; what is owned after it is what holds
on every path (ownership.py's `_meet`, a fixed point for a loop body).
"""
import ast

from ...dataflow import fixpoint
from ...syntax import N, assign, ast_copy, comment
from .ownership import _meet
from .tape import TapeOp, _pop


class AdjointControl:
    """The adjoint of an `if`, a `for` and a `while`: methods of the Reverse class they are mixed
    into (transform/reverse/driver.py)."""

    def _branch(self, blocks, live, st=None):
        """Materialise, before a branch or loop, the cotangents its adjoint leaves live that were
        not live before: the other branch (or the next iteration) must find them defined."""
        own = dict(self.own)

        def found(newly):
            out = set()
            for block in blocks:
                after = live | newly
                self.own = dict(own)
                self.adjoint_block(block, after)
                out |= after - live
            return out
        # a loop body can make a cotangent live that an earlier statement of the next iteration
        # reads, so repeat until nothing new turns up
        newly = fixpoint(set(), found, set.union)
        self.own = own
        init = [self._zero(b, st, "exit") for b in sorted(newly)]
        live |= newly
        return init, newly

    def _finish(self, body, entry, live, st=None, where="exit"):
        for b in sorted(entry - live):
            body.append(self._zero(b, st, where))
        return body or [ast.Pass()]

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
        body = []

        def iteration(own):
            nonlocal body
            self.own = dict(own)
            inner = set(entry)
            body = self.adjoint_block(st.body, inner)
            if body:
                body = self._finish(body, entry, inner, st, "exit")
            return self.own
        # what the body keeps owned must hold at its start in every iteration
        self.own = fixpoint(dict(self.own), iteration, _meet)
        if not body:
            return init
        body = self._recompute_at_top(st, body)
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
            code.append(self.marker(TapeOp.POP, st.target.id, st))
        return code
