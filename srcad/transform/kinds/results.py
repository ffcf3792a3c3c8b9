"""The kind of what a user function returns, for the kinds its call site knows for its arguments.

`y = g(a, b)` with g a user function: g is run through the front of the pipeline and the kinds
pass with the arguments' kinds (signature.call_kinds, as g's own derivation gets them), and the
kind g returns is brought back into the caller's terms: a shape token that is one of g's
parameters' becomes the caller's token of that argument, a token of dimension classes (the
call's signature's, lattice.dims_token) stays, any other token of g's is dropped (not sure in
the caller). A tuple returned keeps its elements' kinds, so `h, c = g(...)` knows both.

Depth-limited (a call chain deeper than _DEPTH, or a recursion, gives UNKNOWN) and memoised per
(function, argument kinds) for the duration of one outermost analysis. Anything that fails
(source not found, syntax srcad refuses) gives UNKNOWN: unknown stays general, never wrong."""
import ast
import inspect

from ...errors import SrcadError
from ...frontend.aliases import check_aliases
from ...frontend.analyze import Analysis
from ...frontend.fence import fence
from ...frontend.normalize import normalize
from ...frontend.parse import parse_function
from ..compile import is_generated
from .lattice import UNKNOWN, Kind, is_dims
from .signature import call_kinds

_DEPTH = 4
_active: list = []      # the (function, key) pairs being analysed, outermost first
_memo: dict = {}        # (function, key) -> returned Kind, while an outermost analysis runs


def returned_kind(Kinds, func, call, atom, env) -> Kind:
    """The kind of func(call's arguments) in the caller's terms (atom(node, env): an argument's kind;
    Kinds: the kinds pass's class, analysis.py, which calls this)."""
    try:
        sig = inspect.signature(func)
        b = sig.bind(*call.args, **{k.arg: k.value for k in call.keywords if k.arg is not None})
    except (TypeError, ValueError):
        return UNKNOWN
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords) or \
            any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
        return UNKNOWN
    params = [p for p in sig.parameters if p in b.arguments]
    kinds = [atom(b.arguments[p], env) for p in params]
    key = call_kinds(params, kinds)
    if key is None:
        return UNKNOWN
    back = {}       # the callee's parameter token -> the caller's token of its argument
    for p, k in zip(params, kinds):
        if k.shape not in (None, ()) and dict(key)[p].shape == ("param", p):
            back[("param", p)] = k.shape
    memo_key = (func, key)
    if memo_key in _memo:
        return _outward(_memo[memo_key], back)
    if memo_key in _active or len(_active) >= _DEPTH:
        return UNKNOWN
    _active.append(memo_key)
    try:
        kind = _analyse(Kinds, func, dict(key))
    finally:
        _active.pop()
        if not _active:
            _memo.clear()
    if _active:
        _memo[memo_key] = kind
    return _outward(kind, back)


def _analyse(Kinds, func, params):
    try:
        parsed = parse_function(func)
        fence(parsed)
        if not is_generated(parsed.func):
            check_aliases(parsed)
        fn, normalizer = normalize(parsed)
        an = Analysis(fn, parsed, normalizer.locals, [])
        kinds = Kinds(fn, an, params)
    except (SrcadError, OSError, TypeError, ValueError, SyntaxError):
        return UNKNOWN
    rets = [st for st in ast.walk(fn) if isinstance(st, ast.Return)]
    if len(rets) != 1 or rets[0] is not fn.body[-1] or not isinstance(rets[0].value, ast.Name):
        return UNKNOWN      # one return, at the end, of a name (the normalized form)
    return kinds.exit_of_body(rets[0].value.id)


def _outward(k, back):
    """k with the callee's shape tokens in the caller's terms (see the module docstring)."""
    if k is None or k.cat is None:
        return k
    shape = k.shape if k.shape in (None, ()) or is_dims(k.shape) else back.get(k.shape)
    item = _outward(k.item, back) if k.item is not None else None
    elts = tuple(_outward(e, back) for e in k.elts) if k.elts is not None else None
    return Kind(k.cat, k.dtype, k.ndim, shape, item, elts, k.dims)     # (dimension classes: the call's own)
