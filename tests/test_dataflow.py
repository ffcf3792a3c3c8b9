"""srcad/dataflow.py: one walker for branches, loops, break/continue and return, under problems
that state only their direction, meet and transfer. Checked on small programs whose facts are
worked out by hand, and through the two analyses built on it (cleanup's liveness and zeros)."""
import ast
import textwrap

import pytest

from srcad.dataflow import Dataflow
from srcad.transform.cleanup import cleanup
from srcad.syntax import to_source


def _body(src):
    return ast.parse(textwrap.dedent(src)).body


class Assigned(Dataflow):
    """Forward must-analysis: names assigned on every path (meet: intersection)."""
    forward = True

    def meet(self, a, b):
        return a & b

    def target(self, st, x):
        return x | {st.target.id}

    def transfer(self, st, x):
        if isinstance(st, ast.Assign):
            return x | {t.id for t in st.targets if isinstance(t, ast.Name)}
        return x


class Live(Dataflow):
    """Backward may-analysis: names read later (meet: union); records the set after each statement."""
    forward = False
    bottom = frozenset()

    def __init__(self):
        self.after = {}

    def meet(self, a, b):
        return a | b

    def _reads(self, node):
        return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))

    def at(self, st, x):
        self.after[ast.unparse(st).splitlines()[0]] = x

    def test(self, e, x):
        return x | self._reads(e)

    def target(self, st, x):
        return (x - {st.target.id}) | self._reads(st.target)

    def exit(self, st, x):
        return self._reads(st)

    def transfer(self, st, x):
        if isinstance(st, ast.Assign):
            return (x - {t.id for t in st.targets}) | self._reads(st.value)
        return x | self._reads(st)


def test_forward_branches_meet_and_a_break_leaves_the_loop():
    code = _body("""
        a = 1
        if c:
            b = 2
            d = 3
        else:
            b = 4
        while w:
            e = 5
            if q:
                break
            f = 6
        """)
    assert Assigned().solve(code, frozenset()) == {"a", "b"}     # e, f: the loop may not run


def test_forward_return_ends_a_path():
    code = _body("""
        if c:
            x = 1
            return x
        y = 2
        """)
    assert Assigned().solve(code, frozenset()) == {"y"}
    assert Assigned().solve(_body("return 1"), frozenset()) is None       # the end is not reached


def test_backward_a_loop_carries_reads_to_its_head():
    code = _body("""
        s = 0
        for i in range(n):
            t = s * 2
            s = t + i
        out = s
        """)
    live = Live()
    assert live.solve(code, frozenset({"out"})) == {"range", "n"}
    assert live.after["t = s * 2"] == {"t", "i"}        # s is read again only through t; n at entry only
    assert live.after["s = t + i"] == {"s"}             # the next iteration reads s, the loop's end too
    assert live.after["s = 0"] == {"s", "range", "n"}


def test_backward_continue_and_break_reach_the_head_and_the_exit():
    code = _body("""
        while k:
            if a:
                continue
            if b:
                break
            k = g
        r = z
        """)
    live = Live()
    assert live.solve(code, frozenset({"r"})) == {"k", "a", "b", "g", "z"}
    assert live.after["k = g"] == {"k", "a", "b", "g", "z"}     # back to the head: the test reads k


def test_cleanup_built_on_it_still_drops_zeros_and_dead_code():
    fn = ast.parse(textwrap.dedent("""
        def f_vjp(x, f_bar=1.0):
            t = x * 2.0
            unused = x + 1.0
            # adjoint sweep
            x_bar = 0.0
            if x > 0:
                x_bar = rt.add(x_bar, f_bar * 2.0)
            else:
                x_bar = rt.add(x_bar, f_bar)
            for i in range(3):
                x_bar = rt.add(x_bar, f_bar)
            return x_bar, t
        """)).body[0]
    out = to_source(cleanup(fn, primal_ran=True))
    assert "unused" not in out
    assert "x_bar = f_bar * 2.0" in out and "x_bar = f_bar\n" in out     # zero on both branches: no rt.add
    assert "x_bar = rt.add(x_bar, f_bar)" in out.split("for i")[1]      # in the loop x_bar is not zero


def test_reach_is_the_closure_of_a_dependence_graph():
    from srcad.dataflow import reach
    edges = {"x": ["a"], "a": ["b", "c"], "c": ["a"], "z": ["x"]}
    assert reach({"x"}, lambda n: edges.get(n, ())) == {"x", "a", "b", "c"}
    assert reach(set(), lambda n: edges.get(n, ())) == set()


def test_activity_and_usefulness_through_the_framework():
    from srcad.frontend.analyze import Analysis
    from srcad.transform.pipeline import prepare
    parsed, fn, normalizer = prepare(_activity_example)
    an = Analysis(fn, parsed, normalizer.locals, ["x"])
    assert {"x", "y", "z"} <= an.active and "k" not in an.active and "n" not in an.active
    assert {"z", "y", "x"} <= an.useful and "unused" not in an.useful


def _activity_example(x, n):
    y = x * 2.0
    k = n + 1
    unused = y * 3.0
    z = y * k
    return z


def test_fixpoint_meets_each_step_until_nothing_moves():
    from srcad.dataflow import fixpoint
    # names made live by a loop body that reads, in its next iteration, what a later statement
    # made live: a -> b -> c, found one per step (by hand: three steps, then nothing new)
    edges = {"a": {"b"}, "b": {"c"}, "c": set()}
    seen = []

    def step(live):
        seen.append(set(live))
        return set().union(*(edges[n] for n in live)) | live
    assert fixpoint({"a"}, step, lambda x, y: x | y) == {"a", "b", "c"}
    assert seen == [{"a"}, {"a", "b"}, {"a", "b", "c"}]
    assert fixpoint(5, lambda x: max(x - 1, 2)) == 2        # no meet: the step's value itself
    with pytest.raises(RuntimeError):
        fixpoint(0, lambda x: x + 1, limit=10)
