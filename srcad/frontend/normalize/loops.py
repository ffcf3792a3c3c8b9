"""For loops: every loop becomes a loop over a range. A loop over a sequence runs over its
positions and reads the item (`for k in range(len(xs)): v = xs[k]`); enumerate, zip and reversed
are positions too; a loop over a dict (or its views) runs over a list of its keys taken before the
loop; a value whose type the code does not show goes through `rt.loop_sequence`. A loop whose body
writes in place into the sequence it runs over is refused."""
import ast
import builtins
from typing import Callable

from ...rules.registry import ANY, FactSet
from ...syntax import N as name, assign, ast_copy
from .containers import _DICT_VIEWS
from .nodes import _loc

# methods that change their receiver, of any kind (xs.append(v), a.sort(), a.fill(v))
# (facts declared in the registry, rules/numpy_rules.py)
_CHANGES_RECEIVER = FactSet("inplace", ANY, methods=True)


class Loops:
    """For loops as loops over a range (mixed into Normalizer)."""

    def s_For(self, st):
        it, target = st.iter, st.target
        unrolled = self._unrolled_functions(st)
        if unrolled is not None:
            return self.block(unrolled)
        self.loop_rebinds = {n.id for b in st.body for n in ast.walk(b)
                             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        found, obj = self.resolve(it.func) if isinstance(it, ast.Call) and self.is_global_ref(it.func) else (False, None)
        if found and obj is builtins.range:
            s, args = [], []
            for a in it.args:
                s2, a2 = self.index(a, "n")
                s += s2
                args.append(a2)
            if isinstance(target, ast.Name):
                return s + [ast.For(target, ast.Call(it.func, args, []), self.block(st.body), [])]
            k = self.temp("i")
            body = self.bind(target, name(k)) + self.block(st.body)
            return s + [ast.For(name(k, True), ast.Call(it.func, args, []), body, [])]
        # every other loop runs over an index: for k in range(n): target = item(k)
        self._refuse_live_iteration(st)
        if self._enumerate_index(it, target):    # for i, v in enumerate(xs): i is the loop index
            k = target.elts[0].id
            s, n, item = self.sequence(it.args[0])
            target = target.elts[1]
        else:
            k = self.temp("i")
            s, n, item = self.sequence(it)
        body = self.bind(target, item(name(k))) + self.block(st.body)
        return s + [ast.For(name(k, True), _range(n), body, [])]

    def _refuse_live_iteration(self, st):
        """`for t in a:` whose body writes `a` in place (`a -= e`, `a[i] = e`, `a.sort()`):
        Python iterates the live object, so later items are the changed ones, while srcad reads
        the items of the value `a` had when the loop began. Refused with the line of the write."""
        it = st.iter
        roots = []
        for e in (it.args if isinstance(it, ast.Call) and self.is_global_ref(it.func) else [it]):
            while isinstance(e, (ast.Subscript, ast.Attribute)):
                e = e.value
            if isinstance(e, ast.Name) and e.id not in self.dicts:
                roots.append(e.id)
        if not roots:
            return

        def root(t):
            while isinstance(t, (ast.Subscript, ast.Attribute, ast.Starred)):
                t = t.value
            return t.id if isinstance(t, ast.Name) else None
        for node in (n for b in st.body for n in ast.walk(b)):
            targets = []
            if isinstance(node, ast.AugAssign):
                targets = [node.target]
            elif isinstance(node, ast.Assign):
                targets = [t for t in node.targets if isinstance(t, (ast.Subscript, ast.Attribute))]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in _CHANGES_RECEIVER:
                targets = [node.func.value]
            hit = next((root(t) for t in targets if root(t) in roots), None)
            if hit is not None:
                self.fail(node, f"`{ast.unparse(node).splitlines()[0]}` inside `for {_target_text(st.target)} in "
                                f"{ast.unparse(it)}:` (line {st.lineno}), which writes `{hit}` in place while the "
                                f"loop runs over it (Python then reads the changed items; srcad would read the "
                                f"items `{hit}` had when the loop began)",
                          f"loop over positions and read the item inside (`for i in range(len({hit})): "
                          f"... = {hit}[i]`), or over a copy (`for ... in {hit}.copy():`) if the loop should "
                          f"not see the writes")

    def mapping_sequence(self, it):
        """A loop over a dict (its keys) or over d.keys()/.values()/.items(): over a list of the
        keys taken before the loop, the values read as d[key]."""
        call = isinstance(it, ast.Call)
        what = it.func.attr if call else "keys"
        recv = it.func.value if call else it
        if isinstance(recv, ast.Name) and recv.id in self.dicts and recv.id in self.not_dicts:
            self.fail(it, f"a loop over `{recv.id}`, which holds a dict at one place and another value at another",
                      "give the dict a name of its own")
        s, r = self.atom(recv, "mapping")
        if isinstance(r, ast.Name) and r.id in self.loop_rebinds:
            t = self.temp(r.id + "_items")
            s, r = s + [assign(t, r)], name(t)
        view, ks = self.temp("view"), self.temp("keys")
        s += [_loc(assign(view, _method_call(r, "keys")), it),
              _loc(assign(ks, ast.Call(name("list"), [name(view)], [])), it)]

        def item(k):
            key = ast.Subscript(name(ks), k, ast.Load())
            if what == "keys":
                return key
            value = ast.Subscript(r, ast_copy(key), ast.Load())
            return value if what == "values" else ast.Tuple([key, value], ast.Load())
        return s, ast.Call(name("len"), [name(ks)], []), item

    def _enumerate_index(self, it, target):
        found, obj = self.resolve(it.func) if isinstance(it, ast.Call) and self.is_global_ref(it.func) else (False, None)
        return (found and obj is builtins.enumerate and isinstance(target, ast.Tuple) and
                isinstance(target.elts[0], ast.Name) and len(it.args) == 1)

    def sequence(self, it: ast.expr) -> tuple[list[ast.stmt], ast.expr, Callable[[ast.expr], ast.expr]]:
        """(statements, length, item): what a for loop iterates over, as a length and an indexer."""
        found, obj = self.resolve(it.func) if isinstance(it, ast.Call) and self.is_global_ref(it.func) else (False, None)
        if found and obj is builtins.enumerate:
            if len(it.args) != 1 or it.keywords:
                self.fail(it, "enumerate with a start value", "add the offset to the index in the loop body")
            s, n, item = self.sequence(it.args[0])
            return s, n, lambda k: ast.Tuple([k, item(k)], ast.Load())
        if found and obj is builtins.zip:
            if it.keywords:
                self.fail(it, "zip with keyword arguments", "call zip with the sequences only")
            parts = [self.sequence(a) for a in it.args]
            s = sum((p[0] for p in parts), [])
            n = parts[0][1] if len(parts) == 1 else ast.Call(name("min"), [p[1] for p in parts], [])
            return s, n, lambda k: ast.Tuple([p[2](k) for p in parts], ast.Load())
        if found and obj is builtins.reversed:      # the same items, last first: xs[-1 - k]
            if len(it.args) != 1 or it.keywords:
                self.fail(it, "this form of reversed", "call reversed(xs) with the one sequence")
            s, n, item = self.sequence(it.args[0])
            return s, n, lambda k: item(ast.BinOp(ast.Constant(-1), ast.Sub(), k))
        if self._local_method(it, _DICT_VIEWS) and not it.args or isinstance(it, ast.Name) and it.id in self.dicts:
            return self.mapping_sequence(it)
        s, seq = self.atom(it, "seq")
        if not self._shown_not_dict(it):
            # a value whose type the code does not show (an argument, d["layer"], self.params):
            # rt.loop_sequence gives a dict's keys, any other sequence itself
            t = self.temp((seq.id if isinstance(seq, ast.Name) else "seq") + "_items")
            call = ast.Call(self.runtime_helper("loop_sequence"), [seq], [])
            s, seq = s + [_loc(assign(t, call), it)], name(t)
        elif isinstance(seq, ast.Name) and seq.id in self.loop_rebinds:
            # `for t in v: v = ...` iterates over the original v: keep a reference to it
            t = self.temp(seq.id + "_items")
            s, seq = s + [assign(t, seq)], name(t)
        return s, ast.Call(name("len"), [seq], []), lambda k: ast.Subscript(seq, k, ast.Load())


def _target_text(t):
    return ", ".join(map(ast.unparse, t.elts)) if isinstance(t, ast.Tuple) and t.elts else ast.unparse(t)


def _method_call(recv, attr):
    return ast.Call(ast.Attribute(recv, attr, ast.Load()), [], [])


def _range(n):
    return ast.Call(name("range"), [n], [])
