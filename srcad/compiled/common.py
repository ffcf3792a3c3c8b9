"""common: what the Cython translation's modules share: the directives, the preamble (the float
helper and the unboxed tape), the libm table, and small AST tests."""
import ast
import builtins

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


cdef double* _spare = NULL          # the last tape's buffer, kept for the next one (no page faults)
cdef Py_ssize_t _spare_cap = 0
cdef Py_ssize_t _SPARE_MAX = 1 << 23     # (64 MiB: a larger buffer goes back to the system)


@cython.final
cdef class {_TAPE}:
    """The tape's numbers, unboxed: a C array (the previous tape's, or 1024 numbers; doubled when
    full, or reserved ahead where the loop's trip count is known), popped in reverse order."""
    cdef double* data
    cdef Py_ssize_t n, cap

    def __cinit__(self):
        global _spare, _spare_cap
        self.n = 0
        if _spare != NULL:
            self.data, self.cap = _spare, _spare_cap
            _spare, _spare_cap = NULL, 0
            return
        self.cap = 1024
        self.data = <double*> PyMem_Malloc(self.cap * sizeof(double))
        if self.data == NULL:
            raise MemoryError()

    def __dealloc__(self):
        global _spare, _spare_cap
        if self.data != NULL and _spare_cap < self.cap <= _SPARE_MAX:
            PyMem_Free(_spare)
            _spare, _spare_cap = self.data, self.cap
        else:
            PyMem_Free(self.data)

    cdef int reserve(self, Py_ssize_t more) except -1:
        """Room for `more` numbers beyond those held (one allocation for a whole loop)."""
        cdef double* grown
        cdef Py_ssize_t want = self.n + (more if more > 0 else 0)
        if want > self.cap:
            grown = <double*> PyMem_Realloc(self.data, want * sizeof(double))
            if grown == NULL:
                raise MemoryError()
            self.data, self.cap = grown, want
        return 0

    cdef inline int push(self, double v) except -1:
        if self.n == self.cap:
            self.reserve(self.cap)
        self.data[self.n] = v
        self.n += 1
        return 0

    cdef inline void put(self, double v) noexcept:
        """push where reserve() made room (a loop's pushes, counted when the code was written)."""
        self.data[self.n] = v
        self.n += 1

    cdef inline double pop(self) except? -1.0:
        if self.n == 0:
            raise IndexError("pop from an empty tape")
        self.n -= 1
        return self.data[self.n]
'''


class TranslateError(Exception):
    """The module cannot be written as Cython (a name Cython reserves is in use)."""


def unbound_names(tree, free=()):
    """{name: line} of the names the module reads that nothing in it binds (an assignment, a
    parameter, a def, class or import, an except or match target), that srcad does not supply
    (free) and that are not builtins. Cython refuses such a name ("undeclared name not builtin")
    where Python would raise NameError only if that line ran; the caller names it up front."""
    bound = set(free) | set(dir(builtins))
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            bound.add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            bound.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            bound.add(n.rest)
    out = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in bound:
            out.setdefault(n.id, n.lineno)
    return out


def require_bound(source, free):
    """TranslateError naming the first name the module reads unbound (unbound_names)."""
    unbound = unbound_names(ast.parse(source), free)
    if unbound:
        name, line = min(unbound.items(), key=lambda kv: kv[1])
        raise TranslateError(f"line {line} of the module reads the name {name!r}, which the module neither "
                             f"defines nor is given: define it there or pass its value among the supplied names")


def _names(tree):
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}


def _is_call(node, module, names):
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id in module
            and node.func.attr in names)


def zeros_of(node):
    """X for `np.zeros_like(X)` or `np.zeros(X.shape)` (X a name, no keywords): the same new array
    when X is a float64 ndarray, which the caller checks (the reverse transform writes the second
    form for a float64 array's zero cotangent); None for anything else."""
    if not (_is_call(node, ("np", "numpy"), ("zeros_like", "zeros")) and len(node.args) == 1 and not node.keywords):
        return None
    a = node.args[0]
    if node.func.attr == "zeros_like":
        return a if isinstance(a, ast.Name) else None
    if isinstance(a, ast.Attribute) and a.attr == "shape" and isinstance(a.value, ast.Name):
        return a.value
    return None


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


def maybe_unbound(body, bound):
    """The names some statement of body may read before any assignment of them (Python raises
    UnboundLocalError there; a C local would be read as whatever it holds). bound: the names
    bound on entry. Conservative: what a loop, branch, with or try assigns counts as bound after
    it only if it was bound before it, and a nested function's body is not looked into."""
    out = set()

    def walk(stmts, bound):
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                bound = bound | {st.name}
                continue
            parts = [getattr(st, f, None) for f in ("body", "orelse", "finalbody")]
            if isinstance(st, ast.Try):
                parts += [h.body for h in st.handlers]
            inner = [p for p in parts if isinstance(p, list) and p and isinstance(p[0], ast.stmt)]
            heads = [st.iter, st.target] if isinstance(st, (ast.For, ast.AsyncFor)) else \
                [st.test] if isinstance(st, (ast.If, ast.While)) else \
                [i for item in st.items for i in (item.context_expr, item.optional_vars) if i is not None] \
                if isinstance(st, (ast.With, ast.AsyncWith)) else [] if inner else [st]
            for h in heads:
                _reads(h, bound, out)
            if inner:
                mine = bound | _stores(heads) | ({h.name for h in getattr(st, "handlers", []) if h.name})
                for part in inner:
                    walk(part, set(mine))
            else:
                bound |= _stores([st])

    walk(body, set(bound))
    return out


def _reads(node, bound, out):
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in bound:
            out.add(n.id)


def _stores(nodes):
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
