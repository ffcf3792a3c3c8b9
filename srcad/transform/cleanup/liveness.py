"""liveness: which names are live after each statement, over branches and loops (a name read
in a later iteration is live at the loop's end); live sets are bit masks over the function's
names. Strong liveness: a dead assignment that will go does not make what it reads live."""
import ast

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
        self._live_block(self.fn.body, 0, None)

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

    def _live_block(self, block, out, loop):
        """Names live before block, given those live after it; records live_after per statement.
        loop = (live at the enclosing loop's head, live after the loop) for continue / break."""
        live = out
        for st in reversed(block):
            self.live_after[id(st)] = live
            live = self._live_stmt(st, live, loop)
        return live

    def _live_stmt(self, st, out, loop):
        if is_comment(st):
            return out
        if isinstance(st, ast.If):
            return (self._live_block(st.body, out, loop) | self._live_block(st.orelse, out, loop)
                    | self._uses(st.test))
        if isinstance(st, (ast.For, ast.While)):
            after_else = self._live_block(st.orelse, out, loop)
            head = 0
            while True:
                inner = self._live_block(st.body, head, (head, out))
                if isinstance(st, ast.For):
                    new = after_else | (inner & ~self._kills(st)) | self._uses(st.target)
                else:
                    new = after_else | inner | self._uses(st.test)
                if new == head:
                    break
                head = new
            return head | (self._uses(st.iter) if isinstance(st, ast.For) else 0)
        if isinstance(st, ast.Break):
            return loop[1] if loop else out
        if isinstance(st, ast.Continue):
            return loop[0] if loop else out
        if isinstance(st, (ast.Return, ast.Raise)):
            return self._uses(st)
        if isinstance(st, ast.FunctionDef):
            header = self._mask(_loads_in_list(st.decorator_list + st.args.defaults
                                               + [d for d in st.args.kw_defaults if d]))
            return (out & ~self._bit(st.name)) | header | self._mask(self.pinned)
        kills = self._kills(st)
        if not out & kills and isinstance(st, ast.Assign) and self._droppable(st):
            return out      # dead and going: what it reads is not live on its account (strong liveness)
        return (out & ~kills) | self._uses(st)
