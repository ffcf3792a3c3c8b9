"""One dataflow framework for srcad's analyses of structured Python code (the user's normalized
function, or generated code): a problem states its direction, its meet and its transfer of one
simple statement; the walker here does the control flow once for all of them -- branches joined
by the meet, loops iterated to a fixed point, `break`/`continue` carried to the loop's exit and
head, `return`/`raise` ending a path.

A problem subclasses `Dataflow` and gives:

    forward     True: facts flow from a block's entry to its exit; False: from exit to entry
    bottom      the fact a loop's head starts from in a backward problem (nothing known yet)
    meet(a, b)  the fact where two paths join
    transfer(st, x)   the fact after (forward) / before (backward) a statement without control
                flow: an assignment, an expression, a nested `def`, a comment

and, where the default (no effect) is not right:

    test(e, x)        evaluating an `if`/`while` test or a `for` loop's iterable
    target(st, x)     a `for` loop binding its target (forward: on entry to the body; backward:
                      between the body's entry and the loop's head)
    exit(st, x)       a `return` or `raise` (forward: None, the path ends; backward: its reads)
    at(st, x)         told the fact after each statement in a backward walk (live_after, ...)

In a forward problem None is "this point is not reached" (after a `break`, `return`), and meet
never sees it. Facts must compare with `==` (the fixed point is the first repeat).

Flow-insensitive problems (activity: what depends on a differentiated input; usefulness: what
reaches the output) are reachability over a dependence graph: `reach` is their worklist.
"""
import ast
from typing import Any, Callable, Generic, Hashable, Iterable, Optional, TypeVar

Fact = TypeVar("Fact")


class Dataflow(Generic[Fact]):
    """A dataflow problem over structured code, and its solver (see the module docstring)."""

    forward: bool = True
    bottom: Any = None

    # -- the problem ----------------------------------------------------------------------------
    def meet(self, a: Fact, b: Fact) -> Fact:
        raise NotImplementedError

    def transfer(self, st: ast.stmt, x: Fact) -> Fact:
        raise NotImplementedError

    def test(self, e: ast.expr, x: Fact) -> Fact:
        return x

    def target(self, st: ast.For, x: Fact) -> Fact:
        return x

    def exit(self, st: ast.stmt, x: Fact) -> Optional[Fact]:
        return None if self.forward else x

    def at(self, st: ast.stmt, x: Fact) -> None:
        pass

    # -- the walker -----------------------------------------------------------------------------
    def solve(self, block: list, x: Fact) -> Optional[Fact]:
        """The fact at the block's exit (forward) or entry (backward), given the other end's."""
        return self._forward(block, x, None) if self.forward else self._backward(block, x, None)

    def _join(self, a, b):
        if a is None:
            return b
        if b is None:
            return a
        return self.meet(a, b)

    def _forward(self, block, x, loop):
        for st in block:
            if x is None:
                return None
            x = self._forward_stmt(st, x, loop)
        return x

    def _forward_stmt(self, st, x, loop):
        if isinstance(st, ast.If):
            x = self.test(st.test, x)
            return self._join(self._forward(st.body, x, loop), self._forward(st.orelse, x, loop))
        if isinstance(st, (ast.For, ast.While)):
            entry = self.test(st.iter, x) if isinstance(st, ast.For) else x
            head = entry
            while True:
                breaks, conts = [], []
                inner = self.target(st, head) if isinstance(st, ast.For) else self.test(st.test, head)
                end = self._forward(st.body, inner, (breaks, conts))
                new = entry
                for z in [end] + conts:
                    new = self._join(new, z)
                if new == head:
                    break
                head = new
            out = self._forward(st.orelse, head if isinstance(st, ast.For) else self.test(st.test, head), loop)
            for z in breaks:
                out = self._join(out, z)
            return out
        if isinstance(st, ast.Break):
            loop[0].append(x)
            return None
        if isinstance(st, ast.Continue):
            loop[1].append(x)
            return None
        if isinstance(st, (ast.Return, ast.Raise)):
            return self.exit(st, x)
        return self.transfer(st, x)

    def _backward(self, block, out, loop):
        x = out
        for st in reversed(block):
            self.at(st, x)
            x = self._backward_stmt(st, x, loop)
        return x

    def _backward_stmt(self, st, out, loop):
        if isinstance(st, ast.If):
            return self.test(st.test, self.meet(self._backward(st.body, out, loop),
                                                self._backward(st.orelse, out, loop)))
        if isinstance(st, (ast.For, ast.While)):
            after_else = self._backward(st.orelse, out, loop)
            head = self.bottom
            while True:
                inner = self._backward(st.body, head, (head, out))
                if isinstance(st, ast.For):
                    new = self.meet(after_else, self.target(st, inner))
                else:
                    new = self.test(st.test, self.meet(after_else, inner))
                if new == head:
                    break
                head = new
            return self.test(st.iter, head) if isinstance(st, ast.For) else head
        if isinstance(st, ast.Break):
            return loop[1] if loop else out
        if isinstance(st, ast.Continue):
            return loop[0] if loop else out
        if isinstance(st, (ast.Return, ast.Raise)):
            return self.exit(st, out)
        return self.transfer(st, out)


def reach(seeds: Iterable[Hashable], successors: Callable[[Hashable], Iterable[Hashable]]) -> set:
    """Everything reachable from seeds (the seeds included) along successors: the least fixed
    point of a flow-insensitive problem, by a worklist."""
    out = set(seeds)
    work = list(out)
    while work:
        for m in successors(work.pop()):
            if m not in out:
                out.add(m)
                work.append(m)
    return out
