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
    at(st, x)         told the fact flowing into each statement: before it in a forward walk
                      (Kinds.before), after it in a backward one (live_after, ...)
    past(st, x)       told the fact flowing out of each statement (forward: after it; None when
                      the path ends there)

Forward problems whose facts are not plain values, or whose loops need more than a first
repeat, also choose:

    copy(x)           a fact handed to two paths (an `if`'s branches, a loop's body) when
                      transfer changes its fact in place (aliases' state); default: x itself
    settled(new, old) has a loop's head stopped moving; default `new == old`
    widen(st, old, new, rounds)   the loop head after `rounds` iterations of st: a problem whose
                      facts can climb without end makes the moving ones coarser here (kinds:
                      unknown after 10 rounds), or raises (aliases: after 50)
    iterate(st, x)    a `for` loop's iterable, once on entry; default test(st.iter, x)
    head(st, x)       the top of each iteration; default: target (for) / test (while)
    leave(st, head, inner)   where a loop ends without `break`, from its settled head and its
                      body's entry; default: the head (for) / the test false (while)

A forward loop's head starts as the fact on entry and takes the meet with what each iteration
brings back (its end, its `continue`s) until settled; its exit is leave() met with the `break`s.
In a forward problem None is "this point is not reached" (after a `break`, `return`), and meet
never sees it. Facts must compare with `==` unless settled() says otherwise.

The analyses built on it: cleanup's liveness (backward) and must-be-zero (forward), the kinds
of values (transform/kinds/), the alias state (frontend/aliases/), the names a checkpointed
loop's iteration reads from the one before (transform/checkpoint.py, `_exposed`).

Where the code a fixed point runs over is made while it is analysed (Reverse writes a loop's
adjoint and learns its ownership facts at once), `fixpoint(x, step, meet)` is the loop head
alone: x met with step(x) until it stops moving.

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

    def past(self, st: ast.stmt, x: Optional[Fact]) -> None:
        pass

    def copy(self, x: Fact) -> Fact:
        return x

    def settled(self, new: Fact, old: Fact) -> bool:
        return new == old

    def widen(self, st: ast.stmt, old: Fact, new: Fact, rounds: int) -> Fact:
        return new

    def iterate(self, st: ast.For, x: Fact) -> Fact:
        return self.test(st.iter, x)

    def head(self, st: ast.For | ast.While, x: Fact) -> Fact:
        return self.target(st, x) if isinstance(st, ast.For) else self.test(st.test, x)

    def leave(self, st: ast.For | ast.While, head: Fact, inner: Fact) -> Fact:
        return head if isinstance(st, ast.For) else self.test(st.test, head)

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
            self.at(st, x)
            x = self._forward_stmt(st, x, loop)
            self.past(st, x)
        return x

    def _forward_stmt(self, st, x, loop):
        if isinstance(st, ast.If):
            x = self.test(st.test, x)
            return self._join(self._forward(st.body, self.copy(x), loop),
                              self._forward(st.orelse, self.copy(x), loop))
        if isinstance(st, (ast.For, ast.While)):
            return self._forward_loop(st, x, loop)
        if isinstance(st, ast.Break):
            loop[0].append(x)
            return None
        if isinstance(st, ast.Continue):
            loop[1].append(x)
            return None
        if isinstance(st, (ast.Return, ast.Raise)):
            return self.exit(st, x)
        return self.transfer(st, x)

    def _forward_loop(self, st, x, loop):
        head = self.iterate(st, x) if isinstance(st, ast.For) else x
        rounds = 0
        while True:
            breaks, conts = [], []
            inner = self.head(st, self.copy(head))
            end = self._forward(st.body, self.copy(inner), (breaks, conts))
            new = head
            for z in [end] + conts:
                new = self._join(new, z)
            rounds += 1
            new = self.widen(st, head, new, rounds)
            if self.settled(new, head):
                break
            head = new
        out = self._forward(st.orelse, self.leave(st, new, inner), loop)
        for z in breaks:
            out = self._join(out, z)
        return out

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


def fixpoint(x: Fact, step: Callable[[Fact], Fact], meet: Optional[Callable[[Fact, Fact], Fact]] = None,
             limit: Optional[int] = None) -> Fact:
    """The first fact from x on that one more step leaves as it is: x = meet(x, step(x)) (meet
    None: x = step(x)) until unchanged. step may record what it makes along the way (the last
    call's is the one that holds). After `limit` steps without settling: RuntimeError."""
    rounds = 0
    while True:
        y = step(x)
        new = y if meet is None else meet(x, y)
        if new == x:
            return x
        x = new
        rounds += 1
        if limit is not None and rounds >= limit:
            raise RuntimeError(f"no fixed point after {limit} steps")


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
