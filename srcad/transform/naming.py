"""Names in generated code come from the user's names: x_bar, x_dot, exp_z, cond, ..."""
import ast
import builtins
import keyword
import re

_OPS = {ast.Add: "sum", ast.Sub: "diff", ast.Mult: "prod", ast.Div: "ratio", ast.Pow: "pow",
        ast.MatMult: "matmul", ast.USub: "neg", ast.UAdd: "pos", ast.FloorDiv: "quot", ast.Mod: "rem"}


class Namer:
    """Hands out fresh names that collide with nothing the user wrote."""

    def __init__(self, taken):
        self.taken = set(taken)

    def fresh(self, base):
        base = re.sub(r"\W", "_", base).strip("_") or "t"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "v_" + base
        cand, k = base, 1
        while cand in self.taken or hasattr(builtins, cand) or cand in ("np", "rt", "scipy"):
            k += 1
            cand = f"{base}_{k}"
        self.taken.add(cand)
        return cand

    def reserve(self, name):
        self.taken.add(name)

    @staticmethod
    def describe(rhs, hint):
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
