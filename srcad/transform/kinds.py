"""kinds: what each value is, known before the code is written (abstract values).

Two pieces:

`signature(args, kwargs)` maps a call's actual arguments to a small hashable key: Python float /
int / bool, ndarray (dtype, ndim), NumPy scalar (dtype), each scipy.sparse class, a container's
type, or "other". It runs on every call of a derivative (the generated module is cached per
signature), so it only looks at types and two attributes of arrays.

`Kinds(fn, analysis, params)` is a pass over a normalized function: for every statement, the kind
of each local name just before it, and the kind of what the statement assigns. A kind says what
is sure about a value: its category (a Python number, a NumPy scalar, an ndarray, sparse, a
container), its dtype character, its number of dimensions, and a *shape token*: two values with
the same (non-None) token have the same shape whenever both exist. Parameters' arrays get the
token of their name; an operation derives its result's token from its operands' tokens (`x * 2.0`
has x's shape; `A @ x` has the token ("@", A's, x's)); a loop joins what each iteration brings
until nothing changes. What is not sure is None: unknown stays general, never wrong.

Input: a normalized function (one operation per statement, see frontend/normalize/), its
Analysis (the op of each statement), and the kinds of its parameters (from the signature; None
when there is no signature). Output: `before(st, name)`, `result(st)`, `exit(st)`. Invariant: a
kind is only ever an over-approximation (joins weaken, never strengthen).
"""
import ast
import builtins
from dataclasses import dataclass
from enum import StrEnum
from typing import Optional

import numpy as np
import scipy.sparse as sp

from ..rules.registry import facts


# ---- the signature (runs per call) -------------------------------------------------------------
_SIMPLE = {float: "float", int: "int", bool: "bool"}
_CONTAINERS = {tuple: "tuple", list: "list", dict: "dict"}


def _arg_key(a):
    t = type(a)
    if t is np.ndarray:
        return (a.dtype.char, a.ndim)
    k = _SIMPLE.get(t)
    if k is not None:
        return k
    k = _CONTAINERS.get(t)
    if k is not None:
        return k
    if isinstance(a, np.generic):
        return ("scalar", a.dtype.char)
    if sp.issparse(a):
        return t
    if isinstance(a, tuple):        # a namedtuple: its class
        return t
    return "other"


def signature(args, kwargs=None):
    """The abstract signature of a call: one key per argument (keywords sorted by name)."""
    return (tuple([_arg_key(a) for a in args]),
            tuple(sorted([(k, _arg_key(v)) for k, v in kwargs.items()])) if kwargs else ())


# ---- kinds ------------------------------------------------------------------------------------
class Cat(StrEnum):
    """A value's category (a str, so `k.cat == "array"` reads as before)."""
    PY = "py"               # a Python number
    NP = "np"               # a NumPy scalar (or a 0-d array)
    ARRAY = "array"
    SPARSE = "sparse"
    LIST = "list"
    TUPLE = "tuple"
    DICT = "dict"
    NOTHING = "nothing"     # the items of an empty list


@dataclass(frozen=True)
class Kind:
    """What is sure about one value; a field that is None is not sure (see the module docstring)."""
    cat: Optional[Cat] = None
    dtype: Optional[str] = None     # NumPy dtype character ('d' float64, 'f' float32, 'l' int, '?' bool)
    ndim: Optional[int] = None
    shape: object = None            # shape token: equal tokens, equal shapes; () for rank 0
    item: object = None             # a list's items: the join of their kinds (None: not known)

    def __post_init__(self):
        if self.cat is not None and type(self.cat) is not Cat:
            object.__setattr__(self, "cat", Cat(self.cat))     # a category that is none of Cat's: an error here

    @property
    def dense(self):
        return self.cat in ("py", "np", "array")

    @property
    def rank0(self):
        return self.dense and self.ndim == 0


UNKNOWN = Kind()
NOTHING = Kind("nothing")       # the items of an empty list
_UNDEF = object()        # not bound yet on this path
_PY = {"float": Kind("py", "d", 0, ()), "int": Kind("py", "l", 0, ()), "bool": Kind("py", "?", 0, ())}


def _scalar(cat, dtype):
    return Kind(cat, dtype, 0, ())


def param_kinds(func, sig):
    """Parameter name -> Kind for a call of func with abstract signature sig (None: all unknown)."""
    import inspect
    if sig is None:
        return {}
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return {}
    out = {}
    pos, kws = sig[0], dict(sig[1])
    k = 0
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            return {}
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and k < len(pos):
            out[p.name] = _of_key(pos[k], p.name)
            k += 1
        elif p.name in kws:
            out[p.name] = _of_key(kws[p.name], p.name)
        elif p.default is not p.empty:
            out[p.name] = _of_key(_arg_key(p.default), p.name)
    return out


def _of_key(key, name):
    if isinstance(key, str):
        return _PY.get(key, Kind(key if key in ("list", "tuple", "dict") else None))
    if isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], int):
        char, ndim = key
        if ndim == 0:
            return Kind("np", char, 0, ())
        return Kind("array", char, ndim, ("param", name))
    if isinstance(key, tuple) and key[0] == "scalar":
        return Kind("np", key[1], 0, ())
    if isinstance(key, type) and issubclass(key, (sp.sparray, sp.spmatrix)):
        return Kind("sparse", None, 2, None)
    return UNKNOWN


def join(a, b):
    """The least kind that both a and b are (an over-approximation)."""
    if a == b:
        return a
    if a is _UNDEF or b is _UNDEF:      # bound on one path only: nothing is sure
        return UNKNOWN
    if a is NOTHING or b is NOTHING:
        return b if a is NOTHING else a
    if a.cat == b.cat and a.cat in ("list", "tuple", "dict"):
        item = join(a.item, b.item) if a.item is not None and b.item is not None else None
        return Kind(a.cat, item=item if item != UNKNOWN else None)
    if not (a.dense and b.dense) or a.ndim is None or a.ndim != b.ndim:
        return UNKNOWN
    cat = a.cat if a.cat == b.cat else ("np" if a.ndim == 0 else None)
    if cat is None:
        return UNKNOWN
    return Kind(cat, a.dtype if a.dtype == b.dtype else None, a.ndim, a.shape if a.shape == b.shape else None)


def real(k):
    """Is every value of kind k a float64 number or array (or a list of such)?"""
    if k.cat == "list":
        return k.item is NOTHING or k.item is not None and real(k.item)
    return k.dense and k.dtype == "d"


def _join_env(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = join(out.get(k, _UNDEF), v)
    for k in a:
        if k not in b:
            out[k] = join(a[k], _UNDEF)
    return out


_REAL = ("d", "l", "?")


def _arith_dtype(a, b, op):
    if a.dtype in _REAL and b.dtype in _REAL:
        if "d" in (a.dtype, b.dtype) or isinstance(op, (ast.Div, ast.Pow)):
            return "d"
        if a.dtype == b.dtype == "l" and isinstance(op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
            return "l"
    if a.dtype == b.dtype and a.dtype in ("f", "d"):
        return a.dtype
    return None


def broadcast(a, b, op=None):
    """The kind of an elementwise binary operation's result."""
    if not (a.dense and b.dense) or a.ndim is None or b.ndim is None:
        return UNKNOWN
    dtype = _arith_dtype(a, b, op)
    if a.ndim == 0 and b.ndim == 0:
        return _scalar("py" if a.cat == b.cat == "py" else "np", dtype)
    if b.ndim == 0:
        shape = a.shape
    elif a.ndim == 0:
        shape = b.shape
    elif a.shape is not None and a.shape == b.shape:
        shape = a.shape
    elif a.shape is not None and b.shape is not None:
        shape = ("bc",) + tuple(sorted((a.shape, b.shape), key=repr))
    else:
        shape = None
    return Kind("array", dtype, max(a.ndim, b.ndim), shape)


def _matmul(a, b):
    if a.cat != "array" or b.cat != "array" or a.ndim is None or b.ndim is None:
        return UNKNOWN
    dtype = "d" if a.dtype == b.dtype == "d" else None
    if a.ndim == 1 and b.ndim == 1:
        return _scalar("np", dtype)
    if (a.ndim, b.ndim) in ((2, 1), (1, 2), (2, 2)):
        ndim = 1 if 1 in (a.ndim, b.ndim) else 2
        shape = ("@", a.shape, b.shape) if a.shape is not None and b.shape is not None else None
        return Kind("array", dtype, ndim, shape)
    return UNKNOWN


def _const(node):
    return isinstance(node, ast.Constant)


def _const_value(node, default):
    if node is None:
        return default
    return node.value if isinstance(node, ast.Constant) else _UNDEF


def _reduction(x, axis, keepdims):
    if x.cat != "array" or x.ndim is None or axis is _UNDEF or keepdims is _UNDEF:
        return UNKNOWN
    dtype = x.dtype if x.dtype in ("d", "f") else None
    if keepdims:
        return Kind("array", dtype, x.ndim, None)
    if axis is None:
        return _scalar("np", dtype)
    if isinstance(axis, int) and not isinstance(axis, bool) and x.ndim >= 1:
        if x.ndim == 1:
            return _scalar("np", dtype)
        shape = ("red", x.shape, axis % x.ndim) if x.shape is not None else None
        return Kind("array", dtype, x.ndim - 1, shape)
    return UNKNOWN


def _kind_fact(key):
    """The result kind the registry declares for a rule key (rules/numpy_rules.py), or None."""
    entry = facts(key)
    return entry.kind if entry is not None else None


class Kinds:
    """Kind inference over a normalized function (see the module docstring)."""

    def __init__(self, fn: ast.FunctionDef, analysis, params: dict):
        self.an = analysis
        self._before = {}       # id(stmt) -> env (name -> Kind) just before it
        self._result = {}       # id(stmt) -> Kind of the name it assigns
        self._exit = {}         # id(stmt) -> env just after a compound statement
        self.known = bool(params)
        env = {a.arg: params.get(a.arg, UNKNOWN) for a in fn.args.args + fn.args.kwonlyargs}
        for extra in (fn.args.vararg, fn.args.kwarg):
            if extra is not None:
                env[extra.arg] = UNKNOWN
        self._params = dict(env)
        self._targets = [st for st in ast.walk(fn) if isinstance(st, ast.Assign) and len(st.targets) == 1
                         and isinstance(st.targets[0], ast.Name)]
        self._seen = None
        self._end = self._block(fn.body, env)

    # -- queries -------------------------------------------------------------------------------
    def before(self, st, name) -> Kind:
        k = self._before.get(id(st), {}).get(name, UNKNOWN)
        return UNKNOWN if k is _UNDEF else k

    def result(self, st) -> Kind:
        return self._result.get(id(st), UNKNOWN)

    def exit(self, st, name) -> Kind:
        k = self._exit.get(id(st), {}).get(name, UNKNOWN)
        return UNKNOWN if k is _UNDEF else k

    def exit_of_body(self, name) -> Kind:
        """The kind of name at the end of the function (where it returns)."""
        k = self._end.get(name, UNKNOWN)
        return UNKNOWN if k is _UNDEF else k

    def assigned(self):
        """(name, kind) of every parameter and of every assignment to a name."""
        yield from self._params.items()
        for st in self._targets:
            yield st.targets[0].id, self.result(st)

    def names(self):
        """Every (statement id, name, kind) recorded: for tests and for whole-function checks."""
        for sid, env in self._before.items():
            for name, k in env.items():
                if k is not _UNDEF:
                    yield sid, name, k

    # -- the pass ------------------------------------------------------------------------------
    def _note(self, env):
        if self._seen is not None:
            for acc in self._seen:
                acc.append(dict(env))

    def _block(self, stmts, env):
        for st in stmts:
            env = self._stmt(st, env)
        self._note(env)
        return env

    def _stmt(self, st, env):
        self._before[id(st)] = dict(env)
        self._note(env)
        if isinstance(st, ast.If):
            a = self._block(st.body, dict(env))
            b = self._block(st.orelse, dict(env))
            out = _join_env(a, b)
            self._exit[id(st)] = out
            return out
        if isinstance(st, (ast.For, ast.While)):
            return self._loop(st, env)
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            t = st.targets[0]
            if isinstance(t, ast.Name):
                k = self._assign(st, env)
                if k.cat == "list" and not isinstance(st.value, ast.List):
                    k = Kind("list")        # another name for a list, or a list from elsewhere
                self._result[id(st)] = k
                env = self._escape(st, env, safe=self._reads_items(st))
                env[t.id] = k
                return env
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                # an item write keeps an array's kind (shape, dtype); a list's items join the value
                k = env.get(t.value.id, _UNDEF)
                if k is not _UNDEF and k.cat == "list":
                    env = dict(env)
                    env[t.value.id] = self._with_item(k, self._atom(st.value, env))
                return self._escape(st, env)
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and \
                isinstance(st.value.func, ast.Attribute) and isinstance(st.value.func.value, ast.Name) \
                and st.value.func.attr == "append" and len(st.value.args) == 1 and not st.value.keywords:
            name = st.value.func.value.id
            k = env.get(name, _UNDEF)
            if k is not _UNDEF and k.cat == "list":
                env = dict(env)
                env[name] = self._with_item(k, self._atom(st.value.args[0], env))
                return self._escape(st, env, keep=name)
        if isinstance(st, (ast.Expr, ast.Return, ast.Break, ast.Continue, ast.Pass)):
            return self._escape(st, env)
        env = dict(env)     # anything else that binds names: those names are unknown
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                env[n.id] = UNKNOWN
        return env

    @staticmethod
    def _with_item(k, v):
        v = Kind("list") if v.cat == "list" else v
        item = join(k.item, v) if k.item is not None else None
        return Kind("list", item=item if item not in (None, UNKNOWN) else None)

    def _reads_items(self, st):
        """Does this assignment only read its list operands' items (their kinds stay valid)?"""
        rhs = st.value
        if isinstance(rhs, ast.Subscript):
            return True
        if isinstance(rhs, ast.Call) and self.an is not None:
            op = self.an.op(st)
            key = op.rule.key if op.rule is not None else None
            entry = facts(key)
            return entry is not None and entry.reads_items
        return False

    @staticmethod
    def _escape(st, env, safe=False, keep=None):
        """A list that a statement may change other than by the kinds seen (an alias made, passed
        to a call): its items are no longer known."""
        if safe:
            return env
        out = None
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id != keep:
                k = env.get(n.id, _UNDEF)
                if k is not _UNDEF and k.cat == "list" and k.item is not None:
                    out = dict(env) if out is None else out
                    out[n.id] = Kind("list")
        return env if out is None else out

    def _loop(self, st, env):
        head = dict(env)
        target = st.target.id if isinstance(st, ast.For) and isinstance(st.target, ast.Name) else None
        is_range = isinstance(st, ast.For) and isinstance(st.iter, ast.Call) and \
            isinstance(st.iter.func, ast.Name) and st.iter.func.id == "range" and \
            self.an is not None and self._is_builtin_range(st.iter.func)
        for rounds in range(20):
            inner = dict(head)
            if target is not None:
                inner[target] = Kind("py", "l", 0, ()) if is_range else UNKNOWN
            outer_seen, acc = self._seen, []
            self._seen = (outer_seen or []) + [acc]
            self._block(st.body, inner)
            self._seen = outer_seen
            new = dict(head)
            for e in acc:
                new = _join_env(new, e)
            if rounds >= 10:        # no convergence in sight: whatever still moves is unknown
                new = {k: (v if head.get(k, _UNDEF) == v else UNKNOWN) for k, v in new.items()}
            if new == head:
                break
            head = new
        self._exit[id(st)] = head
        return head

    def _is_builtin_range(self, node):
        try:
            found, obj = self.an._resolve(node)
        except (AttributeError, TypeError, ValueError, LookupError, RuntimeError):
            return False        # an attribute of a user object that raises when read: not range
        return found and obj is builtins.range

    # -- one assignment ------------------------------------------------------------------------
    def _atom(self, node, env):
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return _PY["bool"]
            if isinstance(v, int):
                return _PY["int"]
            if isinstance(v, float):
                return _PY["float"]
            return UNKNOWN
        if isinstance(node, ast.Name):
            k = env.get(node.id, _UNDEF)
            return UNKNOWN if k is _UNDEF else k
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return self._atom(node.operand, env)
        return UNKNOWN

    def _assign(self, st, env):
        rhs = st.value
        if isinstance(rhs, (ast.Constant, ast.Name)):
            op = self.an.op(st) if self.an is not None else None
            if isinstance(rhs, ast.Name) and not (op is not None and op.rule is not None
                                                  and op.rule.key == "op:Copy"):
                return UNKNOWN      # a global: not followed
            return self._atom(rhs, env)
        if isinstance(rhs, ast.Tuple):
            return Kind("tuple")
        if isinstance(rhs, ast.List):
            item = NOTHING
            for e in rhs.elts:
                k = self._atom(e, env)
                item = join(item, Kind("list") if k.cat == "list" else k)
            return Kind("list", item=item if item != UNKNOWN else None)
        if isinstance(rhs, ast.Dict):
            return Kind("dict")
        op = self.an.op(st) if self.an is not None else None
        if isinstance(rhs, ast.BinOp):
            a, b = self._atom(rhs.left, env), self._atom(rhs.right, env)
            if isinstance(rhs.op, ast.MatMult):
                return _matmul(a, b)
            if isinstance(rhs.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Mod, ast.FloorDiv)):
                return broadcast(a, b, rhs.op)
            return UNKNOWN
        if isinstance(rhs, ast.UnaryOp):
            a = self._atom(rhs.operand, env)
            if isinstance(rhs.op, (ast.USub, ast.UAdd)) and a.dense:
                return a
            return UNKNOWN
        if isinstance(rhs, ast.Subscript):
            return self._subscript(self._atom(rhs.value, env), rhs.slice, env)
        if isinstance(rhs, ast.Call) and op is not None:
            return self._call(op, rhs, env)
        if isinstance(rhs, ast.Attribute) and op is not None and op.rule is not None and op.rule.key == ".T":
            return _transposed(self._atom(rhs.value, env))
        return UNKNOWN

    def _index_int(self, node, env):
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int) and not isinstance(node.value, bool)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self._index_int(node.operand, env)
        k = self._atom(node, env)
        return k.cat == "py" and k.dtype == "l"

    def _subscript(self, x, sl, env):
        if x.cat == "list" and x.item is not None and x.item is not NOTHING and self._index_int(sl, env):
            return x.item
        if x.cat != "array" or x.ndim is None:
            return UNKNOWN
        items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if any(isinstance(i, ast.Starred) or (isinstance(i, ast.Constant) and i.value in (None, Ellipsis))
               for i in items):
            return UNKNOWN
        n_int = 0
        for i in items:
            if self._index_int(i, env):
                n_int += 1
            elif isinstance(i, ast.Slice) and all(p is None or self._index_int(p, env) for p in (i.lower, i.upper, i.step)):
                continue
            else:
                return UNKNOWN
        if len(items) > x.ndim:
            return UNKNOWN
        ndim = x.ndim - n_int
        if ndim == 0:
            return _scalar("np", x.dtype)
        constant = all(_const(n) for i in items for n in ast.walk(i) if isinstance(n, (ast.Name, ast.Constant)))
        shape = ("[]", x.shape, ast.dump(sl)) if constant and x.shape is not None else None
        return Kind("array", x.dtype, ndim, shape)

    def _x(self, op, call, env):
        """The kind of a call's first operand (a method's receiver, else its first argument)."""
        b = op.bound.get("x") if op.bound else None
        if isinstance(b, ast.AST):
            return self._atom(b, env)
        return self._atom(call.args[0], env) if call.args else UNKNOWN

    def _call(self, op, call, env):
        rule = op.rule
        key = rule.key if rule is not None else None
        if key is None:
            return UNKNOWN
        n_args = len(call.args) + len(call.keywords)
        try:
            if _kind_fact(key) == "int" and n_args == 1:
                return _PY["int"]
            if key is builtins.float and n_args == 1 and self._x(op, call, env).rank0:
                return _PY["float"]
            if key is np.float64 and n_args == 1 and self._x(op, call, env).rank0:
                return _scalar("np", "d")
            if key is builtins.abs and n_args == 1:
                x = self._x(op, call, env)
                return x if x.dense else UNKNOWN
        except TypeError:       # an unhashable rule key
            return UNKNOWN
        if getattr(key, "__module__", None) == "math":
            x = self._x(op, call, env)
            return _PY["float"] if n_args == 1 and x.rank0 else UNKNOWN
        if isinstance(key, np.ufunc):
            if call.keywords or key.nout != 1:
                return UNKNOWN
            if key.nin == 1 and len(call.args) == 1:
                x = self._x(op, call, env)
                if not x.dense:
                    return UNKNOWN
                out = next((t[3:] for t in key.types if t.startswith("d->")), None)
                dtype = out if x.dtype in _REAL and out and len(out) == 1 else None
                return Kind("np" if x.ndim == 0 else x.cat, dtype, x.ndim, x.shape)
            if key.nin == 2 and len(call.args) == 2 and rule.broadcast:    # elementwise, broadcasting
                return broadcast(self._atom(call.args[0], env), self._atom(call.args[1], env))
            return UNKNOWN
        kind = _kind_fact(key)
        if kind in ("stacked", "joined") and len(call.args) == 1 and not call.keywords:
            xs = self._atom(call.args[0], env)
            item = xs.item if xs.cat == "list" else None
            if item is None or item is NOTHING or not item.dense or item.ndim is None:
                return UNKNOWN
            if kind == "joined":
                return Kind("array", item.dtype, item.ndim, None) if item.ndim >= 1 else UNKNOWN
            return Kind("array", item.dtype if item.dtype in ("d", "f") else None, item.ndim + 1, None)
        if kind == "matmul":
            b = [op.bound.get(p) for p in ("x", "y")]
            if not call.keywords and all(isinstance(a, ast.AST) for a in b):
                return _matmul(self._atom(b[0], env), self._atom(b[1], env))
            return UNKNOWN
        if kind is not None and kind.startswith("reduction"):
            b = op.bound
            if any(p in b for p in ("dtype", "out")) or "x" not in b:
                return UNKNOWN
            axis, keepdims = _const_value(b.get("axis"), None), _const_value(b.get("keepdims"), False)
            x = self._atom(b["x"], env)
            if x.cat != "array" and axis is None and keepdims is False and not isinstance(key, str):
                return _scalar("np", None)      # np.sum(anything) over every axis: a number
            return _reduction(x, axis, keepdims)
        if kind == "same" and not call.keywords and \
                len(call.args) == (2 if key is np.full_like else (0 if key == ".copy" else 1)):
            x = self._x(op, call, env)
            if x.cat == "array":
                return x
            if x.rank0 and key != ".copy":
                return Kind("np", x.dtype, 0, ())
            return UNKNOWN
        if key is np.transpose and len(call.args) == 1 and not call.keywords:
            return _transposed(self._x(op, call, env))
        return UNKNOWN


def _transposed(x):
    if x.cat == "array" and x.ndim is not None:
        return x if x.ndim <= 1 else Kind("array", x.dtype, x.ndim, ("T", x.shape) if x.shape else None)
    return UNKNOWN
