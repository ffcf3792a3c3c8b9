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
  view of its numbers (views.py: the buffer protocol, not a typed memoryview, whose C code would
  double the build time), and an element access with typed integer indices goes through it
  (`_srcad_at1(x_v, i)[0]`). Bounds and negative-index checks stay on, except for an access proven
  in range (`_srcad_at1_proven`): each index is the target of an enclosing `range(n)` loop, not
  reassigned in it, and n is that array's extent on that axis (`x.shape[k]`, `len(x)`, or a name
  read once from it);
- a chain of elementwise float64 array statements of one user line becomes one C loop (fuse.py),
  behind a run-time check of the arrays' shapes and layout (else the NumPy lines run);
- the math functions whose NumPy and C library results agree bit for bit (`_LIBM`; np.tanh does
  not, so it stays a NumPy call) become `libc.math` calls.

Everything else stays a Python object in the same function, running as it does in the Python
module: every program the Python module runs, the Cython one runs, with the same results where the
operations are the same (IEEE +, -, *, / and the same libm calls give the same bits). Division by
zero raises ZeroDivisionError as for a Python float (cdivision off).

First, a function of known kinds is offered to smallvec.py, which writes it (and the helpers it
calls) with every number and small 1-D array as C doubles when all of its code is within its rules;
the rules above are for the functions it declines.

A function containing a nested function, lambda or class is kept untyped (its closure variables
would need care); the module still compiles and runs.
"""
import ast
import re
import copy

from .common import (_HELPER, _LIBM, _MATH_MODULES, _PREAMBLE, _TAPE, DIRECTIVES, TranslateError, _is_call, _names,
                     _range_bound)
from .fuse import CHECK_TEXT, RESERVED, emit_run, find_runs
from .plan import _Function
from .smallvec import SMALL, Untypable, VecFunction, vec
from .vecgen import function_text
from .views import RESERVED as VIEW_RESERVED
from .views import VIEW, VIEW_TEXT, accessors

__all__ = ["DIRECTIVES", "TranslateError", "translate", "_LIBM"]


class _Rewrite(ast.NodeTransformer):
    """One statement with typed element accesses, libc.math calls and float helpers."""

    def __init__(self, plan, aliases, loops):
        self.plan, self.aliases, self.loops = plan, aliases, loops
        self.changed = False
        self.checked = False      # an element access not proven in range
        self.proven = False
        self.ndims = set()        # the ranks of the arrays read or written element by element

    def visit_Subscript(self, node):
        node = self.generic_visit(node)
        el = self.plan._element(node)
        if el is None:
            return node
        arr, idx = el
        self.changed = True
        ndim = self.plan.arrays[arr][0]
        self.ndims.add(ndim)
        if all(self._in_range(arr, k, i) for k, i in enumerate(idx)):
            self.proven = True
            name = f"_srcad_at{ndim}_proven"
        else:
            self.checked = True
            name = f"_srcad_at{ndim}"
        at = ast.Call(ast.Name(name, ast.Load()), [ast.Name(self.aliases[arr], ast.Load()), *idx], [])
        return ast.Subscript(at, ast.Constant(0), node.ctx)     # the number at that address

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


_STAND_IN = re.compile(r"\brt\.shape_stand_in\((\w+)\)")


def translate(source, kinds_of=None, free=(), shapes_of=None):
    """The Cython text of the generated module `source`. kinds_of: {function name: {parameter
    name: kind key (transform/kinds.py's signature keys: "float", ("d", 1), ...)}}. free: the
    names srcad supplies to the module when it loads it (the user's globals and closure values):
    bound to None at the top of the text, since Cython refuses a name it never sees bound.
    A function of known kinds is scalarised (smallvec.py: numbers and small vectors as C doubles,
    the helpers it calls typed from the call) when its code allows; shapes_of: {function name:
    {parameter: length}} of its 1-D arrays of a small length (without: arrays stay objects)."""
    # rt.shape_stand_in(v) is v or an array of v's shape that holds no memory, and the adjoint
    # reads only its shape: the plan reads it as v (a typed tape keeps the number itself); a line
    # left as it was gets its stand-in back (an array kept whole would hold its memory to the end)
    given = source.splitlines()
    source = _STAND_IN.sub(r"\1", source)
    tree = ast.parse(source)
    taken = _names(tree)
    for reserved in ("cython", "libc", "PyMem_Malloc", "PyMem_Realloc", "PyMem_Free", "prange", _HELPER, _TAPE,
                     *RESERVED, *VIEW_RESERVED):
        if reserved in taken or any(n.startswith("_srcad_at") for n in taken):
            raise TranslateError(f"the module uses the name {reserved!r}, which the Cython text needs")
    lines = source.splitlines()
    edits = {}          # first line (1-based) -> (last line, replacement lines)
    inserts = {}        # line (1-based) -> lines inserted before it
    after = {}          # line -> lines inserted after it
    notes = {"typed": 0, "proven": 0, "checked": 0, "vector": 0, "why": None, "fused": [], "ndims": set()}
    module = {fn.name: fn for fn in tree.body if isinstance(fn, ast.FunctionDef)}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef):
            kinds = (kinds_of or {}).get(fn.name)
            if kinds and _scalarise(fn, kinds, (shapes_of or {}).get(fn.name, {}), module, taken, lines, edits,
                                    notes):
                continue
            _plan_function(fn, (kinds_of or {}).get(fn.name), taken, lines, edits, inserts, after, notes)
    out = [DIRECTIVES,
           "# srcad: the generated module below as Cython (srcad.grad(..., compile=True)); typed where proven,",
           "# Python objects elsewhere. Element accesses are bounds-checked unless marked proven in range."]
    out += _PREAMBLE.splitlines()
    if notes["fused"] or notes["ndims"] or notes.get("views"):
        out += VIEW_TEXT.splitlines()
        out += accessors(notes["ndims"])
    if notes["fused"]:
        out += CHECK_TEXT.splitlines()
        for helper in notes["fused"]:
            out += helper
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
        text = lines[k - 1]
        out.append(given[k - 1] if text != given[k - 1] and text == _STAND_IN.sub(r"\1", given[k - 1]) else text)
        out += after.get(k, [])
        k += 1
    return "\n".join(out) + "\n", notes


def _scalarise(fn, kinds, shapes, module, taken, lines, edits, notes):
    """fn (and the helpers it calls) with its small vectors as C doubles, in place of its text;
    False (notes["why"] says why) when its code is outside smallvec.py's rules."""
    ptypes = {}
    for a in fn.args.args:
        k, n = kinds.get(a.arg), shapes.get(a.arg)
        ptypes[a.arg] = vec(n) if k == ("d", 1) and n and n <= SMALL else "d" if k == "float" else "o"
    registry = {}
    mine = set(taken)
    try:
        vf = VecFunction(fn, ptypes, module, mine, True, registry)
        text = function_text(vf, lines)
        helpers = []
        for h in registry.values():
            if not isinstance(h, VecFunction):
                raise h or Untypable("a helper calls itself")
            helpers += [*function_text(h, lines), "", ""]
    except Untypable as exc:
        notes["why"] = str(exc)
        return False
    taken |= mine
    sizes = ", ".join(f"{p} of {t[1]}" for p, t in ptypes.items() if t != "d" and t != "o")
    head = [f"# srcad: {fn.name} for 1-D arrays {sizes}: their numbers as C doubles, the helpers it calls "
            f"typed from the call"]
    edits[fn.lineno] = (fn.end_lineno, helpers + head + text)
    notes["vector"] += 1 + len(registry)
    return True


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
        decl.append(f"{indent}cdef {VIEW} {alias}  # {name}'s numbers")
        notes["views"] = True
    for t, alias in tapes.items():
        decl.append(f"{indent}cdef {_TAPE} {alias} = {_TAPE}()  # the numbers of {t}, unboxed")
    for name, alias in aliases.items():
        if name in params:
            decl.append(f"{indent}{alias} = {_view(plan, name)}")
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


def _view(plan, name):
    """The text making the view of the array `name` (writable when the function writes its numbers)."""
    return f"{VIEW}({name}, {plan.arrays[name][0]}, {name in plan.written})"


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
    fused = set()
    for run in find_runs(plan, body, lines):
        repl, helper = emit_run(run, plan, plan.fn, lines, len(notes["fused"]) + 1, plan.taken)
        notes["fused"].append(helper)
        edits[run[0][0].lineno] = (run[0][-1].end_lineno, repl)
        fused |= set(map(id, run[0]))
    for st in body:
        if id(st) in fused:
            continue
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
            after.setdefault(st.end_lineno, []).append(f"{indent}{aliases[name]} = {_view(plan, name)}")
        if not rw.changed:
            continue
        notes["ndims"] |= rw.ndims
        notes["proven"] += rw.proven and not rw.checked
        notes["checked"] += rw.checked
        edits[st.lineno] = (st.end_lineno, [f"{indent}{ast.unparse(new)}"])
