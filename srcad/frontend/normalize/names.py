"""What the code shows about a value's type, without running it: which names every assignment
gives a dict, or a list or tuple (read once per function, from all its assignments), and whether
an expression is shown to be a list or tuple, or no dict (asked per expression). A loop over a
value the code shows no dict needs no run-time test; `xs + [v]` joins lists only when xs is shown
to be one."""
import ast
import builtins

from ...dataflow import reach


class ShownTypes:
    """What the code shows about an expression's type (mixed into Normalizer)."""

    def _shown_sequence(self, e):
        """Does the code show that e is a list or tuple (a display, a comprehension, list(...),
        tuple(...), sorted(...), or a name every assignment gives one)?"""
        if isinstance(e, (ast.List, ast.Tuple, ast.ListComp)):
            return True
        if isinstance(e, ast.Call) and self.is_global_ref(e.func):
            found, obj = self.resolve(e.func)
            return found and obj in (builtins.list, builtins.tuple, builtins.sorted)
        return isinstance(e, ast.Name) and e.id in self.sequences

    def _shown_not_dict(self, it):
        """Does the code show that a loop's sequence is no dict (a display, a comprehension, or a
        name every assignment gives one)?"""
        if isinstance(it, (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.Constant)):
            return True
        return isinstance(it, ast.Name) and it.id in self.sequences


def _dict_names(fn: ast.FunctionDef, parsed, locals_: set[str]) -> tuple[set[str], set[str]]:
    """(names some assignment gives a dict, names some assignment gives something else), for
    loops over a dict (its keys) and for the tape of item assignments (a key may be new). A name
    is a dict when some assignment gives it a dict display, `dict(...)` or a dict's name: what
    `reach` (srcad/dataflow.py) finds from the first two along `a = b`."""

    def makes_dict(v):
        if isinstance(v, (ast.Dict, ast.DictComp)):
            return True
        return isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "dict" \
            and "dict" not in locals_ and parsed.env.get("dict", builtins.dict) is builtins.dict
    seeds, copied_to = set(), {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and makes_dict(node.value):
                    seeds.add(t.id)
                elif isinstance(t, ast.Name) and isinstance(node.value, ast.Name):
                    copied_to.setdefault(node.value.id, set()).add(t.id)
    dicts = reach(seeds, lambda n: copied_to.get(n, ()))
    others = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    if not (makes_dict(node.value) or isinstance(node.value, ast.Name) and node.value.id in dicts):
                        others.add(t.id)
                else:
                    others |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension)):
            t = node.target
            others |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return dicts, others


def _constants(e):
    """A list or tuple display of constants only (`[0.0] * n` carries no derivative)."""
    return isinstance(e, (ast.List, ast.Tuple)) and all(isinstance(v, ast.Constant) for v in e.elts)


def _displays_a_sequence(v):
    """A list or tuple display or comprehension (`[a, b] + x` is an array when x is one)."""
    return isinstance(v, (ast.List, ast.Tuple, ast.ListComp))


def _sequence_names(fn: ast.FunctionDef, params: list[str]) -> set[str]:
    """Names every binding of which is a list or tuple display or comprehension (a loop over them
    needs no run-time test for a dict)."""
    shown, other = set(), set(params)
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    (shown if _displays_a_sequence(node.value) else other).add(t.id)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension, ast.NamedExpr)):
            other |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.arg)):
            other.add(node.arg)
    return shown - other
