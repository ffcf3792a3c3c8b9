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

    @staticmethod
    def describe(rhs: ast.AST, hint: str) -> str:
        """A name for the value an operation holds: exp_z for np.exp(z), neg_z for -z."""
        def short(a):
            return a.id if isinstance(a, ast.Name) and len(a.id) <= 12 else None
        if isinstance(rhs, ast.Call):
            f = rhs.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "call")
            arg = short(rhs.args[0]) if rhs.args else (short(f.value) if isinstance(f, ast.Attribute) else None)
            return f"{fname}_{arg}" if arg else fname
        if isinstance(rhs, (ast.BinOp, ast.UnaryOp)):
            op = _OPS.get(type(rhs.op), hint)
            arg = short(rhs.operand) if isinstance(rhs, ast.UnaryOp) else short(rhs.left) or short(rhs.right)
            return f"{op}_{arg}" if arg else op
        if isinstance(rhs, ast.Subscript):
            return f"{short(rhs.value) or hint}_item"
        if isinstance(rhs, ast.Attribute):
            return f"{short(rhs.value) or hint}_{rhs.attr}"
        if isinstance(rhs, (ast.Tuple, ast.List)):
            return "items"
        return hint


def N(id_: str, store: bool = False) -> ast.Name:
    """A Name node."""
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def rt(attr: str, *args: ast.expr) -> ast.Call:
    """A call of a runtime helper: rt.<attr>(*args)."""
    return ast.Call(ast.Attribute(N("rt"), attr, ast.Load()), list(args), [])


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
