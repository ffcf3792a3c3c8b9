"""Spellings: a call written another way than the one srcad has a rule for, rewritten to it
(which applies is the registry's `spelling` fact of the callee, rules/numpy_rules.py)."""
import ast

from ...rules.registry import Spelling, facts
from ...syntax import N as name, ast_copy
from .nodes import _loc


class Spellings:
    """Calls rewritten to the spelling srcad has a rule for (mixed into Normalizer)."""

    def numpy_function(self, attr):
        """`np.<attr>` as normalized code calls it (a name of its own when the function's module
        means something else by `np`)."""
        import numpy
        if "np" not in self.locals and self.parsed.env.setdefault("np", numpy) is numpy:
            return ast.Attribute(name("np"), attr, ast.Load())
        own = self.namer.fresh(attr)
        self.parsed.env[own] = getattr(numpy, attr)
        return name(own)

    def spelling(self, e: ast.Call) -> ast.expr:
        """Spellings of calls that say the same as one srcad has a rule for, rewritten to it (the
        rewritten call keeps the user's place; the registry's `spelling` fact says which applies):
        `x.transpose(1, 0, 2)` is x.transpose((1, 0, 2)); `clip(min=, max=)` is np.clip(x, min, max);
        einsum's sublist form is its subscripts string; a reduction with `where=m` reduces
        np.where(m, x, fill) (mean divides by the count of m; max/min join `initial` in with
        np.maximum/np.minimum). Returns e itself when no spelling applies."""
        func, args, kws = e.func, list(e.args), list(e.keywords)
        method = isinstance(func, ast.Attribute) and not self.is_global_ref(func)
        if method:
            entry = facts("." + func.attr)
        else:
            found, obj = self.resolve(func) if self.is_global_ref(func) else (False, None)
            entry = facts(obj) if found else None
        how = getattr(entry, "spelling", None)
        if how is None or any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in kws):
            return e
        if how is Spelling.SUBLISTS:
            return self._einsum_sublists(e)
        if how is Spelling.AXES:
            return _loc(ast.Call(func, [ast.Tuple(args, ast.Load())], kws), e) if method and len(args) > 1 else e
        if how is Spelling.MIN_MAX:
            # (ndarray.clip takes min=/max=, np.clip a_min=/a_max= (and min=/max= from NumPy 2.1))
            args = [func.value] + args if method else args
            kw = {k.arg: k.value for k in kws}
            lo, hi = kw.pop("min", None), kw.pop("max", None)
            if lo is None and hi is None or len(args) > 1 or kw:
                return e
            bounds = [b if b is not None else ast.Constant(None) for b in (lo, hi)]
            return _loc(ast.Call(self.numpy_function("clip"), args + bounds, []), e)
        fill, reducer, joiner = how.fill, how.reducer, how.joiner      # a WhereReduction
        kw = {k.arg: k.value for k in kws}
        where, initial = kw.pop("where", None), kw.pop("initial", None) if joiner else None
        if where is None and initial is None or where is not None and joiner and initial is None:
            return e            # (numpy asks for `initial` with a `where` of max/min)
        if method:
            x, rest = func.value, args
        elif args:
            x, rest = args[0], args[1:]
        elif "a" in kw:
            x, rest = kw.pop("a"), []
        else:
            return e
        names = entry.params[1:]
        if len(rest) > len(names) or set(kw) - set(names):
            return e
        kw = dict(zip(names, rest)) | kw
        if where is not None:
            x = ast.Call(self.numpy_function("where"), [where, x, ast.Constant(fill) if joiner is None
                                                        else ast_copy(initial)], [])
        out = ast.Call(self.numpy_function(reducer), [x], [ast.keyword(arg=k, value=v) for k, v in kw.items()])
        if how.mean:
            count = ast.Call(self.runtime_helper("where_count"),
                             [ast_copy(where), ast_copy(x.args[1]), kw.get("axis", ast.Constant(None)),
                              kw.get("keepdims", ast.Constant(False))], [])
            out = ast.BinOp(out, ast.Div(), count)
        elif joiner is not None:
            out = ast.Call(self.numpy_function(joiner), [out, ast_copy(initial)], [])
        return _loc(out, e)

    def _einsum_sublists(self, e):
        """np.einsum(a, [0, 1], b, [1, 2], [0, 2]) (the sublist form, written with literal lists) is
        np.einsum('ab,bc->ac', a, b); e itself for any other form."""
        args = e.args
        if e.keywords or len(args) < 2 or isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            return e

        def letters(node):
            if not isinstance(node, (ast.List, ast.Tuple)):
                return None
            out = ""
            for item in node.elts:
                if isinstance(item, ast.Constant) and item.value is Ellipsis:
                    out += "..."
                elif isinstance(item, ast.Constant) and type(item.value) is int and 0 <= item.value < 52:
                    out += "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[item.value]
                else:
                    return None
            return out
        pairs, rest = args[:len(args) // 2 * 2], args[len(args) // 2 * 2:]
        ins = [letters(pairs[j + 1]) for j in range(0, len(pairs), 2)]
        out = letters(rest[0]) if rest else ""
        if any(i is None for i in ins) or out is None:
            if any(isinstance(a, (ast.List, ast.Tuple)) for a in args[1:]):
                self.fail(e, "np.einsum's sublist form with items other than literal integers and `...`",
                          "write the subscripts as a string: np.einsum('ij,jk->ik', a, b)")
            return e
        spec = ",".join(ins) + ("->" + out if rest else "")
        return _loc(ast.Call(e.func, [ast.Constant(spec)] + pairs[0::2], []), e)
