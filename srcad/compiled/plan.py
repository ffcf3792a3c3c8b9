"""plan: which locals of one generated function are C doubles, C integers, typed memoryviews
or unboxed tapes (see pyx.py for the rules)."""
import ast

from .common import _ARITH, _LIBM, _MATH_MODULES, _is_call, _range_bound, maybe_unbound, zeros_of


class _Function:
    """The typing plan of one generated function."""

    def __init__(self, fn, kinds, taken):
        self.fn = fn
        self.kinds = kinds or {}
        self.taken = taken
        self.params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        self.assigns = {}        # name -> list of ("param"|"value"|"aug"|"for"|"other", node)
        self.doubles, self.ints, self.arrays, self.shapes = set(), set(), {}, {}
        self.written = set()     # arrays whose elements the function writes
        self.enabled = not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
                               for n in ast.walk(fn) if n is not fn)
        if self.enabled:
            self._collect()
            self._infer()

    # ---- what assigns each name ----
    def _add(self, name, how, node):
        self.assigns.setdefault(name, []).append((how, node))

    def _collect(self):
        for p in self.params:
            self._add(p, "param", None)
        for a in (self.fn.args.vararg, self.fn.args.kwarg):
            if a is not None:
                self._add(a.arg, "other", None)
        for node in ast.walk(self.fn):
            if node is self.fn:
                continue
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self._add(t.id, "value", node.value)
                    else:
                        self._other_targets(t)
            elif isinstance(node, ast.AugAssign):
                if isinstance(node.target, ast.Name):
                    self._add(node.target.id, "aug", node)
                else:
                    self._other_targets(node.target)
            elif isinstance(node, ast.AnnAssign):
                self._other_targets(node.target)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                if isinstance(node.target, ast.Name):
                    self._add(node.target.id, "for", node)
                else:
                    self._other_targets(node.target)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        self._other_targets(item.optional_vars)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self._add(node.name, "other", node)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for n in node.names:
                    self._add(n, "other", node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    self._add((a.asname or a.name).split(".")[0], "other", node)
            elif isinstance(node, ast.NamedExpr):
                self._add(node.target.id, "other", node)
            elif isinstance(node, ast.Delete):
                self._other_targets(*node.targets)
            elif isinstance(node, ast.Compare) and any(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops):
                for n in [node.left, *node.comparators]:      # `v is None`: v must stay an object
                    if isinstance(n, ast.Name):
                        self._add(n.id, "other", node)
            elif isinstance(node, (ast.comprehension,)):
                self._other_targets(node.target)

    def _other_targets(self, *targets):
        for t in targets:
            if isinstance(t, ast.Name):
                self._add(t.id, "other", t)
            elif isinstance(t, (ast.Tuple, ast.List)):
                self._other_targets(*t.elts)
            elif isinstance(t, ast.Starred):
                self._other_targets(t.value)
            elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                self.written.add(t.value.id)     # an element written: the name itself is not rebound

    # ---- inference ----
    def _infer(self):
        # arrays: a float64 parameter of known rank, or one local made once by np.zeros_like of one
        for name, how in self.assigns.items():
            if how == [("param", None)]:
                k = self.kinds.get(name)
                if isinstance(k, tuple) and len(k) == 2 and k[0] == "d" and isinstance(k[1], int) and k[1] >= 1:
                    self.arrays[name] = (k[1], name)
        for name, how in self.assigns.items():
            if len(how) == 1 and how[0][0] == "value" and zeros_of(how[0][1]) is not None:
                src = zeros_of(how[0][1])      # np.zeros_like(a) or np.zeros(a.shape) of a float64 array
                if isinstance(src, ast.Name) and src.id in self.arrays:
                    self.arrays[name] = (self.arrays[src.id][0], self.arrays[src.id][1])
        for name in list(self.arrays):
            if name in self.params and name in self.written:
                del self.arrays[name]          # (a read-only argument would fail at the memoryview)
        # shapes: S = A.shape; ints: range targets and S[k], A.shape[k], len(A)
        for name, how in self.assigns.items():
            if len(how) == 1 and how[0][0] == "value":
                v = how[0][1]
                if isinstance(v, ast.Attribute) and v.attr == "shape" and isinstance(v.value, ast.Name) \
                        and v.value.id in self.arrays:
                    self.shapes[name] = v.value.id
        for name, how in self.assigns.items():
            if all(h == "for" and _range_bound(n.iter) is not False for h, n in how) or \
                    (len(how) == 1 and how[0][0] == "value" and self._dim(how[0][1]) is not None):
                self.ints.add(name)
        # a name some line may read unbound stays an object (Cython raises UnboundLocalError for it)
        unbound = maybe_unbound(self.fn.body, set(self.params))
        self.ints -= unbound
        # doubles: the greatest set consistent with every assignment
        cand = {n for n, how in self.assigns.items()
                if n not in unbound and n not in self.ints and all(h in ("value", "aug") or (h == "param" and self.kinds.get(n) == "float")
                                              for h, _ in how)}
        while True:
            self.doubles = cand
            keep = {n for n in cand if self._all_double(n)}
            if keep == cand:
                break
            cand = keep
        self.tapes = {t for t in self.assigns if self._numbers_tape(t)}

    def _numbers_tape(self, t):
        """Whether the list t is a tape whose numbers can live in a C array of their own: made once
        (`t = []`), used only as `t.append(name)` and `name = t.pop()`, and the numbers pushed are
        the numbers popped (a value goes back to the name it came from: the split keeps each
        stack's order)."""
        how = self.assigns[t]
        if len(how) != 1 or how[0][0] != "value" or not (isinstance(how[0][1], ast.List) and not how[0][1].elts):
            return False
        uses = sum(1 for n in ast.walk(self.fn) if isinstance(n, ast.Name) and n.id == t and isinstance(n.ctx, ast.Load))
        pushed, popped, seen = set(), set(), 0
        for n in ast.walk(self.fn):
            if isinstance(n, ast.Expr) and self._tape_op(n.value, t, "append"):
                arg = n.value.args[0]
                if not isinstance(arg, ast.Name):
                    return False
                seen += 1
                if arg.id in self.doubles:
                    pushed.add(arg.id)
            elif isinstance(n, ast.Assign) and self._tape_op(n.value, t, "pop"):
                if len(n.targets) != 1 or not isinstance(n.targets[0], ast.Name):
                    return False
                seen += 1
                if n.targets[0].id in self.doubles:
                    popped.add(n.targets[0].id)
        return seen == uses and pushed == popped and bool(pushed)

    @staticmethod
    def _tape_op(e, t, op):
        return (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == op
                and isinstance(e.func.value, ast.Name) and e.func.value.id == t and not e.keywords
                and len(e.args) == (1 if op == "append" else 0))

    def _dim(self, v):
        """(array, axis) when v reads an array's extent on one axis."""
        if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Constant) and isinstance(v.slice.value, int):
            base, k = v.value, v.slice.value
            if isinstance(base, ast.Name) and base.id in self.shapes:
                return self.shapes[base.id], k
            if isinstance(base, ast.Attribute) and base.attr == "shape" and isinstance(base.value, ast.Name) \
                    and base.value.id in self.arrays:
                return base.value.id, k
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "len" and len(v.args) == 1 \
                and isinstance(v.args[0], ast.Name) and v.args[0].id in self.arrays:
            return v.args[0].id, 0
        return None

    def _all_double(self, name):
        seen = False
        for how, node in self.assigns[name]:
            if how == "param":
                seen = True
                continue
            t = self.type_of(ast.BinOp(ast.Name(name), node.op, node.value) if how == "aug" else node)
            if t == "d" or (t == "coerce" and how == "value" and _is_call(node, ("rt",), ("seed",))):
                seen = True
            elif t not in ("none", "coerce"):
                return False
        return seen

    def type_of(self, e):
        """'d' (a C double), 'i' (a C integer), 'ic' (an int literal), 'none', 'coerce' (an object
        that is a number where it is assigned to a double), or None (a Python object)."""
        if isinstance(e, ast.Constant):
            if e.value is None:
                return "none"
            if isinstance(e.value, bool):
                return None
            if isinstance(e.value, float):
                return "d"
            if isinstance(e.value, int) and abs(e.value) < 2 ** 53:
                return "ic"
            return None
        if isinstance(e, ast.Name):
            return "d" if e.id in self.doubles else "i" if e.id in self.ints else None
        if isinstance(e, ast.BinOp):
            a, b = self.type_of(e.left), self.type_of(e.right)
            if isinstance(e.op, _ARITH) and "d" in (a, b) and a in ("d", "i", "ic") and b in ("d", "i", "ic"):
                return "d"
            if isinstance(e.op, (ast.Add, ast.Sub)) and "i" in (a, b) and a in ("i", "ic") and b in ("i", "ic"):
                return "i"       # an index computed from a loop index (an object where it is assigned)
            if isinstance(e.op, ast.Pow) and a == "d" and b in ("d", "ic"):
                return "d"
            return None
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return "d" if self.type_of(e.operand) == "d" else None
        if isinstance(e, ast.Call):
            if _is_call(e, _MATH_MODULES, _LIBM) and len(e.args) == 1 and not e.keywords \
                    and self.type_of(e.args[0]) == "d":
                return "d"
            if _is_call(e, ("rt",), ("add",)) and len(e.args) == 2 and not e.keywords \
                    and all(self.type_of(a) == "d" for a in e.args):
                return "d"
            if _is_call(e, ("rt",), ("unbroadcast",)) and len(e.args) == 2 and not e.keywords \
                    and all(self.type_of(a) == "d" for a in e.args):
                return "d"
            if _is_call(e, ("rt",), ("seed",)) and len(e.args) == 2 and self.type_of(e.args[0]) == "d":
                return "coerce"      # 1.0, or the caller's cotangent of a number's shape
            if isinstance(e.func, ast.Attribute) and e.func.attr == "pop" and not e.args and not e.keywords \
                    and isinstance(e.func.value, ast.Name) and e.func.value.id.startswith("tape"):
                return "coerce"      # what the tape holds for this name: pushed when it was a double
            return None
        if isinstance(e, ast.Subscript) and self._element(e) is not None:
            return "d"
        return None

    def _element(self, e):
        """(array, indices) when e is an element of a typed array, indexed by C integers."""
        if not (isinstance(e.value, ast.Name) and e.value.id in self.arrays):
            return None
        idx = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        if len(idx) != self.arrays[e.value.id][0] or any(self.type_of(i) not in ("i", "ic") for i in idx):
            return None
        return e.value.id, idx
