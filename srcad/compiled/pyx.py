"""pyx: the generated derivative module (Python text) as Cython (`.pyx` text).

The input is the text srcad/cache.py builds for one abstract signature; the output is the same
module, line for line (the user's names, the `# L<n>:` comments), with what can be proven typed:

- a local whose every assignment is a float computation (`+ - * /`, `**`, unary minus, the math
  functions in `_LIBM` applied to a float, an element read of a float64 array, a Python float
  parameter of the signature, srcad's `rt.add` / `rt.unbroadcast` / `rt.seed` of floats, a value
  popped back from the tape) becomes `cdef double`; its tape placeholder `None` becomes NaN (never
  read by correct code: a NaN would show where a number was expected);
- a `for` target whose every assignment is a `range` loop, and a dimension read from an array's
  shape, become `cdef Py_ssize_t`: the loop is a C loop (Cython turns `reversed(range(n))` into
  one too);
- a float64 array parameter (and a local made once by `np.zeros_like` of one) of known rank gets a
  typed memoryview, and an element access with typed integer indices goes through it. Bounds and
  negative-index checks stay on, except on a statement whose every access is proven in range: the
  index is the target of the enclosing `range(n)` loop, not reassigned in it, and n is that
  array's extent on that axis (`x.shape[k]`, `len(x)`, or a name read once from it);
- the math functions whose NumPy and C library results agree bit for bit (`_LIBM`; np.tanh does
  not, so it stays a NumPy call) become `libc.math` calls.

Everything else stays a Python object in the same function, running as it does in the Python
module: every program the Python module runs, the Cython one runs, with the same results where the
operations are the same (IEEE +, -, *, / and the same libm calls give the same bits). Division by
zero raises ZeroDivisionError as for a Python float (cdivision off).

A function containing a nested function, lambda or class is kept untyped (its closure variables
would need care); the module still compiles and runs.
"""
import ast
import copy

DIRECTIVES = ("# cython: language_level=3, binding=True, boundscheck=True, wraparound=True, "
              "cdivision=False, cpow=True, embedsignature=False")

# NumPy / math function -> libc.math function, for those whose float64 results agree bit for bit
# with the C library's on this platform (checked by tests/test_compile.py; tanh does not).
_LIBM = {"sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "log": "log", "sqrt": "sqrt",
         "sinh": "sinh", "cosh": "cosh", "arctan": "atan", "atan": "atan", "arcsin": "asin", "asin": "asin",
         "arccos": "acos", "acos": "acos", "log1p": "log1p", "expm1": "expm1", "fabs": "fabs", "absolute": "fabs",
         "abs": "fabs"}
_MATH_MODULES = ("np", "numpy", "math")
_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div)
_HELPER = "_srcad_add"
_TAPE = "_DoubleTape"
_PREAMBLE = f'''
cimport cython
cimport libc.math
from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free


cdef inline double {_HELPER}(double a, double b):
    """rt.add for two numbers: a zero is "no derivative yet", returned as the other one is."""
    if a == 0.0:
        return b
    if b == 0.0:
        return a
    return a + b


@cython.final
cdef class {_TAPE}:
    """The tape's numbers, unboxed: a growing C array (doubling), popped in reverse order."""
    cdef double* data
    cdef Py_ssize_t n, cap

    def __cinit__(self):
        self.n, self.cap = 0, 1024
        self.data = <double*> PyMem_Malloc(self.cap * sizeof(double))
        if self.data == NULL:
            raise MemoryError()

    def __dealloc__(self):
        PyMem_Free(self.data)

    cdef inline int push(self, double v) except -1:
        cdef double* grown
        if self.n == self.cap:
            grown = <double*> PyMem_Realloc(self.data, 2 * self.cap * sizeof(double))
            if grown == NULL:
                raise MemoryError()
            self.data, self.cap = grown, 2 * self.cap
        self.data[self.n] = v
        self.n += 1
        return 0

    cdef inline double pop(self) except? -1.0:
        if self.n == 0:
            raise IndexError("pop from an empty tape")
        self.n -= 1
        return self.data[self.n]
'''


class TranslateError(Exception):
    """The module cannot be written as Cython (a name Cython reserves is in use)."""


def _names(tree):
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}


def _is_call(node, module, names):
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id in module
            and node.func.attr in names)


def _range_bound(it):
    """E of `range(E)`, `range(0, E)` or `reversed(range(E))`; the iterable when it is a range of
    any form (None bound); False when it is no range at all."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "reversed" \
            and len(it.args) == 1 and not it.keywords:
        it = it.args[0]
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and not it.keywords and 1 <= len(it.args) <= 3):
        return False
    if len(it.args) == 1:
        return it.args[0]
    if len(it.args) == 2 and isinstance(it.args[0], ast.Constant) and it.args[0].value == 0:
        return it.args[1]
    return None


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
            if len(how) == 1 and how[0][0] == "value" and _is_call(how[0][1], _MATH_MODULES[:2], ("zeros_like",)):
                call = how[0][1]
                src = call.args[0] if len(call.args) == 1 and not call.keywords else None
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
        # doubles: the greatest set consistent with every assignment
        cand = {n for n, how in self.assigns.items()
                if n not in self.ints and all(h in ("value", "aug") or (h == "param" and self.kinds.get(n) == "float")
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


class _Rewrite(ast.NodeTransformer):
    """One statement with typed element accesses, libc.math calls and float helpers."""

    def __init__(self, plan, aliases, loops):
        self.plan, self.aliases, self.loops = plan, aliases, loops
        self.changed = False
        self.checked = False      # an element access not proven in range
        self.proven = False

    def visit_Subscript(self, node):
        node = self.generic_visit(node)
        el = self.plan._element(node)
        if el is None:
            return node
        arr, idx = el
        self.changed = True
        if all(self._in_range(arr, k, i) for k, i in enumerate(idx)):
            self.proven = True
        else:
            self.checked = True
        return ast.Subscript(ast.Name(self.aliases[arr], ast.Load()), node.slice, node.ctx)

    def _in_range(self, arr, axis, i):
        if not isinstance(i, ast.Name):
            return False
        loop = self.loops.get(i.id)
        if loop is None:
            return False
        bound = _range_bound(loop.iter)
        if bound is None or bound is False:
            return False
        group = self.plan.arrays[arr][1]
        dim = self.plan._dim(bound)
        if dim is None and isinstance(bound, ast.Name):
            how = self.plan.assigns.get(bound.id, [])
            if len(how) == 1 and how[0][0] == "value":
                dim = self.plan._dim(how[0][1])
        return dim is not None and self.plan.arrays[dim[0]][1] == group and dim[1] == axis

    def visit_Call(self, node):
        typed = self.plan.type_of(node) == "d"
        node = self.generic_visit(node)
        if not typed:
            return node
        if _is_call(node, _MATH_MODULES, _LIBM):
            self.changed = True
            return ast.Call(ast.Attribute(ast.Attribute(ast.Name("libc", ast.Load()), "math", ast.Load()),
                                          _LIBM[node.func.attr], ast.Load()), node.args, [])
        if _is_call(node, ("rt",), ("add",)):
            self.changed = True
            return ast.Call(ast.Name(_HELPER, ast.Load()), node.args, [])
        if _is_call(node, ("rt",), ("unbroadcast",)):
            self.changed = True
            return node.args[0]
        return node


def _assigned_in(body, name):
    for st in body:
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store):
                return True
    return False


def translate(source, kinds_of=None, free=()):
    """The Cython text of the generated module `source`. kinds_of: {function name: {parameter
    name: kind key (transform/kinds.py's signature keys: "float", ("d", 1), ...)}}. free: the
    names srcad supplies to the module when it loads it (the user's globals and closure values):
    bound to None at the top of the text, since Cython refuses a name it never sees bound."""
    tree = ast.parse(source)
    taken = _names(tree)
    for reserved in ("cython", "libc", "PyMem_Malloc", "PyMem_Realloc", "PyMem_Free", _HELPER, _TAPE):
        if reserved in taken:
            raise TranslateError(f"the module uses the name {reserved!r}, which the Cython text needs")
    lines = source.splitlines()
    edits = {}          # first line (1-based) -> (last line, replacement lines)
    inserts = {}        # line (1-based) -> lines inserted before it
    after = {}          # line -> lines inserted after it
    notes = {"typed": 0, "proven": 0, "checked": 0}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            _plan_function(fn, (kinds_of or {}).get(fn.name), taken, lines, edits, inserts, after, notes)
    out = [DIRECTIVES,
           "# srcad: the generated module below as Cython (srcad.grad(..., compile=True)); typed where proven,",
           "# Python objects elsewhere. Element accesses are bounds-checked unless marked proven in range."]
    out += _PREAMBLE.splitlines()
    free = sorted(n for n in free if n.isidentifier())
    if free:
        out += ["", "# names srcad supplies when it loads the module (the values the user's code reads)"]
        out += [f"{n} = None" for n in free]
    k = 1
    while k <= len(lines):
        out += inserts.get(k, [])
        if k in edits:
            last, repl = edits[k]
            out += repl
            out += after.get(last, [])
            k = last + 1
            continue
        out.append(lines[k - 1])
        out += after.get(k, [])
        k += 1
    return "\n".join(out) + "\n", notes


def _plan_function(fn, kinds, taken, lines, edits, inserts, after, notes):
    plan = _Function(fn, kinds, taken)
    if not plan.enabled:
        return
    aliases = {}
    for name in plan.arrays:
        alias, n = f"{name}_v", 2
        while alias in taken:
            alias, n = f"{name}_v{n}", n + 1
        taken.add(alias)
        aliases[name] = alias
    tapes = {}
    for t in sorted(plan.tapes):
        alias, n = f"{t}_d", 2
        while alias in taken:
            alias, n = f"{t}_d{n}", n + 1
        taken.add(alias)
        tapes[t] = alias
    body = fn.body
    first = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        and isinstance(body[0].value.value, str) else 0
    if first >= len(body):
        return
    indent = " " * body[first].col_offset
    decl = []
    params = set(plan.params)
    d_locals = sorted(plan.doubles - params)
    i_locals = sorted(plan.ints - params)
    if d_locals:
        decl.append(f"{indent}cdef double {', '.join(d_locals)}")
    if i_locals:
        decl.append(f"{indent}cdef Py_ssize_t {', '.join(i_locals)}")
    for name, alias in aliases.items():
        ndim = plan.arrays[name][0]
        const = "const " if name in params and name not in plan.written else ""
        decl.append(f"{indent}cdef {const}double[{', '.join([':'] * ndim)}] {alias}")
    for t, alias in tapes.items():
        decl.append(f"{indent}cdef {_TAPE} {alias} = {_TAPE}()  # the numbers of {t}, unboxed")
    for name, alias in aliases.items():
        if name in params:
            decl.append(f"{indent}{alias} = {name}")
    notes["typed"] += len(d_locals) + len(i_locals) + len(aliases)
    start = body[first].lineno
    while start - 1 >= 1 and lines[start - 2].strip().startswith("#") and start - 1 > fn.lineno:
        start -= 1          # before the comment lines that lead the first statement
    inserts.setdefault(start, []).extend(decl)
    # typed parameters: `double x` in the def line
    typed_params = [a for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs if a.arg in plan.doubles]
    for a in sorted(typed_params, key=lambda a: (a.lineno, a.col_offset), reverse=True):
        ln = a.lineno
        text = edits[ln][1][0] if ln in edits else lines[ln - 1]
        lines[ln - 1] = text[:a.col_offset] + "double " + text[a.col_offset:]
        notes["typed"] += 1
    plan.tape_aliases = tapes
    _walk(plan, fn.body, {}, aliases, lines, edits, after, notes)


def _tape_rewrite(plan, st):
    """`t_d.push(v)` / `v = t_d.pop()` for a number v of a split tape t; None otherwise."""
    tapes = getattr(plan, "tape_aliases", {})
    if isinstance(st, ast.Expr):
        for t, alias in tapes.items():
            if plan._tape_op(st.value, t, "append") and st.value.args[0].id in plan.doubles:
                return f"{alias}.push({st.value.args[0].id})"
    if isinstance(st, ast.Assign):
        for t, alias in tapes.items():
            if plan._tape_op(st.value, t, "pop") and st.targets[0].id in plan.doubles:
                return f"{st.targets[0].id} = {alias}.pop()"
    return None


def _walk(plan, body, loops, aliases, lines, edits, after, notes):
    for st in body:
        if isinstance(st, ast.For):
            inner = dict(loops)
            if isinstance(st.target, ast.Name):
                inner.pop(st.target.id, None)
                if st.target.id in plan.ints and not _assigned_in(st.body + st.orelse, st.target.id):
                    inner[st.target.id] = st
            _walk(plan, st.body, inner, aliases, lines, edits, after, notes)
            _walk(plan, st.orelse, loops, aliases, lines, edits, after, notes)
            continue
        if isinstance(st, (ast.While, ast.If)):
            _walk(plan, st.body, loops, aliases, lines, edits, after, notes)
            _walk(plan, st.orelse, loops, aliases, lines, edits, after, notes)
            continue
        if isinstance(st, (ast.With, ast.Try)):
            for part in (st.body, getattr(st, "orelse", []), getattr(st, "finalbody", [])):
                _walk(plan, part, loops, aliases, lines, edits, after, notes)
            for h in getattr(st, "handlers", []):
                _walk(plan, h.body, loops, aliases, lines, edits, after, notes)
            continue
        if not isinstance(st, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return)):
            continue
        indent = " " * st.col_offset
        tape_text = _tape_rewrite(plan, st)
        if tape_text is not None:
            edits[st.lineno] = (st.end_lineno, [indent + tape_text])
            continue
        new = copy.deepcopy(st)
        rw = _Rewrite(plan, aliases, loops)
        new = rw.visit(new)
        if isinstance(new, ast.Assign) and len(new.targets) == 1 and isinstance(new.targets[0], ast.Name) \
                and new.targets[0].id in plan.doubles and isinstance(new.value, ast.Constant) and new.value.value is None:
            new.value = ast.Attribute(ast.Attribute(ast.Name("libc", ast.Load()), "math", ast.Load()), "NAN",
                                      ast.Load())
            rw.changed = True
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and st.targets[0].id in aliases and st.targets[0].id not in plan.params:
            name = st.targets[0].id
            after.setdefault(st.end_lineno, []).append(f"{indent}{aliases[name]} = {name}")
        if not rw.changed:
            continue
        text = ast.unparse(new)
        if rw.proven and not rw.checked:
            repl = [f"{indent}with cython.boundscheck(False), cython.wraparound(False):  # indices proven in range",
                    f"{indent}    {text}"]
            notes["proven"] += 1
        else:
            repl = [f"{indent}{text}"]
            notes["checked"] += rw.checked
        edits[st.lineno] = (st.end_lineno, repl)
