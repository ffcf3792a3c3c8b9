"""vecgen: the Cython text of a function smallvec.py scalarised (its statements, one by one).

The main function keeps its name and parameters (a number parameter typed `double`) and unpacks
its vector parameters into C doubles first; a helper becomes `cdef (double, ...) _v_<name>_<n>(...)`
over the numbers of its arguments. Each statement keeps the `# L<n>:` comments above it; a vector
assignment is one parallel assignment of its numbers (all read before any is written, as NumPy
does); an item write `v[k] = x` one C assignment of v's k-th number; a tape push or pop moves each number of a vector through the unboxed tape.
"""
import ast
import re

from .common import _TAPE, _range_bound
from .vecexpr import Untypable, _const_int, flat, is_vec, num


def _ctype(t):
    n = flat(t)
    return "double" if n == 1 else "(" + ", ".join(["double"] * n) + ")"


def _comments(lines, st):
    out = []
    k = st.lineno - 1
    while k >= 1 and lines[k - 1].strip().startswith("#"):
        out.append(lines[k - 1].strip())
        k -= 1
    return out[::-1]


def _pushes(vf, body):
    """How many numbers one trip of a straight-line loop body pushes (0: not straight-line)."""
    n = 0
    ex = vf.expr()
    for st in body:
        if not isinstance(st, (ast.Assign, ast.AugAssign, ast.Expr)):
            return 0
        v = st.value
        if isinstance(st, ast.Expr) and isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) \
                and v.func.attr == "append" and isinstance(v.func.value, ast.Name) and v.func.value.id in vf.tapes:
            n += len(ex.names(v.args[0].id, vf.types[v.args[0].id]))
    return n


class _Gen:
    def __init__(self, vf, lines):
        self.vf, self.lines, self.ex = vf, lines, vf.expr()
        self.out = []

    def names(self, name):
        t = self.vf.types[name]
        return self.ex.names(name, "d" if t == "z" else t)

    def emit(self, indent, text):
        self.out.append(" " * indent + text)

    def body(self, body, indent):
        for st in body:
            for c in _comments(self.lines, st):
                self.emit(indent, c)
            self.stmt(st, indent)

    def stmt(self, st, indent):
        vf = self.vf
        if isinstance(st, ast.Expr):
            v = st.value
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                self.emit(indent, ast.unparse(st))
                return
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and isinstance(v.func.value, ast.Name) \
                    and v.func.value.id in vf.tapes and v.func.attr == "append":
                for x in self.names(v.args[0].id):
                    self.emit(indent, f"{v.func.value.id}.push({x})")
                return
            raise Untypable(f"the statement {ast.unparse(st)}")
        if isinstance(st, ast.For):
            for n in ast.walk(st.iter):
                if isinstance(n, ast.Name) and n.id not in ("range", "reversed") and vf.types.get(n.id) not in ("o", "i"):
                    raise Untypable("a loop bound that is not an integer the function is given")
            if _range_bound(st.iter) is False:
                raise Untypable("a loop other than `for i in range(...)`")
            pushes = _pushes(vf, st.body)
            bound = _range_bound(st.iter)
            if pushes and isinstance(bound, (ast.Name, ast.Constant)) and len(vf.tapes) == 1:
                tape = next(iter(vf.tapes))
                self.emit(indent, f"{tape}.reserve({pushes} * {ast.unparse(bound)})  # the loop's tape, at once")
            self.emit(indent, f"for {st.target.id} in {ast.unparse(st.iter)}:")
            self.body(st.body, indent + 4)
            return
        if isinstance(st, ast.Return):
            self.ret(st, indent)
            return
        target = st.targets[0] if isinstance(st, ast.Assign) else getattr(st, "target", None)
        if isinstance(target, ast.Subscript):        # v[k] = x, v[k] op= x: v's k-th number
            value = ast.BinOp(target, st.op, st.value) if isinstance(st, ast.AugAssign) else st.value
            t, s = self.ex.ev(value)
            mine = self.names(target.value.id)
            if t is None or len(s) != 1:
                raise Untypable(f"the statement {ast.unparse(st)}")
            self.emit(indent, f"{mine[_const_int(target.slice) % len(mine)]} = {s[0]}")
            return
        if isinstance(st, ast.AugAssign):
            target = st.target.id
            value = ast.BinOp(ast.Name(target, ast.Load()), st.op, st.value)
        elif isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Tuple):
            mine = [x for t in st.targets[0].elts for x in self.names(t.id)]
            t, s = self.ex.top(st.value)
            if isinstance(s, tuple):
                self.emit(indent, f"{', '.join(mine)} = {s[1]}({', '.join(s[2])})")
            elif s is not None and len(s) == len(mine):
                self.emit(indent, f"{', '.join(mine)} = {', '.join(s)}")
            else:
                raise Untypable(f"the statement {ast.unparse(st)}")
            return
        elif isinstance(st, ast.Assign):
            target, value = st.targets[0].id, st.value
        else:
            raise Untypable(f"the statement {ast.unparse(st)}")
        self.assign(target, value, indent)

    def assign(self, target, value, indent):
        vf = self.vf
        if target in vf.tapes:
            self.emit(indent, f"{target} = {_TAPE}()")
            return
        mine = self.names(target)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "pop" \
                and isinstance(value.func.value, ast.Name) and value.func.value.id in vf.tapes:
            for x in reversed(mine):
                self.emit(indent, f"{x} = {value.func.value.id}.pop()")
            return
        t, s = self.ex.top(value)
        if isinstance(s, tuple):            # a helper's call: its C tuple unpacked
            self.emit(indent, f"{', '.join(mine)} = {s[1]}({', '.join(s[2])})")
            return
        if t is None:
            raise Untypable(f"the type of {ast.unparse(value)}")
        if len(s) == 1 and len(mine) > 1:
            s = s * len(mine)          # a number (a zero) given to a vector's name: every entry
        if len(s) != len(mine):
            raise Untypable(f"{target} is given a value of another size")
        pairs = [(x, y) for x, y in zip(mine, s) if x != y] or [(mine[0], s[0])]    # (an entry kept: no line)
        text = f"{', '.join(x for x, _ in pairs)} = {', '.join(y for _, y in pairs)}"
        if is_vec(t) and "/" in text:      # NumPy's vector division gives inf, never raises
            self.emit(indent, "with cython.cdivision(True):")
            self.emit(indent + 4, text)
        else:
            self.emit(indent, text)

    def ret(self, st, indent):
        if st.value is None:
            raise Untypable("a return without a value")
        if self.vf.main:
            self.emit(indent, f"return {self.ex.py(st.value)}")
            return
        t, s = self.ex.top(st.value)
        if isinstance(s, tuple):
            self.emit(indent, f"return {s[1]}({', '.join(s[2])})")
        elif len(s) == 1:
            self.emit(indent, f"return {s[0]}")
        else:
            self.emit(indent, f"return ({', '.join(s)})")


def function_text(vf, lines):
    """The Cython lines of the scalarised function vf (lines: the module's source lines)."""
    g = _Gen(vf, lines)
    fn = vf.fn
    ind = fn.body[0].col_offset
    doubles, ints = [], []
    for name, t in sorted(vf.types.items()):
        if name in vf.tapes or t == "o" or (name in vf.params and (not vf.main or num(t) or t == "z")):
            continue
        if t == "i":
            ints.append(name)
        else:
            doubles += g.names(name)
    clash = sorted(set(d for d in doubles if "__" in d) & vf.taken)
    if clash:
        raise Untypable(f"the name {clash[0]} is in use")
    if vf.main:
        params = []
        defaults = [None] * (len(fn.args.args) - len(fn.args.defaults)) + list(fn.args.defaults)
        for a, d in zip(fn.args.args, defaults):
            t = vf.types.get(a.arg)
            text = ("double " if num(t) else "") + a.arg + ("" if d is None else f"={ast.unparse(d)}")
            params.append(text)
        g.emit(fn.col_offset, f"def {fn.name}({', '.join(params)}):")
    else:
        params = [f"double {x}" for p in vf.params for x in g.names(p)]
        pure = not any(isinstance(n, ast.Div) or isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                       or isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "rt"
                       and n.attr == "seed" for n in ast.walk(fn))      # nothing in it can raise
        g.emit(fn.col_offset, f"cdef {_ctype(vf.return_type())} {vf.cname}({', '.join(params)})"
                              f"{' noexcept' if pure else ''}:")
        g.emit(ind, f'"""{fn.name} for arguments of {len(vf.params)} small vectors or numbers, as C doubles."""')
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        if vf.main:
            g.emit(ind, ast.unparse(body[0]))
        body = body[1:]
    if doubles:
        g.emit(ind, f"cdef double {', '.join(doubles)}")
    locals_ = [d for d in doubles if d.split("__")[0] not in vf.params]
    for k in range(0, len(locals_), 8):   # NaN until assigned (a C double has no "unbound": a read shows)
        g.emit(ind, " = ".join(locals_[k:k + 8]) + " = libc.math.NAN")
    if ints:
        g.emit(ind, f"cdef Py_ssize_t {', '.join(ints)}")
    for t in sorted(vf.tapes):
        g.emit(ind, f"cdef {_TAPE} {t}")
    if vf.main:
        for p in vf.params:
            t = vf.types.get(p)
            if is_vec(t):
                mine = g.names(p)
                g.emit(ind, f"{', '.join(mine)} = {', '.join(f'{p}[{k}]' for k in range(len(mine)))}"
                            f"  # {p}'s {len(mine)} numbers, unboxed")
    g.body(body, ind)
    return _drop_dead_tape(g.out, vf.tapes, _invariant(vf)) if len(vf.tapes) == 1 else g.out


def _invariant(vf):
    """The numbers every assignment of which is one expression of constants and parameters the
    function never reassigns (`prod_h = 0.5 * h` in a loop): after the first, the value is the
    same, so the tape need not restore it (before it, NaN: a value no correct code reads)."""
    rhs = {}
    for n in ast.walk(vf.fn):
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            rhs.setdefault(n.target.id, set()).add(None)
        elif isinstance(n, ast.Assign) and not vf._pops(n.value) and not (
                isinstance(n.value, ast.Constant) and n.value.value is None):     # (placeholders, restores)
            for t in n.targets:
                for name in ast.walk(t):
                    if isinstance(name, ast.Name):
                        pure = len(n.targets) == 1 and t is name and all(
                            isinstance(x, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop,
                                           ast.expr_context)) or isinstance(x, ast.Name) and x.id in vf.untouched
                            and num(vf.types.get(x.id)) for x in ast.walk(n.value))
                        rhs.setdefault(name.id, set()).add(ast.unparse(n.value) if pure else None)
    return {name for name, values in rhs.items() if len(values) == 1 and None not in values
            and vf.types.get(name) == "d"}


def _indent(line):
    return len(line) - len(line.lstrip(" "))


def _drop_dead_tape(out, tapes, invariant=()):
    """out without the pushes and pops of the numbers whose restored value nothing reads.

    srcad's tape pairs each push of a name with a pop into the same name (a stack: removing all
    of one name's pushes and pops leaves the others paired). A pop restores a value for the adjoints
    of earlier statements; when no line from the loop that holds the name's first pop (or from
    that pop, outside a loop) to the end reads the name (a shape-only operand such as
    rt.unbroadcast's second reads no number), the value is never needed: its pushes and pops go.
    So do those of the invariant numbers (_invariant)."""
    tape = next(iter(tapes))
    push = re.compile(rf"^\s*{tape}\.push\((\w+)\)$")
    pop = re.compile(rf"^\s*(\w+) = {tape}\.pop\(\)$")
    first = {}
    for k, line in enumerate(out):
        m = pop.match(line)
        if m and m.group(1) not in first:
            first[m.group(1)] = k
    dead = set(invariant) & set(first)
    for name, k in first.items():
        start, depth = k, _indent(out[k])
        for j in range(k - 1, -1, -1):
            if out[j].strip() and _indent(out[j]) < depth:
                depth = _indent(out[j])
                if out[j].lstrip().startswith("for "):
                    start = j
        word = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
        if not any(word.search(line) for line in out[start:] if not (push.match(line) or pop.match(line)
                   or line.lstrip().startswith("#"))):
            dead.add(name)
    kept = [line for line in out if not ((push.match(line) or pop.match(line))
                                         and (push.match(line) or pop.match(line)).group(1) in dead)]
    for k, line in enumerate(kept):         # a loop's reserve: the numbers its body still pushes
        m = re.match(rf"^(\s*){tape}\.reserve\((\d+) \* (.*?)\)(  #.*)?$", line)
        if m:
            depth = _indent(kept[k + 1])
            n = 0
            for j in range(k + 2, len(kept)):
                if kept[j].strip() and _indent(kept[j]) <= depth:
                    break
                if push.match(kept[j]):      # room reserved: no capacity test
                    n += 1
                    kept[j] = kept[j].replace(f"{tape}.push(", f"{tape}.put(")
            kept[k] = f"{m.group(1)}{tape}.reserve({n} * {m.group(3)}){m.group(4) or ''}" if n else ""
    return [line for line in kept if line != ""]
