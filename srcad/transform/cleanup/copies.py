"""copies: after `a = b`, reads of `a` become reads of `b` while neither is rebound or written in
place; coalesce: `t = e; ...; x = t` (t read nowhere else) -> `x = e`. A rename is kept only
where it leaves the copy dead (then the copy goes)."""
import ast

from ...syntax import is_comment
from .nodes import _Facts, _blocks, _copy_pair, _loads_in_list, _simple_target, _target_names


class Copies:
    """Copy propagation and coalescing (mixed into Cleanup; reads its liveness)."""

    def _any_copy(self, block):
        for st in block:
            if _copy_pair(st) is not None or any(self._any_copy(sub) for sub in _blocks(st)):
                return True
        return False

    def _copies(self, block, top=True):
        """Rename reads after each copy `a = b` (recorded in self.renamed, per copy); a copy
        that restates it (`b = a` or `a = b` again, neither rebound nor written in between) is a
        no-op and goes. True if one went."""
        removed = False
        if top:
            self._fact_memo = {}
        for st in block:
            for sub in _blocks(st):
                removed |= self._copies(sub, False)
        self._redundant = set()
        for k, st in enumerate(block):
            pair = _copy_pair(st)
            if pair is None:
                continue
            a, b = pair
            if a in self.pinned or b in self.pinned or a == b:
                continue
            self._current = []
            self._propagate(block, k, a, b)
            if self._current:
                self.renamed.append((st, a, self._current))
        if self._redundant:
            block[:] = [st for st in block if id(st) not in self._redundant]
            removed = True
        return removed

    def _keep_useful_renames(self):
        """Keep a copy's renames only where they leave its target dead (the copy then goes);
        else the reads go back to the copy's name (a reader keeps the name it had). Undoing is
        always sound: the copy stays, so its name still holds the value at each read."""
        kept = False
        for st, a, records in reversed(self.renamed):
            if self._is_live(a, st):
                for node, old in reversed(records):
                    node.id = old
            else:
                kept = True
        self.renamed = []
        return kept

    def _propagate(self, block, k, a, b):
        """Replace reads of a by b in the statements after block[k] (`a = b`), up to the first
        that rebinds a or b, or hands either to a helper that may update it in place."""
        changed = False
        ab = {a, b}
        for st in block[k + 1:]:
            if is_comment(st) or id(st) in self._redundant:
                continue
            pair = _copy_pair(st)
            if pair is not None and {pair[0], pair[1]} == ab:
                self._redundant.add(id(st))      # a and b hold one value already
                continue
            if isinstance(st, ast.FunctionDef) and st.name not in ab and not _loads_in_list(
                    st.decorator_list + st.args.defaults + [d for d in st.args.kw_defaults if d]):
                continue        # defined, not run: its free names are pinned, a and b are not
            facts = self._facts(st)
            if facts.scope or facts.touched & ab:
                return changed
            if isinstance(st, ast.AugAssign) and _target_names(st.target) & ab:
                return changed
            if isinstance(st, (ast.If, ast.For, ast.While)):
                if facts.binds & ab:
                    # only a for loop's iterable runs before anything in it rebinds a or b (an
                    # if's test would do too, but a while's test runs again after the body)
                    if isinstance(st, (ast.For, ast.If)):
                        changed |= self._rename_loads(st.iter if isinstance(st, ast.For) else st.test, a, b)
                    return changed
                changed |= self._rename_in(st, facts, a, b)
                continue
            changed |= self._rename_in(st, facts, a, b)
            if facts.binds & ab:
                return changed
        return changed

    def _facts(self, st):
        """What _propagate asks of a statement, from one walk, memoised for a _copies phase: a
        rename never changes them (a statement that writes or consumes a name is never renamed
        past), except its reads, which _rename_in keeps up to date."""
        got = self._fact_memo.get(id(st))
        if got is None:
            got = self._fact_memo[id(st)] = _Facts(st, self.local_names)
        return got

    def _rename_in(self, st, facts, a, b):
        if a not in facts.loads:
            return False
        changed = self._rename_loads(st, a, b)
        facts.loads = (facts.loads - {a}) | {b}
        return changed

    def _rename_loads(self, node, a, b):
        changed = False
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id == a:
                self._current.append((n, n.id))
                n.id = b
                changed = True
        return changed

    def _coalesce(self, block, top=True):
        """`t = e; ...; x = t` with t read by nothing else and x untouched in between -> `x = e`."""
        changed = False
        if top:
            self._mention_memo = {}
        for st in block:
            for sub in _blocks(st):
                changed |= self._coalesce(sub, False)
        made = {}       # temporary -> index of the statement that assigns it (simple `t = e`)
        drop = set()
        for j, st in enumerate(block):
            pair = _copy_pair(st)
            if pair is not None and pair[1] in made and pair[0] != pair[1]:
                x, t = pair
                i = made[t]
                if self._coalescable(block, i, j, x, t):
                    block[i].targets = [ast.Name(id=x, ctx=ast.Store())]
                    # its memo named t: the enclosing statement's mentions, made from its
                    # children's after this block is done, must see x
                    self._mention_memo.pop(id(block[i]), None)
                    drop.add(j)
                    changed = True
                    made.pop(t)
                    continue
            for name in self._mentions(st)[0]:
                made.pop(name, None)
            target = _simple_target(st)
            if target is not None:
                made[target] = j
        if drop:
            block[:] = [st for j, st in enumerate(block) if j not in drop]
        return changed

    def _coalescable(self, block, i, j, x, t):
        if {x, t} & self.pinned or self._is_live(t, block[j]):
            return False
        # (e may read the old x: it is evaluated before x is bound)
        for st in block[i + 1:j]:
            if is_comment(st):
                continue
            names, jumps = self._mentions(st)
            if x in names or t in names or jumps:
                return False
        return True
