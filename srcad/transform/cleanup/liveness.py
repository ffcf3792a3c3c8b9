"""liveness: which names are live after each statement, over branches and loops (a name read
in a later iteration is live at the loop's end); live sets are bit masks over the function's
names. Strong liveness: a dead assignment that will go does not make what it reads live."""
import ast

from ...dataflow import Dataflow
from ...syntax import is_comment
from .nodes import _blocks, _loads_in_list, _scan, _target_names


class Liveness:
    """Backward liveness over the function (mixed into Cleanup; `live_after` per statement)."""

    # Live sets are bit masks over the function's names (one bit per name): the fixed points of
    # nested loops revisit statements several times, and int operations keep that cheap.
    def _mentions(self, st):
        """(every name st reads or binds, whether st holds a jump or a nested scope), memoised
        for one phase that renames nothing."""
        got = self._mention_memo.get(id(st))
        if got is None:
            if isinstance(st, (ast.If, ast.For, ast.While)):       # from its parts: linear, not per level
                names, odd = set(), False
                for part in ([st.target, st.iter] if isinstance(st, ast.For) else [st.test]):
                    loads, stores, o = _scan(part)
                    names |= loads | stores
                    odd |= o
                for sub in _blocks(st):
                    for child in sub:
                        n, o = self._mentions(child)
                        names |= n
                        odd |= o
                got = (frozenset(names), odd)
            else:
                loads, stores, odd = _scan(st)
                got = (frozenset(loads | stores), odd)
            self._mention_memo[id(st)] = got
        return got

    def _bit(self, name):
        b = self._bits.get(name)
        if b is None:
            b = self._bits[name] = 1 << len(self._bits)
        return b

    def _mask(self, names):
        m = 0
        for n in names:
            m |= self._bit(n)
        return m

    def _is_live(self, name, st):
        """Is name live after statement st (by the last liveness run; unknown: live)?"""
        return bool(self.live_after.get(id(st), -1) & self._bit(name))

    def _liveness(self):
        self.live_after = {}
        self._lv_memo = {}
        _Live(self).solve(self.fn.body, 0)

    def _uses(self, node):
        got = self._lv_memo.get(id(node))
        if got is None:
            loads = _scan(node)[0]
            if isinstance(node, ast.AugAssign):     # `x += e` reads x too (its Name is a Store)
                loads |= _target_names(node.target)
            got = self._lv_memo[id(node)] = self._mask(loads)
        return got

    def _kills(self, st):
        key = ("kill", id(st))
        got = self._lv_memo.get(key)
        if got is None:
            names = frozenset()
            if isinstance(st, ast.Assign):
                names = frozenset().union(*(_target_names(t) for t in st.targets))
            elif isinstance(st, ast.AnnAssign) and st.value is not None:
                names = _target_names(st.target)
            elif isinstance(st, ast.For):
                names = _target_names(st.target)
            got = self._lv_memo[key] = self._mask(names)
        return got


class _Live(Dataflow):
    """Backward liveness (srcad/dataflow.py): a bit mask of the names live after a point; meet
    is the union. Records `live_after` of every statement on the Cleanup it runs for."""
    forward = False
    bottom = 0

    def __init__(self, c):
        self.c = c

    def meet(self, a, b):
        return a | b

    def at(self, st, live):
        self.c.live_after[id(st)] = live

    def test(self, e, live):
        return live | self.c._uses(e)

    def target(self, st, live):
        return (live & ~self.c._kills(st)) | self.c._uses(st.target)

    def exit(self, st, live):
        return self.c._uses(st)

    def transfer(self, st, out):
        c = self.c
        if is_comment(st):
            return out
        if isinstance(st, ast.FunctionDef):
            header = c._mask(_loads_in_list(st.decorator_list + st.args.defaults
                                            + [d for d in st.args.kw_defaults if d]))
            return (out & ~c._bit(st.name)) | header | c._mask(c.pinned)
        kills = c._kills(st)
        if not out & kills and isinstance(st, ast.Assign) and c._droppable(st):
            return out      # dead and going: what it reads is not live on its account (strong liveness)
        return (out & ~kills) | c._uses(st)
