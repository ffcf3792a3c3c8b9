"""fuse: a chain of elementwise array statements of one user line as one typed C loop.

The generated module writes `r = np.exp(-x * y) * (x - y)` as one statement per operation, each
making a temporary array. In the Cython text, a run of such statements (consecutive, with no
comment line between them: one user line, or one adjoint block) of at least two operations becomes

    if _srcad_fusable(x, y):        # C-contiguous float64 arrays of one shape (ndim >= 1)
        <each array the rest of the function reads> = np.empty(x.shape)
        _srcad_fused_1(x, y, ...)   # one loop over the numbers, prange (nogil) above FUSE_PARALLEL
    else:
        <the NumPy statements, unchanged>

An operation is fused only where C computes what NumPy computes bit for bit: + - * / and negation
of float64 numbers (IEEE; cdivision on, so x / 0 is inf as in NumPy), and the functions in
FUSE_LIBM (glibc's, which NumPy's float64 loops share on this machine: tests/test_compile_fusion.py
checks that; NumPy builds with AVX-512 use their own exp/log, where the bits can differ in the last
place). Each element is computed by itself, so any thread count gives the same bits. An operand is
a C double of the function (passed by value), a number literal, or an array (checked at run time);
a name known to be neither (a parameter that is not an array, a C integer) keeps its statement out
of the run. Temporaries read only inside the run are C doubles of the loop, never arrays.

A statement may read the name it assigns (`y = y + d`: the loop reads the old y at each place and
writes a new array, bound to y after the loop) or update an array in place (`x_bar += g`: its
own numbers, each read just before it is written, when it is writable and no other operand lies
in its memory: fusecheck's _srcad_in_place_ok). A tape push inside a run, of a value the run does
not assign before it, is made before the loop. The arrays reach the loop as views.py's buffer
views (a number operand: a step of 0).
"""
import ast
import copy

from .common import _is_call
from .fusecheck import (_APART, _CHECK, _FLAT, _NDARRAY, _NP, _SHAPE, _THREADS, CHECK_TEXT, FUSE_LIBM, FUSE_MIN,
                        FUSE_PARALLEL, RESERVED)
from .views import VIEW

__all__ = ["CHECK_TEXT", "FUSE_LIBM", "FUSE_MIN", "FUSE_PARALLEL", "RESERVED", "emit_run", "find_runs"]


class _Expr:
    """Whether an expression is fusable; its array names, its C text."""

    def __init__(self, scalars, arrays_ok):
        self.scalars, self.arrays_ok = scalars, arrays_ok

    def ok(self, e):
        """(fusable, has an array operand, operations)."""
        if isinstance(e, ast.Constant):
            good = type(e.value) in (int, float) and abs(e.value) < 2 ** 53
            return good, False, 0
        if isinstance(e, ast.Name):
            if e.id in self.scalars:
                return True, False, 0
            return self.arrays_ok(e.id), True, 0
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            a, b = self.ok(e.left), self.ok(e.right)
            arr = a[1] or b[1]
            if not arr and (isinstance(e.op, ast.Div) or _has_int(e)):
                return False, False, 0      # a scalar-only part: Python's int / ZeroDivisionError rules
            return a[0] and b[0], arr, a[2] + b[2] + 1
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            a = self.ok(e.operand)
            return a[0], a[1], a[2] + 1
        if _is_call(e, ("np", "numpy"), FUSE_LIBM) and len(e.args) == 1 and not e.keywords:
            a = self.ok(e.args[0])
            return a[0], a[1], a[2] + 1
        if _is_call(e, ("rt",), ("unbroadcast",)) and len(e.args) == 2 and not e.keywords \
                and isinstance(e.args[1], ast.Name) and e.args[1].id not in self.scalars \
                and self.arrays_ok(e.args[1].id):
            a = self.ok(e.args[0])
            return a[0] and a[1], a[1], a[2]      # g itself when x has g's shape (checked at run time)
        return False, False, 0


def _known(plan, name):
    """Whether name is a parameter the signature says is a float64 array (of rank >= 1)."""
    k = plan.kinds.get(name) if name in plan.params else None
    return isinstance(k, tuple) and len(k) == 2 and k[0] == "d" and isinstance(k[1], int) and k[1] >= 1


def _nonzero(e):
    """Whether e is a number literal other than zero (a divisor that cannot raise)."""
    while isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        e = e.operand
    return isinstance(e, ast.Constant) and type(e.value) in (int, float) and e.value != 0


def _has_int(e):
    return any(isinstance(n, ast.Constant) and type(n.value) is int for n in ast.walk(e))


def _reads(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def find_runs(plan, body, lines):
    """The runs of fusable statements in the statement list body: lists of ast.Assign."""
    params = set(plan.params)

    def arrays_ok(name):
        if name in plan.ints or name in plan.doubles:
            return False
        if name in params and name in plan.kinds:
            return _known(plan, name)
        return not name.startswith("tape")
    ex = _Expr(plan.doubles, arrays_ok)
    runs, cur, ops = [], [], 0
    targets, inputs = set(), set()

    def close():
        nonlocal cur, ops, targets, inputs
        if ops >= 2 and len(cur) >= 1:
            runs.append((cur, ops))
        cur, ops, targets, inputs = [], 0, set(), set()

    for st in body:
        push = _push(st)
        if push is not None and cur and push not in targets and push not in plan.doubles \
                and not _gap(lines, cur[-1], st):
            cur.append(st)          # (moved before the loop: it takes the value the run does not assign)
            continue
        t = _target(st)
        good = (t is not None and t not in plan.doubles and t not in plan.ints and t not in plan.arrays
                and t not in params)
        if good:
            fine, arr, n = ex.ok(_value(st))
            good = fine and arr
        if cur and good and (_gap(lines, cur[-1], st) or t in targets):
            close()
        if not good:
            close()
            continue
        cur.append(st)
        ops += n
        targets.add(t)
    close()
    return [(_trim(stmts), n) for stmts, n in runs]


def _gap(lines, before, st):
    """Whether a line (a comment: another user line) stands between two statements."""
    return any(s.strip() for s in lines[before.end_lineno:st.lineno - 1])


def _trim(stmts):
    while stmts and _push(stmts[-1]) is not None:     # (a push after the last assignment: not the run's)
        stmts = stmts[:-1]
    return stmts


def _push(st):
    """v of a statement `tape.append(v)` (v a name), else None."""
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) \
            and st.value.func.attr == "append" and isinstance(st.value.func.value, ast.Name) \
            and st.value.func.value.id.startswith("tape") and len(st.value.args) == 1 and not st.value.keywords \
            and isinstance(st.value.args[0], ast.Name):
        return st.value.args[0].id
    return None


def _target(st):
    """The name an assignment `t = e` or an in-place update `t op= e` (+ - * /) binds, else None."""
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
        return st.targets[0].id
    if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) \
            and isinstance(st.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        return st.target.id
    return None


def _value(st):
    """What the statement computes: `t op e` for an in-place update (its numbers, written in place)."""
    if isinstance(st, ast.AugAssign):
        return ast.BinOp(ast.Name(st.target.id, ast.Load()), st.op, st.value)
    return st.value


def _inputs(stmts, plan):
    """Per statement, its value with each name read from the run's own earlier assignments marked
    (set of ids of those Name nodes), and the names read from outside the run: (arrays, scalars)."""
    assigned, own, arrays, scalars = set(), set(), [], []
    values = []
    for st in stmts:
        v = _value(st)
        for n in ast.walk(v):
            if not isinstance(n, ast.Name) or n.id in ("np", "numpy", "rt"):
                continue
            if n.id in assigned:
                own.add(id(n))
            else:
                group = scalars if n.id in plan.doubles else arrays
                if n.id not in group:
                    group.append(n.id)
        values.append(v)
        assigned.add(_target(st))
    return values, own, arrays, scalars


def emit_run(run, plan, fn, lines, number, taken):
    """(replacement lines at the run's place, the module-level helper's lines) for one run."""
    allst, _ = run
    pushes = [st for st in allst if _push(st) is not None]
    stmts = [st for st in allst if _push(st) is None]
    inside = set(map(id, (n for st in allst for n in ast.walk(st))))
    read_outside = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                    and id(n) not in inside}
    targets = [_target(st) for st in stmts]
    inplace = [_target(st) for st in stmts if isinstance(st, ast.AugAssign)]
    outs = [t for st, t in zip(stmts, targets) if isinstance(st, ast.Assign) and t in read_outside]
    if not outs and not inplace:
        outs = targets[-1:]
    values, own, arrays, scalars = _inputs(stmts, plan)
    arrays.sort(key=lambda a: not _known(plan, a))       # the signature's arrays first
    known = sum(1 for a in arrays if _known(plan, a))
    deps = {}           # target -> the inputs (indices into arrays) one of which is an array if it is
    needs = [(arrays.index(t),) for t in inplace if arrays.index(t) >= known]    # (updated in place: an array)
    for st, v in zip(stmts, values):
        d = set()
        for n in ast.walk(v):
            if isinstance(n, ast.Name) and id(n) in own:
                d |= deps[n.id]
            elif isinstance(n, ast.Name) and n.id in arrays:
                d.add(arrays.index(n.id))
        deps[_target(st)] = d
        if not d & set(range(known)):
            needs.append(tuple(sorted(d)))
        for div in ast.walk(v):      # a / b of two Python floats raises ZeroDivisionError: not fused
            if isinstance(div, ast.BinOp) and isinstance(div.op, ast.Div) and not _nonzero(div.right):
                names = {n.id for n in ast.walk(div) if isinstance(n, ast.Name)}
                if not names & (set(deps) | set(arrays[:known])):
                    needs.append(tuple(sorted(arrays.index(n) for n in names if n in arrays)))
    name = f"_srcad_fused_{number}"
    local = set(arrays) | set(scalars) | set(targets)

    def fresh(base, avoid=()):
        k, out = 2, base
        while out in local or out in taken or out in avoid:
            out, k = f"{base}{k}", k + 1
        local.add(out)
        return out
    idx, size = fresh("k"), fresh("n")
    val = {t: fresh(f"{t}_k") for t in targets}
    param = {o: (fresh(f"{o}_new") if o in arrays else o) for o in outs}     # (y = y + d: the old y is read)
    ptr = {a: fresh(f"{a}_p") for a in arrays + [param[o] for o in outs]}
    step = {a: fresh(f"{a}_s") for a in arrays[known:]}     # (0 for a number: read at every place)

    class C(ast.NodeTransformer):
        def __init__(self, marked):
            self.marked = marked          # the Name nodes that read the run's own earlier values

        def visit_Name(self, node):
            if id(node) in self.marked:
                return ast.Name(val[node.id], ast.Load())
            if node.id in scalars:
                return node
            at = ast.Name(idx, ast.Load())
            if node.id in step:
                at = ast.BinOp(at, ast.Mult(), ast.Name(step[node.id], ast.Load()))
            return ast.Subscript(ast.Name(ptr[node.id], ast.Load()), at, ast.Load())

        def visit_Constant(self, node):
            return ast.Constant(float(node.value)) if type(node.value) is int else node

        def visit_Call(self, node):
            if _is_call(node, ("rt",), ("unbroadcast",)):
                return self.visit(node.args[0])
            return ast.Call(ast.Attribute(ast.Attribute(ast.Name("libc", ast.Load()), "math", ast.Load()),
                                          FUSE_LIBM[node.func.attr], ast.Load()),
                            [self.visit(node.args[0])], [])

        def visit_Attribute(self, node):
            return node
    loop = []
    for t, v in zip(targets, values):
        twin = copy.deepcopy(v)       # (a copy: the module's tree is read again, by the next function too)
        marked = {id(b) for a, b in zip(ast.walk(v), ast.walk(twin)) if id(a) in own}
        loop.append(f"{val[t]} = {ast.unparse(C(marked).visit(twin))}")
        if t in outs or t in inplace:
            loop.append(f"{ptr[param.get(t, t)]}[{idx}] = {val[t]}")
    comments = _comments(lines, stmts[0].lineno)
    sig = [f"{VIEW} {a}" for a in arrays + [param[o] for o in outs]] + [f"double {s}" for s in scalars]
    helper = ["", "", "@cython.boundscheck(False)", "@cython.wraparound(False)", "@cython.cdivision(True)",
              f"cdef void {name}({', '.join(sig)}) noexcept:",
              f'    """One loop for {", ".join(targets)}: each number computed by itself (any thread count, '
              f'the same bits); the first {known} arrays C-contiguous, the others read with a step (0: a '
              f'number){"; " + ", ".join(inplace) + " updated in place" if inplace else ""}."""']
    helper += ["    " + c for c in comments]
    helper += [f"    cdef Py_ssize_t {idx}, {size} = {(param[outs[0]] if outs else inplace[0])}.buf.shape[0]"]
    helper += [f"    cdef {'' if a in inplace else 'const '}double* {ptr[a]} = <double*> {a}.buf.buf" for a in arrays]
    helper += [f"    cdef double* {ptr[param[o]]} = <double*> {param[o]}.buf.buf" for o in outs]
    helper += [f"    cdef Py_ssize_t {step[a]} = {a}.buf.strides[0] // 8" for a in arrays[known:]]
    helper += [f"    cdef double {', '.join(dict.fromkeys(val[t] for t in targets))}",
               "    with nogil:",
               f"        if {size} > {FUSE_PARALLEL} and {_THREADS} > 1:",
               f"            for {idx} in prange({size}, schedule='static', num_threads={_THREADS}):"]
    helper += ["                " + s for s in loop]
    helper += ["        else:", f"            for {idx} in range({size}):"]
    helper += ["                " + s for s in loop]
    indent = " " * stmts[0].col_offset
    check = f"{_CHECK}({known}, {tuple(needs)!r}, {', '.join(arrays)})"
    if not known:       # (a test in C first: in a loop over numbers, no call when none is an array)
        check += f" if {' or '.join(f'type({a}) is {_NDARRAY}' for a in arrays)} else None"
    cond = f"{_SHAPE} is not None"
    for t in inplace:       # (written in place: writable, and no other operand in its memory)
        others = [a for a in arrays if a != t]
        cond += f" and {_APART}({t}, ({''.join(a + ', ' for a in others)}))"
    repl = [indent + ast.unparse(st) for st in pushes]
    repl += [f"{indent}{_SHAPE} = {check}",
             f"{indent}if {cond}:  # srcad: one loop over the numbers ({name}), else the NumPy lines"]
    for o in outs:
        repl.append(f"{indent}    {param[o]} = {_NP}.empty({_SHAPE})")
    ravel = [f"{VIEW}({a}.reshape(-1), 1, False)" if j < known else
             f"{VIEW}({_FLAT}({a}, {_SHAPE}), 1, {a in inplace})" for j, a in enumerate(arrays)] + \
        [f"{VIEW}({param[o]}.reshape(-1), 1, True)" for o in outs] + scalars
    repl.append(f"{indent}    {name}({', '.join(ravel)})")
    repl += [f"{indent}    {o} = {param[o]}" for o in outs if param[o] != o]
    repl.append(f"{indent}else:")
    moved = {k for st in pushes for k in range(st.lineno, st.end_lineno + 1)}
    for k in range(stmts[0].lineno, stmts[-1].end_lineno + 1):
        if k not in moved:
            repl.append("    " + lines[k - 1])
    return repl, helper


def _comments(lines, lineno):
    """The comment lines just above line `lineno` (the user line the run computes)."""
    out, k = [], lineno - 2
    while k >= 0 and lines[k].strip().startswith("#"):
        out.insert(0, lines[k].strip())
        k -= 1
    return out
