"""The alias pass over one function (`_Aliases`), and summaries of the user functions it calls
(what a callee does to its arguments' objects, by the same analysis)."""
import ast
import inspect
import types
from typing import TYPE_CHECKING

from ...dataflow import Dataflow
from ...errors import SrcadError
from ..inplace import desugar_inplace
from ..parse import parse_function
from .domain import Summary, VIEW, WHOLE, _State
from .expressions import Expressions
from .messages import Messages
from .statements import Statements
from .writes import Writes

if TYPE_CHECKING:
    from ..parsed import Parsed


_SUMMARIES = {}
_IN_PROGRESS = set()


class _Aliases(Messages, Expressions, Writes, Statements, Dataflow):
    """The alias pass (see the module docstring): a flow-sensitive may-alias analysis.

    Input: a function's syntax tree after `desugar_inplace` (in-place results are subscript writes).
    Output (attributes, read by `check_aliases`): `after` (names to rebind after a write),
    `guards` (run-time checks before `t op= v`), `param_writes`, `global_writes`, `returns`.
    Invariant: the tree is not changed here; every write another live name may see is either
    resolved (rebinding, guard) or raised as UnsupportedSyntaxError at the user's line."""


    def __init__(self, parsed: "Parsed", fn: ast.FunctionDef, params, strict: bool = True) -> None:
        self.parsed, self.fn, self.strict = parsed, fn, strict
        self.params = list(params)
        self.locals = set(self.params)
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.locals.add(node.id)
            elif isinstance(node, ast.arg):
                self.locals.add(node.arg)
            elif isinstance(node, ast.FunctionDef) and node is not fn:
                self.locals.add(node.name)
        self.loaded = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        self.after = {}             # id(statement) -> [(name to rebind, guarded)]
        self.param_writes = {}      # parameter -> (node, construct, only if an array: `p += v`)
        self.returns = set()
        self.global_writes = set()  # (line, name written through)
        self.nested = {}            # nested def name -> (captured names, Summary)
        self.current = None         # the statement being analysed
        self.containers = set()     # sites that make lists, tuples, dicts, sets
        self.guards = {}            # id(statement) -> (name, construct, hint, statement): run-time checks

    def run(self) -> "_Aliases":
        self.nested_defs = {}
        S = _State()
        for p in self.params:
            S.bind(p, frozenset({(("param", p), WHOLE)}))
        self.solve(self.fn.body, S)
        return self

    def summary(self, func) -> Summary:
        """What the user function `func`, called here, does to its arguments' objects."""
        return summary_of(func)

    def summarize(self, fn: ast.FunctionDef, params) -> Summary:
        """The summary of a function defined inside the one analysed (its captured names as parameters)."""
        return _summarize(self.parsed, fn, params)


def _summarize(parsed, fn, params):
    a = _Aliases(parsed, fn, params, strict=False)
    try:
        a.run()
    except SrcadError:
        return Summary({p: VIEW for p in params}, {})
    returns = {}
    for b, k in a.returns:
        if b[0] == "param":
            returns[b[1]] = WHOLE if k == WHOLE and returns.get(b[1], WHOLE) == WHOLE else VIEW
    return Summary(returns, a.param_writes)


def summary_of(func: types.FunctionType) -> Summary:
    """What a user function does to its arguments' objects (cached per code object)."""
    key = getattr(func, "__code__", func)
    if key in _SUMMARIES:
        return _SUMMARIES[key]
    if key in _IN_PROGRESS:      # recursion: the result may be any argument, no write known yet
        params = list(inspect.signature(func).parameters)
        return Summary({p: VIEW for p in params}, {})
    _IN_PROGRESS.add(key)
    try:
        parsed = parse_function(func)
        fn = parsed.tree
        params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
        desugar_inplace(parsed, fn)
        out = _summarize(parsed, fn, params)
    except (SrcadError, TypeError, ValueError, OSError):
        out = Summary({}, {})
    finally:
        _IN_PROGRESS.discard(key)
    _SUMMARIES[key] = out
    return out
