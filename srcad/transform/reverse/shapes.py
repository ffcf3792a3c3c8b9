"""shapes: values the adjoint reads only for their shape, read from a value that is kept anyway.

Many adjoints read a primal value only for its type, dtype and shape: the operand of
`rt.unbroadcast(g, x)`, `rt.sum_vjp(g, x, ...)`, `rt.count(x, ...)`, the array an owned
cotangent buffer is shaped like (`np.zeros_like(x)`), the mean whose size divides its cotangent.
Read as written, such a read keeps the value alive (computed in the primal sweep, taped in a
loop) only to lend its shape. Here the kinds pass (transform/kinds.py) says what each value is:
a dense value of known dtype and shape token has the same type, dtype and shape as every other
value of the same kind (equal tokens, equal shapes). So while the adjoint is written, each such
read is marked with the kind it needs (`_shape_reads`); once the whole adjoint is written
(`_resolve_shapes`, before the tape is resolved) a marked read that nothing else needs reads
instead a value of the same kind that is kept anyway: a parameter that is never re-assigned, or
a name assigned once at the top level that some adjoint reads for its value. Where no value of
that kind is kept, a shape is written from the token itself (a parameter's `.shape`, the
broadcast of two shapes), for a constructor that needs only the shape (`np.full`, `np.zeros`).
The value read only for its shape is then dead, and cleanup drops it. Arithmetic is unchanged:
the same helpers run on the same shapes and dtypes (the same bits).
"""
import ast

import numpy as np

from ... import runtime as runtime_helpers
from ...rules.registry import facts
from ...syntax import N, assign, ast_copy, is_rt_call, rt
from ..kinds import Cat
from ..kinds.lattice import is_dims

class ShapeReads:
    """Shape-only reads marked while the adjoint is written, re-pointed once it is: methods of the
    Reverse class they are mixed into (transform/reverse/driver.py)."""

    def _shape_reads(self, expr, op=None):
        """Mark, in an adjoint expression of the current statement, each primal name it reads only
        for its type, dtype and shape (an argument in RT_SHAPE_ONLY / NP_SHAPE_ONLY, or the object
        of `.shape` / `.size`) with the kind of the value it reads there. Returns expr."""
        if self.kinds is None or self.current is None:
            return expr
        for node in ast.walk(expr):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id in ("rt", "np"):
                module = runtime_helpers if node.func.value.id == "rt" else np
                for k in _shape_only(getattr(module, node.func.attr, None)):
                    if k < len(node.args):
                        self._mark(node.args[k], op)
            elif isinstance(node, ast.Attribute) and _shape_only("." + node.attr):
                self._mark(node.value, op)
        return expr

    def _mark(self, e, op):
        if not isinstance(e, ast.Name) or e.id in self.bar_of or hasattr(e, "srcad_shape_only"):
            return
        e.srcad_shape_only = True       # (a taped value read only so: its stand-in is taped instead)
        st = self.current
        target = st.targets[0].id if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name) else None
        operand = op is not None and any(isinstance(a, ast.Name) and a.id == e.id for a in op.bound.values())
        if e.id == target and operand:
            return      # `x = f(x)`: which version is read depends on the pops around it
        k = self.kinds.result(st) if e.id == target else self.kinds.before(st, e.id)
        if k.dense and k.cat is not None and k.dtype is not None and k.ndim and k.shape is not None:
            e.srcad_kind = k

    # -- filled cotangents: one number spread over a known shape ----------------------------------
    def _top(self):
        st = self.current
        return st is not None and self.depth.get(id(st), 0) == 0 and self.kinds is not None

    def _bind_fill(self, spread, n):
        """The adjoint of a full sum or mean, `np.full_like(x, v)`: a v that is not a name or a
        number is bound to one first (`<x>_each = g / x.size`), which later adjoints may read
        instead of the spread array. Returns the binding statements."""
        fill = spread.args[1]
        if isinstance(fill, (ast.Name, ast.Constant)) or not self._top():
            return []
        each = self.namer.fresh(n + "_each")
        self.fill_names.add(each)
        spread.args[1] = N(each)
        return [assign(each, self._shape_reads(fill))]

    def _note_fill(self, n, g, spread, expr):
        """After n's cotangent was first assigned: it is filled (one number over a known shape)
        when it is a full sum's or mean's spread, or a copy of a filled cotangent."""
        if not self._top():
            return
        b = self.bar(n)
        if spread is not None and spread is expr and isinstance(spread.args[1], (ast.Name, ast.Constant)):
            k = self.kinds.before(self.current, spread.args[0].id)
            if k.shape is not None and self._steady_reads(spread.args[1]):
                self.filled[b] = (spread.args[1], k.shape)
        elif isinstance(expr, ast.Name) and expr.id in self.filled:
            self.filled[b] = self.filled[expr.id]

    def _steady_reads(self, e):
        """Does e read only names that hold one value through the adjoint (or their cotangents,
        which are final once read)?"""
        steady = self._steady()
        return all(self.bar_of.get(m.id, m.id) in steady or m.id in self.fill_names
                   for m in ast.walk(e) if isinstance(m, ast.Name))

    def _with_fill(self, op, g, expr):
        """expr, an adjoint of the current statement in its result's cotangent g, reading g's
        number instead of the filled array where that gives the same values: where the result is
        still an array of g's shape (elementwise with operands within it), or where it is summed
        down to an operand's shape (`rt.unbroadcast`, for which a smaller cotangent stands for
        itself broadcast over the result)."""
        got = self.filled.get(g)
        if got is None or not self._top() or self.kinds.result(op.node).shape != got[1]:
            return expr
        fill, shape = got
        number = ast.Constant(1.0)      # what _full asks of the number: that it is one
        summed = is_rt_call(expr, "unbroadcast") and op.rule is not None and op.rule.broadcast and \
            self._known_array(_replace_name(ast_copy(expr.args[0]), g, number))     # (a number alone may be the zero)
        if summed or self._full(_replace_name(ast_copy(expr), g, number), shape):
            return _replace_name(ast_copy(expr), g, fill)
        return expr

    def _steady(self):
        """name -> kind of the values that hold one value through the whole adjoint sweep: the
        parameters never re-assigned, then the names assigned once, at the top level."""
        if self._steady_memo is None:
            self._steady_memo = self._steady_now()
        return self._steady_memo

    def _steady_now(self):
        out = {}
        for p in self.params:
            if self.sites[p] == [(None, 0)]:
                out[p] = self.kinds.before(self.fn.body[0], p) if self.fn.body else None
        for name, sites in self.sites.items():
            if name not in out and len(sites) == 1 and sites[0][1] == 0 and isinstance(sites[0][0], ast.Assign):
                out[name] = self.kinds.result(sites[0][0])
        return {n: k for n, k in out.items() if k is not None and k.dense and k.shape is not None}

    def _resolve_shapes(self, adjoint):
        """Each marked read that no other adjoint statement needs re-pointed at a kept value of
        the same kind (see the module docstring); the constructors of a shape whose kind no kept
        value has are written from the shape's token."""
        if self.kinds is None:
            return adjoint
        marked, reads, shape_only = [], set(self.ckpt_reads), set()
        for node in _walk(adjoint):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if getattr(node, "srcad_kind", None) is not None:
                    marked.append(node)
                elif getattr(node, "srcad_shape_only", False):
                    shape_only.add(node.id)
                else:
                    reads.add(node.id)
        # a value the adjoint reads only for its type, dtype and shape is taped as a stand-in that
        # holds no memory (rt.shape_stand_in), where it is taped at all
        self.shape_taped = {n for n in shape_only - reads - {m.id for m in marked} - set(self.params)
                            if not all(isinstance(st, ast.Assign) and self.kinds.result(st).rank0
                                       for st, _ in self.sites[n])}     # (a number: taped as it is)
        if not marked:
            return adjoint
        steady = self._steady()
        user = {m.id for m in ast.walk(self.parsed.tree) if isinstance(m, ast.Name)}
        kept = sorted((n for n in steady if n in self.params or n in reads), key=lambda n: n not in user)
        for node in marked:
            if node.id in reads or node.id in kept:      # (a kept value lends its own shape)
                continue
            sub = next((n for n in kept if steady[n] == node.srcad_kind), None)
            if sub is not None:
                node.id = sub
        shapes = _ShapeWriter(self, steady, kept, reads)
        return [shapes.visit(st) for st in adjoint]

    def _shape_expr(self, token, steady, kept, depth=0):
        """An expression for the shape with this token from kept values, or None."""
        sub = next((n for n in kept if steady[n].shape == token), None)
        if sub is not None:
            return ast.Attribute(N(sub), "shape", ast.Load())
        if is_dims(token):      # each axis' class from a kept value that has it (class 1: size one)
            parts = []
            for d in token[1:]:
                src = None if d == 1 else next(((n, ax) for n in kept for ax, c in enumerate(steady[n].dimensions or ())
                                                if c == d), None)
                if d != 1 and src is None:
                    return None
                parts.append(ast.Constant(1) if d == 1 else
                             ast.Subscript(ast.Attribute(N(src[0]), "shape", ast.Load()), ast.Constant(src[1]), ast.Load()))
            return ast.Tuple(parts, ast.Load())
        if depth < 3 and isinstance(token, tuple) and len(token) == 3 and token[0] == "bc":
            a, b = (self._shape_expr(t, steady, kept, depth + 1) for t in token[1:])
            if a is not None and b is not None:
                return rt("broadcast_shapes", a, b)
        return None


class _ShapeWriter(ast.NodeTransformer):
    """`np.full_like(x, v)` / `np.zeros_like(x)` / `x.size` whose marked x is still read only for
    its shape: from the shape written from x's token instead (float64 only)."""

    def __init__(self, rev, steady, kept, reads):
        self.rev, self.steady, self.kept, self.reads = rev, steady, kept, reads

    def _shape(self, e, like=False):
        """The shape of the marked float64 array e, written from its token (None: not known); for a
        `*_like` constructor also e's own `.shape` where e is kept anyway (np.zeros(x.shape) is
        np.zeros_like(x) for a float64 ndarray, without NumPy's Python-level wrapper)."""
        k = getattr(e, "srcad_kind", None)
        if k is None or k.dtype != "d" or k.cat is not Cat.ARRAY:
            return None
        if e.id in self.reads or e.id in self.kept:
            return ast.Attribute(N(e.id), "shape", ast.Load()) if like else None
        return self.rev._shape_expr(k.shape, self.steady, self.kept)

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np" and \
                f.attr.endswith("_like") and node.args and not node.keywords:
            s = self._shape(node.args[0], like=True)
            make = f.attr[:-len("_like")]       # np.zeros_like(x) -> np.zeros(shape), full_like -> full
            if s is not None and hasattr(np, make):
                dtype = [ast.keyword("dtype", ast.Constant("d"))] if len(node.args) > 1 else []
                return ast.Call(ast.Attribute(N("np"), make, ast.Load()), [s] + node.args[1:], dtype)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr == "size" and isinstance(node.value, ast.Name):
            s = self._shape(node.value)
            if s is not None:
                return rt("size_of", s)
        return node


def _walk(stmts):
    for st in stmts:
        yield from ast.walk(st)


def _shape_only(key):
    entry = facts(key)
    return entry.shape_only if entry is not None else ()


def _replace_name(e, name, by):
    class _R(ast.NodeTransformer):
        def visit_Name(self, node):
            return ast_copy(by) if node.id == name and isinstance(node.ctx, ast.Load) else node
    return _R().visit(e)
