"""The cleanup driver: the rewrites of fold, copies, zeros and dead, in rounds until nothing
changes (see the package docstring)."""
import ast

from ...syntax import is_comment
from .breaks import Breaks
from .copies import Copies
from .dead import Dead
from .fold import Fold
from .liveness import Liveness
from .negs import Negs
from .pushes import Pushes
from .zeros import Zeros
from .nodes import _CONSUMING, _NESTED_SCOPES, _UNSUPPORTED_SET, _all_args, _blocks, _comment_text, _fill, _nested_reads, _rt_helper


def cleanup(fn: ast.FunctionDef, primal_ran: bool = False) -> ast.FunctionDef:
    """Clean the generated function fn in place (and the functions nested in it); returns fn."""
    return Cleanup(fn, primal_ran).run()


class Cleanup(Fold, Negs, Breaks, Pushes, Copies, Zeros, Liveness, Dead):
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
        self._breaks()
        self._pushes()
        for _ in range(self.MAX_ROUNDS):
            changed = self._negs()
            changed |= self._fold_block(self.fn.body) > 0
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
