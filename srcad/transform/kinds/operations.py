"""The kinds' transfer of one operation: what `x * y`, `A @ x`, `x[i, :]`, `np.sum(x, axis=1)`,
a ufunc or a registry-declared call gives, from its operands' kinds (`Operations.assign`, mixed
into the kinds problem, which holds `an`, the op of each statement)."""
import ast
import builtins

import numpy as np

from ...rules.fact_values import ResultKind
from ...rules.registry import facts
from .lattice import _PY, _UNDEF, NOTHING, UNKNOWN, Cat, Kind, _scalar, array_kind, join


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
        return _scalar(Cat.PY if a.cat == b.cat is Cat.PY else Cat.NP, dtype)
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
    dims = _broadcast_dims(a, b)
    if dims is not None:
        return array_kind(Cat.ARRAY, dtype, dims, shape)
    return Kind(Cat.ARRAY, dtype, max(a.ndim, b.ndim), shape)


def _broadcast_dims(a, b):
    """The dimension classes of a broadcast of a and b (right-aligned: equal classes stay, a
    class-1 axis takes the other's; anything else is not sure), or None."""
    da = a.dimensions if a.ndim else ()
    db = b.dimensions if b.ndim else ()
    if da is None or db is None:
        return None
    n = max(len(da), len(db))
    da, db = (1,) * (n - len(da)) + tuple(da), (1,) * (n - len(db)) + tuple(db)    # missing leading axes: size one
    out = []
    for x, y in zip(da, db):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            out.append(None)
    return tuple(out)


def _matmul(a, b):
    if a.cat is not Cat.ARRAY or b.cat is not Cat.ARRAY or a.ndim is None or b.ndim is None:
        return UNKNOWN
    dtype = "d" if a.dtype == b.dtype == "d" else None
    if a.ndim == 1 and b.ndim == 1:
        return _scalar(Cat.NP, dtype)
    if (a.ndim, b.ndim) in ((2, 1), (1, 2), (2, 2)):
        ndim = 1 if 1 in (a.ndim, b.ndim) else 2
        shape = ("@", a.shape, b.shape) if a.shape is not None and b.shape is not None else None
        da, db = a.dimensions, b.dimensions
        if da is not None and db is not None:     # (m, k) @ (k, n): (m, n); a vector's axis drops
            return array_kind(Cat.ARRAY, dtype, da[:-1] + db[:-2] + db[-1:] if b.ndim == 2 else da[:-1], shape)
        return Kind(Cat.ARRAY, dtype, ndim, shape)
    return UNKNOWN


def _const(node):
    return isinstance(node, ast.Constant)


def _const_value(node, default):
    if node is None:
        return default
    return node.value if isinstance(node, ast.Constant) else _UNDEF


def _reduction(x, axis, keepdims):
    if x.cat is not Cat.ARRAY or x.ndim is None or axis is _UNDEF or keepdims is _UNDEF:
        return UNKNOWN
    dtype = x.dtype if x.dtype in ("d", "f") else None
    dims = x.dimensions
    if keepdims:
        if dims is not None and axis is None:
            return array_kind(Cat.ARRAY, dtype, (1,) * x.ndim)
        if dims is not None and isinstance(axis, int) and not isinstance(axis, bool) and -x.ndim <= axis < x.ndim:
            return array_kind(Cat.ARRAY, dtype, dims[:axis % x.ndim] + (1,) + dims[axis % x.ndim + 1:])
        return Kind(Cat.ARRAY, dtype, x.ndim, None)
    if axis is None:
        return _scalar(Cat.NP, dtype)
    if isinstance(axis, int) and not isinstance(axis, bool) and x.ndim >= 1:
        if x.ndim == 1:
            return _scalar(Cat.NP, dtype)
        shape = ("red", x.shape, axis % x.ndim) if x.shape is not None else None
        if dims is not None and -x.ndim <= axis < x.ndim:
            return array_kind(Cat.ARRAY, dtype, dims[:axis % x.ndim] + dims[axis % x.ndim + 1:], shape)
        return Kind(Cat.ARRAY, dtype, x.ndim - 1, shape)
    return UNKNOWN


def _kind_fact(key) -> ResultKind | None:
    """The result kind the registry declares for a rule key (rules/numpy_rules.py), or None."""
    entry = facts(key)
    return entry.kind if entry is not None else None


def _transposed(x):
    if x.cat is Cat.ARRAY and x.ndim is not None:
        if x.ndim <= 1:
            return x
        shape = ("T", x.shape) if x.shape else None
        dims = x.dimensions
        return array_kind(Cat.ARRAY, x.dtype, dims[::-1], shape) if dims is not None else \
            Kind(Cat.ARRAY, x.dtype, x.ndim, shape)
    return UNKNOWN


class Operations:
    """The kind of what one assignment's right-hand side gives (mixed into the kinds problem)."""

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
            if any(isinstance(e, ast.Starred) for e in rhs.elts):
                return Kind(Cat.TUPLE)
            return Kind(Cat.TUPLE, elts=tuple(self._atom(e, env) for e in rhs.elts))
        if isinstance(rhs, ast.List):
            item = NOTHING
            for e in rhs.elts:
                k = self._atom(e, env)
                item = join(item, Kind(Cat.LIST) if k.cat is Cat.LIST else k)
            return Kind(Cat.LIST, item=item if item != UNKNOWN else None)
        if isinstance(rhs, ast.Dict):
            return Kind(Cat.DICT)
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
        kind = _kind_fact(op.rule.key) if isinstance(rhs, ast.Attribute) and op is not None and op.rule is not None \
            else None
        if kind in (ResultKind.INT, ResultKind.SHAPE):     # an array's `.size`, `.ndim`, `.shape`: ints
            x = self._atom(rhs.value, env)
            if x.cat is not Cat.ARRAY or x.ndim is None:
                return UNKNOWN
            return Kind(Cat.TUPLE, elts=(_PY["int"],) * x.ndim) if kind is ResultKind.SHAPE else _PY["int"]
        return UNKNOWN

    def _index_int(self, node, env):
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int) and not isinstance(node.value, bool)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self._index_int(node.operand, env)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
            return self._index_int(node.left, env) and self._index_int(node.right, env)    # `xs[2 * k + 1]`
        k = self._atom(node, env)
        return k.cat is Cat.PY and k.dtype == "l"

    def _subscript(self, x, sl, env):
        k = -sl.operand.value if isinstance(sl, ast.UnaryOp) and isinstance(sl.op, ast.USub) and \
            isinstance(sl.operand, ast.Constant) else getattr(sl, "value", None)      # `t[-1]` too
        if x.cat is Cat.TUPLE and x.elts is not None and type(k) is int and -len(x.elts) <= k < len(x.elts):
            return x.elts[k]
        if x.cat is Cat.LIST and x.item is not None and x.item is not NOTHING and self._index_int(sl, env):
            return x.item
        if x.cat is not Cat.ARRAY or x.ndim is None:
            return UNKNOWN
        items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        if any(isinstance(i, ast.Starred) or (isinstance(i, ast.Constant) and i.value in (None, Ellipsis))
               for i in items):
            return UNKNOWN
        n_int = 0
        kept = []       # per item: the class of the axis it keeps (a whole axis `:`), None (a part), or dropped
        for i in items:
            if self._index_int(i, env):
                n_int += 1
            elif isinstance(i, ast.Slice) and all(p is None or self._index_int(p, env) for p in (i.lower, i.upper, i.step)):
                kept.append(len(kept) + n_int if i.lower is None and i.upper is None and i.step is None else None)
                continue
            else:
                return UNKNOWN
        if len(items) > x.ndim:
            return UNKNOWN
        ndim = x.ndim - n_int
        if ndim == 0:
            return _scalar(Cat.NP, x.dtype)
        constant = all(_const(n) for i in items for n in ast.walk(i) if isinstance(n, (ast.Name, ast.Constant)))
        shape = ("[]", x.shape, ast.dump(sl)) if constant and x.shape is not None else None
        dims = x.dimensions
        if dims is not None:    # an int drops its axis, whatever its value; `:` keeps the axis' class
            return array_kind(Cat.ARRAY, x.dtype, tuple(None if a is None else dims[a] for a in kept) + dims[len(items):],
                              shape)
        return Kind(Cat.ARRAY, x.dtype, ndim, shape)

    def _x(self, op, call, env):
        """The kind of a call's first operand (a method's receiver, else its first argument)."""
        b = op.bound.get("x") if op.bound else None
        if isinstance(b, ast.AST):
            return self._atom(b, env)
        return self._atom(call.args[0], env) if call.args else UNKNOWN

    def _call(self, op, call, env):
        if getattr(op, "callee", None) is not None:      # a user function: what it returns
            return self._callee_result(op, call, env)
        rule = op.rule
        key = rule.key if rule is not None else None
        if key is None:
            return UNKNOWN
        n_args = len(call.args) + len(call.keywords)
        try:
            if _kind_fact(key) is ResultKind.INT and n_args == 1:
                return _PY["int"]
            if key is builtins.float and n_args == 1 and self._x(op, call, env).rank0:
                return _PY["float"]
            if key is np.float64 and n_args == 1 and self._x(op, call, env).rank0:
                return _scalar(Cat.NP, "d")
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
                return Kind(Cat.NP if x.ndim == 0 else x.cat, dtype, x.ndim, x.shape, dims=x.dims)
            if key.nin == 2 and len(call.args) == 2 and rule.broadcast:    # elementwise, broadcasting
                return broadcast(self._atom(call.args[0], env), self._atom(call.args[1], env))
            return UNKNOWN
        kind = _kind_fact(key)
        if kind in (ResultKind.STACKED, ResultKind.JOINED) and len(call.args) == 1 and not call.keywords:
            xs = self._atom(call.args[0], env)
            item = xs.item if xs.cat is Cat.LIST else None
            if item is None or item is NOTHING or not item.dense or item.ndim is None:
                return UNKNOWN
            dims = item.dimensions if item.ndim else ()
            if kind is ResultKind.JOINED:     # the joined axis' length is not sure, the others' are
                if item.ndim < 1:
                    return UNKNOWN
                return array_kind(Cat.ARRAY, item.dtype, (None,) + dims[1:]) if dims is not None else \
                    Kind(Cat.ARRAY, item.dtype, item.ndim, None)
            dtype = item.dtype if item.dtype in ("d", "f") else None     # stacked: a new first axis
            return array_kind(Cat.ARRAY, dtype, (None,) + tuple(dims)) if dims is not None else \
                Kind(Cat.ARRAY, dtype, item.ndim + 1, None)
        if kind is ResultKind.MATMUL:
            b = [op.bound.get(p) for p in ("x", "y")]
            if not call.keywords and all(isinstance(a, ast.AST) for a in b):
                return _matmul(self._atom(b[0], env), self._atom(b[1], env))
            return UNKNOWN
        if kind is not None and kind.reduces:
            b = op.bound
            if any(p in b for p in ("dtype", "out")) or "x" not in b:
                return UNKNOWN
            axis, keepdims = _const_value(b.get("axis"), None), _const_value(b.get("keepdims"), False)
            x = self._atom(b["x"], env)
            if x.cat is not Cat.ARRAY and axis is None and keepdims is False and not isinstance(key, str):
                return _scalar(Cat.NP, None)      # np.sum(anything) over every axis: a number
            return _reduction(x, axis, keepdims)
        if kind is ResultKind.SAME and not call.keywords and \
                len(call.args) == (2 if key is np.full_like else (0 if key == ".copy" else 1)):
            x = self._x(op, call, env)
            if x.cat is Cat.ARRAY:
                return x
            if x.rank0 and key != ".copy":
                return Kind(Cat.NP, x.dtype, 0, ())
            return UNKNOWN
        if key is np.transpose and len(call.args) == 1 and not call.keywords:
            return _transposed(self._x(op, call, env))
        return UNKNOWN


