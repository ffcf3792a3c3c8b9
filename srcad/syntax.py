"""Building blocks for the syntax trees every pass reads and writes (frontend and modes alike).

Names in generated code come from the user's names (`Namer`: x_bar, x_dot, exp_z, cond, ...);
node builders (`N`, `rt`, `assign`, `comment`), a fast deep copy (`ast_copy`) and small queries
(`names_read`, `is_comment`, `index_expr`), and `source_lines`, which cuts source text into
lines as Python numbers them. Nothing here knows about derivatives.
"""
import ast
import builtins
import io
import keyword
import re

_OPS = {ast.Add: "sum", ast.Sub: "diff", ast.Mult: "prod", ast.Div: "ratio", ast.Pow: "pow",
        ast.MatMult: "matmul", ast.USub: "neg", ast.UAdd: "pos", ast.FloorDiv: "quot", ast.Mod: "rem"}


class Namer:
    """Hands out fresh names that collide with nothing the user wrote."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        base = re.sub(r"\W", "_", base).strip("_") or "t"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "v_" + base
        cand, k = base, 1
        while cand in self.taken or hasattr(builtins, cand) or cand in ("np", "rt", "scipy"):
            k += 1
            cand = f"{base}_{k}"
        self.taken.add(cand)
        return cand

    def describe(self, rhs: ast.AST, hint: str) -> str:
        """A name for the value an operation holds, composed from its operands' names the way a
        person would spell it: Xw for X @ w, neg_Xw for -Xw, exp_neg_Xw, one_plus_e for 1.0 + e,
        y_sq for y * y, twice_y for 2.0 * y, y_log_p for y * log_p, x_0 for x[0], xs_i for xs[i].
        A phrase longer than _LONG characters falls back to the operation and its shortest
        operand (prod_y)."""
        phrase = self._phrase(rhs)
        if phrase is None or len(phrase) > _LONG:
            phrase = self._fallback(rhs, hint)
        return phrase

    def _operand(self, a) -> str | None:
        if isinstance(a, ast.Name):
            return a.id
        if isinstance(a, ast.Constant) and type(a.value) in (int, float):
            return _CONSTANTS.get(a.value)
        if isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) and isinstance(a.operand, ast.Constant):
            w = self._operand(a.operand)
            return f"minus_{w}" if w else None
        if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id in ("np", "math"):
            return a.attr
        return None

    def _phrase(self, rhs) -> str | None:
        op = self._operand
        if isinstance(rhs, ast.BinOp):
            a, b = op(rhs.left), op(rhs.right)
            const_l, const_r = isinstance(rhs.left, ast.Constant), isinstance(rhs.right, ast.Constant)
            k = type(rhs.op)
            if k is ast.MatMult and a and b:
                return a + b if len(a) <= 2 and len(b) <= 2 and "_" not in a + b else f"{a}_{b}"
            if k is ast.Mult:
                if isinstance(rhs.left, ast.Name) and isinstance(rhs.right, ast.Name) and rhs.left.id == rhs.right.id:
                    return f"{a}_sq"
                c, v = (rhs.left, b) if const_l else (rhs.right, a) if const_r else (None, None)
                if c is not None:
                    word = {2: "twice", 0.5: "half", -1: "neg"}.get(c.value, "scaled")
                    return f"{word}_{v}" if v else None
                return f"{a}_{b}" if a and b else None
            if k is ast.Pow and const_r:
                word = {2: "sq", 3: "cube", 0.5: "sqrt", -1: "inv"}.get(rhs.right.value)
                if word and a:
                    return f"sqrt_{a}" if word == "sqrt" else f"inv_{a}" if word == "inv" else f"{a}_{word}"
            if k is ast.Div and const_l and rhs.left.value == 1 and b:
                return f"inv_{b}"
            word = {ast.Add: "plus", ast.Sub: "minus", ast.Div: "over", ast.Pow: "pow", ast.FloorDiv: "div",
                    ast.Mod: "mod"}.get(k)
            return f"{a}_{word}_{b}" if word and a and b else None
        if isinstance(rhs, ast.UnaryOp):
            a = op(rhs.operand)
            word = {ast.USub: "neg", ast.Not: "not", ast.Invert: "inv"}.get(type(rhs.op))
            return (f"{word}_{a}" if word else a) if a else None
        if isinstance(rhs, ast.Call):
            f = rhs.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if fname is None:
                return None
            arg = op(rhs.args[0]) if rhs.args else (op(f.value) if isinstance(f, ast.Attribute) else None)
            return f"{fname}_{arg}" if arg else fname
        if isinstance(rhs, ast.Subscript):
            a = op(rhs.value)
            sl = rhs.slice
            i = sl.id if isinstance(sl, ast.Name) else str(sl.value) if isinstance(sl, ast.Constant) \
                and type(sl.value) is int and sl.value >= 0 else None
            return f"{a}_{i}" if a and i else f"{a}_item" if a else None
        if isinstance(rhs, ast.Attribute):
            a = op(rhs.value)
            return f"{a}_{rhs.attr}" if a else None
        if isinstance(rhs, (ast.Tuple, ast.List)):
            return "items"
        return None

    def _fallback(self, rhs, hint: str) -> str:
        """The operation's word and its shortest named operand (prod_y), else the hint."""
        if isinstance(rhs, ast.Call):
            f = rhs.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "call")
            return fname
        if isinstance(rhs, (ast.BinOp, ast.UnaryOp)):
            word = _OPS.get(type(rhs.op), hint)
            parts = [rhs.operand] if isinstance(rhs, ast.UnaryOp) else [rhs.left, rhs.right]
            names = sorted((self._operand(p) for p in parts if isinstance(p, ast.Name)), key=lambda t: len(t or "x" * 99))
            if names and names[0] and len(names[0]) <= _LONG - len(word) - 1:
                return f"{word}_{names[0]}"
            return word
        if isinstance(rhs, ast.Subscript):
            return f"{hint}_item"
        return hint


_LONG = 20
_CONSTANTS = {0: "zero", 1: "one", 2: "two", 3: "three", 0.5: "half", 10: "ten"}


def name_result(fn: ast.FunctionDef, namer: Namer, user_names: set[str]) -> None:
    """The temporary a normalized function returns, named after the function (`loss` for the
    value `loss` returns, not `sum_nll`): where it is assigned once, by the statement right
    before the final `return`, and the function reads no value of that name (a recursive function
    does): a local of the generated function, it then hides nothing the function uses."""
    if len(fn.body) < 2 or not isinstance(fn.body[-1], ast.Return) or not isinstance(fn.body[-1].value, ast.Name):
        return
    v, new = fn.body[-1].value.id, fn.name
    before = fn.body[-2]
    if v in user_names or new in user_names or hasattr(builtins, new) or keyword.iskeyword(new) or any(
            isinstance(n, ast.Name) and n.id == new for n in ast.walk(fn)) or not (
            isinstance(before, ast.Assign) and len(before.targets) == 1
            and isinstance(before.targets[0], ast.Name) and before.targets[0].id == v):
        return
    names = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == v]
    if sum(isinstance(n.ctx, ast.Store) for n in names) != 1 or any(
            isinstance(n, (ast.FunctionDef, ast.Lambda)) for n in ast.walk(fn) if n is not fn):
        return
    namer.taken.add(new)
    for n in names:
        n.id = new


def N(id_: str, store: bool = False) -> ast.Name:
    """A Name node."""
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def rt(attr: str, *args: ast.expr) -> ast.Call:
    """A call of a runtime helper: rt.<attr>(*args)."""
    return ast.Call(ast.Attribute(N("rt"), attr, ast.Load()), list(args), [])


def is_rt_call(e: ast.AST, attr: str) -> bool:
    """Is e a call of the runtime helper rt.<attr>?"""
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == attr and \
        isinstance(e.func.value, ast.Name) and e.func.value.id == "rt"


def assign(target: str | ast.expr, value: ast.expr) -> ast.Assign:
    """`target = value`; a str target becomes a Name."""
    t = N(target, True) if isinstance(target, str) else target
    return ast.Assign(targets=[t], value=value)


def ast_copy(node):
    """A deep copy of an AST (several times faster than copy.deepcopy, which it replaces here)."""
    if isinstance(node, ast.AST):
        new = node.__class__()
        for f in node._fields:
            setattr(new, f, ast_copy(getattr(node, f, None)))
        for a in node._attributes:
            if hasattr(node, a):
                setattr(new, a, getattr(node, a))
        for extra in ("user_line", "again", "srcad_ckpt"):
            if hasattr(node, extra):
                setattr(new, extra, getattr(node, extra))
        return new
    if isinstance(node, list):
        return [ast_copy(x) for x in node]
    return node


_COMMENT_MARK = "\x00srcad-comment\x00"    # transform/emit.py turns it back into a `#` line


def comment(text: str) -> ast.Expr:
    """A statement that the emitter turns into a `# text` line."""
    return ast.Expr(ast.Constant(_COMMENT_MARK + text))


def is_comment(stmt: ast.AST) -> bool:
    """Whether stmt is a line comment made by comment()."""
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str) and stmt.value.value.startswith(_COMMENT_MARK))


def names_read(nodes) -> set[str]:
    """The names loaded anywhere in nodes."""
    out = set()
    for n in nodes:
        for m in ast.walk(n):
            if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Load):
                out.add(m.id)
    return out


def index_expr(sl: ast.expr) -> ast.expr:
    """A subscript's index as an expression that can be passed around: `1:` becomes `np.s_[1:]`."""
    if any(isinstance(n, ast.Slice) for n in ast.walk(sl)):
        return ast.Subscript(ast.Attribute(ast.Name("np", ast.Load()), "s_", ast.Load()), sl, ast.Load())
    return sl


# ---- the printer ---------------------------------------------------------------------------------
class _Canonical(ast.NodeTransformer):
    """A literal whose text starts with a minus (-1, -0.0, -inf, -2j, a NumPy scalar) rewritten the
    way the parser itself reads such text: unary minus applied to the positive literal. The
    printer then gives it the parentheses its place needs (`(-1) ** j`, `(-1).real`), as it does
    for any operator; a Constant node prints as its repr, which knows no precedence."""

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, (str, bytes, bool)) or v is None or v is Ellipsis:
            return node
        if not repr(v).startswith("-"):
            return node
        pos = -v
        if repr(-pos) != repr(v):      # (a value whose negation is not exact: left as it is)
            return node
        return ast.copy_location(ast.UnaryOp(ast.USub(), ast.copy_location(ast.Constant(pos), node)), node)


def to_source(tree: ast.AST) -> str:
    """Python text for tree that parses back to the same computation: `ast.unparse` (which
    parenthesises every operator by precedence) over a copy whose negative literals are unary
    minus of a positive one. tree itself is not changed."""
    return ast.unparse(ast.fix_missing_locations(_Canonical().visit(ast_copy(tree))))


def source_lines(text: str, keepends: bool = True) -> list:
    """text cut into lines as Python numbers them: at \\n, \\r\\n and \\r only. (`str.splitlines`
    also cuts at a form feed, \\x1c-\\x1e, \\x85, U+2028 and U+2029, which may sit in a comment or a
    string of the user's code; lines cut there no longer match the line numbers of the code.)"""
    lines = io.StringIO(text, newline="").readlines()
    return lines if keepends else [ln.rstrip("\r\n") for ln in lines]
