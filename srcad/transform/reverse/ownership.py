"""ownership: the cotangents' names, how contributions accumulate, and which arrays are owned.

Cotangents are named `<name>_bar`. A cotangent that nothing has reached yet is not materialised:
the first contribution assigns it, later ones add to it. Where the kinds pass knows a value is a
float64 array of fixed shape, its cotangent may live in an array that only it holds (`Own.OWNED`)
and is updated in place (`b += e`, `b[i] += e`) instead of through `rt.add`; `Own.FULL` is an
array of the value's shape that another name may hold too. `Reverse.own` maps a cotangent name
to (Own, shape token); at a join (after a branch, around a loop) only the facts of both paths
hold (`_meet`).
"""
import ast
from enum import StrEnum

import numpy as np

from ...syntax import N, assign, ast_copy, is_rt_call, rt
from ..kinds import Cat
from ..templates import instantiate
from .plain import _kind_of


class Own(StrEnum):
    """What is known of the array a cotangent name holds (with its shape token, in `Reverse.own`)."""
    OWNED = "owned"     # a new array of the value's shape that only this name holds: updated in place
    FULL = "full"       # an array of the value's shape, which another name may hold too
    LIST = "list"       # a list this cotangent alone holds, one cotangent per item of a tuple
    #                     (shape ("list", n, the slots written))



class Ownership:
    """Cotangent names (`bar`), accumulation (`contribute`), the owned-array facts in `own` and
    the shapes they rest on: the state of the Reverse class it is mixed into
    (transform/reverse/driver.py)."""

    def bar(self, v):
        if v not in self.bars:
            self.bars[v] = self.namer.fresh(v + "_bar")
            self.bar_of[self.bars[v]] = v
        return self.bars[v]

    def contribute(self, code, live, v, expr, accumulate=None, item=None):
        """Add expr to v's cotangent. item: the index when expr is the cotangent of v[item], a
        number or row read from a known float array (then it goes into an owned buffer)."""
        b = self.bar(v)
        kind = self._buffer_kind(v)
        state = self._state(b, kind)
        self.filled.pop(b, None)        # (a first contribution records it again: reverse/shapes.py)
        if b not in live and not self._known_array(expr):
            self.arrays.discard(b)
        elif b not in live:
            self.arrays.add(b)          # (an array stays one when added to)
        if item is not None and kind is not None and (b not in live or state == Own.OWNED):
            if b not in live:       # a buffer of v's shape, owned by this cotangent
                code.append(assign(b, _zeros_like(v, kind)))
                code.append(ast.Assign(targets=[ast.Subscript(N(b), ast_copy(item), ast.Store())], value=expr))
                live.add(b)
            else:
                code.append(ast.AugAssign(ast.Subscript(N(b), ast_copy(item), ast.Store()), ast.Add(), expr))
            self.own[b] = (Own.OWNED, kind.shape)
        elif b in live and accumulate is None and state == Own.OWNED:
            code.append(ast.AugAssign(N(b, True), ast.Add(), expr))     # in place: b is an owned array
        elif b in live and accumulate is None and (state == Own.FULL or self._real_number(v)):
            # a plain sum: b is an array of v's shape (or both are numbers): a new owned array
            code.append(assign(b, ast.BinOp(N(b), ast.Add(), expr)))
            self._set_own(b, (Own.OWNED, kind.shape) if state else None)
        elif b in live:
            code.append(assign(b, instantiate(accumulate, {"__bar__": N(b)}) if accumulate is not None
                               else rt("add", N(b), expr)))
            self.own.pop(b, None)
        else:
            code.append(assign(b, expr))
            live.add(b)
            self._set_own(b, self._fullness(expr, kind) if kind is not None else None)
        if self.check_numerics and self.current is not None:
            line = getattr(self.current, "user_line", 0)
            import linecache
            raw = linecache.getline(self.parsed.filename, line)
            col = len(raw) - len(raw.lstrip())
            where = f"{self.parsed.filename}:{line}:{col}: {self.parsed.line_text(line)}"
            code.append(ast.Expr(rt("check_finite", N(b), ast.Constant(self.parsed.value_text(v, self.sites.get(v))),
                                    ast.Constant(where))))

    def _buffer_kind(self, v, st=None, where="before"):
        """The kind of v (a known float64 array of fixed shape) when its cotangent may live in an
        array that only it holds and that is updated in place; else None."""
        if not self.buffers or v is None:
            return None
        st = self.current if st is None else st
        if st is None:
            return None
        k = self.kinds.exit(st, v) if where == "exit" else self.kinds.before(st, v)
        if k.cat is Cat.ARRAY and k.dtype == "d" and k.ndim and k.shape is not None:
            return k
        return None

    def _set_own(self, b, state):
        if state:
            self.own[b] = state
        else:
            self.own.pop(b, None)

    def _state(self, b, kind):
        """Own.OWNED / Own.FULL when b holds an array of kind's shape (owned: that only b holds), else None."""
        s = self.own.get(b)
        return s[0] if s is not None and kind is not None and s[1] == kind.shape else None

    def _real_number(self, v):
        k = self.kinds.before(self.current, v) if self.kinds is not None and self.current is not None else None
        return k is not None and k.rank0 and k.dtype == "d" and self.buffers

    def _fullness(self, expr, kind):
        """(Own.OWNED, shape) when expr makes a new array of kind's shape, (Own.FULL, shape) when it
        names one (an alias), None when it may be smaller (a number, the symbolic zero) or is not
        known."""
        if self._full(expr, kind.shape):
            return (Own.OWNED if _fresh(expr) and not self._widened(expr) else Own.FULL, kind.shape)
        return None

    def _widened(self, e):
        """Is e an rt.unbroadcast whose cotangent may be smaller than the result (then what it gives
        back may be a read-only broadcast view: an array of the shape, not one to update in place)?"""
        res = self.kinds.result(self.current) if self.current is not None else None
        return is_rt_call(e, "unbroadcast") and (res is None or res.shape is None or
                                                  not self._full(e.args[0], res.shape))

    def _shape_of(self, e):
        """The shape token of an expression's value in the adjoint of the current statement, or
        None; rank-0 values give ()."""
        if isinstance(e, ast.Constant) and type(e.value) in (int, float):
            return ()
        if isinstance(e, ast.Name):
            if e.id in self.fill_names:     # a filled cotangent's number (reverse/shapes.py)
                return ()
            v = self.bar_of.get(e.id)
            if v is not None:       # a cotangent: its primal's shape only when known materialised
                steady = self._steady().get(v)      # (a number's cotangent is one: the seed or a zero)
                return () if self._kind_here(v).rank0 or steady is not None and steady.rank0 else None
            k = self._kind_here(e.id)
            return k.shape if k.dense else None
        return None

    def _kind_here(self, v):
        """The kind of v's version that the adjoint of the current statement deals with: what the
        statement assigns, if it assigns v, else what v holds before it."""
        st = self.current
        if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) and st.targets[0].id == v:
            return self.kinds.result(st)
        return self.kinds.before(st, v)

    def _full(self, e, shape):
        """Is e's value an array of exactly `shape` (not a smaller stand-in)?"""
        if getattr(e, "srcad_shape", None) is not None:     # a product's adjoint (plain.py)
            return e.srcad_shape == shape
        if isinstance(e, ast.Name):
            v = self.bar_of.get(e.id)
            if v is not None:
                s = self.own.get(e.id)
                return s is not None and s[1] == shape
            return self._shape_of(e) == shape
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)):
            for a, b in ((e.left, e.right), (e.right, e.left)):
                if self._full(a, shape) and (self._full(b, shape) or self._rank0(b) or
                                             self._operand_within(b, shape) or self._bar_within(b, shape)):
                    return True
            return False
        if is_rt_call(e, "unbroadcast") and len(e.args) == 2 and isinstance(e.args[1], ast.Name):
            # summed down to the operand's shape from a full array of the result's shape, or from
            # any array (a smaller one broadcast: see _widened)
            res = self.kinds.result(self.current)
            return self._shape_of(e.args[1]) == shape and self.bar_of.get(e.args[1].id) is None and (
                res.shape is not None and self._full(e.args[0], res.shape) or
                self._known_array(e.args[0]) and self._kind_here(e.args[1].id).cat is Cat.ARRAY)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return self._full(e.operand, shape)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name) \
                and e.func.value.id == "np" and e.args and not e.keywords:
            f = getattr(np, e.func.attr, None)
            if isinstance(f, np.ufunc) and len(e.args) == 1:
                return self._full(e.args[0], shape)
            if _kind_of(f) == "same" and isinstance(e.args[0], ast.Name):     # np.full_like(x, v): x's shape
                return self.bar_of.get(e.args[0].id) is None and self._shape_of(e.args[0]) == shape
        return False

    def _known_array(self, e):
        """Is e's value sure to be an ndarray (never a number such as the symbolic zero)? Arithmetic
        with a known array, NumPy calls on one, rt.unbroadcast of one, a cotangent known one."""
        if isinstance(e, ast.Name):
            if e.id in self.bar_of:
                return e.id in self.arrays or self.own.get(e.id, (None,))[0] in (Own.OWNED, Own.FULL)
            return self.kinds is not None and self.current is not None and self._kind_here(e.id).cat is Cat.ARRAY
        if isinstance(e, ast.Attribute) and e.attr == "T":
            return self._known_array(e.value)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.MatMult)):
            return self._known_array(e.left) or self._known_array(e.right)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return self._known_array(e.operand)
        if is_rt_call(e, "unbroadcast") and len(e.args) == 2:
            return self._known_array(e.args[0]) and self._known_array(e.args[1])
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name) \
                and e.func.value.id == "np" and isinstance(getattr(np, e.func.attr, None), np.ufunc):
            return any(self._known_array(a) for a in e.args)
        return False

    def _operand_within(self, e, shape):
        """Is e an operand of the current statement, whose result has `shape` (so e broadcasts
        into it)?"""
        if not isinstance(e, ast.Name) or self.bar_of.get(e.id) is not None:
            return False
        st = self.current
        res = self.kinds.result(st) if isinstance(st, ast.Assign) else None
        if res is None or res.shape != shape or not self._kind_here(e.id).dense:
            return False
        op = self.an.op(st)
        return any(isinstance(a, ast.Name) and a.id == e.id for a in op.bound.values())

    def contribute_item(self, code, live, v, g, k, n):
        """Add g, the cotangent of v[k], to v's (a tuple of n known dense items, k a constant):
        first a list literal of the items' cotangents, `[0.0, g]`, then `v_bar[k] = g` into a slot
        still zero, `v_bar[k] = rt.add(v_bar[k], g)` into one written, while v_bar is that list (the
        facts in `own`: the slots written, on every path); else False (the general index_vjp / add_at)."""
        b = self.bar(v)
        s = self.own.get(b)
        if b in live and not (s is not None and s[0] == Own.LIST and s[1][1] == n):
            return False
        self.filled.pop(b, None)
        self.arrays.discard(b)
        if b not in live:
            items = [ast.Constant(0.0)] * n
            items[k] = N(g)
            code.append(assign(b, ast.List(items, ast.Load())))
            live.add(b)
            written = frozenset([k])
        else:
            written = s[1][2]
            at = ast.Subscript(N(b), ast.Constant(k), ast.Load())
            code.append(ast.Assign([ast.Subscript(N(b), ast.Constant(k), ast.Store())],
                                   rt("add", at, N(g)) if k in written else N(g)))
            written = written | {k}
        self.own[b] = (Own.LIST, ("list", n, written))
        return True

    def _bar_within(self, e, shape):
        """Is e the cotangent of a value of `shape` at the current statement (the versions before
        and after it both)? A cotangent is an array of its value's shape or smaller (the symbolic
        zero, a scalar seed that stands for itself broadcast), so it broadcasts into `shape`."""
        v = self.bar_of.get(e.id) if isinstance(e, ast.Name) else None
        st = self.current
        if v is None or shape is None or st is None:
            return False
        kinds = [self.kinds.before(st, v)] if self.kinds.bound_before(st, v) else []
        if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) and st.targets[0].id == v:
            kinds.append(self.kinds.result(st))
        elif not kinds:
            return False
        return all(k.dense and k.shape == shape for k in kinds)

    def _rank0(self, e):
        if isinstance(e, (ast.BinOp,)):
            return self._rank0(e.left) and self._rank0(e.right)
        if isinstance(e, ast.UnaryOp):
            return self._rank0(e.operand)
        return self._shape_of(e) == ()

    def _zero(self, b, st, where):
        """`b = 0.0`, the symbolic zero; for the cotangent of a known float array (at the point
        `where` of the compound statement st), an owned array of zeros instead."""
        v = self.bar_of.get(b)
        self.filled.pop(b, None)
        n = self._tuple_len(v, st, where) if v is not None and st is not None else None
        if n is not None:       # a tuple of known dense items: a list of their (zero) cotangents
            self.own[b] = (Own.LIST, ("list", n, frozenset()))
            self.arrays.discard(b)
            return assign(b, ast.List([ast.Constant(0.0) for _ in range(n)], ast.Load()))
        kind = self._buffer_kind(v, st, where) if v is not None and st is not None else None
        if kind is not None:
            self.own[b] = (Own.OWNED, kind.shape)
            return assign(b, _zeros_like(v, kind))
        self.own.pop(b, None)
        self.arrays.discard(b)
        return assign(b, ast.Constant(0.0))


def _fresh(e):
    """Does evaluating e make a new array (rather than hand back one that a name holds)? Only for
    the forms _full accepts: arithmetic, NumPy ufuncs and *_like constructors, rt.unbroadcast."""
    if isinstance(e, (ast.BinOp, ast.UnaryOp)):
        return True
    if is_rt_call(e, "unbroadcast"):       # hands back its argument when the shapes agree
        return _fresh(e.args[0])
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and \
        isinstance(e.func.value, ast.Name) and e.func.value.id == "np"


def _meet(a, b):
    """The ownership facts that hold on both paths."""
    out = {k: (v[0] if v[0] == b[k][0] else Own.FULL, v[1]) for k, v in a.items()
           if k in b and b[k][1] == v[1]}
    for k, v in a.items():      # a tuple's cotangent list on both paths: a slot written on either may be nonzero
        w = b.get(k)
        if v[0] == Own.LIST and w is not None and w[0] == Own.LIST and w[1][1] == v[1][1]:
            out[k] = (Own.LIST, ("list", v[1][1], v[1][2] | w[1][2]))
    return out


def _zeros_like(v, kind):
    """np.zeros_like(v), v read only for its kind (reverse/shapes.py may read another value of it)."""
    like = N(v)
    like.srcad_kind = kind
    return ast.Call(ast.Attribute(N("np"), "zeros_like", ast.Load()), [like], [])
