"""cleanup: the generated function tidied the way a person would write it, after each mode.

Reverse mode, forward mode and the checkpointed adjoint write their code one user statement at a
time, without looking around: a seed copied into a fresh name, a flag of a `continue` that is set
but never read, a zero that the first accumulation overwrites, an `else:` left empty. This pass
runs on the finished function (just before it is emitted as text) and rewrites, until nothing
changes:

fold        literal arithmetic (`2 * 0.5` -> `1.0`, `not True` -> `False`), `if <literal>:`
copies      `a = b` followed by reads of `a` -> reads of `b`, while neither is rebound
coalesce    `t = e; ...; x = t` (t read nowhere else) -> `x = e` (forward mode's `x_new`)
zeros       `x_bar = 0.0` then `x_bar = rt.add(x_bar, e)` in the same block -> `x_bar = e`
dead code   assignments to names not live afterwards whose value has no effect (liveness over
            branches and loops: a name read in a later iteration is live at the loop's end)
branches    no empty `else`, no `if` whose branches are both empty, no loop with an empty body
"""
import ast
import builtins

from ..rules.registry import HelperFacts, fact_of_chain
from ..syntax import is_comment

# what calls do (in place, pure): declared in the registry (rules/runtime_rules.py, numpy_rules.py)
# runtime helpers that update their first argument in place when only the caller's variable holds
# it (srcad/runtime: add, add_at, zero_at check sys.getrefcount): the argument is consumed there
_CONSUMING = HelperFacts("consumes")

_UNSUPPORTED = (ast.Try, ast.With, ast.AsyncWith, ast.Global, ast.Nonlocal, ast.NamedExpr, ast.ClassDef,
                ast.AsyncFunctionDef, ast.Delete, ast.Yield, ast.YieldFrom, ast.Await, ast.Match,
                ast.AsyncFor, ast.Import, ast.ImportFrom) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
_UNSUPPORTED_SET = frozenset(_UNSUPPORTED)
_NESTED_SCOPES = frozenset({ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp})
_SCOPES = (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPES_SET = frozenset(_SCOPES)
_ODD = frozenset({ast.Break, ast.Continue, ast.Return, ast.Raise, *_SCOPES})
_FOLD = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
         ast.Div: lambda a, b: a / b}
_NUM = (int, float)


def cleanup(fn: ast.FunctionDef, primal_ran: bool = False) -> ast.FunctionDef:
    """Clean the generated function fn in place (and the functions nested in it); returns fn."""
    return Cleanup(fn, primal_ran).run()


class Cleanup:
    """The cleanup pass over one generated function.

    Input: a generated `ast.FunctionDef` (the adjoint, the tangent, or a checkpointed adjoint with
    its nested step functions), whose line comments are `templates.comment` statements.
    `primal_ran` says whether the function's primal part has already run elsewhere on the same
    arguments (a plain `_vjp`: srcad.vjp runs f first; a callee's adjoint: the caller's primal
    sweep called it); only then may a dead statement of the primal part that could raise (an
    operation on the user's values) be dropped. Statements of the adjoint part (after the first
    top-level comment that begins with "adjoint") are derived from values that exist, and go when
    dead either way.

    Output: the same FunctionDef, rewritten in place (see the module docstring for the rewrites).

    Invariants: every path computes the same values for every name read afterwards, the returned
    value included; every effect stays, in order (tape pushes and pops, index writes, list
    appends, calls srcad does not know to be pure, runtime helpers that update in place); every
    line comment stays where it was (they place errors on the user's lines); a block is never
    left without a statement. A function using constructs the pass does not model (try, with,
    global, nonlocal, `:=`, classes) is left unchanged.
    """

    MAX_ROUNDS = 8

    def __init__(self, fn: ast.FunctionDef, primal_ran: bool = False) -> None:
        self.fn = fn
        self.primal_ran = primal_ran
        self.params = {a.arg for a in _all_args(fn.args)}
        self.local_names = set(self.params)     # (run adds every name fn binds)
        self.pinned = set()          # names read by nested scopes: always live, never renamed
        self.adjoint = set()         # ids of statements in the adjoint part
        self.live_after = {}         # id(statement) -> bit mask of the names live after it
        self._bits = {}              # name -> its bit in live masks
        self._mention_memo = {}

    # -- driver --------------------------------------------------------------------------------
    def run(self) -> ast.FunctionDef:
        kinds, self.consumed, defs = set(), set(), 0
        for n in ast.walk(self.fn):        # one walk: constructs, bound names, in-place helpers' arguments
            t = type(n)
            kinds.add(t)
            defs += t is ast.FunctionDef
            if t is ast.Name and type(n.ctx) is not ast.Load:
                self.local_names.add(n.id)
            elif t is ast.Call and _rt_helper(n) in _CONSUMING and n.args and isinstance(n.args[0], ast.Name):
                self.consumed.add(n.args[0].id)
        if kinds & _UNSUPPORTED_SET:
            return self.fn
        for node in self.fn.body:
            if isinstance(node, ast.FunctionDef):
                Cleanup(node, self.primal_ran).run()
        if kinds & _NESTED_SCOPES or defs > 1:
            self.pinned = _nested_reads(self.fn)
        self._mark_adjoint()
        for _ in range(self.MAX_ROUNDS):
            changed = self._fold_block(self.fn.body) > 0
            self.renamed = []
            if self._any_copy(self.fn.body):       # (most rounds after the first have none left)
                self._liveness()
                changed |= self._coalesce(self.fn.body)
                changed |= self._copies(self.fn.body)
            changed |= self._zeros()
            self._liveness()
            changed |= self._keep_useful_renames()
            # undone renames are reached by their copy only, which this liveness already holds
            # live: it stays a superset of the truth, safe for removing dead code
            changed |= self._dead(self.fn.body)
            changed |= self._branches(self.fn.body)
            if not changed:
                break
        _fill(self.fn.body)
        return self.fn

    def _any_copy(self, block):
        for st in block:
            if _copy_pair(st) is not None or any(self._any_copy(sub) for sub in _blocks(st)):
                return True
        return False

    def _mark_adjoint(self):
        start = next((k for k, st in enumerate(self.fn.body) if is_comment(st)
                      and _comment_text(st).startswith("adjoint")), len(self.fn.body))
        stack = list(self.fn.body[start:])
        while stack:
            st = stack.pop()
            self.adjoint.add(id(st))
            if not isinstance(st, ast.FunctionDef):
                for sub in _blocks(st):
                    stack.extend(sub)

    # -- constant folding ----------------------------------------------------------------------
    def _fold_block(self, block):
        folder = _Folder()
        out = []
        for st in block:
            for field in ("value", "test", "iter"):
                e = getattr(st, field, None)
                if isinstance(e, ast.expr) and not isinstance(e, (ast.Name, ast.Constant)) and _foldable(e):
                    setattr(st, field, folder.visit(e))
            if isinstance(st, ast.Assign):      # index expressions of targets
                for t in st.targets:
                    if not isinstance(t, ast.Name) and _foldable(t):
                        folder.visit(t)
            for sub in _blocks(st):
                folder.folds += self._fold_block(sub)
            if isinstance(st, ast.If) and isinstance(st.test, ast.Constant):
                out += st.body if st.test.value else st.orelse
                folder.folds += 1
                continue
            if isinstance(st, ast.While) and isinstance(st.test, ast.Constant) and not st.test.value:
                out += st.orelse
                folder.folds += 1
                continue
            out.append(st)
        block[:] = out
        return folder.folds

    # -- copy propagation ----------------------------------------------------------------------
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

    # -- coalescing ----------------------------------------------------------------------------
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

    # -- zero adjoints ---------------------------------------------------------------------------
    def _zeros(self):
        """`x = rt.add(x, e)` where x certainly holds a literal zero -> `x = e` (rt.add of a zero
        returns its other argument itself). "Certainly" is a forward must-analysis over branches
        and loops: a zero set before a loop still holds at `rt.add` in the body only if every
        iteration sets it back to zero before the next one (else the first write must dominate)."""
        self._zero_hits = {}
        self._zflow(self.fn.body, frozenset(), None)
        changed = False
        for st, hit in self._zero_hits.values():
            if hit:
                st.value = st.value.args[1]
                changed = True
        return changed

    def _zflow(self, block, zeros, loop):
        """Names holding a literal zero after block (None: the end is not reached)."""
        for st in block:
            if zeros is None:
                return None
            zeros = self._zstmt(st, zeros, loop)
        return zeros

    def _zstmt(self, st, zeros, loop):
        if is_comment(st):
            return zeros
        if isinstance(st, ast.If):
            return _meet(self._zflow(st.body, zeros, loop), self._zflow(st.orelse, zeros, loop))
        if isinstance(st, (ast.For, ast.While)):
            head = zeros
            target = _target_names(st.target) if isinstance(st, ast.For) else frozenset()
            while True:
                breaks, conts = [], []
                end = self._zflow(st.body, head - target, (breaks, conts))
                new = zeros
                for z in [end] + conts:
                    new = _meet(new, z)
                if new == head:
                    break
                head = new
            out = self._zflow(st.orelse, head, loop)
            for z in breaks:
                out = _meet(out, z)
            return out
        if isinstance(st, ast.Break):
            loop[0].append(zeros)
            return None
        if isinstance(st, ast.Continue):
            loop[1].append(zeros)
            return None
        if isinstance(st, (ast.Return, ast.Raise)):
            return None
        if isinstance(st, ast.FunctionDef):
            return zeros - {st.name}
        x = _simple_target(st)
        if x is not None and _add_to(st, x) is not None:
            self._zero_hits[id(st)] = (st, x in zeros and x not in self.pinned)
        if x is not None and _is_zero_literal(st.value):
            return zeros | {x}
        return zeros - _scan(st)[1]

    # -- liveness --------------------------------------------------------------------------------
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

    # -- dead code ---------------------------------------------------------------------------------
    def _dead(self, block):
        changed = False
        out = []
        for st in block:
            for sub in _blocks(st):
                changed |= self._dead(sub)
            if isinstance(st, ast.Assign) and self._removable(st):
                changed = True
                continue
            out.append(st)
        block[:] = out
        return changed

    def _removable(self, st):
        """A dead statement that may go: st is dropped when none of its names is live after it."""
        pair = _copy_pair(st)
        if pair and pair[0] == pair[1]:
            return True         # `x = x`: a copy that reached its own source
        return self._droppable(st) and not any(self._is_live(n, st) for n in _assigned(st))

    def _droppable(self, st):
        """Could st go if its names were dead: an assignment to names only, of a value without
        effects (that could raise only where the primal already ran, or in the adjoint part)?"""
        key = ("drop", id(st))
        got = self._lv_memo.get(key)
        if got is None:
            got = self._lv_memo[key] = self._droppable_now(st)
        return got

    def _droppable_now(self, st):
        if not isinstance(st, ast.Assign) or not all(_plain_target(t) for t in st.targets):
            return False
        if _assigned(st) & self.pinned or not _pure(st.value, self.local_names):
            return False
        if isinstance(st.value, ast.Name) and st.value.id in self.consumed:
            return False        # the copy's reference keeps an in-place helper from writing its source
        return _cannot_raise(st.value) or self.primal_ran or id(st) in self.adjoint

    def _replayed(self, st):
        """Did the values st tests already pass the same test (a primal that ran, the adjoint)?"""
        return self.primal_ran or id(st) in self.adjoint

    # -- empty branches and loops ------------------------------------------------------------------
    def _branches(self, block):
        changed = False
        out = []
        for st in block:
            for sub in _blocks(st):
                changed |= self._branches(sub)
            if isinstance(st, ast.If):
                body_empty, else_empty = _empty(st.body), _empty(st.orelse)
                if st.orelse and else_empty:       # no `else: pass`
                    st.orelse = []
                    changed = True
                # (`if c:` asks bool(c), which raises for an array: on the user's values only
                # where the primal ran already, or in the adjoint part, which replays the test)
                if body_empty and else_empty and _cannot_raise(st.test) and self._replayed(st):
                    out += [s for s in st.body if is_comment(s)]
                    changed = True
                    continue
                if body_empty and not else_empty:     # the comments of the empty branch go above
                    out += [s for s in st.body if is_comment(s)]
                    st.test = _negate(st.test)
                    st.body, st.orelse = st.orelse, []
                    changed = True
            elif isinstance(st, ast.For) and _empty(st.body) and not st.orelse and self._replayed(st) \
                    and _pure(st.iter, self.local_names) \
                    and _is_range(st.iter) and not any(self._is_live(n, st) for n in _target_names(st.target)) \
                    and _plain_target(st.target):
                out += [s for s in st.body if is_comment(s)]
                changed = True
                continue
            out.append(st)
        block[:] = out
        return changed


# ---- helpers on nodes ----------------------------------------------------------------------------
def _all_args(args):
    out = list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)
    out += [a for a in (args.vararg, args.kwarg) if a is not None]
    return out


def _comment_text(st):
    return st.value.value.split("\x00")[-1]


def _blocks(st):
    """The statement lists nested directly in st (a nested function's body is its own scope)."""
    if isinstance(st, ast.FunctionDef):
        return []
    return [getattr(st, f) for f in ("body", "orelse") if isinstance(getattr(st, f, None), list)]


def _empty(block):
    return all(is_comment(s) or isinstance(s, ast.Pass) for s in block)


def _fill(block, required=True):
    """Drop a `pass` next to real statements and give a block of comments only a `pass` (an
    empty `else` stays empty: no `else: pass`)."""
    for st in block:
        if isinstance(st, ast.FunctionDef):
            continue
        _fill(st.body) if isinstance(getattr(st, "body", None), list) else None
        if isinstance(getattr(st, "orelse", None), list):
            _fill(st.orelse, required=False)
    # a comment right below the same comment (the lines between them went) is said once
    block[:] = [s for k, s in enumerate(block) if not (k and is_comment(s) and is_comment(block[k - 1])
                                                     and s.value.value == block[k - 1].value.value)]
    real = [s for s in block if not (is_comment(s) or isinstance(s, ast.Pass))]
    if real:
        block[:] = [s for s in block if not isinstance(s, ast.Pass)]
    elif block and not any(isinstance(s, ast.Pass) for s in block) or required and not block:
        block.append(ast.Pass())


def _scan(node):
    """(names read, names bound, whether node holds a jump or a nested scope) anywhere in node:
    one walk, faster than ast.walk."""
    loads, stores = set(), set()
    odd = False
    stack = [node]
    name, load = ast.Name, ast.Load
    while stack:
        n = stack.pop()
        t = type(n)
        if t is name:
            (loads if type(n.ctx) is load else stores).add(n.id)
            continue
        if t in _ODD:
            odd = True
        for f in n._fields:
            v = getattr(n, f, None)
            if type(v) is list:
                stack.extend(x for x in v if isinstance(x, ast.AST))
            elif isinstance(v, ast.AST):
                stack.append(v)
    return loads, stores, odd


def _loads_in(node):
    """Names read in node (any depth; a nested scope's reads count as reads here)."""
    return frozenset(_scan(node)[0])


def _loads_in_list(nodes):
    out = frozenset()
    for n in nodes:
        out |= _loads_in(n)
    return out


def _stores_in(stmts):
    """Names bound by the statements (any depth, not inside nested scopes or comprehensions)."""
    out = set()

    def visit(node):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        if isinstance(node, ast.FunctionDef):
            out.add(node.name)
            return
        if isinstance(node, _SCOPES):
            return
        for child in ast.iter_child_nodes(node):
            visit(child)
    for st in stmts:
        visit(st)
    return frozenset(out)


def _nested_reads(fn):
    """Names a nested scope may read from fn's (its free names; a comprehension's or lambda's
    reads all count), which stay as they are."""
    out = set()
    for node in ast.walk(fn):
        if node is fn:
            continue
        if isinstance(node, ast.FunctionDef):
            own = {a.arg for a in _all_args(node.args)} | _stores_in(node.body)
            out |= _loads_in(node) - own
        elif isinstance(node, _SCOPES):
            out |= _loads_in(node)
    return out


def _target_names(t):
    if isinstance(t, ast.Name):
        return frozenset({t.id})
    if isinstance(t, (ast.Tuple, ast.List)):
        return frozenset().union(*(_target_names(e) for e in t.elts)) if t.elts else frozenset()
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    return frozenset()


def _assigned(st):
    return frozenset().union(*(_target_names(t) for t in st.targets))


def _plain_target(t):
    """A target that only binds names (no index or attribute write)."""
    if isinstance(t, ast.Name):
        return True
    if isinstance(t, (ast.Tuple, ast.List)):
        return all(_plain_target(e) for e in t.elts)
    if isinstance(t, ast.Starred):
        return _plain_target(t.value)
    return False


def _simple_target(st):
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
        return st.targets[0].id
    return None


def _copy_pair(st):
    """(a, b) for a statement `a = b` between two names."""
    a = _simple_target(st)
    if a is not None and isinstance(st.value, ast.Name):
        return a, st.value.id
    return None




def _rt_helper(call):
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "rt":
        return f.attr
    return None


def _consumes(node, names):
    """Does node pass one of names to a runtime helper that may update it in place?"""
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and _rt_helper(n) in _CONSUMING and n.args:
            first = n.args[0]
            if isinstance(first, ast.Name) and first.id in names:
                return True
    return False


class _Facts:
    """A statement's reads, the names it binds, whether it holds a nested scope, and the names it
    may write in place or hand to an in-place helper (see _mutates and _consumes)."""
    __slots__ = ("loads", "binds", "scope", "touched")

    def __init__(self, st, local_names):
        loads, binds, touched = set(), set(), set()
        scope = False
        for n in ast.walk(st):
            t = type(n)
            if t is ast.Name:
                (loads if type(n.ctx) is ast.Load else binds).add(n.id)
            elif t in _SCOPES_SET:
                scope = True
            elif (t is ast.Subscript or t is ast.Attribute) and type(n.ctx) is not ast.Load:
                root = n.value
                while isinstance(root, (ast.Subscript, ast.Attribute)):
                    root = root.value
                if isinstance(root, ast.Name):
                    touched.add(root.id)
            elif t is ast.Call:
                helper = _rt_helper(n)
                if helper in _CONSUMING:
                    if n.args and isinstance(n.args[0], ast.Name):
                        touched.add(n.args[0].id)
                    continue
                chain = _attr_chain(n.func)
                if chain and len(chain) > 1:
                    touched.add(chain[0])           # a.method(...)
                if not _pure_call(n, local_names) and not (chain and len(chain) == 2 and chain[1] == "append"):
                    for arg in n.args + [k.value for k in n.keywords]:
                        touched |= {m.id for m in ast.walk(arg) if isinstance(m, ast.Name)}
        self.loads, self.binds, self.scope, self.touched = frozenset(loads), frozenset(binds), scope, frozenset(touched)


def _mutates(node, names, local_names):
    """May node change, in place, the object one of names holds (an index or attribute write,
    a method call on it, or a call srcad does not know to be pure that is handed it)? After
    `a = b`, Python sees one object; a transformation of this code (forward mode over an adjoint)
    sees two values, so a copy is never propagated across such a statement."""
    for n in ast.walk(node):
        if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            root = n.value
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in names:
                return True
        if isinstance(n, ast.Call):
            chain = _attr_chain(n.func)
            if chain and len(chain) > 1 and chain[0] in names:
                return True         # a.method(...)
            if _rt_helper(n) in _CONSUMING:
                continue            # they write their first argument only (see _consumes)
            if not _pure_call(n, local_names):
                receiver_only = chain and len(chain) == 2 and chain[1] == "append"
                if not receiver_only and any(isinstance(m, ast.Name) and m.id in names
                                             for arg in n.args + [k.value for k in n.keywords]
                                             for m in ast.walk(arg)):
                    return True
    return False


def _foldable(e):
    """Does e hold an operator or conditional applied to literals only (cheap test before folding)?"""
    stack = [e]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is ast.BinOp and type(n.left) is ast.Constant and type(n.right) is ast.Constant:
            return True
        if t is ast.UnaryOp and type(n.operand) is ast.Constant:
            return True
        if t is ast.BoolOp or t is ast.IfExp and type(n.test) is ast.Constant:
            return True
        if t is ast.Name or t is ast.Constant:
            continue
        for f in n._fields:
            v = getattr(n, f, None)
            if type(v) is list:
                stack.extend(x for x in v if isinstance(x, ast.AST))
            elif isinstance(v, ast.AST):
                stack.append(v)
    return False


def _meet(a, b):
    """Names zero on both paths (None: a path that does not arrive)."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _is_zero_literal(e):
    return isinstance(e, ast.Constant) and type(e.value) in _NUM and e.value == 0


def _add_to(st, x):
    """e when st is `x = rt.add(x, e)`, else None."""
    if _simple_target(st) != x or not isinstance(st.value, ast.Call) or _rt_helper(st.value) != "add":
        return None
    call = st.value
    if call.keywords or len(call.args) != 2 or not (isinstance(call.args[0], ast.Name) and call.args[0].id == x):
        return None
    e = call.args[1]
    return None if isinstance(e, ast.Starred) else e


def _is_range(e):
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
        if e.func.id == "range":
            return True
        if e.func.id == "reversed" and len(e.args) == 1:
            inner = e.args[0]
            if isinstance(inner, ast.Subscript):
                inner = inner.value
            return _is_range(inner)
    return False


def _negate(test):
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return ast.UnaryOp(ast.Not(), test)


def _cannot_raise(e):
    """Evaluating e cannot raise (names here are always bound: generated code binds before it reads)."""
    if isinstance(e, (ast.Constant, ast.Name)):
        return True
    if isinstance(e, (ast.Tuple, ast.List)):
        return all(_cannot_raise(x) for x in e.elts)
    return False


def _pure(e, local_names):
    """Evaluating e has no effect beyond its value (it may raise, on values that do not fit)."""
    for n in ast.walk(e):
        if isinstance(n, (ast.Lambda, ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)):
            return False
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return False
        if isinstance(n, ast.Call) and not _pure_call(n, local_names):
            return False
    return True


def _attr_chain(f):
    chain = []
    while isinstance(f, ast.Attribute):
        chain.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        chain.append(f.id)
        return chain[::-1]
    return None


def _pure_call(call, local_names):
    chain = _attr_chain(call.func)
    if chain is None or chain[0] in local_names:
        return False
    if any(k.arg == "out" or k.arg is None for k in call.keywords):
        return False
    root = chain[0]
    if len(chain) == 1:
        return fact_of_chain(builtins, chain, "pure")[-1:] == [True]
    if root == "rt":       # a helper declared pure (the module on the way has no fact)
        return fact_of_chain(_runtime(), chain[1:], "pure")[-1:] == [True]
    if root in ("np", "scipy"):      # pure unless declared otherwise, here or on the way
        return False not in fact_of_chain(_module(root), chain[1:], "pure")
    return False


def _runtime():
    from .. import runtime
    return runtime


def _module(root):
    import numpy
    import scipy
    return numpy if root == "np" else scipy


class _Folder(ast.NodeTransformer):
    """Literal arithmetic folded: numbers, `not`/`and`/`or` of literals, `x if True else y`;
    `folds` counts the rewrites."""

    def __init__(self):
        self.folds = 0

    def visit(self, node):
        new = super().visit(node)
        if new is not node:
            self.folds += 1
        return new

    def visit_BinOp(self, node):
        self.generic_visit(node)
        a, b = node.left, node.right
        if isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and type(a.value) in _NUM \
                and type(b.value) in _NUM and type(node.op) in _FOLD:
            if isinstance(node.op, ast.Div) and b.value == 0:
                return node
            return ast.Constant(_FOLD[type(node.op)](a.value, b.value))
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        v = node.operand
        if isinstance(v, ast.Constant):
            if isinstance(node.op, ast.Not) and type(v.value) in (bool, type(None)) + _NUM:
                return ast.Constant(not v.value)
            if isinstance(node.op, ast.USub) and type(v.value) in _NUM:
                return ast.Constant(-v.value)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if all(isinstance(v, ast.Constant) and type(v.value) in (bool, type(None)) for v in node.values):
            vals = [v.value for v in node.values]
            out = vals[0]
            for v in vals[1:]:
                out = (out and v) if isinstance(node.op, ast.And) else (out or v)
            return ast.Constant(out)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant) and type(node.test.value) in (bool, type(None)):
            return node.body if node.test.value else node.orelse
        return node

    def visit_Lambda(self, node):
        return node


def _fold(e):
    return _Folder().visit(e)
