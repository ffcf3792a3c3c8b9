"""smallvec: a generated function whose arrays are small vectors of known length, as C doubles.

An RK4 step written with 3-element NumPy arrays spends its time making 3-element arrays. When the
call's 1-D float64 arrays have a small length L (<= SMALL, known when the call is made: the
compiled module is built per such length), every array value of the function that the rules below
prove is a vector of L float64 numbers becomes L C doubles `name__0 ... name__{L-1}`, and every
elementwise operation on it L scalar C statements (the same IEEE operations on the same numbers as
NumPy's loop: the same bits). The helper functions of the module it calls are typed from the call
site: a `cdef` function per argument types, returning a C tuple of its result's numbers.

A vector is: a parameter of the signature of that length; `np.array` of a list of numbers; a list
of numbers; `+ - * /` and unary minus of vectors and numbers; an array the function makes with
np.zeros_like and then writes number by number (`v[k] = x`, `v[k] += x`: k a constant; see
_item_writes_sound for when no alias can see the difference); srcad's rt.add / unbroadcast /
index_vjp / add_at / sum_vjp / cast_vjp / item on them (the cases listed in `_rt`); a helper's
result. A number is as in plan.py (a C double). np.sum of a vector of at most 7 numbers is the
sequential sum NumPy computes for so few (checked by tests/test_compile.py).

All or nothing: one statement or expression outside these rules (a branch, a while loop, a vector
read at a run-time index, np.sin of a vector: NumPy's vector loops may round differently from
libm) and the function is translated as before (plan.py: Python objects where untyped). The
main function's return is evaluated as Python, the vectors packed into arrays.
"""
import ast

from .common import _is_call, _range_bound, maybe_unbound
from .vecexpr import _OPS, SMALL, Untypable, VecExpr, _const_int, is_vec, num, vec

__all__ = ["SMALL", "Untypable", "VecFunction", "vec"]


class VecFunction:
    """The scalarised form of one function for parameters of the given types ('d', ('v', L), 'o':
    a Python object the function only passes on)."""

    def __init__(self, fn, ptypes, module, taken, main, registry):
        self.fn, self.ptypes, self.module, self.taken, self.main = fn, ptypes, module, taken, main
        self.registry = registry          # {(function, argument types): VecFunction}, shared
        self.params = [a.arg for a in fn.args.args]
        a = fn.args
        if a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg:
            raise Untypable("a parameter list with *, / or **")
        if not main and any(ptypes.get(p) not in ("d",) and not is_vec(ptypes.get(p)) for p in self.params):
            raise Untypable("a helper with a parameter that is not a number or vector")
        self.tapes = self._tapes()
        stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.untouched = {p for p in self.params if p not in stored}
        self.types = dict(ptypes)
        self.ret = None
        self.cname = None
        self._infer()

    # ---- which names are tapes (only `t = []`, `t.append(v)`, `v = t.pop()`) ----
    def _tapes(self):
        made = {n.targets[0].id for n in ast.walk(self.fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.List) and not n.value.elts}
        return {t for t in made if self._tape_uses_only(t)}

    def _pops(self, v):
        return isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "pop" \
            and isinstance(v.func.value, ast.Name) and v.func.value.id in self.tapes

    def _tape_uses_only(self, t):
        allowed = set()
        for n in ast.walk(self.fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and n.targets[0].id == t and isinstance(n.value, ast.List) and not n.value.elts:
                allowed.add(id(n.targets[0]))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                    and n.func.value.id == t:
                if n.func.attr == "append" and len(n.args) == 1 and isinstance(n.args[0], ast.Name) \
                        and not n.keywords:
                    allowed.add(id(n.func.value))
                elif n.func.attr == "pop" and not n.args and not n.keywords:
                    allowed.add(id(n.func.value))
        return all(id(n) in allowed for n in ast.walk(self.fn) if isinstance(n, ast.Name) and n.id == t)

    # ---- inference: the type of every name, to a fixed point ----
    def _assignments(self, body):
        for st in body:
            if isinstance(st, ast.For):
                yield from self._assignments(st.body)
            elif isinstance(st, (ast.Assign, ast.AugAssign)):
                yield st

    def _infer(self):
        for _ in range(30):
            new = dict(self.ptypes)
            conflicts = []
            for st in self._assignments(self.fn.body):
                target = st.targets[0] if isinstance(st, ast.Assign) else st.target
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(target, ast.Tuple) \
                        and all(isinstance(t, ast.Name) for t in target.elts):
                    self._unpacked(target.elts, st.value, new, conflicts)
                    continue
                if isinstance(st, ast.Assign) and len(st.targets) != 1:
                    raise Untypable("an assignment to something other than one name")
                if isinstance(target, ast.Subscript):
                    self._item_write(st, target, conflicts)
                    continue
                if not isinstance(target, ast.Name):
                    raise Untypable("an assignment to something other than one name")
                name = target.id
                if name in self.tapes or self._pops(st.value):
                    continue            # (a value back from the tape: the type it was pushed with)
                if name in self.ptypes and not is_vec(self.ptypes[name]) and self.ptypes[name] != "d":
                    raise Untypable(f"the parameter {name} (a Python object) is assigned")
                value = ast.BinOp(ast.Name(name, ast.Load()), st.op, st.value) if isinstance(st, ast.AugAssign) \
                    else st.value
                try:
                    t = self.expr().type_of(value)
                except Untypable as exc:
                    conflicts.append(str(exc))
                    continue
                if t is None:
                    continue
                if t == "const" and name not in new:
                    t = "z"
                merged = _merge(new.get(name), "z" if t == "const" else t)
                if merged is False:
                    conflicts.append(f"{name} is both {new.get(name)} and {t}")
                    continue
                new[name] = merged
            if new == self.types:
                break
            self.types = new
        else:
            raise Untypable("the types do not settle")
        if conflicts:
            raise Untypable(conflicts[0])
        for k, t in list(self.types.items()):
            if t in ("z", "none"):
                self.types[k] = "d"
        for st in ast.walk(self.fn):
            if isinstance(st, ast.For):
                if not isinstance(st.target, ast.Name) or _range_bound(st.iter) is False or st.orelse:
                    raise Untypable("a loop other than `for i in range(...)`")
                if self.types.get(st.target.id, "i") != "i":
                    raise Untypable("a loop index also assigned a number")
                self.types[st.target.id] = "i"
            elif st is not self.fn and isinstance(st, (ast.While, ast.If, ast.With, ast.Try, ast.FunctionDef,
                                                       ast.Lambda, ast.ClassDef,
                                 ast.Delete, ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom, ast.NamedExpr,
                                 ast.AsyncFor, ast.Raise, ast.Assert, ast.Break, ast.Continue)):
                raise Untypable(f"a {type(st).__name__} statement")
        self._item_writes_sound()
        unbound = maybe_unbound(self.fn.body, set(self.params)) & set(self.types)
        if unbound:       # (Python raises UnboundLocalError there; a C double would be read as it is)
            raise Untypable(f"{min(unbound)} may be read before it is assigned")
        for n in ast.walk(self.fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in self.types \
                    and n.id not in self.tapes and n.id not in ("np", "numpy", "rt", "math", "range", "reversed") \
                    and n.id not in self.module:
                raise Untypable(f"the name {n.id} is not typed")

    def _item_write(self, st, target, conflicts):
        """`v[k] = x` / `v[k] op= x` (k a constant int): the k-th number of v replaced (checked
        against v's type in _item_writes_sound); x must be a number."""
        if not isinstance(target.value, ast.Name) or _const_int(target.slice) is None:
            raise Untypable("an item write other than `name[constant] = number`")
        if isinstance(st, ast.AugAssign) and type(st.op) not in _OPS:
            raise Untypable(f"the item update {ast.unparse(st)}")
        try:
            t = self.expr().type_of(st.value)
        except Untypable as exc:
            conflicts.append(str(exc))
            return
        if t is not None and not num(t):
            conflicts.append(f"an item write of something other than a number: {ast.unparse(st)}")

    _FRESH = (("np", "numpy"), ("zeros_like", "full_like"))

    def _fresh(self, e):
        """Whether e makes a new vector: np.zeros_like / np.full_like of one, np.zeros(v.shape)."""
        if _is_call(e, ("np", "numpy"), ("zeros",)) and len(e.args) == 1 and isinstance(e.args[0], ast.Attribute) \
                and e.args[0].attr == "shape" and not e.keywords:
            return is_vec(self.expr().type_of(e.args[0].value))
        return _is_call(e, *self._FRESH) and e.args and is_vec(self.expr().type_of(e.args[0]))

    def _item_writes_sound(self):
        """The vectors written item by item must be arrays the function made itself and nothing
        else holds: every assignment of one is np.zeros_like / np.full_like of a vector, and it is
        read whole (not as `v[k]`) only in top-level statements after its last item write (an
        alias, a tape push or a helper's argument taken earlier would see the write in NumPy and
        not in the C copy)."""
        written = {}
        for k, top in enumerate(self.fn.body):
            for n in ast.walk(top):
                if isinstance(n, (ast.Assign, ast.AugAssign)):
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                            written[t.value.id] = k
        if not written:
            return
        parent = {id(c): n for n in ast.walk(self.fn) for c in ast.iter_child_nodes(n)}
        for name, last in written.items():
            t = self.types.get(name)
            if not is_vec(t) or name in self.params or name in self.tapes:
                raise Untypable(f"an item write into {name}, which is not a small vector the function makes")
            for n in ast.walk(self.fn):
                if isinstance(n, (ast.Assign, ast.AugAssign)):
                    for tg in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                        if isinstance(tg, ast.Subscript) and isinstance(tg.value, ast.Name) and tg.value.id == name:
                            k = _const_int(tg.slice)
                            if not -t[1] <= k < t[1]:
                                raise Untypable(f"an item write into {name} out of range")
                        elif isinstance(tg, ast.Name) and tg.id == name and not (
                                isinstance(n, ast.Assign) and self._fresh(n.value)):
                            raise Untypable(f"{name} is written item by item but assigned {ast.unparse(n.value)}, "
                                            "not a new array")
            for k, top in enumerate(self.fn.body):
                for n in ast.walk(top):
                    if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
                        up = parent.get(id(n))
                        if isinstance(up, ast.Subscript) and up.value is n:
                            continue
                        if k <= last:
                            raise Untypable(f"{name} is read whole before its last item write")

    def _unpacked(self, names, value, new, conflicts):
        """`a, b = value`: each name gets its part of a tuple (a helper's result)."""
        try:
            t = self.expr().type_of(value)
        except Untypable as exc:
            conflicts.append(str(exc))
            return
        if t is None:
            return
        if not (isinstance(t, tuple) and t[0] == "t" and len(t[1]) == len(names)):
            raise Untypable("a tuple assignment of something other than a tuple of its size")
        for n, part in zip(names, t[1]):
            if n.id in self.tapes or n.id in self.ptypes:
                raise Untypable(f"{n.id} assigned in a tuple")
            merged = _merge(new.get(n.id), part)
            if merged is False:
                conflicts.append(f"{n.id} is both {new.get(n.id)} and {part}")
            else:
                new[n.id] = merged

    def expr(self):
        return VecExpr(self)

    # ---- helpers typed from their call sites ----
    def callee(self, name, argtypes):
        key = (name, tuple(argtypes))
        if key in self.registry:
            fn = self.registry[key]
            if fn is None:
                raise Untypable(f"{name} calls itself")
            if isinstance(fn, Untypable):
                raise fn
            return fn
        self.registry[key] = None
        fdef = self.module[name]
        ptypes = dict(zip([a.arg for a in fdef.args.args], argtypes))
        try:
            fn = VecFunction(fdef, ptypes, self.module, self.taken, False, self.registry)
            fn.return_type()
        except Untypable as exc:
            self.registry[key] = Untypable(f"{name}: {exc}")
            raise self.registry[key] from None
        base, n = f"_v_{name}", 1
        while f"{base}_{n}" in self.taken:
            n += 1
        fn.cname = f"{base}_{n}"
        self.taken.add(fn.cname)
        self.registry[key] = fn
        return fn

    def return_type(self):
        if self.ret is None:
            rets = [self.expr().type_of(r.value) for r in ast.walk(self.fn) if isinstance(r, ast.Return)
                    and r.value is not None]
            if not rets or any(t != rets[0] for t in rets) or rets[0] in (None, "o", "i") or rets[0] == "const":
                raise Untypable(f"the helper {self.fn.name} returns no numbers of one type")
            self.ret = rets[0]
        return self.ret


def _merge(a, b):
    if a is None or a == b:
        return b
    if a == "none":
        return b
    if b == "none":
        return a
    if a == "z" and (b == "d" or is_vec(b)):
        return b
    if b == "z" and (a == "d" or is_vec(a)):
        return a
    return False

