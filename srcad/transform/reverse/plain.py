"""plain: plain NumPy where the kinds pass is sure, instead of the general runtime helpers.

With the kinds of the values known (transform/kinds.py), both sweeps write what a person would:
`y = x[i]` as written for a known 1-d array and an int index (not `rt.getitem`), a number read
from or written into a 1-d float array as one entry of an owned cotangent buffer, no
`rt.unbroadcast` where the shapes agree, the adjoint of a full sum or mean as `np.full_like`.
Each helper answers None / False when the kinds are not known or not sure.
"""
import ast

from ...frontend.ops import OpKind
from ...rules.fact_values import ResultKind
from ...rules.registry import facts
from ...syntax import N
from ..kinds import Cat


class Plain:
    """What the kinds make sure at one statement, and the plain code it allows: read by the
    sweeps of the Reverse class it is mixed into (transform/reverse/driver.py)."""

    def _number_item(self, op, n):
        """The index of `y = n[i]` when it reads one number of a known 1-d float array, or one row
        (sub-array) of a known float array of more axes, at an int (constant, loop variable or
        arithmetic of those), else None (then n's cotangent is a buffer of n's shape written at i)."""
        idx = op.bound.get("idx")
        kind = self._buffer_kind(n) if isinstance(idx, (ast.Constant, ast.Name, ast.BinOp)) else None
        if kind is None:
            return None
        ok = self._int_expr(op.node, idx)
        res = self.kinds.result(op.node)
        return idx if ok and res.dense and res.dtype == "d" and res.ndim == kind.ndim - 1 else None

    def _tuple_item(self, op, n):
        """(k, len) for `y = n[k]` reading item k (a constant) of a tuple n whose items' kinds are
        known float64 numbers or arrays (their cotangents: such values or the zero), else None."""
        if self.kinds is None or not isinstance(op.bound.get("x"), ast.Name) or op.bound["x"].id != n:
            return None
        idx, t = op.bound.get("idx"), self.kinds.before(op.node, n)
        k = -idx.operand.value if isinstance(idx, ast.UnaryOp) and isinstance(idx.op, ast.USub) and \
            isinstance(idx.operand, ast.Constant) else getattr(idx, "value", None)
        if not _dense_tuple(t) or type(k) is not int or not -len(t.elts) <= k < len(t.elts):
            return None
        return k % len(t.elts), len(t.elts)

    def _tuple_len(self, v, st, where):
        """The length of v (at the point `where` of st) when it is a tuple of known float64 numbers
        or arrays (its cotangent may be a list of theirs), else None."""
        if self.kinds is None or not self.buffers:
            return None
        t = self.kinds.exit(st, v) if where == "exit" else self.kinds.before(st, v)
        return len(t.elts) if _dense_tuple(t) else None

    def _int_expr(self, st, e):
        """Is e (before st) sure to be a Python int: an int constant, an int name, or `+ - * // %`
        of such (`2 * k + 1`)?"""
        if isinstance(e, ast.Constant):
            return type(e.value) is int
        if isinstance(e, ast.Name):
            k = self.kinds.before(st, e.id)
            return k.cat is Cat.PY and k.dtype == "l"
        return isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)) \
            and self._int_expr(st, e.left) and self._int_expr(st, e.right)

    def _int_index(self, st, x, idx):
        """Does x[idx] (before st) read one number of a known 1-d array at an int?"""
        if self.kinds is None:
            return False
        k = self.kinds.before(st, x)
        if k.cat is not Cat.ARRAY or k.ndim != 1 or k.dtype not in ("d", "f", "l", "?"):
            return False
        if isinstance(idx, ast.Constant):
            return type(idx.value) is int
        if isinstance(idx, ast.Name):
            ki = self.kinds.before(st, idx.id)
            return ki.cat is Cat.PY and ki.dtype == "l"
        return False

    def _int_read(self, op):
        """`y = x[i]` with x a known 1-d array and i an int: it runs as written (not rt.getitem)."""
        if op.kind is not OpKind.ASSIGN or op.rule is None or op.rule.key != "op:Subscript":
            return False
        x = op.bound.get("x")
        return isinstance(x, ast.Name) and self._int_index(op.node, x.id, op.bound.get("idx"))

    def _written_number(self, st, y, v):
        """The index of `y[i] = v` when it writes one number (v) into a known 1-d float array
        at an int constant or int loop variable, else None."""
        idx = st.targets[0].slice
        kind = self._buffer_kind(y)
        if kind is None or kind.ndim != 1 or not isinstance(v, ast.Name) or \
                not self.kinds.before(st, v.id).rank0:
            return None
        if isinstance(idx, ast.Constant):
            return idx if type(idx.value) is int else None
        if isinstance(idx, ast.Name):
            k = self.kinds.before(st, idx.id)
            return idx if k.cat is Cat.PY and k.dtype == "l" else None
        return None

    def _same_shape(self, st, n):
        """Is the operand n known to have the shape of st's result (then its cotangent needs no
        unbroadcast: the result's cotangent has that shape, or is the scalar zero)?"""
        if self.kinds is None:
            return False
        res, arg = self.kinds.result(st), self.kinds.before(st, n)
        return res.shape is not None and res.shape == arg.shape and res.dense and arg.dense

    def _known_reduction(self, op, p, g):
        """The adjoint of a full sum or mean of a known float array as plain NumPy: g spread over
        x's shape (np.full_like), instead of the general rt.sum_vjp."""
        if self.kinds is None or p != "x" or _kind_of(op.rule.key) not in (ResultKind.REDUCTION_SUM, ResultKind.REDUCTION_MEAN):
            return None
        b = op.bound
        if set(b) - {"x", "axis", "keepdims"} or not isinstance(b.get("x"), ast.Name):
            return None
        if not all(isinstance(b.get(q, ast.Constant(None)), ast.Constant) for q in ("axis", "keepdims")) or \
                b.get("axis", ast.Constant(None)).value is not None or \
                b.get("keepdims", ast.Constant(False)).value is not False:
            return None
        x = self.kinds.before(op.node, b["x"].id)
        if x.cat is not Cat.ARRAY or x.dtype not in ("d", "f") or not x.ndim:
            return None
        like = self._shape_source(op.node, b["x"].id, x)
        fill = N(g)
        if _kind_of(op.rule.key) is ResultKind.REDUCTION_MEAN:
            fill = ast.BinOp(fill, ast.Div(), ast.Attribute(N(like), "size", ast.Load()))
        return ast.Call(ast.Attribute(N("np"), "full_like", ast.Load()), [N(like), fill], [])

    def _known_matmul(self, op, p, g):
        """The adjoint of x @ y for known dense float arrays of 2 and 1 or 2 axes, with a cotangent
        known to be an array of the product's shape, as plain NumPy: `x.T @ g`, `g @ y.T`, `y @ g`
        (what rt.matmul_vjp_x / _y compute there, without their checks for sparse and zero)."""
        if self.kinds is None or p not in ("x", "y") or set(op.bound) != {"x", "y"} or \
                not (op.rule.key == "op:MatMult" or _kind_of(op.rule.key) is ResultKind.MATMUL):
            return None
        x, y = op.bound["x"], op.bound["y"]
        if not (isinstance(x, ast.Name) and isinstance(y, ast.Name)):
            return None
        kx, ky, res = (self.kinds.before(op.node, x.id), self.kinds.before(op.node, y.id), self.kinds.result(op.node))
        if not all(k.cat is Cat.ARRAY and k.dtype == "d" for k in (kx, ky)) or res.shape is None:
            return None
        # g sure to be an array (never the symbolic zero; its shape is the product's, as the
        # runtime helpers take it to be)
        if self.own.get(g, (None, None))[1] != res.shape and g not in self.arrays:
            return None
        t = lambda n: ast.Attribute(N(n.id), "T", ast.Load())      # noqa: E731
        mm = lambda a, b: ast.BinOp(a, ast.MatMult(), b)            # noqa: E731
        if p == "y" and kx.ndim == 2 and ky.ndim in (1, 2):
            out = mm(t(x), N(g))
        elif p == "x" and kx.ndim == 2 and ky.ndim == 2:
            out = mm(N(g), t(y))
        elif p == "x" and kx.ndim == 1 and ky.ndim == 2:
            out = mm(N(y.id), N(g))
        else:
            return None
        out.srcad_shape = (kx if p == "x" else ky).shape     # a new array of the operand's shape
        return out

    def _shape_source(self, st, name, kind):
        """A name that lends `name`'s shape and dtype to the adjoint of st: a parameter that is
        never assigned and has the same kind there (nothing to tape for it), else name itself."""
        for p in self.params:
            if p != name and self.sites[p] == [(None, 0)] and self.kinds.before(st, p) == kind:
                return p
        return name

    def _kind_at(self, op):
        """name -> what the kinds pass makes sure of its value where op runs; None: nothing known."""
        if self.kinds is None:
            return None
        return lambda name: self.kinds.before(op.node, name)


def _dense_tuple(t):
    return t.cat is Cat.TUPLE and t.elts is not None and all(e.dense and e.dtype == "d" for e in t.elts)


def _kind_of(key) -> ResultKind | None:
    """The result kind the registry declares for an operation (rules/numpy_rules.py), or None."""
    entry = facts(key)
    return entry.kind if entry is not None else None
